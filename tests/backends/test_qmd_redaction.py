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


def test_an_export_from_an_older_redaction_is_purged(tmp_path: Path, config: Path) -> None:
    case = SECRET_CASES[0]
    with Router.from_config(config) as router:
        backend = router.backend("qmd")
        backend.export_dir.mkdir(parents=True)  # type: ignore[attr-defined]
        old = f"# Session a.jsonl\n\nUser: {case.messages[0]}\n"
        (backend.export_dir / "a.jsonl.md").write_text(old)  # type: ignore[attr-defined]
        backend.cycle.run(force=True)  # type: ignore[attr-defined]
        assert holding(tmp_path / "state" / "agents", case.secret)  # QMD indexed it
        assert not router.sync()[0].errors
    assert holding(tmp_path / "state", case.secret) == []
