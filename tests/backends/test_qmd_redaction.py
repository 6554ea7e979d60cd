"""No secret of the corpus reaches QMD's index or its sessions export (issue #14.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_router import Router
from memory_router.testing._secrets import SECRET_CASES

# qmd: skips where QMD is missing and fails under CI (tests/conftest.py).
pytestmark = [pytest.mark.qmd, pytest.mark.slow]


def write_transcript(path: Path, texts: list[str]) -> None:
    records = [{"type": "message", "message": {"role": "user", "content": t}} for t in texts]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def holding(root: Path, secret: str) -> list[Path]:
    needle = secret.encode("utf-8")
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture
def config(tmp_path: Path, write_workspace) -> Path:  # type: ignore[no-untyped-def]
    workspace = write_workspace()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_transcript(sessions / "a.jsonl", [m for c in SECRET_CASES for m in c.messages])
    path = tmp_path / "memory-router.toml"
    path.write_text(
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        f'sources = ["memory", "sessions"]\nsessions_dir = {json.dumps(str(sessions))}\n'
        '[embedding]\nprovider = "none"\n[router]\nchain = ["qmd"]\n'
        "[backends.qmd]\nupdate_on_boot = false\n"
    )
    return path


def test_no_secret_is_found_by_search_or_on_disk_qmd(tmp_path: Path, config: Path) -> None:
    with Router.from_config(config) as router:
        assert not router.sync()[0].errors
        found = [
            case.kind
            for case in SECRET_CASES
            for hit in router.search(case.secret, min_score=0.0).results
            if case.secret in hit.snippet or case.secret[6:-4] in hit.snippet
        ]
    assert found == []
    on_disk = {c.kind: holding(tmp_path / "state", c.secret) for c in SECRET_CASES}
    assert {kind: paths for kind, paths in on_disk.items() if paths} == {}


@pytest.mark.parametrize("documents", ["files", "chunks"])
def test_an_export_from_an_older_redaction_is_purged(
    tmp_path: Path, config: Path, documents: str
) -> None:
    """What an older redaction wrote (a session export, or a chunk mirror file) is gone
    from QMD's index and the disk after the next sync."""
    config.write_text(config.read_text() + f'documents = "{documents}"\n')
    case = SECRET_CASES[0]
    with Router.from_config(config) as router:
        backend = router.backend("qmd")
        if documents == "files":
            old_file = backend.export_dir / "a.jsonl.md"  # type: ignore[attr-defined]
        else:
            old_file = backend.mirror_dir / "0123456789abcdef0123" / "a.md"  # type: ignore[attr-defined]
        old_file.parent.mkdir(parents=True)
        old = f"# Session a.jsonl\n\nUser: {case.messages[0]}\n"
        old_file.write_text(old)
        backend.cycle.run(force=True)  # type: ignore[attr-defined]
        assert holding(tmp_path / "state" / "agents", case.secret)  # QMD indexed it
        assert not router.sync()[0].errors
    assert holding(tmp_path / "state", case.secret) == []
