"""Redaction holds (issue #14.1): no secret of the corpus survives into search or the state dir.

The corpus (:mod:`memory_router.testing._secrets`) has one conversation per kind of secret
and near-misses that must stay readable. The end-to-end tests index it as session
transcripts and then look for every secret in search answers and in every byte under the
state directory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_router import Router
from memory_router._workspace.redact import REDACTION_VERSION, redact, redact_messages
from memory_router._workspace.sessions import build_session_entry
from memory_router.kit import Chunk
from memory_router.testing import publish_chunks
from memory_router.testing._secrets import NEAR_MISSES, SECRET_CASES, SecretCase


def transcript(path: Path, cases: tuple[SecretCase, ...]) -> Path:
    records = [{"type": "session", "id": path.stem}]
    for case in cases:
        for text in case.messages:
            records.append({"type": "message", "message": {"role": "user", "content": text}})
        records.append(
            {"type": "message", "message": {"role": "assistant", "content": f"Noted {case.kind}."}}
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def leaked(text: str, case: SecretCase) -> bool:
    """The secret, or its middle (what a mask never shows), is still in ``text``."""
    return case.secret in text or case.secret[6:-4] in text


def files_holding(root: Path, secret: str) -> list[str]:
    needle = secret.encode("utf-8")
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_corpus_is_large_and_of_distinct_kinds() -> None:
    kinds = [case.kind for case in SECRET_CASES]
    assert len(kinds) >= 32
    assert len(set(kinds)) == len(kinds)
    assert all(len(case.secret) >= 10 for case in SECRET_CASES)


@pytest.mark.parametrize("case", SECRET_CASES, ids=lambda c: c.kind)
def test_every_kind_of_secret_is_masked(case: SecretCase) -> None:
    raw = "\n".join(case.messages)
    assert not leaked(raw.replace(case.secret, ""), case)  # the corpus holds it once
    assert not leaked("\n".join(redact_messages(case.messages)), case)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_stay_readable(text: str) -> None:
    assert redact(text) == text


def test_a_key_block_split_over_messages_is_masked_and_later_messages_are_not(
    tmp_path: Path,
) -> None:
    (split,) = [c for c in SECRET_CASES if c.kind == "pem split over two messages"]
    messages = (*split.messages, "thanks, the deploy worked")
    out = redact_messages(messages)
    assert out[0].startswith("-----BEGIN EC PRIVATE KEY-----")
    assert out[1].endswith("-----END EC PRIVATE KEY-----")
    assert out[2] == "thanks, the deploy worked"
    # Through the transcript reader (which flattens each message onto one line) too.
    content = build_session_entry(transcript(tmp_path / "s.jsonl", (split,))).content
    assert not leaked(content, split)
    assert content.count("…redacted…") == 2


def test_a_lone_end_line_takes_the_key_material_before_it() -> None:
    text = "rest of it: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC Ab12== -----END PRIVATE KEY----- ok"
    assert redact(text) == "rest of it: …redacted… -----END PRIVATE KEY----- ok"


@pytest.mark.slow
def test_redaction_stays_linear_on_many_secret_words() -> None:
    import time

    text = "password token key secret " * 20_000
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 5.0


@pytest.fixture
def secret_router(tmp_path: Path, write_workspace, write_config) -> Router:  # type: ignore[no-untyped-def]
    write_workspace()
    sessions = tmp_path / "sessions"
    half = len(SECRET_CASES) // 2
    transcript(sessions / "a.jsonl", SECRET_CASES[:half])
    transcript(sessions / "b.jsonl", SECRET_CASES[half:])
    config = write_config(
        f'sources = ["memory", "sessions"]\nsessions_dir = {json.dumps(str(sessions))}\n'
        '[embedding]\nprovider = "none"\n'
    )
    return Router.from_config(config)


def test_no_secret_is_found_by_search_or_on_disk_sqlite(
    tmp_path: Path, secret_router: Router
) -> None:
    with secret_router as router:
        (report,) = router.sync()
        assert not report.errors
        assert router.search("Noted", min_score=0.0, max_results=50).results  # indexed
        found = {
            case.kind
            for case in SECRET_CASES
            for hit in router.search(case.secret, min_score=0.0, max_results=50).results
            if leaked(hit.snippet, case)
        }
    assert found == set()
    on_disk = {c.kind: files_holding(tmp_path / "state", c.secret) for c in SECRET_CASES}
    assert {kind: files for kind, files in on_disk.items() if files} == {}


def test_an_index_from_an_older_redaction_is_rebuilt_without_its_secrets(
    tmp_path: Path, secret_router: Router
) -> None:
    case = SECRET_CASES[0]
    with secret_router as router:
        fingerprint = {k: v for k, v in router.fingerprint().to_dict().items() if k != "redaction"}
        assert router.fingerprint().redaction == REDACTION_VERSION
        old = Chunk(
            id="old-1",
            path="sessions/a.jsonl",
            source="sessions",
            start_line=2,
            end_line=2,
            text=f"User: {case.messages[0]}",
            hash="0" * 64,
            model="fts-only",
        )
        publish_chunks(router.backend("sqlite"), [old], fingerprint=fingerprint)
        router.close()
    assert files_holding(tmp_path / "state", case.secret)  # the old index holds it
    with Router.from_config(secret_router.config) as router:
        (report,) = router.sync()
        assert report.full_rebuild
        assert not [
            h for h in router.search(case.secret, min_score=0.0).results if leaked(h.snippet, case)
        ]
    assert files_holding(tmp_path / "state", case.secret) == []
