"""The ``qmd`` and ``llama`` markers: skip with the reason where the tool is missing, fail on CI.

A real pytest in a subprocess loads tests/conftest.py as a plugin and runs one ``llama``
test while ``import llama_cpp`` fails (a package of that name that raises on import comes
first on ``PYTHONPATH``, as a broken build would).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

pytestmark = pytest.mark.slow  # two pytest subprocesses


def run_marked(tmp_path: Path, *, ci: str | None) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim" / "llama_cpp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no llama here')\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = llama: needs it\n", encoding="utf-8")
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n@pytest.mark.llama\ndef test_needs_llama():\n    pass\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(shim.parent), str(TESTS)])
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-rsf", "--rootdir", str(tmp_path), str(tmp_path / "test_one.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_missing_tool_skips_with_the_reason_and_the_install_command(tmp_path: Path) -> None:
    result = run_marked(tmp_path, ci=None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "warning" not in result.stdout
    assert "no llama here" in result.stdout
    assert "pip install -e '.[local]'" in result.stdout


def test_under_ci_a_missing_tool_fails_instead(tmp_path: Path) -> None:
    result = run_marked(tmp_path, ci="true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout  # fails in setup, before any fixture
    assert "no llama here" in result.stdout
    assert "CI installs every tool the tests need" in result.stdout
