"""Hostile input to the CLI (issue #14.4): every invocation ends cleanly.

Clean means: a result (exit 0), one ``Error:`` line with exit 1, or a usage message with
exit 2 — never a traceback, an "unexpected" error or a silent failure. A property test
drives click's runner in-process over hostile argument vectors; a few real subprocesses
check the byte-level cases (invalid UTF-8 in argv and on stdin) under odd locales.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_router.cli import build_cli

HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "-",
            "--",
            "-n",
            '"unbalanced',
            "NEAR(a b) OR * AND -x ^y",
            "a\x00b",
            "\x1b[31mred\x07",
            "\udcff\udcfe",
            "\ud800",
            "../../etc/passwd",
            "/etc/passwd",
            "memory/../MEMORY.md",
            "x" * 5000,
            "\u202e\ufeff\u0000",
            "sessions/a.jsonl",
            "1e300",
            "-1",
            "nan",
        ]
    ),
)
UNEXPECTED = re.compile(r"unexpected \w+(?:Error|Exception|Warning)\b")
COMMANDS = ["search", "get", "store", "forget", "entries", "status", "index", "plugins", "nope"]
OPTIONS = ["--json", "-n", "--max-results", "--min-score", "--mode", "--from", "--lines"]
OPTIONS += ["--importance", "--category", "--backend", "--force", "--help", "--agent"]
ARGV = st.lists(st.one_of(st.sampled_from(COMMANDS + OPTIONS), HOSTILE_TEXT), max_size=6)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    workspace = root / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\nThe okapi lives in the north wing.\n")
    path = root / "memory-router.toml"
    path.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(root / 'state'))}\n"
        '[embedding]\nprovider = "none"\n'
    )
    return path


def assert_clean(exit_code: int, stdout: str, stderr: str) -> None:
    both = stdout + stderr
    assert "Traceback" not in both
    assert UNEXPECTED.search(both) is None, both  # the error boundary's bug path
    if exit_code == 1:
        assert any(line.startswith("Error: ") for line in stderr.splitlines()), stderr
    elif exit_code == 2:
        assert "Usage:" in both or "Error:" in both, both
    else:
        assert exit_code == 0, (exit_code, both)


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=st.one_of(ARGV, st.tuples(st.sampled_from(COMMANDS[:5]), HOSTILE_TEXT).map(list)))
def test_hostile_argument_vectors_end_cleanly(config: Path, argv: list[str]) -> None:
    stdin = "\udcff query from stdin" if "-" in argv else None
    result = CliRunner().invoke(
        build_cli(),
        ["--config", str(config), *argv],
        input=stdin.encode("utf-8", "surrogateescape") if stdin else None,
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert_clean(result.exit_code, result.stdout, result.stderr)
    if "--json" in argv and result.exit_code == 0 and "--help" not in argv:
        json.loads(result.stdout)


def run_bytes(
    config: Path, args: Sequence[bytes], *, env: dict[str, str], stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIO"))}
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"memory_router", b"--config", bytes(config), *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env={**base, **env},
        check=False,
    )


STRICT_UTF8 = {"LC_ALL": "C.UTF-8", "PYTHONUTF8": "0"}


def test_invalid_utf8_in_argv_and_on_stdin_gets_an_answer(config: Path) -> None:
    searched = run_bytes(config, [b"search", b"\xffokapi\xfe", b"--json"], env=STRICT_UTF8)
    assert searched.returncode == 0, searched.stderr
    answer = json.loads(searched.stdout)
    json.dumps(answer, ensure_ascii=False).encode("utf-8")  # every string encodable
    assert "okapi" in answer["query"]
    piped = run_bytes(
        config, [b"search", b"-", b"--json"], env=STRICT_UTF8, stdin=b"\xff\xfeokapi\n"
    )
    assert piped.returncode == 0, piped.stderr
    assert "okapi" in json.loads(piped.stdout)["query"]
    refused = run_bytes(config, [b"get", b"\xff.md", b"--json"], env=STRICT_UTF8)
    assert refused.returncode == 1
    assert refused.stderr.startswith(b"Error: ")
    assert b"Traceback" not in refused.stderr


@pytest.mark.parametrize(
    "env",
    [{"LC_ALL": "C"}, {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "ascii"}],
    ids=["c-locale", "ascii-io"],
)
def test_output_the_locale_cannot_encode_is_still_printed(
    config: Path, env: dict[str, str]
) -> None:
    plain = run_bytes(
        config, [b"search", "okapi \xff ☃".encode("utf-8", "surrogateescape")], env=env
    )
    assert plain.returncode == 0, plain.stderr
    assert b"north wing" in plain.stdout
