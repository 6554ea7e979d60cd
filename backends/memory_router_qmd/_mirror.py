"""The chunk mirror (``documents = "chunks"``): the router's own chunks as files QMD indexes.

QMD 2.8.3 ranks whole files by their best ~900-token chunk and has no chunk-size setting;
an embedding model with a 512-token window (the offline MiniLM) cuts most of those chunks.
So in this mode QMD indexes a *derived* folder: every chunk the router's chunker makes
(:meth:`memory_router.kit.Snapshot.chunks`, the same chunks the SQLite backend indexes) is
one small Markdown file, in one collection. The memory stays the Markdown; the mirror is
this backend's own and is rebuilt from it.

Layout under the mirror folder: ``<key>/<stem>.md`` holding exactly the chunk's text,
where ``key`` is 20 hex digits of sha256(source path, chunk hash, occurrence) — a chunk
that does not change keeps its file even when lines above it move (QMD then re-indexes
and re-embeds only the changed chunks), and QMD's title for it is the source file's stem
as it would be for the whole file. No name starts with ``.`` and no folder is one QMD
skips (``node_modules``, ``dist``…): keys are hex. ``.manifest.json`` (a dot file: QMD
skips it) maps each mirror file to its source path, source and lines.

Writes are ordered so that an interruption loses and mis-cites nothing: new chunk files
first (each written to a dot-named temporary and renamed), then the manifest (the same
way), then the files the new manifest no longer names are deleted. A search maps only
files the manifest names; a file QMD indexed that the manifest does not (yet, or any
more) name is dropped from the results, never cited.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memory_router.kit import Chunk, Snapshot

COLLECTION = "chunks"
"""The one collection QMD indexes in this mode."""
MANIFEST = ".manifest.json"
_UNSAFE = re.compile(r"[^\w.\- ]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorEntry:
    """Where a mirror file's text comes from: the workspace ``path`` (as hits report it),
    its ``source``, and the source line of each mirror line.

    ``start``/``end`` are the chunk's source lines (inclusive). ``lines``, when not empty,
    gives the source line of each mirror line (transcripts: JSONL line numbers); otherwise
    mirror line ``k`` is source line ``start + k - 1 - lead``, kept within
    ``start``–``end``: ``lead`` lines of context lead the chunk's text (the headings above
    a list item, ``[chunking] structure``) and stand for its first line, and a line longer
    than a chunk is cut into pieces on several mirror lines.
    """

    path: str
    source: str
    start: int
    end: int
    lines: tuple[int, ...] = ()
    lead: int = 0

    def source_line(self, line: int) -> int:
        """The source line of 1-based mirror line ``line``."""
        if self.lines:
            return self.lines[min(max(1, line), len(self.lines)) - 1]
        return min(max(self.start, self.start + line - 1 - self.lead), self.end)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "path": self.path,
            "source": self.source,
            "start": self.start,
            "end": self.end,
        }
        if self.lines:
            data["lines"] = list(self.lines)
        if self.lead:
            data["lead"] = self.lead
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorReport:
    """What a mirror write did: chunk files ``written``, ``kept`` and ``removed``, and the
    source files whose chunks are ``files[kind]`` (``added``, ``updated``, ``removed``,
    ``unchanged``) against the previous manifest."""

    written: int
    kept: int
    removed: int
    files: dict[str, int]


def mirror_name(path: str, chunk_hash: str, occurrence: int) -> str:
    """The mirror file of a chunk: ``<20 hex>/<source stem>.md`` (see the module docstring)."""
    key = hashlib.sha256(f"{path}\0{chunk_hash}\0{occurrence}".encode()).hexdigest()[:20]
    stem = _UNSAFE.sub("-", Path(path).name.rsplit(".", 1)[0]).strip(". -") or "note"
    return f"{key}/{stem[:80]}.md"


def _entries(snapshot: Snapshot) -> dict[str, tuple[MirrorEntry, str]]:
    """Every chunk of ``snapshot`` as mirror name → (entry, text)."""
    wanted: dict[str, tuple[MirrorEntry, str]] = {}
    for doc in snapshot.documents:
        line_map = snapshot.line_map(doc)
        source = snapshot.text(doc).split("\n")
        seen: dict[str, int] = {}
        for chunk in snapshot.chunks(doc):
            occurrence = seen[chunk.hash] = seen.get(chunk.hash, 0) + 1
            name = mirror_name(doc.path, chunk.hash, occurrence)
            lines = _transcript_lines(chunk, line_map) if line_map else ()
            entry = MirrorEntry(
                path=doc.path,
                source=doc.source,
                start=chunk.start_line,
                end=chunk.end_line,
                lines=lines,
                lead=0 if line_map else _lead(chunk, source),
            )
            wanted[name] = (entry, chunk.text)
        snapshot.release(doc)
    return wanted


def _lead(chunk: Chunk, source: list[str]) -> int:
    """How many lines of context lead the chunk's text: the lines before its last
    ``end - start + 1``, when those are exactly the source's lines (0 otherwise)."""
    text = chunk.text.split("\n")
    body = source[chunk.start_line - 1 : chunk.end_line]
    extra = len(text) - len(body)
    return extra if extra > 0 and body and text[extra:] == body else 0


def _transcript_lines(chunk: Chunk, line_map: tuple[int, ...]) -> tuple[int, ...]:
    """The JSONL line of each line of a transcript chunk (its text is the transcript's
    flattened lines, from the content line whose JSONL line is ``chunk.start_line``)."""
    first = bisect.bisect_left(line_map, chunk.start_line)
    count = chunk.text.count("\n") + 1
    lines = line_map[first : first + count]
    return tuple(min(n, chunk.end_line) for n in lines) or (chunk.start_line,)


def write_mirror(snapshot: Snapshot, folder: Path) -> MirrorReport:
    """Bring ``folder`` in line with ``snapshot``'s chunks (ordered as the module says)."""
    wanted = _entries(snapshot)
    folder.mkdir(parents=True, exist_ok=True)
    files = _file_changes(load_manifest(folder / MANIFEST), wanted)
    written = 0
    for name, (_entry, text) in wanted.items():
        target = folder / name
        if target.is_file():
            continue  # the name is the content's: an existing file is this chunk
        target.parent.mkdir(exist_ok=True)
        _atomic_write(target, text + "\n")
        written += 1
    manifest = {name: entry.to_json() for name, (entry, _text) in sorted(wanted.items())}
    _atomic_write(folder / MANIFEST, json.dumps(manifest, separators=(",", ":")))
    removed = _remove_others(folder, set(wanted))
    return MirrorReport(written=written, kept=len(wanted) - written, removed=removed, files=files)


def _file_changes(
    old: Mapping[str, MirrorEntry], new: Mapping[str, tuple[MirrorEntry, str]]
) -> dict[str, int]:
    """Source files added, updated (another set of chunks, or the same chunks on other
    lines), removed and unchanged between two manifests."""
    before: dict[str, set[tuple[str, int, int]]] = {}
    after: dict[str, set[tuple[str, int, int]]] = {}
    for name, entry in old.items():
        before.setdefault(entry.path, set()).add((name, entry.start, entry.end))
    for name, (entry, _text) in new.items():
        after.setdefault(entry.path, set()).add((name, entry.start, entry.end))
    same = sum(1 for path in after if before.get(path) == after[path])
    kept = sum(1 for path in after if path in before)
    return {
        "added": len(after) - kept,
        "updated": kept - same,
        "removed": sum(1 for path in before if path not in after),
        "unchanged": same,
    }


def _atomic_write(target: Path, text: str) -> None:
    """Write ``target`` through a dot-named temporary beside it (QMD skips dot files)."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _remove_others(folder: Path, keep: set[str]) -> int:
    """Delete every chunk folder and file of ``folder`` that ``keep`` does not name
    (left-over temporaries included); returns how many chunk files went."""
    removed = 0
    keys = {name.split("/", 1)[0] for name in keep}
    for child in folder.iterdir():
        if child.name == MANIFEST:
            continue
        if child.is_dir() and not child.is_symlink() and child.name in keys:
            for file in child.iterdir():
                if f"{child.name}/{file.name}" not in keep:
                    removed += file.suffix == ".md"
                    file.unlink(missing_ok=True)
            continue
        if child.is_dir() and not child.is_symlink():
            removed += sum(1 for f in child.iterdir() if f.suffix == ".md")
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    return removed


class Manifest:
    """The mirror's manifest as last written, re-read when the file changes (one
    ``stat`` per search); unreadable reads as empty (every hit dropped, none mis-cited)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / MANIFEST
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, MirrorEntry] = {}

    def entries(self) -> Mapping[str, MirrorEntry]:
        try:
            stat = self.path.stat()
        except OSError:
            return {}
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self._entries, self._stamp = load_manifest(self.path), stamp
        return self._entries

    def sources(self) -> int:
        """How many source files the mirror holds chunks of."""
        return len({entry.path for entry in self.entries().values()})


def load_manifest(path: Path) -> dict[str, MirrorEntry]:
    """The entries of the manifest at ``path`` (empty when missing or malformed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            str(name): MirrorEntry(
                path=str(item["path"]),
                source=str(item["source"]),
                start=int(item["start"]),
                end=int(item["end"]),
                lines=tuple(int(n) for n in item.get("lines") or ()),
                lead=int(item.get("lead") or 0),
            )
            for name, item in data.items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
