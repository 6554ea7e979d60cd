r"""The entries journal: stored entries as a hand-editable Markdown list in the workspace.

Format (default file ``memory/entries.md``)::

    # Memory entries

    <a short paragraph explaining the format>

    - tea <!-- mr:id=e-1a2b3c4d5e6f;importance=0.7;category=fact;created=2026-11-21T13:05:00Z -->
    - a multi-line entry:
      its last line <!-- mr:id=e-0f9e8d7c6b5a;importance=1.0;…;created=…+02:00 -->

* Lines above the first ``- `` item are the header, never entries. An item starts with
  ``-`` at column 0; its further lines are indented (two spaces written, any read), and
  blank lines inside it belong to it when an indented line follows.
* The comment ending the item's last line holds ``id``, ``importance`` (0–1),
  ``category`` (:data:`CATEGORIES`) and ``created`` (ISO 8601 with offset); unknown keys
  are ignored.
* Text is lossless and never normalised (leading/trailing spaces, ``\r``, a leading
  ``- ``, quotes, ``-->``, emoji all round-trip). ``\`` escapes appear only where a
  character could be lost or misread: ``\\`` (a backslash), ``\u{hex}`` (control
  characters, line separators, lone surrogates, and whitespace at either end of a line,
  which editors strip) and ``<\!--`` for ``<!--``, so text can never open a comment. Any
  other backslash is literal, so a hand-written ``C:\temp`` survives.

Hand edits are welcome: indentation and trailing spaces/tabs are not significant, and no
item is silently dropped:

* an item without a readable comment is an entry with id ``h-<sha256(text)[:12]>``,
  importance 0.7, category ``other`` and the file's mtime as ``created_at``; an unreadable
  value (``importance=high``, unknown category, bad date) takes that same default, and an
  importance outside [0, 1] is clamped;
* after the header, a line at column 0 without ``-`` (``* item``, a paragraph) is an item
  too (``*``/``+`` bullets lose their marker); a lone ``#`` heading line is skipped;
* a repeated id gets ``~2``, ``~3``… in file order, so every entry stays addressable.

Writes go to a temporary file swapped in with ``os.replace``, under a lock of the journal's
folder (no lock file is left among the notes), so an interrupted or concurrent
store/forget never loses an entry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .._exceptions import InvalidInput, NotFound
from .._types import CATEGORIES, Category, Chunk, Entry
from .chunking import chunk_id, sha256_hex

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

HEADER = """\
# Memory entries

Entries stored with `memory-router store`, one list item each. Edit the text freely;
keep the `<!-- mr:… -->` comment that ends each item (id, importance, category, time).
Further lines of an item are indented; `\\\\` is a backslash, `\\u{hex}` a character.

"""
DEFAULT_IMPORTANCE = 0.7
ENTRY_HINT = "`memory-router entries` lists the ids of the stored entries"
_COMMENT = re.compile(r"<!-- mr:([^<>]*?) -->")
_ESCAPED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")
_UNESCAPE = re.compile(r"\\(?:(\\)|u\{([0-9a-fA-F]{1,6})\}|(!))")
_ID = re.compile(r"[^\s;<>=]+")
_lock = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalItem:
    """One entry and where it is in the file: 1-based inclusive lines."""

    entry: Entry
    start_line: int
    end_line: int
    well_formed: bool


# -- creating entries ------------------------------------------------------------------


def new_entry(
    text: str, *, importance: float = DEFAULT_IMPORTANCE, category: str = "other"
) -> Entry:
    """A new entry with a fresh id (``e-`` + 12 hex digits), created now (UTC).

    ``text`` is kept exactly as given; it must not be blank. ``importance`` must be a
    finite number in [0, 1] and ``category`` one of :data:`CATEGORIES`.
    Raises :class:`InvalidInput` naming the bad argument.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("entry text must be a non-empty string", key="text")
    return Entry(
        id=f"e-{uuid.uuid4().hex[:12]}",
        text=text,
        importance=_valid_importance(importance),
        category=_valid_category(category),
        created_at=datetime.now(UTC),
    )


def _valid_importance(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)  # NaN and infinities fail the range test
    raise InvalidInput(f"importance must be a number in [0, 1], not {value!r}", key="importance")


def _valid_category(value: object) -> Category:
    for category in CATEGORIES:
        if value == category:
            return category
    raise InvalidInput(
        f"category must be one of {', '.join(CATEGORIES)}, not {value!r}", key="category"
    )


# -- writing ---------------------------------------------------------------------------


def _hex(char: str) -> str:
    return f"\\u{{{ord(char):x}}}"


def _escape_line(line: str) -> str:
    out = _ESCAPED.sub(lambda m: _hex(m.group()), line.replace("\\", "\\\\"))
    out = out.replace("<!--", "<\\!--")
    if out and out[0].isspace():
        out = _hex(out[0]) + out[1:]
    if out and out[-1].isspace():
        out = out[:-1] + _hex(out[-1])
    return out


def _metadata(entry: Entry) -> str:
    created = entry.created_at.isoformat()
    if created.endswith("+00:00"):
        created = created[: -len("+00:00")] + "Z"
    fields = f"id={entry.id};importance={entry.importance!r};category={entry.category}"
    return f"<!-- mr:{fields};created={created} -->"


def format_item(entry: Entry) -> str:
    """The Markdown lines of one entry, ending with a newline."""
    lines = [_escape_line(line) for line in entry.text.split("\n")]
    out = []
    for index, line in enumerate(lines):
        marker = "-" if index == 0 else " "
        out.append(f"{marker} {line}" if line else marker.strip())
    last = out[-1] or "  "
    out[-1] = f"{last} {_metadata(entry)}" if last.strip() else f"{last}{_metadata(entry)}"
    return "\n".join(out) + "\n"


def journal_text(entries: Sequence[Entry]) -> str:
    """The journal as this module writes it: header, then one item per entry."""
    return HEADER + "".join(format_item(entry) for entry in entries)


def _check_entry(entry: Entry) -> None:
    if not entry.text.strip():
        raise InvalidInput("entry text must not be blank", key="text")
    _valid_importance(entry.importance)
    _valid_category(entry.category)
    if not _ID.fullmatch(entry.id):
        raise InvalidInput(f"entry id {entry.id!r} must be one word without ;<>=", key="id")
    if entry.created_at.tzinfo is None:
        raise InvalidInput("entry created_at must be timezone-aware", key="created_at")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise writers of one journal: a thread lock, plus a lock across processes.

    The cross-process lock is a ``flock`` of the journal's folder: a lock file would be
    left beside the notes (the journal itself is swapped, so its inode cannot be locked).
    """
    with _lock:
        if fcntl is None:  # pragma: no cover
            yield
            return
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(folder, fcntl.LOCK_UN)
        finally:
            os.close(folder)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and swap it in."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise InvalidInput(
            f"cannot read the entries journal {path}: {error.strerror}", key="path"
        ) from None


def append_entry(path: Path, entry: Entry) -> None:
    """Append ``entry`` to the journal at ``path``, creating it (with its header) if needed.

    Other items' bytes are untouched. Raises :class:`InvalidInput` for an invalid entry or
    an id already in the journal.
    """
    _check_entry(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        data = _read_bytes(path)
        if data is None:
            data = HEADER.encode("utf-8")
        elif any(item.entry.id == entry.id for item in _items(data, _mtime(path))):
            raise InvalidInput(f"entry id {entry.id!r} is already in the journal", key="id")
        if data and not data.endswith(b"\n"):
            data += b"\n"
        _write_atomic(path, data + format_item(entry).encode("utf-8", "surrogatepass"))


def remove_entry(path: Path, entry_id: str) -> Entry:
    """Remove the entry ``entry_id`` from the journal and return it.

    Every other line stays byte-identical. Raises :class:`NotFound` when it is absent.
    """
    if not path.parent.is_dir():
        raise NotFound(
            f"no entry with id {entry_id!r} (no journal at {path})", key=entry_id, hint=ENTRY_HINT
        )
    with _locked(path):
        data = _read_bytes(path)
        items = _items(data, _mtime(path)) if data is not None else []
        for item in items:
            if item.entry.id == entry_id:
                lines = data.split(b"\n") if data is not None else []
                kept = lines[: item.start_line - 1] + lines[item.end_line :]
                _write_atomic(path, b"\n".join(kept))
                return item.entry
    raise NotFound(f"no entry with id {entry_id!r}", key=entry_id, hint=ENTRY_HINT)


# -- reading ---------------------------------------------------------------------------


def _mtime(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
    except OSError:
        return datetime.now(UTC)


def read_items(path: Path) -> list[JournalItem]:
    """Every item of the journal with its lines, in file order (missing file: ``[]``)."""
    data = _read_bytes(path)
    return [] if data is None else _items(data, _mtime(path))


def read_journal(path: Path) -> list[Entry]:
    """Every entry of the journal, in file order (missing file: ``[]``)."""
    return [item.entry for item in read_items(path)]


def _unescape(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "\\"
        if match.group(3):
            return "!"
        code = int(match.group(2), 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)

    return _UNESCAPE.sub(replace, text)


def _groups(lines: list[str]) -> Iterator[tuple[int, int]]:
    """``(first, last)`` 0-based line indexes of each item after the header."""
    starts = [i for i, line in enumerate(lines) if line.strip() and not line[0].isspace()]
    first_item = next((i for i in starts if _is_item_start(lines[i])), len(lines))
    starts = [i for i in starts if i >= first_item]
    for n, start in enumerate(starts):
        end = (starts[n + 1] if n + 1 < len(starts) else len(lines)) - 1
        while end > start and not lines[end].strip():
            end -= 1
        yield start, end


def _is_item_start(line: str) -> bool:
    return line == "-" or line.startswith(("- ", "-\t"))


def _strip_marker(line: str) -> str:
    for marker in ("-", "*", "+"):
        if line == marker or line.startswith((f"{marker} ", f"{marker}\t")):
            return line[1:].lstrip(" \t")
    return line


def _items(data: bytes, mtime: datetime) -> list[JournalItem]:
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")  # a BOM is not text
    lines = [line.rstrip("\r") for line in text.split("\n")]
    items: list[JournalItem] = []
    seen: dict[str, int] = {}
    for start, end in _groups(lines):
        if end == start and lines[start].startswith("#"):
            continue
        raw = [_strip_marker(lines[start])] + [
            line.lstrip(" \t") for line in lines[start + 1 : end + 1]
        ]
        item = _item(raw, start + 1, end + 1, mtime)
        if item is None:
            continue
        count = seen.get(item.entry.id, 0) + 1
        seen[item.entry.id] = count
        if count > 1:
            entry = dataclasses.replace(item.entry, id=f"{item.entry.id}~{count}")
            item = dataclasses.replace(item, entry=entry, well_formed=False)
        items.append(item)
    return items


def _item(raw: list[str], first: int, last: int, mtime: datetime) -> JournalItem | None:
    meta: dict[str, str] | None = None
    at = raw[-1].rfind("<!-- mr:")
    match = _COMMENT.fullmatch(raw[-1][at:].rstrip(" \t")) if at >= 0 else None
    if match is not None:
        meta = _parse_metadata(match.group(1))
        raw[-1] = raw[-1][:at]
    text = _unescape("\n".join(line.rstrip(" \t") for line in raw))
    if meta is None and not text.strip():
        return None
    entry = _entry_from(text, meta or {}, mtime)
    well_formed = meta is not None and entry.id == meta.get("id")
    return JournalItem(entry=entry, start_line=first, end_line=last, well_formed=well_formed)


def _parse_metadata(raw: str) -> dict[str, str]:
    fields = {}
    for part in raw.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _entry_from(text: str, meta: dict[str, str], mtime: datetime) -> Entry:
    entry_id = meta.get("id", "")
    if not _ID.fullmatch(entry_id):
        entry_id = f"h-{sha256_hex(text)[:12]}"
    return Entry(
        id=entry_id,
        text=text,
        importance=_read_importance(meta.get("importance")),
        category=_read_category(meta.get("category")),
        created_at=_read_created(meta.get("created"), mtime),
    )


def _read_importance(raw: str | None) -> float:
    try:
        value = float(raw) if raw is not None else DEFAULT_IMPORTANCE
    except ValueError:
        return DEFAULT_IMPORTANCE
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else DEFAULT_IMPORTANCE


def _read_category(raw: str | None) -> Category:
    return next((c for c in CATEGORIES if c == raw), "other")


def _read_created(raw: str | None, default: datetime) -> datetime:
    if raw is None:
        return default
    try:
        created = datetime.fromisoformat(raw)
    except ValueError:
        return default
    return created if created.tzinfo is not None else created.replace(tzinfo=UTC)


# -- indexing --------------------------------------------------------------------------


def entry_chunks(path: str, items: Sequence[JournalItem], *, model: str) -> list[Chunk]:
    """One chunk per non-blank entry: ``path`` is the journal's workspace-relative path,
    lines are the item's lines in the file, ``text`` the entry text, ``entry`` the entry."""
    chunks = []
    for item in items:
        text = item.entry.text
        if not text.strip():
            continue
        digest = sha256_hex(text)
        chunks.append(
            Chunk(
                id=chunk_id("memory", path, item.start_line, item.end_line, digest, model),
                path=path,
                source="memory",
                start_line=item.start_line,
                end_line=item.end_line,
                text=text,
                hash=digest,
                model=model,
                entry=item.entry,
            )
        )
    return chunks
