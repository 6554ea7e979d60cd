"""Both index-building backends end a sync the same way (``rebuild_reason``, ``SyncTally``):
the same reasons, the same counts, for the same workspace and the same changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, SyncReport, testing

FILES = {f"memory/note-{i}.md": f"# Note {i}\n\nfact number {i} about topic{i}\n" for i in range(6)}

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "lancedb"])


def sync(tmp_path: Path, backend: str, *, force: bool = False, **tables: Any) -> SyncReport:
    workspace = tmp_path / "ws"
    if not workspace.exists():
        testing.write_workspace(workspace, FILES)
    tables.setdefault("embedding", "hash")
    config = testing.router_config(tmp_path, workspace, backend=backend, **tables)
    with Router.from_config(config, plugins=[testing]) as router:
        (report,) = router.sync(force=force)
    assert not report.errors, report.errors
    return report


def counts(report: SyncReport) -> tuple[int, int, int, int]:
    return (report.added, report.updated, report.removed, report.unchanged)


def test_a_new_index_then_an_unchanged_one(tmp_path: Path, backend: str) -> None:
    first = sync(tmp_path, backend)
    assert (first.full_rebuild, first.reason, counts(first)) == (True, "no index yet", (6, 0, 0, 0))
    assert (first.chunks, first.embedded, first.cache_hits) == (6, 6, 0)
    assert first.duration_ms > 0
    second = sync(tmp_path, backend)
    assert (second.full_rebuild, second.reason, counts(second)) == (False, None, (0, 0, 0, 6))
    assert (second.chunks, second.embedded, second.cache_hits) == (6, 0, 0)


def test_a_fingerprint_change_and_force_rebuild_with_their_reason(
    tmp_path: Path, backend: str
) -> None:
    sync(tmp_path, backend)
    (tmp_path / "ws/memory/note-0.md").unlink()
    changed = sync(tmp_path, backend, chunking={"tokens": 100, "overlap": 40})
    assert (changed.full_rebuild, changed.reason) == (True, "fingerprint changed: chunkTokens")
    # every file of the snapshot added, the one the old index had and the snapshot lacks removed
    assert counts(changed) == (5, 0, 1, 0)
    assert (changed.embedded, changed.cache_hits) == (0, 5)  # same texts: the cache answers
    forced = sync(tmp_path, backend, force=True, chunking={"tokens": 100, "overlap": 40})
    assert (forced.full_rebuild, forced.reason, counts(forced)) == (True, "forced", (5, 0, 0, 0))


def test_keyword_only_indexes_are_not_rebuilt_for_an_unknown_vector_size(
    tmp_path: Path, backend: str
) -> None:
    first = sync(tmp_path, backend, embedding="none")
    assert (first.full_rebuild, first.embedded) == (True, 0)
    again = sync(tmp_path, backend, embedding="none")
    assert (again.full_rebuild, again.reason, counts(again)) == (False, None, (0, 0, 0, 6))
