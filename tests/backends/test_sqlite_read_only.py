"""An index in a read-only state folder still answers, read-only, with a note.

Search refused ("folder … is not writable") although the index was intact and
readable, while ``status`` and ``doctor`` explained the folder. The folder here is a real
read-only file system: a read-only bind mount in a mount namespace of the CLI's own
(``unshare --mount``), so even root cannot write it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_router import Router, load_config, testing

NOTES = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea over coffee.\n",
    "memory/zoo.md": "# Zoo\n\nThe keeper's code word is zebra-quartz-42.\n",
}


def _can_mount() -> str:
    """Why a read-only bind mount cannot be made here, or ``""``."""
    if shutil.which("unshare") is None:
        return "no unshare(1)"
    probe = subprocess.run(
        ["unshare", "--mount", "mount", "--bind", "/tmp", "/tmp"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return "" if probe.returncode == 0 else f"no mount namespace: {probe.stderr.strip()}"


MISSING = _can_mount()
pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING)


def write_config(tmp_path: Path, embedding: str) -> Path:
    workspace = tmp_path / "ws"
    for relative, text in NOTES.items():
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (workspace / relative).write_text(text)
    path = tmp_path / "memory-router.toml"
    path.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        f'[embedding]\nprovider = "{embedding}"\n[query]\nmin_score = 0.0\n'
    )
    return path


def read_only(state: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with ``state`` mounted read-only (for this process alone)."""
    cli = shlex.join([sys.executable, "-m", "memory_router", "--config", str(config), *args])
    folder = shlex.quote(str(state))
    script = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && {cli}"
    env = {**os.environ, "MEMORY_ROUTER_PLUGIN_MODULES": "memory_router.testing"}
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("embedding", ["none", "hash"])
def test_search_and_status_answer_from_a_read_only_state_folder(
    tmp_path: Path, embedding: str
) -> None:
    config = write_config(tmp_path, embedding)
    with Router.from_config(load_config(config, environ={}), plugins=[testing]) as router:
        router.sync()
    state = tmp_path / "state"
    before = listing(state)

    searched = read_only(state, config, "search", "--json", "zebra-quartz-42")
    assert searched.returncode == 0, searched.stderr
    answer = json.loads(searched.stdout)
    assert (answer["backend"], answer["results"][0]["path"]) == ("sqlite", "memory/zoo.md")
    assert any("answered from the index as it is" in note for note in answer["notes"])

    status = read_only(state, config, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    [sqlite] = json.loads(status.stdout)["backends"]
    assert sqlite["available"], sqlite["error"]
    assert "Read-only file system" in sqlite["details"]["read_only"]

    indexed = read_only(state, config, "index")  # a write: refused, saying what to do
    assert indexed.returncode == 1
    assert "Read-only file system" in indexed.stderr
    assert "Hint:" in indexed.stderr
    assert listing(state) == before
