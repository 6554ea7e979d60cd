"""One-shot CLI commands on a QMD chain, and QMD's ``command`` as users write it (real QMD).

Each CLI command killed its own background ``qmd update`` on exit and recorded "qmd
update crashed (signal 9)", so the next ``status`` said QMD was unavailable (exit 1 with
``chain = ["qmd"]``), and every search printed "the index may be stale: a sync is
running in the background". ``command = ".tools/qmd/bin/qmd"`` (QMD's launcher, a Node
script) ran under the ``node`` first on ``PATH`` (Node 20 here: signal 11) although
``node`` was set, and a relative ``command`` was looked up from the wrong folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_router_qmd import QmdSettings
from memory_router_qmd._locate import locate
from qmd_fakes.helpers import qmd_missing

MISSING = qmd_missing()

pytestmark = [pytest.mark.qmd, pytest.mark.skipif(bool(MISSING), reason=MISSING)]

NOTES = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea over coffee.\n",
    "memory/2026-11-01.md": "# Trip\n\nBooked flights to Lisbon.\nThe hotel is in Alfama.\n",
}


@pytest.fixture
def workspace(write_workspace) -> Path:  # type: ignore[no-untyped-def]
    return write_workspace(NOTES)  # type: ignore[no-any-return]


def run(config: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process (a fresh backend each time, as a user runs it)."""
    return subprocess.run(
        [sys.executable, "-m", "memory_router", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def logging_qmd(folder: Path) -> Path:
    """The real QMD behind a script that logs each call's arguments to ``calls``."""
    node, script = locate(QmdSettings(), backend="qmd").argv
    folder.mkdir(parents=True)
    wrapper = folder / "qmd"
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> "{folder / "calls"}"\nexec "{node}" "{script}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def write_config(path: Path, workspace: Path, **qmd: Any) -> Path:
    path.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(path.parent / 'state'))}\n"
        '[router]\nchain = ["qmd"]\n[embedding]\nprovider = "none"\n'
        "[backends.qmd]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in qmd.items())
    )
    return path


def test_one_shot_commands_leave_qmd_healthy_and_start_no_needless_update(
    tmp_path: Path, workspace: Path
) -> None:
    qmd = logging_qmd(tmp_path / "qmd")
    config = write_config(tmp_path / "memory-router.toml", workspace, command=str(qmd))
    calls = tmp_path / "qmd" / "calls"
    assert run(config, "index").returncode == 0
    updates = calls.read_text().count("update")
    for _ in range(2):
        searched = run(config, "search", "--json", "Lisbon flights")
        assert searched.returncode == 0, searched.stderr
        answer = json.loads(searched.stdout)
        assert answer["backend"] == "qmd"
        assert answer["results"][0]["path"] == "memory/2026-11-01.md"
        assert not [n for n in answer["notes"] if "stale" in n], answer["notes"]
        assert "stale" not in searched.stderr
    status = run(config, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    [qmd_status] = json.loads(status.stdout)["backends"]
    assert qmd_status["available"], qmd_status["error"]
    # Nothing changed since `index`: no command started an update (only to kill it).
    assert calls.read_text().count("update") == updates
    # An edited note is picked up by the next one-shot search's sync, which is let finish.
    (workspace / "memory/2026-11-01.md").write_text("# Trip\n\nThe flights moved to Porto.\n")
    assert run(config, "search", "Porto").returncode == 0
    status = run(config, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    last = json.loads(status.stdout)["backends"][0]["details"]["last_update"]
    # QMD's own counts are of chunk mirror files: the note's one chunk was replaced.
    assert last["status"] == "ok"
    assert (last["counts"]["added"], last["counts"]["removed"]) == (1, 1)


def test_the_launcher_and_relative_paths_run_under_the_configured_node(
    tmp_path: Path, workspace: Path
) -> None:
    # What a user writes after `scripts/install-qmd.sh`, in a config beside `.tools/`;
    # `node` on PATH is the system's (Node 20 here, where QMD segfaults).
    node, script = locate(QmdSettings(), backend="qmd").argv
    prefix = Path(script).parents[6]  # <prefix>/lib/node_modules/@tobilu/qmd/dist/cli/qmd.js
    (tmp_path / "project").mkdir()
    (tmp_path / "project/.tools").symlink_to(prefix.parent)
    config = write_config(
        tmp_path / "project/memory-router.toml",
        workspace,
        command=".tools/qmd/bin/qmd",
        node=str(Path(".tools/qmd") / Path(node).relative_to(prefix)),
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    indexed = run(config, "index", "--json", cwd=elsewhere)
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    assert json.loads(indexed.stdout)[0]["errors"] == []
    status = run(config, "status", "--json", cwd=elsewhere)
    [qmd_status] = json.loads(status.stdout)["backends"]
    assert qmd_status["available"], qmd_status["error"]
    project = tmp_path / "project"
    assert qmd_status["details"]["command"] == [
        str(project / ".tools/qmd" / Path(node).relative_to(prefix)),
        str(project / ".tools/qmd/bin/qmd"),
    ]
