"""Repository hygiene: nothing machine-local is committed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return out.splitlines()


def test_no_symlinks_or_local_tool_folders_are_committed() -> None:
    # A committed `.tools` symlink pointed at one machine's folder and broke fresh clones.
    bad = [
        line
        for line in _tracked()
        if line.startswith("120000 ") or line.split("\t", 1)[1].startswith((".tools", ".venv"))
    ]
    assert bad == []
