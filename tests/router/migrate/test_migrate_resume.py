"""A migration killed with SIGKILL at random moments resumes to the exact chunk set.

Each run is a real child process killed at a random moment of its copy; after every
kill the live index is still the old one (or, if the kill came after the switch, the
complete new one), and the last run, with ``--resume``, finishes with every chunk of
the source exactly once. The long version with many kills is ``bench/bench_migrate.py``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_router.testing import write_workspace
from migrate_support import build_index, config_for, corpus, rows

pytestmark = pytest.mark.slow

CHILD = """
import sys
import time
from memory_router import Router, load_config, testing, migrate
from memory_router._migrate.checkpoint import checkpoint_path

config = load_config(sys.argv[1], environ={})
resume = checkpoint_path(config.agent_state_path, "sqlite").exists()

def progress(*, done, total, label):
    print(label, done, flush=True)

with Router.from_config(config, plugins=[testing]) as router:
    report = migrate(router, "sqlite", source_path=sys.argv[2], resume=resume, batch_size=3,
                            progress=progress)
print("done", report.resumed, report.skipped, report.written, flush=True)
"""


def run(config: Path, source: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(config), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_sigkill_at_random_moments_then_resume_gives_the_exact_chunk_set(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "workspace", corpus(150))
    source = build_index(config_for(tmp_path, workspace, "old", "hash"), tmp_path / "old.sqlite")
    before = write_workspace(tmp_path / "before", {"MEMORY.md": "The index before migrating."})
    config = config_for(tmp_path, workspace, "new", "hash")
    old_config = config_for(tmp_path, before, "new", "hash")
    build_index(old_config, tmp_path / "before.sqlite")
    live = config.agent_state_path / "memory.sqlite"
    old_rows, wanted = rows(live), rows(source)
    assert len(wanted) == 150
    rng = random.Random(2026)
    checkpoint = config.agent_state_path / "migrations" / "sqlite.json"
    interrupted = []
    for _ in range(3):
        child = run(Path(str(config.file)), source)
        assert child.stdout is not None
        # Kill somewhere inside batch N of 50: after its progress line plus a random delay.
        for _ in range(rng.randint(1, 45)):
            if not child.stdout.readline():
                break
        time.sleep(rng.uniform(0.0, 0.02))
        child.kill()
        child.communicate(timeout=60)
        assert rows(live) in (old_rows, wanted)  # never a half-built index
        interrupted.append(checkpoint.exists())
    assert any(interrupted)
    child = run(Path(str(config.file)), source)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    last = out.splitlines()[-1].split()
    assert last[:2] == ["done", str(interrupted[-1])]  # resumed when the last kill left a copy
    assert rows(live) == wanted  # every chunk once, with its vector, none missing
    assert not Path(f"{live}.migrating").exists()
    assert not checkpoint.exists()
