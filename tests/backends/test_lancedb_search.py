"""LanceDB search paths: vectors in memory and LanceDB's own search agree; the memory
copy follows another router's writes; status --deep names the path in use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_router import Router, testing
from memory_router.kit import SearchRequest

FILES = {
    "MEMORY.md": "# Memory\n\nThe kiln reached 1240 degrees on the glaze firing.\n",
    "memory/a.md": "# Pottery\n\nTrimmed six bowls; the celadon glaze crawled on two.\n",
    "memory/b.md": "# Garden\n\nPlanted garlic before the first frost in October.\n",
}


def router(tmp_path: Path, **settings: Any) -> Router:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding="hash",
        settings={"uri": str(tmp_path / "lance"), **settings},
        sync={"on_search": False},
    )
    return Router.from_config(config, plugins=[testing])


def ranked(r: Router, query: str) -> list[tuple[str, float, float | None]]:
    request = SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10)
    hits = r.backend("lancedb").search(request).hits
    return [(h.path, round(h.score, 5), h.vector_score and round(h.vector_score, 5)) for h in hits]


def test_memory_and_lance_vector_search_agree(tmp_path: Path) -> None:
    with router(tmp_path, vector_search="memory") as memory:
        memory.sync()
        from_memory = ranked(memory, "glaze firing kiln")
        status = memory.status(deep=True).backends[0].details
    with router(tmp_path, vector_search="lance") as lance:
        from_lance = ranked(lance, "glaze firing kiln")
    assert from_memory == from_lance
    assert from_memory[0][0] == "MEMORY.md"
    assert "in memory" in status["search_path"]


def test_memory_copy_follows_another_routers_writes(tmp_path: Path) -> None:
    with router(tmp_path) as reader, router(tmp_path) as writer:
        writer.sync()
        assert "memory/c.md" not in [p for p, _, _ in ranked(reader, "sourdough starter")]
        (tmp_path / "workspace" / "memory" / "c.md").write_text(
            "# Bread\n\nFed the sourdough starter twice today.\n", encoding="utf-8"
        )
        writer.sync()
        assert ranked(reader, "sourdough starter")[0][0] == "memory/c.md"


def test_hybrid_fuses_like_the_built_in_backend(tmp_path: Path) -> None:
    # Same fusion as SQLite: each hit's score is `fuse()` of its own two leg scores, and a
    # stemmed keyword ("firings" → "firing") reaches the keyword leg.
    from memory_router.kit import fuse, keyword_coverage

    with router(tmp_path) as r:
        r.sync()
        request = SearchRequest(
            query="glaze firings", max_results=5, min_score=0.0, candidates=10, explain=True
        )
        hits = r.backend("lancedb").search(request).hits
        hybrid = r.config.query.hybrid
    top = hits[0]
    assert top.path == "MEMORY.md"
    assert top.text_score is not None
    assert top.explain is not None
    assert top.explain.fusion == hybrid.fusion
    assert top.explain.vector_part + top.explain.text_part == top.score
    expected = fuse(
        hybrid.fusion,
        {h.chunk_id: h.vector_score for h in hits if h.vector_score is not None},
        {h.chunk_id: h.text_score for h in hits if h.text_score is not None},
        vector_weight=hybrid.vector_weight,
        text_weight=hybrid.text_weight,
        coverage={h.chunk_id: keyword_coverage(request.query, h.snippet) for h in hits},
    )
    assert [f.id for f in expected] == [h.chunk_id for h in hits]


def test_memory_copy_follows_updates_and_deletes_incrementally(tmp_path: Path) -> None:
    # The reader's copy is brought forward by row id (kept rows stay, new ones are
    # taken); after an edit, a removal and an addition it answers exactly like LanceDB's
    # own search over the same version.
    queries = ("celadon glaze", "garlic frost", "sourdough starter", "kiln firing")
    with router(tmp_path) as reader, router(tmp_path) as writer:
        memory = tmp_path / "workspace" / "memory"
        for n in range(8):  # so that the changes below are a minority of the rows
            (memory / f"f{n}.md").write_text(f"# Note {n}\n\nGlazes tested on tile {n}.\n")
        writer.sync()
        before = ranked(reader, "celadon glaze")
        old = reader.backend("lancedb")._vectors._loaded  # type: ignore[attr-defined]
        (memory / "a.md").write_text("# Pottery\n\nThe celadon glaze fired clean.\n")
        (memory / "b.md").unlink()
        (memory / "c.md").write_text("# Bread\n\nFed the sourdough starter twice.\n")
        writer.sync()
        after = {q: ranked(reader, q) for q in queries}
        kept = reader.backend("lancedb")._vectors._loaded  # type: ignore[attr-defined]
    with router(tmp_path, vector_search="lance") as lance:
        expected = {q: ranked(lance, q) for q in queries}
    assert after == expected
    assert after["celadon glaze"] != before
    assert "memory/b.md" not in {p for hits in after.values() for p, _, _ in hits}
    assert len(kept.rows) == len(kept.positions) == 11  # MEMORY.md, a, c and f0..f7
    assert kept.key != old.key
    unchanged = {r["path"]: r for r in old.rows}["memory/f0.md"]
    assert any(r is unchanged for r in kept.rows)  # kept, not read again
