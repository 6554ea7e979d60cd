"""Router entry operations: store without duplicates, recall, forget by query, ranking.

They work on every backend chain (the journal is the copy); the built-in SQLite backend
is used where a search is involved.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_router import Entry, InvalidInput, NotFound, Router, testing
from memory_router._config.config import EntryRankingConfig
from memory_router._workspace.journal import journal_text
from memory_router.kit import entry_weight

FILES = {"MEMORY.md": "# Memory\n\nThe deploy key rotates monthly; see the runbook.\n"}


def make(tmp_path: Path, *, embedding: str = "none", **tables: Any) -> Router:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="sqlite",
        embedding=embedding,
        query={"min_score": 0.0},
        **tables,
    )
    return Router.from_config(config, plugins=[testing])


@pytest.mark.parametrize("embedding", ["none", "hash"])
def test_remember_reports_a_duplicate_instead_of_storing_twice(
    tmp_path: Path, embedding: str
) -> None:
    with make(tmp_path, embedding=embedding) as router:
        first = router.remember("Prefers window seats on flights", category="preference")
        again = router.remember("prefers WINDOW seats, on flights!", importance=0.2)
        other = router.remember("Allergic to penicillin", category="fact")
        assert first.action == "created"
        assert again.action == "duplicate"
        assert again.entry == first.entry
        assert again.similarity is not None
        assert again.similarity >= 0.95
        assert other.action == "created"
        assert [e.text for e in router.entries()] == [
            "Prefers window seats on flights",
            "Allergic to penicillin",
        ]
        forced = router.remember("Prefers window seats on flights", force=True)
        assert forced.action == "created"
        assert len(router.entries()) == 3


def test_remember_validates_before_comparing(tmp_path: Path) -> None:
    with make(tmp_path) as router:
        with pytest.raises(InvalidInput, match="importance"):
            router.remember("x", importance=1.5)
        with pytest.raises(InvalidInput, match="category"):
            router.remember("x", category="mood")  # type: ignore[arg-type]
        assert router.entries() == []


@pytest.mark.parametrize("embedding", ["none", "hash"])
def test_recall_returns_entries_only_and_filters_by_category(
    tmp_path: Path, embedding: str
) -> None:
    with make(tmp_path, embedding=embedding) as router:
        router.remember("The deploy key is kept in the team vault", category="fact")
        router.remember("Prefers that deploy reviews happen on Mondays", category="preference")
        router.remember("Likes oolong tea", category="preference")
        found = router.recall("deploy key")
        texts = [m.entry.text for m in found.results]
        assert texts[0] == "The deploy key is kept in the team vault"
        assert "Likes oolong tea" not in texts
        assert all(m.path == "memory/entries.md" for m in found.results)  # not MEMORY.md
        assert found.method == ("keyword" if embedding == "none" else "vector")
        prefs = router.recall("deploy key", category="preference")
        assert [m.entry.text for m in prefs.results] == [
            "Prefers that deploy reviews happen on Mondays"
        ]
        assert len(router.recall("deploy", limit=1).results) == 1
        assert router.recall("   ").results == ()
        with pytest.raises(InvalidInput):
            router.recall("deploy", category="mood")  # type: ignore[arg-type]
        match = found.results[0]
        text = router.get(match.path, from_line=match.start_line, lines=1).text
        assert "team vault" in text


def test_forget_by_query_deletes_only_a_single_close_match(tmp_path: Path) -> None:
    with make(tmp_path, embedding="hash") as router:
        router.remember("Parking spot is B12 on level two", category="fact")
        teal = "Favourite colour is teal like the old kitchen tiles"
        router.remember(teal, category="preference")
        router.remember(f"{teal} at home", category="preference", force=True)
        several = router.forget_entry(query=teal)
        assert several.action == "candidates"
        assert several.deleted is None
        assert {m.entry.text for m in several.candidates} >= {teal, f"{teal} at home"}
        assert len(router.entries()) == 3
        vague = router.forget_entry(query="parking")
        assert vague.action == "candidates"
        assert vague.candidates[0].entry.text.startswith("Parking spot")
        assert len(router.entries()) == 3
        one = router.forget_entry(query="parking spot is B12 on level two")
        assert one.action == "deleted"
        assert one.deleted is not None
        assert one.deleted.text.startswith("Parking spot")
        assert [e.text for e in router.entries()] == [teal, f"{teal} at home"]
        none = router.forget_entry(query="quantum chromodynamics")
        assert (none.action, none.candidates) == ("candidates", ())


def test_forget_entry_by_id_and_argument_errors(tmp_path: Path) -> None:
    with make(tmp_path) as router:
        stored = router.remember("Uses vim keybindings").entry
        assert router.forget_entry(entry_id=stored.id).deleted == stored
        with pytest.raises(NotFound):
            router.forget_entry(entry_id=stored.id)
        with pytest.raises(InvalidInput):
            router.forget_entry()
        with pytest.raises(InvalidInput):
            router.forget_entry(entry_id="e-1", query="vim")
        with pytest.raises(InvalidInput):
            router.forget_entry(query="  ")


def _entry(text: str, importance: float, days_old: float, entry_id: str) -> Entry:
    created = datetime.now(UTC) - timedelta(days=days_old)
    return Entry(id=entry_id, text=text, importance=importance, category="fact", created_at=created)


def test_entry_weight_formula() -> None:
    ranking = EntryRankingConfig(importance_weight=0.3, half_life_days=60, recency_floor=0.5)
    now = datetime.now(UTC).timestamp()
    assert entry_weight(_entry("a", 1.0, 0, "e-a"), ranking, now=now) == pytest.approx(1.0, 1e-4)
    assert entry_weight(_entry("a", 0.0, 0, "e-a"), ranking, now=now) == pytest.approx(0.7, 1e-4)
    assert entry_weight(_entry("a", 1.0, 60, "e-a"), ranking, now=now) == pytest.approx(0.75, 1e-4)
    old = entry_weight(_entry("a", 1.0, 6000, "e-a"), ranking, now=now)
    assert old == pytest.approx(0.5, 1e-3)
    off = EntryRankingConfig(enabled=False)
    assert entry_weight(_entry("a", 0.0, 6000, "e-a"), off, now=now) == 1.0


def _stale_and_fresh(tmp_path: Path) -> None:
    """Two entries with the same text: a stale trivial one first, a fresh important one."""
    journal = tmp_path / "workspace" / "memory" / "entries.md"
    journal.parent.mkdir(parents=True, exist_ok=True)
    text = "The staging database password rotates every Tuesday"
    journal.write_text(
        journal_text([_entry(text, 0.1, 400, "e-stale"), _entry(text, 0.95, 1, "e-fresh")]),
        encoding="utf-8",
    )


@pytest.mark.parametrize("enabled", [True, False])
def test_important_recent_entry_outranks_a_stale_trivial_one(tmp_path: Path, enabled: bool) -> None:
    _stale_and_fresh(tmp_path)
    with make(tmp_path, embedding="hash", entries={"ranking": {"enabled": enabled}}) as router:
        recalled = router.recall("staging database password")
        searched = [h for h in router.search("staging database password").results if h.entry]
        ranking = router.config.entries.ranking
    now = datetime.now(UTC).timestamp()
    fresh, stale = (entry_weight(m.entry, ranking, now=now) for m in recalled.results)
    recall_ids = [m.entry.id for m in recalled.results]
    search_ids = [h.entry.id for h in searched if h.entry]
    if enabled:
        assert recall_ids == ["e-fresh", "e-stale"]
        assert search_ids == ["e-fresh", "e-stale"]
        # The default weights: importance 0.95 and a day old against 0.1 and 400 days.
        assert fresh / stale > 1.4
        assert searched[0].score / searched[1].score == pytest.approx(fresh / stale, rel=1e-3)
        assert recalled.results[0].similarity == recalled.results[1].similarity
    else:
        # Equal text, equal score: ranking off leaves them tied (file order).
        assert recalled.results[0].score == recalled.results[1].score
        assert searched[0].score == searched[1].score
