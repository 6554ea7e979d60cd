"""A synthetic workspace of notes shared by the fallback benches (cold standby, crash safety).

Each note is ``lines`` lines of 12 words drawn from :data:`WORDS`, so keyword and hash-vector
search both find something, and every line ends with a unique ``item`` tag.
"""

from __future__ import annotations

import random
from pathlib import Path

WORDS = [
    "tea",
    "lisbon",
    "billing",
    "quartz",
    "zebra",
    "harbor",
    "cobalt",
    "staging",
    "database",
    "flight",
    "hotel",
    "tram",
    "conference",
    "timezone",
    "fixture",
    "invoice",
    "ledger",
    "garden",
    "piano",
    "river",
    "mountain",
    "lantern",
]


def write_notes(root: Path, files: int, rng: random.Random, *, lines: int) -> None:
    """``MEMORY.md`` plus ``files`` notes under ``root/memory`` of ``lines`` lines each."""
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe long-term notes.\n", encoding="utf-8")
    for n in range(files):
        text = [f"# Note {n}", ""]
        text += [" ".join(rng.choices(WORDS, k=12)) + f" item-{n}-{i}." for i in range(lines)]
        (root / "memory" / f"note-{n:04d}.md").write_text("\n".join(text) + "\n")
