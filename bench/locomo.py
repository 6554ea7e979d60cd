"""LoCoMo retrieval quality: a thin caller of ``memory-router bench locomo``.

    .venv/bin/python bench/locomo.py [--mode … --fusion … --provider … --limit N --json]

The data stays in ../shared beside the checkout (never copied in); override it with
``MEMORY_ROUTER_LOCOMO`` or ``--data``. Everything else — metrics, per-category tables,
the dataset's sha256 — is the command's (see docs/cli.md, ``memory-router bench``). The
old flags still work: ``--embedding NAME`` (``none`` = keyword-only) and
``--conversations N``.
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


def translate(args: list[str]) -> list[str]:
    """The old script's ``--embedding`` and ``--conversations`` as the command's options."""
    out: list[str] = []
    items = iter(args)
    for arg in items:
        if arg == "--embedding":
            provider = next(items, "none")
            out += ["--mode", "keyword"] if provider == "none" else ["--mode", "hybrid"]
            out += [] if provider == "none" else ["--provider", provider]
        elif arg == "--conversations":
            out += ["--limit", next(items, "0")]
        else:
            out.append(arg)
    return out if "--data" in out else ["--data", str(DATA), *out]


def main() -> None:
    build_cli().main(args=["bench", "locomo", *translate(sys.argv[1:])], prog_name="memory-router")


if __name__ == "__main__":
    main()
