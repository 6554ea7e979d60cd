"""Session transcripts (reference §3): discovery, flattening, redaction, line maps, export."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from memory_router._workspace.chunking import RawChunk, chunk_markdown
from memory_router._workspace.redact import redact
from memory_router._workspace.sessions import (
    build_session_entry,
    discover_sessions,
    is_transcript_name,
    remap_lines,
    session_markdown,
)


def message(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": content}, **extra}


def write_jsonl(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("abc.jsonl", True),
        ("abc.jsonl.reset.2026-04-01T10-20-30Z", True),
        ("abc.jsonl.deleted.2026-04-01T10-20-30.123Z", True),
        ("abc.jsonl.reset.yesterday", False),
        ("abc.jsonl.bak.2026-04-01T10-20-30Z", False),
        ("abc.bak.jsonl", False),
        ("sessions.json", False),
        ("sessions.json.bak.3", False),
        ("notes.md", False),
        ("abc.json", False),
    ],
)
def test_transcript_names(name: str, expected: bool) -> None:
    assert is_transcript_name(name) is expected


def test_discover_sessions(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_jsonl(sessions / "b.jsonl", [message("user", "hello")])
    write_jsonl(sessions / "a.jsonl.reset.2026-04-01T10-20-30Z", [message("user", "old")])
    write_jsonl(sessions / "sessions.json", [{"x": 1}])
    write_jsonl(sessions / "c.jsonl.bak.2026-04-01T10-20-30Z", [message("user", "bak")])
    (sessions / "sub").mkdir()
    write_jsonl(sessions / "sub" / "nested.jsonl", [message("user", "nested")])
    (sessions / "link.jsonl").symlink_to(sessions / "b.jsonl")
    docs = discover_sessions(sessions)
    assert [d.path for d in docs] == [
        "sessions/a.jsonl.reset.2026-04-01T10-20-30Z",
        "sessions/b.jsonl",
    ]
    doc = docs[1]
    assert (doc.source, doc.kind) == ("sessions", "session")
    assert doc.abs_path == str(sessions / "b.jsonl")
    assert doc.size == (sessions / "b.jsonl").stat().st_size
    assert doc.hash == build_session_entry(sessions / "b.jsonl").hash


def test_known_session_hashes_are_reused_when_mtime_and_size_match(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s" / "a.jsonl", [message("user", "hello")])
    [doc] = discover_sessions(tmp_path / "s")
    [again] = discover_sessions(tmp_path / "s", {doc.path: (doc.mtime, doc.size, "cached")})
    assert again.hash == "cached"
    write_jsonl(path, [message("user", "hello again")])
    [changed] = discover_sessions(tmp_path / "s", {doc.path: (doc.mtime, doc.size, "cached")})
    assert changed.hash == build_session_entry(path).hash


def test_missing_sessions_dir_is_empty(tmp_path: Path) -> None:
    assert discover_sessions(tmp_path / "nope") == []
    assert build_session_entry(tmp_path / "nope.jsonl").content == ""


# -- flattening ------------------------------------------------------------------------


def test_flattening_roles_blocks_whitespace_and_line_map(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"type": "session", "id": "x"},  # line 1: not a message
            message("user", "  What is\n\n  the   plan?  "),  # line 2
            "{not json",  # line 3: skipped
            "",  # line 4: blank
            message("system", "you are a bot"),  # line 5: role filtered
            message("tool", "tool output"),  # line 6: role filtered
            message(  # line 7: only text blocks, joined with a space
                "assistant",
                [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "Ship\tit"},
                    {"type": "toolCall", "name": "x"},
                    {"type": "image", "data": "..."},
                    {"type": "text", "text": " on Friday. "},
                    {"type": "text", "text": "   "},
                ],
            ),
            message("assistant", [{"type": "toolCall", "name": "x"}]),  # line 8: no text
            message("user", "   "),  # line 9: empty after normalising
            message("user", 42),  # line 10: content neither string nor list
            ["a", "list"],  # line 11: not an object
            {"type": "message", "message": "oops"},  # line 12: message not an object
            message("user", "last"),  # line 13
        ],
    )
    entry = build_session_entry(path)
    assert entry.content == "User: What is the plan?\nAssistant: Ship it on Friday.\nUser: last"
    assert entry.line_map == (2, 7, 13)
    assert not entry.generated


def test_timestamps_and_hash(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            message("user", "a", timestamp=1_700_000_000),  # record seconds -> ms
            {
                "type": "message",
                "timestamp": 5,
                "message": {"role": "user", "content": "b", "timestamp": 1_700_000_000_123},
            },  # message.timestamp wins, already ms
            message("user", "c", timestamp="2026-01-02T03:04:05.500Z"),  # ISO string
            message("user", "d", timestamp="garbage"),  # unknown -> 0
            message("user", "e", timestamp=True),  # not a number -> 0
            message("user", "f"),  # absent -> 0
        ],
    )
    entry = build_session_entry(path)
    assert entry.timestamps == (
        1_700_000_000_000,
        1_700_000_000_123,
        1_767_323_045_500,
        0,
        0,
        0,
    )
    expected = hashlib.sha256(
        (
            entry.content
            + "\n"
            + ",".join(map(str, entry.line_map))
            + "\n"
            + ",".join(map(str, entry.timestamps))
        ).encode()
    ).hexdigest()
    assert entry.hash == expected


def test_hash_changes_with_line_positions(tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "1.jsonl", [message("user", "same")])
    two = write_jsonl(tmp_path / "2.jsonl", [{"type": "noise"}, message("user", "same")])
    assert build_session_entry(one).content == build_session_entry(two).content
    assert build_session_entry(one).hash != build_session_entry(two).hash


def test_dreaming_transcript_is_flagged(tmp_path: Path) -> None:
    bootstrap = {
        "type": "custom",
        "customType": "openclaw:bootstrap-context:full",
        "data": {"runId": "dreaming-narrative-42"},
    }
    path = write_jsonl(tmp_path / "d.jsonl", [bootstrap, message("assistant", "I dreamt")])
    assert build_session_entry(path).generated
    other = dict(bootstrap, data={"runId": "regular-run"})
    path = write_jsonl(tmp_path / "n.jsonl", [other, message("assistant", "awake")])
    assert not build_session_entry(path).generated


def test_messages_are_redacted(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [message("user", "export GITHUB_TOKEN=abc123")])
    assert build_session_entry(path).content == "User: export GITHUB_TOKEN=***"


def test_lone_surrogates_and_bad_bytes_do_not_break_hashing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"message","message":{"role":"user","content":"a\\ud800b"}}\n\xff\n')
    entry = build_session_entry(path)
    assert entry.content == "User: a\ufffdb"


# -- redaction -------------------------------------------------------------------------

LONG = "abcdefghijklmnopqrstuvwxyz0123456789"  # 36 chars: masked as abcdef…6789


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OPENAI_API_KEY=short", "OPENAI_API_KEY=***"),
        (f"MY_SECRET: '{LONG}'", "MY_SECRET: 'abcdef…6789'"),
        ('DB_PASSWORD="hunter2"', 'DB_PASSWORD="***"'),
        ("PASSWD=x1", "PASSWD=***"),
        ("api_token = val", "api_token = ***"),  # patterns are case-insensitive
        (f'{{"apiKey": "{LONG}"}}', '{"apiKey": "abcdef…6789"}'),
        ('{"refreshToken":"r1"}', '{"refreshToken":"***"}'),
        ('{"password": "p w"}', '{"password": "***"}'),
        ("--api-key k1", "--api-key ***"),
        ("--api_key k1", "--api_key ***"),
        ("--apikey k1", "--apikey ***"),
        ("--hook-token 'h1'", "--hook-token '***'"),
        ("--token t1 --secret s1", "--token *** --secret ***"),
        ("--password p1", "--password ***"),
        (f"Authorization: Bearer {LONG}", "Authorization: Bearer abcdef…6789"),
        ("Authorization: Bearer short", "Authorization: Bearer ***"),
        (f"use Bearer {LONG} here", "use Bearer abcdef…6789 here"),
        ("Bearer tooshort", "Bearer tooshort"),  # fewer than 18 token characters
        ("sk-12345678", "***"),
        (f"key sk-{LONG}", "key sk-abc…6789"),
        (f"ghp_{LONG}", "ghp_ab…6789"),
        (f"github_pat_{LONG}", "github…6789"),
        ("xoxb-1234567890", "***"),
        ("xapp-1234567890", "***"),
        ("gsk_1234567890", "***"),
        (f"AIza{LONG}", "AIzaab…6789"),
        ("pplx-1234567890", "***"),
        ("npm_1234567890", "***"),
        ("123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ", "123456…WXYZ"),
        (
            "https://api.telegram.org/bot123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ/getMe",
            "https://api.telegram.org/bot123456…WXYZ/getMe",
        ),
        ("sk-short", "sk-short"),  # fewer than 8 characters after the prefix
        ("nothing secret here", "nothing secret here"),
    ],
)
def test_redaction_patterns(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_pem_blocks_keep_their_first_and_last_lines() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\nxyz==\n-----END RSA PRIVATE KEY-----"
    assert redact(f"here:\n{pem}\ndone") == (
        "here:\n-----BEGIN RSA PRIVATE KEY-----\n…redacted…\n-----END RSA PRIVATE KEY-----\ndone"
    )
    # "key:" before the block also matches the env-style pattern; the body still goes.
    assert "MIIabc" not in redact(f"key: {pem}")
    flat = "-----BEGIN PRIVATE KEY----- MIIabc xyz== -----END PRIVATE KEY-----"
    assert redact(flat) == "-----BEGIN PRIVATE KEY----- …redacted… -----END PRIVATE KEY-----"
    lower = "-----begin ec private key-----\nabc\n-----end ec private key-----"
    assert (
        redact(lower) == "-----begin ec private key-----\n…redacted…\n-----end ec private key-----"
    )
    # Unlike OpenClaw, a block without its END line is masked to the end of the text.
    unclosed = "-----BEGIN PRIVATE KEY-----\nMIIabcdefghijklmnopqrstuvwxyz"
    assert redact(unclosed) == "-----BEGIN PRIVATE KEY-----\n…redacted…"


def test_redaction_is_linear_on_adversarial_input() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----" * 5000 + "x" * 100_000 + "A1_" * 50_000
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 2.0


# -- line maps and export --------------------------------------------------------------


def test_remap_lines_maps_content_lines_to_jsonl_lines() -> None:
    chunks = [RawChunk(1, 2, "a\nb", "h1"), RawChunk(2, 3, "b\nc", "h2")]
    assert remap_lines(chunks, [4, 9, 15]) == [
        RawChunk(4, 9, "a\nb", "h1"),
        RawChunk(9, 15, "b\nc", "h2"),
    ]
    assert remap_lines(chunks, []) == chunks


def test_chunked_transcript_cites_jsonl_lines(tmp_path: Path) -> None:
    records: list[Any] = []
    for i in range(30):
        records.append({"type": "noise", "i": i})
        records.append(message("user" if i % 2 else "assistant", f"message number {i} " + "w" * 40))
    entry = build_session_entry(write_jsonl(tmp_path / "s.jsonl", records))
    chunks = remap_lines(chunk_markdown(entry.content, tokens=50, overlap=10), entry.line_map)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.start_line % 2 == 0
        assert chunk.end_line % 2 == 0
        number = records[chunk.start_line - 1]["message"]["content"].split()[2]
        assert chunk.text.split("\n")[0].split()[3] == number


def test_session_markdown(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "abc.jsonl", [message("user", "hi"), message("assistant", "hello")]
    )
    assert session_markdown(path) == "# Session abc.jsonl\n\nUser: hi\nAssistant: hello\n"
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"type": "noise"}])
    assert session_markdown(empty) == "# Session empty.jsonl\n\n(empty)\n"
