"""The fault-injecting fake QMD in each of its modes, at each of its points, behind a chain.

Whatever QMD does (crash, hang, garbage, a slow answer, death in the middle of a JSON-RPC
reply) at whichever call (the MCP child's start, an MCP request, a CLI query, ``update``),
``chain = ["qmd", "sqlite"]`` answers from SQLite with the reason recorded; once the
faults stop, QMD answers again within one breaker cooldown.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, load_config
from qmd_fakes.helpers import install_fake, set_chaos
from qmd_fakes.processes import alive, running_from, wait_until

pytestmark = pytest.mark.slow

MODES = ["crash", "die-mid-answer", "hang", "garbage", "slow:30"]
# Every mode on an MCP request; the quick ones on a CLI query; start faults that hang or lie.
CASES = [
    *(("mcp-request", mode) for mode in MODES),
    *(("query", mode) for mode in ("crash", "die-mid-answer", "garbage")),
    *(("mcp-start", mode) for mode in ("hang", "garbage")),
]
WORKSPACE = {
    "MEMORY.md": "# Memory\n\nanswered by the fake qmd\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon.\n",
}


@pytest.fixture
def workspace(write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(WORKSPACE)  # type: ignore[no-any-return]


def chain_router(tmp_path: Path, workspace: Path, fake: Path, **qmd: Any) -> Router:
    cooldown = qmd.pop("cooldown_s", 30.0)
    deadline = qmd.pop("deadline_s", 4.0)
    settings = {
        "command": str(fake),
        "search_timeout_s": 1.0,
        "command_timeout_s": 3.0,  # starting two Pythons on a loaded machine
        "update_timeout_s": 1.0,
        "kill_grace_s": 0.1,
        "update_on_boot": False,
        "update_interval_s": 0,
        "documents": "files",  # the fake answers with files-mode collections
        **qmd,
    }
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(workspace),
            "state_dir": str(tmp_path / "state"),
            "embedding": {"provider": "none"},
            "query": {"min_score": 0.0},
            "router": {
                "chain": ["qmd", "sqlite"],
                "timeout_s": deadline,
                "breaker": {"cooldown_s": cooldown},
            },
            "backends": {"qmd": settings},
        },
    )
    return Router.from_config(config)


def timed_fallback(router: Router) -> tuple[str, float]:
    """Sync SQLite and search once; SQLite answers: QMD's reason and the search's seconds."""
    router.sync(backends=["sqlite"])
    started = time.monotonic()
    answer = router.search("Lisbon flights")
    elapsed = time.monotonic() - started
    assert answer.backend == "sqlite"
    assert answer.attempts[0].from_ == "qmd"
    return answer.attempts[0].reason, elapsed


@pytest.mark.parametrize(("point", "mode"), CASES, ids=[f"{p}-{m}" for p, m in CASES])
def test_every_fault_at_every_query_point_falls_back_with_a_reason(
    tmp_path: Path, workspace: Path, point: str, mode: str
) -> None:
    use_mcp = point != "query"
    fake = install_fake(tmp_path / "fake", behaviour=f"{point}={mode}")
    # Only a hang waits for the deadline. Other faults answer the moment the fake reaches
    # its point, so they get budgets a loaded machine cannot miss (under a load of 16 a
    # 4 s deadline ran out while the fake was still starting, before it reached the point;
    # the start counts against the search's own timeout too).
    roomy = {"deadline_s": 20.0, "command_timeout_s": 15.0, "search_timeout_s": 15.0}
    budget = {} if mode == "hang" else roomy
    with chain_router(tmp_path, workspace, fake, use_mcp=use_mcp, **budget) as router:
        router.sync(backends=["sqlite"])
        started = time.monotonic()
        response = router.search("Lisbon flights")
        elapsed = time.monotonic() - started
    assert response.backend == "sqlite"
    assert response.results[0].path == "memory/2026-11-01.md"
    assert response.fallback is not None
    assert response.fallback.from_ == "qmd"
    assert response.fallback.reason
    assert elapsed < budget.get("deadline_s", 4.0) + 3.0  # the deadline, plus SQLite
    log = (fake.parent / "log").read_text().split("\n")
    assert any(line.endswith(f"{point} {mode}") for line in log)


@pytest.mark.parametrize("mode", ["crash", "hang", "garbage"])
def test_a_failing_background_update_hands_the_next_query_to_sqlite(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    fake = install_fake(tmp_path / "fake", behaviour=f"update={mode}")
    with chain_router(tmp_path, workspace, fake) as router:
        router.sync(backends=["sqlite"])
        first = router.search("Lisbon flights")
        assert first.backend == "qmd"  # it answers from the index it has
        # The first sync of a process only checks: no "may be stale" note for it.
        assert not any("stale" in note for note in first.notes)
        deadline = time.monotonic() + 10
        answers = [first]
        while answers[-1].backend == "qmd" and time.monotonic() < deadline:
            time.sleep(0.1)
            answers.append(router.search("Lisbon flights"))
    last = answers[-1]
    if mode == "garbage":  # exit 0 with nonsense: QMD keeps serving, nothing to fail
        assert last.backend == "qmd"
        return
    assert last.backend == "sqlite"
    assert "index sync failed: qmd update" in last.fallback.reason  # type: ignore[union-attr]


def test_qmd_answers_again_within_one_cooldown_after_faults_stop(
    tmp_path: Path, workspace: Path
) -> None:
    cooldown = 1.0
    fake = install_fake(tmp_path / "fake")
    set_chaos(fake, seed=1, rate=1.0, faults=["crash"], points=["mcp-start", "mcp-request"])
    with chain_router(tmp_path, workspace, fake, cooldown_s=cooldown) as router:
        router.sync(backends=["sqlite"])
        until = time.monotonic() + 5 * cooldown  # several failed probes: backoff would grow
        while time.monotonic() < until:
            assert router.search("Lisbon flights").backend == "sqlite"
            time.sleep(0.05)
        assert router.breakers()["qmd"].state in ("open", "half-open")
        set_chaos(fake, seed=1, rate=0.0, faults=["crash"])
        stopped = time.monotonic()
        while router.search("green tea").backend != "qmd":
            assert time.monotonic() - stopped < cooldown + 1.5, "QMD did not come back"
            time.sleep(0.05)
        assert router.breakers()["qmd"].state == "closed"
        sidecar = router.status().backends[0].details["sidecar"]
    assert sidecar["crashes"] + sidecar["starts"] > 2


def test_the_same_seed_gives_the_same_faults(tmp_path: Path) -> None:
    runs = []
    for attempt in range(2):
        fake = install_fake(tmp_path / f"fake-{attempt}")
        set_chaos(fake, seed=42, rate=0.5, faults=["crash", "garbage"])
        for _ in range(12):
            subprocess.run([str(fake), "--version"], capture_output=True, timeout=30, check=False)
        runs.append([line.split()[2] for line in (fake.parent / "log").read_text().splitlines()])
    assert runs[0] == runs[1]
    assert {"crash", "garbage", "ok"} <= set(runs[0])


def test_fixed_modes_win_over_chaos(tmp_path: Path) -> None:
    fake = install_fake(tmp_path / "fake", behaviour="version=ok\n*=crash")
    set_chaos(fake, seed=1, rate=1.0, faults=["garbage"])
    version = subprocess.run([str(fake), "--version"], capture_output=True, text=True, timeout=30)
    update = subprocess.run([str(fake), "update"], capture_output=True, text=True, timeout=30)
    assert (version.returncode, version.stdout.strip()) == (0, "qmd 2.8.3 (fake)")
    assert update.returncode == 139
    assert (fake.parent / "log").read_text().split()[1::3] == ["version", "update"]


def test_closing_during_a_hung_sidecar_start_does_not_wait_for_its_start_budget(
    tmp_path: Path, workspace: Path
) -> None:
    # The CLI printed its fallback answer at once but its process lived on for the whole
    # `initialize` budget: close() queued behind the start that held the sidecar's lock.
    fake = install_fake(tmp_path / "fake", behaviour="mcp-start=hang")
    router = chain_router(tmp_path, workspace, fake, use_mcp=True, command_timeout_s=60.0)
    router.sync(backends=["sqlite"])
    assert router.search("Lisbon flights").backend == "sqlite"
    started = time.monotonic()
    router.close()
    assert time.monotonic() - started < 30.0  # half the start budget: no wait on it


def test_closing_with_a_query_the_sidecar_never_answered_kills_it_at_once(
    tmp_path: Path, workspace: Path
) -> None:
    # The router gave up on the hung query at its deadline; the child still owes the
    # answer and ignores SIGTERM. Closing used to wait for stdin EOF (2 s) and then the
    # whole ``kill_grace_s`` (here 60 s) before its SIGKILL: the CLI lingered after its
    # fallback answer.
    fake = install_fake(tmp_path / "fake", behaviour="mcp-request=hang")
    router = chain_router(
        tmp_path, workspace, fake, use_mcp=True, search_timeout_s=60.0, kill_grace_s=60.0
    )
    reason, _ = timed_fallback(router)
    assert "no answer within" in reason
    hung = int((fake.parent / "mcp-request.pid").read_text())
    started = time.monotonic()
    router.close()
    assert time.monotonic() - started < 30.0  # half the kill grace: not waited for
    assert not alive(hung)


def test_a_hung_sidecar_start_costs_the_search_budget_not_the_start_budget(
    tmp_path: Path, workspace: Path
) -> None:
    # An operator's hung `qmd mcp` made every search wait the 30 s `command_timeout_s` of
    # the start-up handshake, not its 10 s `search_timeout_s`. The start may go on in the
    # background, but only for its own budget: then it is killed (never orphaned).
    fake = install_fake(tmp_path / "fake", behaviour="mcp-start=hang")
    router = chain_router(
        tmp_path, workspace, fake, use_mcp=True, command_timeout_s=20.0, deadline_s=90.0
    )
    with router:
        reason, elapsed = timed_fallback(router)
        assert "did not answer its start-up handshake within" in reason
        assert elapsed < 15.0  # the 1 s search budget plus a margin, not the 20 s start
        pid_file = fake.parent / "mcp-start.pid"
        assert wait_until(pid_file.exists, 30.0)
        hung = int(pid_file.read_text())
        assert wait_until(lambda: not alive(hung), 60.0)  # killed at its start budget
        sidecar = router.backend("qmd").status().details["sidecar"]
        assert "handshake within 20 s (sidecar killed)" in sidecar["last_error"]
    assert running_from(fake.parent) == []


HUNG_QUERIES = [
    ("mcp-request", "qmd mcp tools/call gave no answer within 10 s (sidecar killed)"),
    ("query", "qmd query did not finish within 10 s (killed in the background)"),
]


@pytest.mark.parametrize(("point", "reason_given"), HUNG_QUERIES, ids=["mcp", "one-shot"])
def test_a_hung_query_falls_back_without_waiting_for_the_kill_grace(
    tmp_path: Path, workspace: Path, point: str, reason_given: str
) -> None:
    # A `kill -STOP`ped sidecar, or with `use_mcp = false` a `qmd query` (SIGTERM has no
    # effect on either), made the search wait its timeout and then the whole
    # `kill_grace_s` before SQLite could answer.
    fake = install_fake(tmp_path / "fake", behaviour=f"{point}=hang")
    router = chain_router(
        tmp_path,
        workspace,
        fake,
        use_mcp=point != "query",
        search_timeout_s=10.0,  # the fake's start, on a loaded machine, comes out of it
        command_timeout_s=30.0,
        kill_grace_s=60.0,
        deadline_s=90.0,
    )
    with router:
        reason, elapsed = timed_fallback(router)
        assert elapsed < 40.0  # the 10 s budget plus a margin, not plus the 60 s kill grace
        assert reason_given in reason
        hung = int((fake.parent / f"{point}.pid").read_text())
        assert wait_until(lambda: not alive(hung), 30.0)  # killed in the background
    assert running_from(fake.parent) == []


def test_closing_waits_for_a_hung_one_shot_query_to_be_reaped(
    tmp_path: Path, workspace: Path
) -> None:
    # The search fell back at its deadline and left the child to a reaper thread: closing
    # the router must not return (and the CLI exit) while that child still runs.
    fake = install_fake(tmp_path / "fake", behaviour="query=hang")
    router = chain_router(
        tmp_path, workspace, fake, use_mcp=False, search_timeout_s=10.0, deadline_s=90.0
    )
    reason, _ = timed_fallback(router)
    assert "killed in the background" in reason
    router.close()
    assert running_from(fake.parent) == []
    assert not alive(int((fake.parent / "query.pid").read_text()))
