#!/usr/bin/env python3
"""A fake ``qmd`` whose ``update`` never finishes and ignores SIGTERM (tests chmod +x it).

While it hangs, its pid is in ``update.pid`` next to it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    if "update" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (Path(__file__).resolve().parent / "update.pid").write_text(str(os.getpid()))
        print("Updating 2 collection(s)...", flush=True)
        time.sleep(3600)
    print("qmd 2.8.3 (fake)")
