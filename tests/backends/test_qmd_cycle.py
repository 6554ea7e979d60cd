"""The update cycle across processes and at close, against the fault-injecting fake QMD.

Each one-shot CLI command opens the backend, whose start-up cycle ran ``qmd update`` and
then killed it when the command ended, recording "qmd update crashed (signal 9)": the
next ``status`` said QMD was unavailable. Now the timer holds across processes (the last
update's time is in ``last-cycle.json``), a running update gets a moment to finish at
close, and a child the backend ends itself is never recorded as QMD's failure. A sync
that waited for a cycle whose ``embed`` hung fails at once instead of waiting again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memory_router import BackendError
from memory_router_qmd._update import CLOSE_GRACE_S
from qmd_fakes.helpers import install_fake, make_backend, snapshot_for
from qmd_fakes.processes import wait_until

WORKSPACE = {"MEMORY.md": "# Memory\n\nanswered by the fake qmd\n"}


@pytest.fixture
def workspace(write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(WORKSPACE)  # type: ignore[no-any-return]


def started(fake: Path, point: str) -> int:
    """How many calls reached ``point`` (the fake logs ``<seq> <point> <mode>``)."""
    log = fake.parent / "log"
    lines = log.read_text().splitlines() if log.is_file() else []
    return sum(1 for line in lines if line.split()[1:2] == [point])


def test_a_process_started_within_the_interval_runs_no_update_at_start(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_fake(tmp_path / "fake")
    first = make_backend(tmp_path, workspace, command=str(fake))
    try:
        assert wait_until(lambda: first.cycle.last_update is not None, 10)
    finally:
        first.close()
    assert started(fake, "update") == 1
    # The next process (a one-shot search, then status) finds the update of a moment ago.
    for _ in range(2):
        other = make_backend(tmp_path, workspace, command=str(fake))
        try:
            time.sleep(0.5)  # the start-up cycle would have begun by now
            status = other.status()
        finally:
            other.close()
        assert status.available, status.error
    assert started(fake, "update") == 1


def test_a_sync_of_files_already_indexed_starts_no_qmd_process(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_fake(tmp_path / "fake")
    first = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        assert first.sync(snapshot_for(first)).added == 1
    finally:
        first.close()
    other = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        unchanged = other.sync(snapshot_for(other))  # a CLI search's first sync
        (workspace / "memory").mkdir()
        (workspace / "memory/new.md").write_text("# New\n\na new note\n")
        changed = other.sync(snapshot_for(other))
    finally:
        other.close()
    assert "already indexed" in str(unchanged.reason)
    assert (unchanged.added, unchanged.errors) == (0, ())
    assert changed.reason != unchanged.reason
    assert started(fake, "update") == 2  # the first sync's, and the one after the edit


def test_close_lets_a_running_update_finish_and_records_no_failure(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_fake(tmp_path / "fake", behaviour="update=slow:0.6")
    backend = make_backend(tmp_path, workspace, command=str(fake))
    assert wait_until(lambda: started(fake, "update") == 1, 10)
    began = time.monotonic()
    backend.close()  # a one-shot command ends while its start-up update runs
    assert time.monotonic() - began < CLOSE_GRACE_S + 1.0
    other = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        status = other.status()
    finally:
        other.close()
    assert status.available, status.error
    assert status.details["last_update"]["status"] == "ok"


def test_an_update_killed_at_close_is_not_a_failure_of_qmd(tmp_path: Path, workspace: Path) -> None:
    fake = install_fake(tmp_path / "fake", behaviour="update=hang")
    backend = make_backend(tmp_path, workspace, command=str(fake), kill_grace_s=0.2)
    assert wait_until(lambda: (fake.parent / "update.pid").is_file(), 10)
    backend.close()
    other = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        status = other.status()
    finally:
        other.close()
    assert status.available, status.error
    assert status.details["last_update"] is None


def test_a_sync_waiting_for_a_hung_embed_fails_at_once_instead_of_waiting_again(
    tmp_path: Path, workspace: Path
) -> None:
    model = tmp_path / "embed.gguf"
    model.write_bytes(b"GGUF" + bytes(60))  # enough for the preflight: the fake reads nothing
    fake = install_fake(tmp_path / "fake", behaviour="embed=hang")
    backend = make_backend(
        tmp_path,
        workspace,
        command=str(fake),
        models={"embed": str(model)},
        embed_timeout_s=2.0,
        kill_grace_s=0.2,
    )
    try:
        # The start-up cycle's embed hangs; `index` (a sync) arrives meanwhile.
        assert wait_until(lambda: (fake.parent / "embed.pid").is_file(), 10)
        began = time.monotonic()
        with pytest.raises(BackendError, match="embed did not finish within 2 s"):
            backend.sync(snapshot_for(backend))
        waited = time.monotonic() - began
    finally:
        backend.close()
    assert waited < 2.0 + 0.2 + 1.5  # what was left of one embed timeout, not a second one
    assert started(fake, "embed") == 1
