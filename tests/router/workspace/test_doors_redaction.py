"""Every write path redacts (issue 21, item 2): no secret of the corpus reaches the journal,
an index or a search answer, whichever way it was written, and the answer says so.

Each path writes every conversation of :mod:`memory_router.testing._secrets` (one per kind
of secret), then the index is synced and every secret is looked for in search answers and
in every byte under the workspace and the state dir. The server's paths (HTTP ``/store``,
``/capture``, MCP ``memory_store``, ``memory_capture``) are in
``tests/plugins/test_serve_doors.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_router import Router
from memory_router.agent import capture
from memory_router.cli import build_cli
from memory_router.testing._secrets import SECRET_CASES, SecretCase

CONFIG = (
    '[embedding]\nprovider = "none"\n[query]\nmin_score = 0.0\n'
    "[capture]\nmax_chars = 10000\nmax_per_conversation = 100\n"
)


def leaked(text: str, case: SecretCase) -> bool:
    """The secret, or its middle (what a mask never shows), is in ``text``."""
    return case.secret in text or case.secret[6:-4] in text


def files_holding(root: Path, case: SecretCase, skip: Path | None = None) -> list[str]:
    needles = (case.secret.encode(), case.secret[6:-4].encode())
    return [
        str(p)
        for p in root.rglob("*")
        if p.is_file()
        and (skip is None or skip not in p.parents)
        and any(n in p.read_bytes() for n in needles)
    ]


def assert_nothing_found(router: Router, root: Path, skip: Path | None = None) -> None:
    """No secret of the corpus in a search answer, nor in any file under ``root``."""
    hits = {
        case.kind
        for case in SECRET_CASES
        for hit in router.search(case.secret, max_results=50).results
        if leaked(hit.snippet, case)
    }
    assert hits == set()
    on_disk = {c.kind: files_holding(root, c, skip) for c in SECRET_CASES}
    assert {kind: files for kind, files in on_disk.items() if files} == {}


def text_of(case: SecretCase) -> str:
    return "\n".join(case.messages)


def captured(case: SecretCase) -> list[str]:
    """The case's messages as turns capture keeps (a trigger, and words of their own)."""
    return [f"remember for {case.kind} please: {m}" for m in case.messages]


def via_store(router: Router, config: Path) -> list[tuple[str, ...]]:
    for case in SECRET_CASES:
        router.store(text_of(case))
    return []  # store answers with the entry only


def via_remember(router: Router, config: Path) -> list[tuple[str, ...]]:
    return [router.remember(text_of(c), force=True).redacted for c in SECRET_CASES]


def via_capture(router: Router, config: Path) -> list[tuple[str, ...]]:
    answers = []
    for n, case in enumerate(SECRET_CASES):
        result = capture(router, captured(case), conversation_id=f"c{n}")
        assert len(result.stored) == len(case.messages), result.skipped
        answers.append(result.redacted)
    return answers


def via_cli_store(router: Router, config: Path) -> list[tuple[str, ...]]:
    answers = []
    for case in SECRET_CASES:
        out = cli(config, "store", "--force", "--json", "--", text_of(case))
        answers.append(tuple(json.loads(out)["redacted"]))
    human = cli(config, "store", "--force", "--", text_of(SECRET_CASES[0]))
    assert human.startswith("Redacted before storing: ")
    return answers


def via_cli_capture(router: Router, config: Path) -> list[tuple[str, ...]]:
    answers = []
    for n, case in enumerate(SECRET_CASES):
        out = json.loads(
            cli(config, "capture", "--conversation", f"k{n}", "--json", "--", *captured(case))
        )
        assert len(out["stored"]) == len(case.messages), out["skipped"]
        answers.append(tuple(out["redacted"]))
    return answers


def cli(config: Path, *args: str) -> str:
    result = CliRunner().invoke(build_cli(), ["--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return result.output


PATHS: dict[str, Callable[[Router, Path], list[tuple[str, ...]]]] = {
    "Router.store": via_store,
    "Router.remember": via_remember,
    "capture": via_capture,
    "CLI store": via_cli_store,
    "CLI capture": via_cli_capture,
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_secret_written_through_a_path_is_found(
    path: str,
    tmp_path: Path,
    write_workspace,
    write_config,  # type: ignore[no-untyped-def]
) -> None:
    workspace = write_workspace({"MEMORY.md": "# Memory\n\n- tea\n"})
    config = write_config(CONFIG)
    with Router.from_config(config) as router:
        answers = PATHS[path](router, config)
        assert all(answers), "every answer names what was redacted"
        router.sync()
        stored = router.entries()
        assert len(stored) >= len(SECRET_CASES)
        assert not [e.id for e in stored for c in SECRET_CASES if leaked(e.text, c)]
        assert_nothing_found(router, tmp_path)
    assert (workspace / "memory/entries.md").exists()


def test_transcripts_are_redacted_too(
    tmp_path: Path,
    write_workspace,
    write_config,  # type: ignore[no-untyped-def]
) -> None:
    write_workspace({"MEMORY.md": "# Memory\n\n- tea\n"})
    sessions = tmp_path / "sessions"
    records = [{"type": "session", "id": "s"}]
    for case in SECRET_CASES:
        for text in case.messages:
            records.append({"type": "message", "message": {"role": "user", "content": text}})
    sessions.mkdir()
    (sessions / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = write_config(
        f'sources = ["memory", "sessions"]\nsessions_dir = {json.dumps(str(sessions))}\n' + CONFIG
    )
    with Router.from_config(config) as router:
        (report,) = router.sync()
        assert report.added == 2
        assert_nothing_found(router, tmp_path, skip=sessions)  # the transcript is the source


def test_the_answer_names_the_kinds_redacted(
    write_workspace,
    write_config,  # type: ignore[no-untyped-def]
) -> None:
    write_workspace({"MEMORY.md": "# Memory\n\n- tea\n"})
    with Router.from_config(write_config(CONFIG)) as router:
        aws = router.remember("my AWS key is AKIAABCDEFGHIJKLMNOP, keep it")
        plain = router.remember("I prefer green tea in the morning")
    assert aws.redacted == ("aws_access_key",)
    assert "AKIAABCDEFGHIJKLMNOP" not in aws.entry.text
    assert plain.redacted == ()
