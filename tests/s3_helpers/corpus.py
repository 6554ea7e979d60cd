"""A workspace big enough that LanceDB reads its indexes and data in pieces on object
storage: 120 notes of random words, each query's words among them."""

from __future__ import annotations

import random

QUERIES = ("glaze firing", "garlic frost", "celadon bowls", "kiln degrees")


def files(count: int = 120, paragraphs: int = 8) -> dict[str, str]:
    """Enough text that LanceDB reads its FTS index in pieces (posting lists) when cold."""
    rng = random.Random(7)
    words = [f"{a}{b}" for a in ("gla", "fro", "cel", "ki", "bo", "ga") for b in range(300)]
    words += " ".join(QUERIES).split()
    return {
        f"memory/n{i:03d}.md": "\n\n".join(
            " ".join(rng.choice(words) for _ in range(60)) for _ in range(paragraphs)
        )
        + "\n"
        for i in range(count)
    }
