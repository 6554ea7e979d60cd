"""A workspace big enough that LanceDB reads its indexes and data in pieces on object
storage (120 notes of random words, each query's words among them), and a router over
it with the LanceDB backend."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from memory_router import Router, testing

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


def lance_router(tmp_path: Path, settings: dict[str, Any]) -> Router:
    """A router over :func:`files` in ``tmp_path`` with the LanceDB backend at
    ``settings``, the hashing embedder and no sync on search."""
    workspace = testing.write_workspace(tmp_path / "workspace", files())
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding="hash",
        settings=settings,
        sync={"on_search": False},
    )
    return Router.from_config(config, plugins=[testing])
