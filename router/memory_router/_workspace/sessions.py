"""Session transcripts (``*.jsonl``) as memory documents (reference §3.1, §3.2, §3.5).

A transcript is flattened to one line per user or assistant message, ``User: …`` or
``Assistant: …``, with whitespace collapsed and secrets redacted (:mod:`._redact`: one
stage for the whole transcript, so a key block split over two messages is masked too).
``line_map[i]`` is the 1-based JSONL line of content line ``i + 1``, so chunk lines can be
mapped back (:func:`remap_lines`) and citations point into the transcript itself.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._types import Document
from .chunking import RawChunk, sha256_hex

__all__ = [
    "SessionEntry",
    "build_session_entry",
    "discover_sessions",
    "is_transcript_name",
    "remap_lines",
    "session_markdown",
]

_ARCHIVE = re.compile(
    r"\.jsonl\.(?:reset|deleted)\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z$"
)
_NEWLINES = re.compile(r"\s*\n+\s*")
_SPACES = re.compile(r"\s+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DREAMING_TYPE = "openclaw:bootstrap-context:full"
_DREAMING_RUN_PREFIX = "dreaming-narrative-"
_ROLES = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEntry:
    """A flattened transcript.

    ``content`` is the ``User:``/``Assistant:`` lines joined with ``\\n``; ``line_map`` and
    ``timestamps`` (epoch ms, 0 when unknown) have one item per content line; ``hash`` is
    sha256 of content, line map and timestamps (§1.4); ``generated`` is True for a
    transcript written by the dreaming feature (callers may leave it out of search).
    """

    content: str
    line_map: tuple[int, ...]
    timestamps: tuple[int, ...]
    hash: str
    generated: bool


def is_transcript_name(name: str) -> bool:
    """``*.jsonl`` or an archived ``*.jsonl.reset.<ts>`` / ``*.jsonl.deleted.<ts>``;
    never ``sessions.json`` or a ``.bak.`` artefact."""
    if ".bak." in name or name.startswith("sessions.json"):
        return False
    return name.endswith(".jsonl") or _ARCHIVE.search(name) is not None


def discover_sessions(
    sessions_dir: Path, known: Mapping[str, tuple[float, int, str]] | None = None
) -> list[Document]:
    """The transcripts directly in ``sessions_dir``, sorted; ``[]`` if it does not exist.

    Symbolic links and unreadable files are skipped. ``path`` is ``sessions/<basename>``.
    With ``known`` (``path -> (mtime, size, hash)``) a transcript whose mtime and size
    match keeps that hash without being parsed again.
    """
    try:
        entries = sorted(os.scandir(sessions_dir), key=lambda e: e.name)
    except OSError:
        return []
    documents = []
    for entry in entries:
        try:
            if not is_transcript_name(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
            previous = known.get(f"sessions/{entry.name}") if known is not None else None
            if previous and previous[:2] == (info.st_mtime, info.st_size):
                digest = previous[2]
            else:
                digest = _read_entry(Path(entry.path)).hash
        except OSError:
            continue
        documents.append(
            Document(
                path=f"sessions/{entry.name}",
                abs_path=entry.path,
                source="sessions",
                kind="session",
                hash=digest,
                mtime=info.st_mtime,
                size=info.st_size,
            )
        )
    return documents


def build_session_entry(path: Path) -> SessionEntry:
    """Flatten the transcript at ``path`` (§3.2); a missing or unreadable file is empty."""
    try:
        return _read_entry(path)
    except OSError:
        return _entry([], [], [], generated=False)


def _read_entry(path: Path) -> SessionEntry:
    raw = path.read_bytes().decode("utf-8", errors="replace")
    labels: list[str] = []
    texts: list[str] = []
    line_map: list[int] = []
    stamps: list[int] = []
    generated = False
    for number, line in enumerate(raw.split("\n"), start=1):
        record = _parse(line)
        if record is None:
            continue
        generated = generated or _is_dreaming(record)
        message = _message(record)
        if message is not None:
            labels.append(message[0])
            texts.append(message[1])
            line_map.append(number)
            stamps.append(_timestamp_ms(record))
    from .redact import redact_messages  # here: its patterns compile at import

    lines = [f"{label}: {text}" for label, text in zip(labels, redact_messages(texts), strict=True)]
    return _entry(lines, line_map, stamps, generated=generated)


def _entry(
    lines: list[str], line_map: list[int], stamps: list[int], *, generated: bool
) -> SessionEntry:
    content = "\n".join(lines)
    digest = sha256_hex(
        content + "\n" + ",".join(map(str, line_map)) + "\n" + ",".join(map(str, stamps))
    )
    return SessionEntry(
        content=content,
        line_map=tuple(line_map),
        timestamps=tuple(stamps),
        hash=digest,
        generated=generated,
    )


def _parse(line: str) -> dict[str, Any] | None:
    """One JSONL record, or None for a blank, malformed or non-object line."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _is_dreaming(record: dict[str, Any]) -> bool:
    data = record.get("data")
    return (
        record.get("type") == "custom"
        and record.get("customType") == _DREAMING_TYPE
        and isinstance(data, dict)
        and isinstance(data.get("runId"), str)
        and data["runId"].startswith(_DREAMING_RUN_PREFIX)
    )


def _message(record: dict[str, Any]) -> tuple[str, str] | None:
    """``("User" | "Assistant", text)`` for a user or assistant message with text, else None."""
    message = record.get("message")
    if record.get("type") != "message" or not isinstance(message, dict):
        return None
    role = message.get("role")
    label = _ROLES.get(role) if isinstance(role, str) else None
    if label is None:
        return None
    text = _message_text(message.get("content"))
    return (label, text) if text else None


def _normalize(text: str) -> str:
    # JSON may carry lone surrogates ("\ud800"); they cannot be stored as UTF-8.
    text = _LONE_SURROGATE.sub("\ufffd", text)
    return _SPACES.sub(" ", _NEWLINES.sub(" ", text)).strip()


def _message_text(content: object) -> str:
    """A string content, or the ``text`` blocks of a block list, normalised and joined."""
    if isinstance(content, str):
        return _normalize(content)
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and (normalized := _normalize(text)):
                parts.append(normalized)
    return " ".join(parts)


def _timestamp_ms(record: dict[str, Any]) -> int:
    """``message.timestamp`` else ``record.timestamp`` in epoch ms; 0 when unknown.

    Numbers below 1e11 are seconds. ISO 8601 strings are parsed (no zone means UTC).
    """
    message = record.get("message")
    candidates = [message.get("timestamp") if isinstance(message, dict) else None]
    candidates.append(record.get("timestamp"))
    for value in candidates:
        ms = _to_ms(value)
        if ms > 0:
            return ms
    return 0


def _to_ms(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        if not math.isfinite(value) or value <= 0:
            return 0
        return int(value * 1000 if value < 1e11 else value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return 0
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return max(0, int(parsed.timestamp() * 1000))
    return 0


def remap_lines(chunks: Sequence[RawChunk], line_map: Sequence[int]) -> list[RawChunk]:
    """Chunks with content line numbers replaced by JSONL line numbers.

    A line outside ``line_map`` (an empty transcript's single empty chunk) is kept as is.
    """
    if not line_map:
        return list(chunks)

    def mapped(line: int) -> int:
        return line_map[line - 1] if 0 < line <= len(line_map) else line

    return [
        c._replace(start_line=mapped(c.start_line), end_line=mapped(c.end_line)) for c in chunks
    ]


def session_markdown(path: Path) -> str:
    """The QMD export of a transcript (§3.5): ``# Session <basename>``, a blank line, then
    the ``User:``/``Assistant:`` lines, or ``(empty)`` when there are none."""
    content = build_session_entry(path).content
    return f"# Session {path.name}\n\n{content or '(empty)'}\n"
