"""Entries on LanceDB: recall from the ``entries`` table's native columns, category and
source prefilters in search, importance/recency ranking on the native path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_router import Entry, EntryMatch, InvalidInput, Router, testing
from memory_router._workspace.journal import journal_text
from memory_router.kit import EntryRequest, SearchRequest, entry_weight

FILES = {"MEMORY.md": "# Memory\n\nThe kiln reached 1240 degrees on the glaze firing.\n"}


def router(base: Path, workspace: Path, backend: str = "lancedb", **tables: Any) -> Router:
    settings = {"uri": str(base / "lance")} if backend == "lancedb" else None
    config = testing.router_config(
        base,
        workspace,
        backend=backend,
        embedding=tables.pop("embedding", "hash"),
        settings=settings,
        query={"min_score": 0.0},
        **tables,
    )
    return Router.from_config(config, plugins=[testing])


def workspace(tmp_path: Path, entries: list[Entry] | None = None) -> Path:
    root = testing.write_workspace(tmp_path / "workspace", FILES)
    if entries:
        journal = root / "memory" / "entries.md"
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text(journal_text(entries), encoding="utf-8")
    return root


def entry(entry_id: str, text: str, category: Any, importance: float, days: float) -> Entry:
    created = datetime.now(UTC) - timedelta(days=days)
    return Entry(
        id=entry_id, text=text, importance=importance, category=category, created_at=created
    )


# Twelve facts close to "glaze kiln firing", two decisions further away.
NEAR = [entry(f"f{i}", f"glaze kiln firing note {i}", "fact", 0.7, 1) for i in range(12)]
FAR = [
    entry("d1", "we decided the glaze kiln gets a new thermocouple", "decision", 0.9, 2),
    entry("d2", "decided to fire the kiln on Sundays only", "decision", 0.5, 3),
]


def test_recall_answers_from_the_entries_table_like_the_journal(tmp_path: Path) -> None:
    root = workspace(tmp_path, [*NEAR[:4], *FAR])
    with router(tmp_path / "lance", root) as lance, router(tmp_path / "sq", root, "sqlite") as sq:
        lance.sync()
        native = lance.recall("glaze kiln thermocouple", limit=6)
        journal = sq.recall("glaze kiln thermocouple", limit=6)
    assert native.backend == "lancedb"
    assert journal.backend is None  # the SQLite chain reads the journal
    assert native.results[0].entry.id == "d1"
    # The notes tie with each other: compare in (score, id) order.
    pairs = zip(in_order(native.results), in_order(journal.results), strict=True)
    for a, b in pairs:
        assert a.entry.id == b.entry.id
        assert a.similarity == pytest.approx(b.similarity, abs=1e-5)
        assert a.score == pytest.approx(b.score, abs=1e-5)
        assert (a.path, a.start_line, a.end_line) == (b.path, b.start_line, b.end_line)
        assert a.entry.category == b.entry.category
        assert a.entry.importance == pytest.approx(b.entry.importance)


def in_order(matches: tuple[EntryMatch, ...]) -> list[EntryMatch]:
    return sorted(matches, key=lambda m: (-round(m.score, 5), m.entry.id))


def test_recall_weighs_the_stored_importance_column(tmp_path: Path) -> None:
    root = workspace(tmp_path, [FAR[0]])
    with router(tmp_path, root) as r:
        r.sync()
        before = r.recall("glaze kiln thermocouple").results[0]
        lance: Any = r.backend("lancedb")
        tables = lance.store.tables(lance.store.pointer().generation)
        tables.entries.update(where="id = 'd1'", values={"importance": 0.0})
        after = r.recall("glaze kiln thermocouple").results[0]
    assert after.entry.importance == 0.0
    assert after.similarity == pytest.approx(before.similarity)
    assert after.score < before.score * 0.8  # the weight came from the table, not the journal


def test_recall_category_is_a_prefilter(tmp_path: Path) -> None:
    root = workspace(tmp_path, [*NEAR, *FAR])
    with router(tmp_path, root) as r:
        r.sync()
        lance = r.backend("lancedb")
        vector = tuple(r.embedder.embed_query("glaze kiln firing") if r.embedder else ())
        request = EntryRequest(
            query="glaze kiln firing",
            vector=vector,
            category="decision",
            candidates=2,
            min_similarity=0.0,
        )
        found = lance.recall_entries(request)
        everything = lance.recall_entries(
            EntryRequest(
                query="glaze kiln firing",
                vector=vector,
                category=None,
                candidates=2,
                min_similarity=0.0,
            )
        )
        by_router = r.recall("glaze kiln firing", category="decision", limit=5)
    # The two nearest overall are facts; the category was applied before the limit.
    assert {m.entry.category for m in everything} == {"fact"}
    assert sorted(m.entry.id for m in found) == ["d1", "d2"]
    assert sorted(m.entry.id for m in by_router.results) == ["d1", "d2"]
    assert by_router.backend == "lancedb"


def test_search_by_category_reads_only_that_category(tmp_path: Path) -> None:
    root = workspace(tmp_path, [*NEAR, *FAR])
    with router(tmp_path, root) as r:
        r.sync()
        request = SearchRequest(
            query="glaze kiln firing", max_results=2, min_score=0.0, candidates=2
        )
        plain = r.backend("lancedb").search(request).hits
        filtered = r.backend("lancedb").search(
            SearchRequest(
                query="glaze kiln firing",
                max_results=2,
                min_score=0.0,
                candidates=2,
                category="decision",
            )
        )
        answer = r.search("glaze kiln firing", category="decision")
        facts = r.search("glaze kiln firing", category="fact", max_results=20)
        sessions = r.search("glaze kiln firing", sources=["sessions"])
        memory = r.search("glaze kiln firing", sources=["memory"])
    assert all(h.entry is None or h.entry.category == "fact" for h in plain)
    assert sorted(h.entry.id for h in filtered.hits if h.entry) == ["d1", "d2"]
    assert filtered.mode == "hybrid"
    assert sorted(h.entry.id for h in answer.results if h.entry) == ["d1", "d2"]
    assert all(h.entry is not None for h in answer.results)
    assert {h.entry.category for h in facts.results if h.entry} == {"fact"}
    assert len(facts.results) == 12
    assert sessions.results == ()
    assert {h.source for h in memory.results} == {"memory"}
    assert memory.results


def test_search_filters_refuse_unknown_values(tmp_path: Path) -> None:
    with router(tmp_path, workspace(tmp_path)) as r:
        with pytest.raises(InvalidInput, match="unknown source 'mail'"):
            r.search("kiln", sources=["mail"])
        with pytest.raises(InvalidInput, match="unknown category 'gossip'"):
            r.search("kiln", category="gossip")  # type: ignore[arg-type]


def weight(item: Entry, ranking: Any) -> float:
    return entry_weight(item, ranking, now=datetime.now(UTC).timestamp())


def test_important_recent_entry_outranks_a_stale_trivial_one_natively(tmp_path: Path) -> None:
    text = "The staging database password rotates every Tuesday"
    stale, fresh = entry("e-stale", text, "fact", 0.1, 400), entry("e-fresh", text, "fact", 0.95, 1)
    root = workspace(tmp_path, [stale, fresh])
    with (
        router(tmp_path / "on", root) as on,
        router(tmp_path / "off", root, entries={"ranking": {"enabled": False}}) as off,
    ):
        on.sync()
        off.sync()
        ranked = on.recall("staging database password")
        searched = [h for h in on.search("staging database password").results if h.entry]
        ranking = on.config.entries.ranking
        tied = off.recall("staging database password")
    assert ranked.backend == "lancedb"
    assert [m.entry.id for m in ranked.results] == ["e-fresh", "e-stale"]
    ratio = ranked.results[0].score / ranked.results[1].score
    assert ratio == pytest.approx(weight(fresh, ranking) / weight(stale, ranking), rel=1e-4)
    assert ratio > 1.4  # the default weights (importance 0.3, floor 0.95)
    assert [h.entry.id for h in searched if h.entry] == ["e-fresh", "e-stale"]
    assert tied.backend == "lancedb"
    assert tied.results[0].score == pytest.approx(tied.results[1].score)


def test_recall_without_an_embedder_reads_the_journal(tmp_path: Path) -> None:
    root = workspace(tmp_path, FAR)
    with router(tmp_path, root, embedding="none") as r:
        r.sync()
        found = r.recall("thermocouple kiln")
    assert found.backend is None
    assert found.method == "keyword"
    assert found.results[0].entry.id == "d1"
