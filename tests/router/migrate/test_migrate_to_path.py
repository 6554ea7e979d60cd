"""``migrate --to-path``: an index file as the target, written, resumed and read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router import InvalidInput, Progress, Router
from memory_router.testing import write_workspace
from migrate_support import CountingEmbedder, config_for, corpus, live_path, make_router, rows


class Interrupt(Exception):
    pass


def stop_at(done_at: int) -> Progress:
    def progress(*, done: int, total: int, label: str) -> None:
        if label == "migrating" and done >= done_at:
            raise Interrupt

    return progress


@pytest.fixture
def router(tmp_path: Path) -> Router:
    workspace = write_workspace(tmp_path / "workspace", corpus(25))
    with make_router(config_for(tmp_path, workspace, "live")) as router:
        router.sync()
        CountingEmbedder.calls.clear()
        yield router


def test_an_index_file_target_gets_every_vector_and_reads_back(
    router: Router, tmp_path: Path
) -> None:
    backup = tmp_path / "backup" / "memory.sqlite"
    report = router.migrate(source="sqlite", target_path=backup, batch_size=4)
    assert (report.mode, report.written, report.embedded) == ("reuse", 25, 0)
    assert report.target == f"file:{backup.resolve()}"
    assert CountingEmbedder.calls == []
    assert rows(backup) == rows(live_path(router))  # ids, texts and vector bytes
    # Symmetric with --from-path: the file migrates into another index as it is.
    workspace = Path(router.config.workspace)
    with make_router(config_for(tmp_path, workspace, "other")) as other:
        back = other.migrate("sqlite", source_path=backup)
        assert (back.mode, back.embedded) == ("reuse", 0)
        assert rows(live_path(other)) == rows(backup)
    assert CountingEmbedder.calls == []


def test_a_killed_migration_into_a_file_resumes(router: Router, tmp_path: Path) -> None:
    backup = tmp_path / "backup.sqlite"
    with pytest.raises(Interrupt):
        router.migrate(source="sqlite", target_path=backup, batch_size=5, progress=stop_at(10))
    assert not backup.exists() or rows(backup) == {}  # the copy is beside it until complete
    report = router.migrate(source="sqlite", target_path=backup, batch_size=5, resume=True)
    assert (report.resumed, report.skipped, report.written) == (True, 10, 15)
    assert rows(backup) == rows(live_path(router))


def test_bad_targets_are_refused(router: Router, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="is a folder"):
        router.migrate(source="sqlite", target_path=tmp_path)
    with pytest.raises(InvalidInput, match="not both or neither"):
        router.migrate("elsewhere", source="sqlite", target_path=tmp_path / "x.sqlite")
    same = tmp_path / "same.sqlite"
    with pytest.raises(InvalidInput, match="source and target are the same"):
        router.migrate(source_path=same, target_path=same)
