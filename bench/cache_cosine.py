"""Cosine between the vectors two embedding caches hold for the same texts.

Two runs of ``memory-router bench locomo --cache A`` / ``--cache B`` with different
providers (e.g. ``minilm`` and ``minilm-int8``) leave every chunk's and every question's
vector in their caches; this compares them text by text (by the text's hash):

    .venv/bin/python bench/cache_cosine.py /tmp/cache-minilm.sqlite /tmp/cache-minilm-int8.sqlite
"""

from __future__ import annotations

import sqlite3
import sys

import numpy as np


def vectors(path: str) -> dict[str, np.ndarray]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT hash, embedding FROM embedding_cache").fetchall()
    finally:
        db.close()
    return {h: np.frombuffer(blob, dtype=np.float32) for h, blob in rows}


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] in {"-h", "--help"}:
        raise SystemExit(__doc__)
    first, second = vectors(sys.argv[1]), vectors(sys.argv[2])
    common = sorted(set(first) & set(second))
    if not common:
        raise SystemExit("the two caches share no text")
    cos = np.array(
        [
            float(first[h] @ second[h] / np.linalg.norm(first[h]) / np.linalg.norm(second[h]))
            for h in common
        ]
    )
    print(f"{len(common)} texts: cosine mean {cos.mean():.6f}, min {cos.min():.6f}, "
          f"1st percentile {np.percentile(cos, 1):.6f}")  # fmt: skip


if __name__ == "__main__":
    main()
