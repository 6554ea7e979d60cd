"""Temporal decay ranks without costing recall: recency breaks near-ties, never buries.

Measured on LoCoMo redated so that each conversation ends today (``bench locomo
--redate``, docs/performance.md): a decay that takes at most a tenth of a score keeps the
answers; here, the case it is for — the same fact noted twice, the newer note first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_router import Router, testing


def day(days_ago: int) -> str:
    return (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()


NOTES = {
    # The older note is one word shorter, so BM25 puts it 5 % ahead without decay.
    f"memory/{day(200)}.md": "# Spring\n\n- Moved into a flat in Lisbon.\n",
    f"memory/{day(2)}.md": "# Autumn\n\n- Moved into a flat in Porto today.\n",
    "MEMORY.md": "# Memory\n\n- Lives alone; works from a flat most days.\n",
}


def search(tmp_path: Path, query: str, decay: bool) -> list[str]:
    workspace = testing.write_workspace(tmp_path / "ws", NOTES)
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", query={"temporal_decay": {"enabled": decay}}
    )
    with Router.from_config(config) as router:
        router.sync()
        return [h.path for h in router.search(query, min_score=0.0).results]


def test_recency_breaks_a_near_tie(tmp_path: Path) -> None:
    old, new = f"memory/{day(200)}.md", f"memory/{day(2)}.md"
    plain = search(tmp_path / "off", "which flat did I move into", decay=False)
    assert plain[:2] == [old, new]
    decayed = search(tmp_path / "on", "which flat did I move into", decay=True)
    assert decayed[:2] == [new, old]


def test_a_clearly_better_old_note_stays_first(tmp_path: Path) -> None:
    # "Lisbon" is only in the old note: its lead is far more than a tenth.
    old = f"memory/{day(200)}.md"
    assert search(tmp_path, "which flat in Lisbon did I move into", decay=True)[0] == old


def test_curated_files_are_evergreen(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "ws", NOTES)
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", query={"temporal_decay": {"enabled": True}}
    )
    with Router.from_config(config) as router:
        router.sync()
        response = router.search("flat", min_score=0.0, explain=True)
    decay = {h.path: h.explain.decay for h in response.results if h.explain}
    assert decay["MEMORY.md"] == 1.0
    assert decay[f"memory/{day(200)}.md"] < decay[f"memory/{day(2)}.md"] < 1.0
