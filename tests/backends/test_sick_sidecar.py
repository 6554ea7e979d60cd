"""The three reproductions of a sick sidecar, as a user meets them through the CLI.

QMD is a shell script that hangs on every call (its ``sleep`` is a grandchild of the
router). Timeouts are short so each test takes seconds: search answers from SQLite within
the deadline, ``index`` reports QMD and still builds SQLite, and no child outlives a CLI
process ended by SIGTERM, SIGINT or SIGKILL, mid-update or mid-query.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from qmd_fakes.helpers import install_fake
from qmd_fakes.processes import (
    alive,
    cli,
    fast_fail_config,
    install_hanging_qmd,
    signal_another_thread,
    started_pids,
    wait_until,
)

pytestmark = pytest.mark.slow

NOTES = {
    "MEMORY.md": "# Memory\nGreen tea in the morning.\n",
    "memory/2026-11-03.md": "# Zoo\nThe keeper's code word is zebra-quartz-42.\n",
}


@pytest.fixture
def workspace(write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(NOTES)  # type: ignore[no-any-return]


def test_search_answers_from_sqlite_while_qmd_hangs_on_every_call(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_hanging_qmd(tmp_path / "fake")
    config = fast_fail_config(tmp_path, workspace, fake)
    started = time.monotonic()
    process = cli(config, "search", "--json", "zebra-quartz-42")
    out, err = process.communicate(timeout=60)
    elapsed = time.monotonic() - started
    assert process.returncode == 0, err
    answer = json.loads(out)
    assert answer["backend"] == "sqlite"
    assert answer["results"][0]["path"] == "memory/2026-11-03.md"
    assert answer["fallback"]["from"] == "qmd"
    assert "within" in answer["fallback"]["reason"]
    # timeout_s (2) for QMD, then SQLite's own time: far from the 120 s of a blocking update.
    assert elapsed < 20
    assert wait_until(lambda: not any(alive(p) for p in started_pids(fake)), 5)


def test_index_reports_the_hung_sidecar_and_builds_the_fallback(
    tmp_path: Path, workspace: Path
) -> None:
    fake = install_hanging_qmd(tmp_path / "fake")
    config = fast_fail_config(tmp_path, workspace, fake)
    started = time.monotonic()
    process = cli(config, "index", "--json")
    out, err = process.communicate(timeout=60)
    elapsed = time.monotonic() - started
    assert process.returncode == 1
    reports = {r["backend"]: r for r in json.loads(out)}
    assert "within 1 s" in reports["qmd"]["errors"][0]
    assert reports["sqlite"]["errors"] == []
    assert reports["sqlite"]["added"] == 2
    assert "Error: qmd: qmd update" in err
    assert "(after " in err
    # One update timeout, not one per queued update cycle (was 2 × 120 s).
    assert elapsed < 15
    assert wait_until(lambda: not any(alive(p) for p in started_pids(fake)), 5)


@pytest.mark.parametrize(
    ("command", "point", "sig", "to_thread"),
    [
        (("index",), "update", signal.SIGTERM, False),
        (("index",), "update", signal.SIGKILL, False),
        (("index",), "update", signal.SIGINT, True),
        (("search", "green tea"), "mcp-request", signal.SIGINT, False),
        (("search", "green tea"), "mcp-request", signal.SIGINT, True),
        (("search", "green tea"), "mcp-request", signal.SIGKILL, False),
    ],
    ids=[
        "mid-update-SIGTERM",
        "mid-update-SIGKILL",
        "mid-update-SIGINT-to-a-thread",
        "mid-query-SIGINT",
        "mid-query-SIGINT-to-a-thread",
        "mid-query-SIGKILL",
    ],
)
def test_no_child_survives_the_cli_process(
    tmp_path: Path,
    workspace: Path,
    sig: signal.Signals,
    command: tuple[str, ...],
    point: str,
    to_thread: bool,
) -> None:
    # ``to_thread``: the signal reaches a thread other than the main one, as Linux may
    # deliver it (CI once saw a Ctrl-C ignored for the 60 s of a hung query); the main
    # thread must still act on it at once, not when its wait for the sidecar ends.
    fake = install_fake(tmp_path / "fake", behaviour=f"{point}=hang")
    config = fast_fail_config(
        tmp_path,
        workspace,
        fake,
        update_timeout_s=60.0,
        search_timeout_s=60.0,
        command_timeout_s=30.0,  # a loaded machine must not fail the start instead
    )
    text = config.read_text().replace("timeout_s = 2\n", "timeout_s = 60\n", 1)
    config.write_text(text.replace("[router]\n", "[router]\nsync_wait_s = 0\n"))
    process = cli(config, *command)
    pid_file = fake.parent / f"{point}.pid"
    try:
        # (the fake writes its pid after creating the file: wait for the number)
        assert wait_until(lambda: pid_file.is_file() and pid_file.read_text().strip(), 30), (
            f"qmd {point} was never called"
        )
        child = int(pid_file.read_text())
        assert alive(child)
        if to_thread:
            signal_another_thread(process.pid, sig)
        else:
            process.send_signal(sig)
        _, err = process.communicate(timeout=30)
        if sig == signal.SIGINT:
            assert process.returncode == 130, err
            assert "Interrupted." in err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert wait_until(lambda: not any(alive(p) for p in started_pids(fake)), 5)


def test_status_says_a_backend_with_an_open_breaker_is_skipped_and_why(
    tmp_path: Path, workspace: Path
) -> None:
    # `status` used to say `Backend qmd: available` next to `Breakers: qmd open`, with
    # the sidecar's `last_error: None` (a new process has not seen the failure).
    fake = install_fake(tmp_path / "fake", behaviour="mcp-request=crash")
    config = fast_fail_config(tmp_path, workspace, fake, update_on_boot=False)
    for _ in range(3):  # the failure threshold
        out, err = cli(config, "search", "--json", "zebra-quartz-42").communicate(timeout=60)
        assert json.loads(out)["backend"] == "sqlite", err
    process = cli(config, "status")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Backend qmd: skipped by searches (breaker open)" in out
    assert "  Last failure: qmd mcp" in out
    assert "Backend qmd: available" not in out


def test_doctor_fix_stops_at_the_first_hung_qmd_call(tmp_path: Path, workspace: Path) -> None:
    # Against a QMD that hangs on every call, `doctor --fix` asked `qmd --version` (30 s),
    # waited for the start-up `qmd update` (120 s), then asked `--version` again (30 s):
    # 2.5 minutes to say that QMD hangs.
    fake = install_fake(tmp_path / "fake", behaviour="*=hang")
    config = fast_fail_config(
        tmp_path, workspace, fake, command_timeout_s=5.0, update_timeout_s=60.0
    )
    started = time.monotonic()
    process = cli(config, "doctor", "--fix")
    out, err = process.communicate(timeout=300)
    elapsed = time.monotonic() - started
    assert process.returncode == 1, err
    lines = out.splitlines()
    [check] = [line for line in lines if line.startswith("✗ backend qmd: ")]
    assert "QMD hung" in check
    assert "qmd --version did not finish within 5 s (killed)" in check
    fix = lines[lines.index(check) + 1]
    assert fix.startswith("    fix: QMD does not answer: run `")
    assert "could not repair qmd" not in out  # a sync would only hang again
    assert "Fixed: repaired sqlite" in out  # the other backend is not held up
    assert "✓ backend sqlite" in out
    points = [line.split()[1] for line in (fake.parent / "log").read_text().splitlines()]
    assert points.count("version") == 1  # asked once: the answer is known after that
    assert elapsed < 45.0  # one hung call (5 s), not the 60 s update budget on top
    assert wait_until(lambda: not any(alive(p) for p in started_pids(fake)), 5)
