"""Faults are answered, not suffered: a fake ``qmd`` that crashes, hangs, prints garbage
or answers slowly gives a clear backend error within its deadline; the router answers
from SQLite meanwhile and goes back to QMD once the fake behaves again."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory_router import BackendError, BackendTimeout, BackendUnavailable
from memory_router.kit import SearchRequest
from memory_router_qmd._update import CLOSE_GRACE_S
from qmd_fakes.helpers import install_fake, make_backend, make_router, set_behaviour, snapshot_for
from qmd_fakes.processes import running_from, wait_until

TIMEOUT = 1.5
GRACE = 0.5
SLACK = 2.0
WORKSPACE = {
    "MEMORY.md": "# Memory\n\nanswered by the fake qmd\nGreen tea in the morning.\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon.\n",
}

FAULTS = [
    ("crash", BackendUnavailable, ("crashed", "exited")),
    ("die-mid-answer", BackendUnavailable, ("crashed", "exited")),
    ("hang", BackendTimeout, ("within",)),
    ("garbage", BackendUnavailable, ("JSON",)),
    ("slow:30", BackendTimeout, ("within",)),
]


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    return install_fake(tmp_path / "fake")


@pytest.fixture
def workspace(tmp_path: Path, write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(WORKSPACE)  # type: ignore[no-any-return]


def request(query: str = "green tea") -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10)


@pytest.mark.parametrize("use_mcp", [True, False], ids=["mcp", "cli"])
def test_healthy_fake_answers_with_mapped_hit(
    tmp_path: Path, fake: Path, workspace: Path, use_mcp: bool
) -> None:
    backend = make_backend(
        tmp_path, workspace, command=str(fake), use_mcp=use_mcp, update_on_boot=False
    )
    try:
        result = backend.search(request())
    finally:
        backend.close()
    # The fake cites lines 1-2, which miss "green tea": the backend cites the file's lines.
    assert [(h.path, h.start_line, h.end_line) for h in result.hits] == [("MEMORY.md", 1, 4)]
    assert result.hits[0].snippet.endswith("Green tea in the morning.")
    assert result.hits[0].score > 0.9
    assert result.hits[0].backend == "qmd"
    assert result.mode == "search"


def test_a_deleted_file_keeps_qmds_lines(tmp_path: Path, fake: Path, workspace: Path) -> None:
    (workspace / "MEMORY.md").unlink()  # gone since QMD indexed it
    backend = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        result = backend.search(request("answered fake"))
    finally:
        backend.close()
    assert [(h.path, h.start_line, h.end_line) for h in result.hits] == [("MEMORY.md", 1, 2)]
    assert result.hits[0].snippet == "# Memory\nanswered by the fake qmd"
    assert result.hits[0].score > 0.9  # scored on the lines QMD cited


@pytest.mark.slow
@pytest.mark.parametrize("use_mcp", [True, False], ids=["mcp", "cli"])
@pytest.mark.parametrize(("behaviour", "error", "words"), FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_is_a_clear_error_within_the_deadline(
    tmp_path: Path,
    fake: Path,
    workspace: Path,
    use_mcp: bool,
    behaviour: str,
    error: type[BackendError],
    words: tuple[str, ...],
) -> None:
    backend = make_backend(
        tmp_path,
        workspace,
        command=str(fake),
        use_mcp=use_mcp,
        update_on_boot=False,
        search_timeout_s=TIMEOUT,
        kill_grace_s=GRACE,
    )
    set_behaviour(fake, behaviour)
    started = time.monotonic()
    try:
        with pytest.raises(error) as raised:
            backend.search(request())
        elapsed = time.monotonic() - started
    finally:
        backend.close()
    assert elapsed < TIMEOUT + GRACE + SLACK
    assert raised.value.backend == "qmd"
    assert any(word in raised.value.message for word in words), raised.value.message
    if behaviour == "hang":  # SIGTERM was ignored, so SIGKILL must have reaped the group
        # (On a loaded machine the fake may be killed before it reaches the query point
        # and writes ``calls``: then no fake process may be left either.)
        calls = fake.parent / "calls"
        pids = (
            [int(line.split()[0]) for line in calls.read_text().splitlines()]
            if calls.exists()
            else []
        )
        time.sleep(0.2)
        assert all(not _alive(pid) for pid in pids)
        assert running_from(fake.parent) == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("use_mcp", [True, False], ids=["mcp", "cli"])
def test_router_falls_back_to_sqlite_then_qmd_serves_again(
    tmp_path: Path, fake: Path, workspace: Path, use_mcp: bool
) -> None:
    set_behaviour(fake, "crash")
    with make_router(
        tmp_path,
        workspace,
        cooldown_s=2.5,
        command=str(fake),
        use_mcp=use_mcp,
        update_on_boot=False,
        # Nothing here hangs, so no call waits for this: it is room for a loaded machine
        # to start the fake (with TIMEOUT, a CLI query timed out before it crashed).
        search_timeout_s=15.0,
        kill_grace_s=GRACE,
    ) as router:
        first = router.search("Lisbon flights", min_score=0.0)
        assert first.backend == "sqlite"
        assert first.fallback is not None
        assert first.fallback.from_ == "qmd"
        assert "crashed" in first.fallback.reason or "exited" in first.fallback.reason
        assert any(h.path == "memory/2026-11-01.md" for h in first.results)
        # The breaker is open: QMD is not even asked while it cools down.
        calls = (fake.parent / "calls").read_text().count("\n")
        second = router.search("Lisbon flights", min_score=0.0)
        assert second.backend == "sqlite"
        assert "circuit open" in second.fallback.reason  # type: ignore[union-attr]
        assert (fake.parent / "calls").read_text().count("\n") == calls
        assert router.status().breakers["qmd"].state == "open"

        set_behaviour(fake, "ok")
        time.sleep(2.6)
        third = router.search("green tea", min_score=0.0)
        assert third.backend == "qmd"
        assert third.fallback is None
        assert third.results[0].path == "MEMORY.md"
        assert router.status().breakers["qmd"].state == "closed"


@pytest.mark.slow
def test_mcp_sidecar_restarts_after_crash_and_reports_it(
    tmp_path: Path, fake: Path, workspace: Path
) -> None:
    backend = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        assert backend.search(request()).hits
        first_pid = backend.sidecar.pid
        set_behaviour(fake, "crash")
        with pytest.raises(BackendUnavailable):
            backend.search(request())
        # Within the restart backoff the sidecar is not respawned at every query.
        with pytest.raises(BackendUnavailable, match="next restart in"):
            backend.search(request())
        down = backend.status()
        assert not down.available
        assert "next restart in" in str(down.error)
        set_behaviour(fake, "ok")
        time.sleep(1.1)
        assert backend.search(request()).hits
        sidecar = backend.status().details["sidecar"]
    finally:
        backend.close()
    assert sidecar["crashes"] == 1
    assert sidecar["restarts"] == 1
    assert sidecar["pid"] not in (None, first_pid)
    assert "139" in sidecar["last_error"]


def test_child_environment_is_fixed_and_isolated(
    tmp_path: Path, fake: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("SOME_SECRET_TOKEN", "x" * 20)
    backend = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        report = backend.sync(snapshot_for(backend))
    finally:
        backend.close()
    seen = json.loads((fake.parent / "update.json").read_text())
    env, state = seen["env"], tmp_path / "state" / "qmd"
    assert "CI" not in env
    assert "SOME_SECRET_TOKEN" not in env
    assert env["NO_COLOR"] == "1"
    assert env["QMD_FORCE_CPU"] == "1"
    assert env["XDG_CACHE_HOME"] == str(state / "cache")
    assert env["XDG_CONFIG_HOME"] == str(state / "config")
    assert env["PWD"] == seen["cwd"] == str(state / "run")
    assert seen["argv"][1:] == ["--index", "memrouter", "update"]
    assert (report.added, report.errors) == (1, ())


def test_update_that_hangs_is_killed_and_reported(tmp_path: Path, workspace: Path) -> None:
    fake = install_fake(tmp_path / "fake", behaviour="update=hang")
    backend = make_backend(
        tmp_path,
        workspace,
        command=str(fake),
        update_on_boot=False,
        update_timeout_s=1.0,
        kill_grace_s=GRACE,
    )
    started = time.monotonic()
    try:
        with pytest.raises(BackendError, match="update"):
            backend.sync(snapshot_for(backend))
        status = backend.status().details["last_update"]
    finally:
        backend.close()
    assert time.monotonic() - started < 1.0 + GRACE + SLACK
    assert status["status"] == "failed"
    assert "within 1 s" in status["error"]


@pytest.mark.slow
def test_a_sync_right_after_a_hung_call_fails_at_once_without_asking_qmd_again(
    tmp_path: Path, workspace: Path
) -> None:
    # An explicit sync ignored the failure backoff: after a `qmd update` hung for its whole
    # timeout, the next sync (the watcher's, `doctor --fix`'s) and `status --deep`'s
    # `qmd --version` each waited out a timeout of their own on the same hung QMD.
    fake = install_fake(tmp_path / "fake", behaviour="update=hang\nversion=hang")
    backend = make_backend(
        tmp_path,
        workspace,
        command=str(fake),
        update_on_boot=False,
        update_timeout_s=5.0,
        command_timeout_s=5.0,
        failure_backoff_s=3.0,
        kill_grace_s=GRACE,
    )
    try:
        snapshot = snapshot_for(backend)
        with pytest.raises(BackendError, match="within 5 s"):
            backend.sync(snapshot)
        with pytest.raises(BackendError) as again:
            backend.sync(snapshot)
        status = backend.status(deep=True)
        points = [line.split()[1] for line in (fake.parent / "log").read_text().splitlines()]
        set_behaviour(fake, "ok")
        time.sleep(3.0)  # failure_backoff_s: then QMD is asked again
        report = backend.sync(snapshot)
    finally:
        backend.close()
    assert again.value.message.startswith("qmd update not started: QMD hung")
    assert again.value.message.endswith("qmd update did not finish within 5 s (killed)")
    assert points == ["update"]  # neither a second update nor a --version
    assert not status.available
    assert status.error == "qmd update failed: qmd update did not finish within 5 s (killed)"
    assert status.details["version"] is None  # not asked: it would hang too
    assert status.details["hint"].startswith("QMD does not answer: run `")
    assert report.added == 1


def test_router_without_qmd_installed_answers_from_sqlite_and_says_why(
    tmp_path: Path, workspace: Path
) -> None:
    missing = tmp_path / "nowhere" / "qmd.js"
    with make_router(tmp_path, workspace, command=str(missing)) as router:
        response = router.search("Lisbon flights", min_score=0.0)
        status = router.status().backends[0]
    assert response.backend == "sqlite"
    assert response.fallback is not None
    assert f"{missing}' does not exist" in response.fallback.reason
    assert not status.available
    assert "does not exist" in str(status.error)


def test_starting_never_rewrites_the_index_yaml_only_sync_does(
    tmp_path: Path, fake: Path, write_workspace
) -> None:  # type: ignore[no-untyped-def]
    workspace = write_workspace({"MEMORY.md": "# Memory\n"})
    first = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    first.sync(snapshot_for(first))
    first.close()
    yaml = tmp_path / "state/qmd/config/qmd/memrouter.yml"
    before = yaml.read_text()
    write_workspace({"memory/new.md": "# New\n"})
    second = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        assert yaml.read_text() == before  # a start (maybe for a search) changes nothing
        names = [c["name"] for c in second.status().details["collections"]]
        assert names == ["memory-root"]
        second.sync(snapshot_for(second))
        names = [c["name"] for c in second.status().details["collections"]]
    finally:
        second.close()
    assert names == ["memory-root", "memory-dir"]
    assert '"memory-dir"' in yaml.read_text()


def test_close_kills_a_running_background_update(tmp_path: Path, workspace: Path) -> None:
    fake = install_fake(tmp_path / "fake", behaviour="update=hang")
    backend = make_backend(tmp_path, workspace, command=str(fake), update_timeout_s=60.0)
    pid_file = fake.parent / "update.pid"
    deadline = time.monotonic() + 10
    while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the fake creates the file, then writes its pid
    pid = int(pid_file.read_text())
    started = time.monotonic()
    backend.close()
    # A running update gets CLOSE_GRACE_S to finish (this one never does), then is killed.
    assert time.monotonic() - started < CLOSE_GRACE_S + 3.0
    time.sleep(0.1)
    assert not _alive(pid)
    # The router ended it: not QMD's failure, so nothing says QMD is unavailable.
    assert backend.status().details["last_update"] is None
    again = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    try:
        status = again.status()
    finally:
        again.close()
    assert status.available, status.error


class _Interrupt(BaseException):
    """Stands in for KeyboardInterrupt (pytest treats the real one as an abort)."""


def test_an_interrupted_update_leaves_no_qmd_running(tmp_path: Path, workspace: Path) -> None:
    import signal

    fake = install_fake(tmp_path / "fake", behaviour="update=hang")
    backend = make_backend(
        tmp_path,
        workspace,
        command=str(fake),
        update_on_boot=False,
        update_timeout_s=60.0,
        kill_grace_s=GRACE,
    )
    snapshot = snapshot_for(backend)

    def interrupt(*_: object) -> None:
        raise _Interrupt()

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(_Interrupt):
            backend.sync(snapshot)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        backend.close()
    # On a loaded machine the interrupt may come before the fake reaches ``update`` and
    # writes its pid: then no fake process may be left either.
    gone = wait_until(lambda: not running_from(fake.parent), GRACE + SLACK)
    assert gone, f"qmd is still running after the interrupt: {running_from(fake.parent)}"
    pid_file = fake.parent / "update.pid"
    if pid_file.exists():
        assert not _alive(int(pid_file.read_text()))


def test_a_sync_that_cannot_write_its_config_is_a_backend_error(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_fake(tmp_path / "fake")
    backend = make_backend(tmp_path, workspace, command=str(fake), update_on_boot=False)
    snapshot = snapshot_for(backend)
    config_path = backend.runner.config_path
    if config_path.exists():
        config_path.unlink()
    config_path.mkdir(parents=True)  # a folder where the YAML must go: writing fails
    try:
        with pytest.raises(BackendError, match="index configuration"):
            backend.sync(snapshot)
    finally:
        backend.close()
