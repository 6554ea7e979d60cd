"""LoCoMo retrieval quality: a thin caller of ``memory-router bench locomo``.

    .venv/bin/python bench/locomo.py [--mode … --fusion … --provider … --limit N --json]

The data stays in ../shared beside the checkout (never copied in); override it with
``MEMORY_ROUTER_LOCOMO`` or ``--data``. Everything else — metrics, per-category tables,
the dataset's sha256 — is the command's (see docs/cli.md, ``memory-router bench``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memory_router.cli import build_cli

DATA = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)


def main() -> None:
    args = sys.argv[1:]
    if "--data" not in args:
        args = ["--data", str(DATA), *args]
    build_cli().main(args=["bench", "locomo", *args], prog_name="memory-router")


if __name__ == "__main__":
    main()
