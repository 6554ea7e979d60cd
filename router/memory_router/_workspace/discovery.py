"""Which files are memory (reference §1.2), and their :class:`Document` records.

Memory files are the workspace's ``MEMORY.md`` and ``memory.md``, every ``*.md`` under
``memory/`` (recursive), and the configured extra paths (a directory is walked for ``*.md``,
a file is taken if it ends in ``.md``). Everywhere:

* symbolic links are skipped, whether they point at files or directories (a note could
  otherwise lead out of the workspace), with a warning naming each one; so are
  non-regular files (FIFOs, sockets, devices), silently;
* a Markdown note over ``[sync] max_file_bytes`` is skipped with a warning (one 37 MB
  note is 50,000 chunks and an hour of embedding); the entries journal has no limit;
* directories in :data:`IGNORED_DIRS` are not descended into;
* a path that does not exist or cannot be read is simply absent (never an error);
* a file reached twice (an extra path inside ``memory/``…) is listed once, de-duplicated by
  real path, and the result is sorted.

The entries journal (``config.entries.path``) is always a memory file, even when configured
outside ``memory/``.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from .._config.config import Config
from .._types import Document
from .decoding import Decoded, decode, journal_text

_DATED = re.compile(r"(?:^|/)memory/(?:.*/)?(\d{4})-(\d{2})-(\d{2})(?:-[^/]*)?\.md$")


def dated_file(path: str) -> datetime | None:
    """The date in a dated memory file name (``memory/2026-01-31.md``, nested or suffixed)."""
    match = _DATED.search(path)
    if not match:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
    except ValueError:
        return None


IGNORED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".pnpm-store",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
    }
)

KnownFiles = Mapping[str, tuple[float, int, str]]
"""``path -> (mtime, size, hash)`` of files already indexed, to skip re-hashing them."""

LINK_WARNING = "a symbolic link; not indexed (links are never followed)"


def _walk(directory: str, found: list[str], links: list[str] | None = None) -> None:
    """Append every regular ``*.md`` file under ``directory``, not following links; the
    links that would have been notes or folders go to ``links``."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_symlink():
                if links is not None and (entry.name.endswith(".md") or entry.is_dir()):
                    links.append(entry.path)
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in IGNORED_DIRS:
                    _walk(entry.path, found, links)
            elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                found.append(entry.path)
        except OSError:
            continue


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _add_root(path: str, found: list[str], links: list[str] | None = None) -> None:
    """A top-level path: a regular ``.md`` file is taken, a real directory is walked."""
    info = _lstat(path)
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        if links is not None:
            links.append(path)
        return
    if stat.S_ISDIR(info.st_mode):
        _walk(path, found, links)
    elif stat.S_ISREG(info.st_mode) and path.endswith(".md"):
        found.append(path)


def _roots(workspace: Path, extra_paths: Sequence[Path]) -> Iterator[str]:
    base = os.path.normpath(workspace)
    for name in ("MEMORY.md", "memory.md", "memory"):
        yield os.path.join(base, name)
    for extra in extra_paths:
        yield os.path.normpath(os.path.join(base, extra))


def list_memory_files(
    workspace: Path, extra_paths: Sequence[Path], links: list[str] | None = None
) -> list[str]:
    """Every memory file of ``workspace`` plus ``extra_paths``, once each, sorted.

    Relative extra paths are taken relative to the workspace. Never raises for a path that
    is missing or unreadable. Symbolic links are not followed; when ``links`` is given,
    each one skipped is appended to it (so callers can warn instead of skipping silently).
    """
    seen: set[str] = set()
    result: list[str] = []
    for root in _roots(workspace, extra_paths):
        files: list[str] = []
        _add_root(root, files, links)
        # Nothing below a root is a link (links are skipped), so resolving the root once
        # gives every file's real path.
        real_root = os.path.realpath(root)
        for path in files:
            real = real_root + path[len(root) :]
            if real not in seen:
                seen.add(real)
                result.append(path)
    result.sort()
    return result


def _relative_fast(base: str, path: str) -> str:
    """:func:`relative_path` for plain strings, skipping ``relpath`` for files inside."""
    prefix = base.rstrip(os.sep) + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :].replace(os.sep, "/")
    return relative_path(Path(base), Path(path))


def relative_path(workspace: Path, path: Path) -> str:
    """``path`` relative to ``workspace`` with forward slashes (``../x`` when outside)."""
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(workspace))
    return rel.replace(os.sep, "/")


def is_memory_path(rel: str) -> bool:
    """True for ``MEMORY.md``, ``memory.md``, ``DREAMS.md`` and anything under ``memory/``.

    ``rel`` is workspace-relative; a leading ``./`` is ignored and a path with a ``..``
    part is never a memory path.
    """
    normalized = rel.strip().replace("\\", "/")
    while normalized.startswith("./"):
        normalized = normalized[2:]
    parts = normalized.split("/")
    if ".." in parts or not normalized or normalized.startswith("/"):
        return False
    if normalized in ("MEMORY.md", "memory.md", "DREAMS.md"):
        return True
    return normalized.startswith("memory/") and len(normalized) > len("memory/")


def _hash_file(path: str, kind: str) -> tuple[str | None, str | None, os.stat_result] | None:
    """sha256 of the file's text (see :mod:`._decoding`; ``None`` when it looks binary),
    the decoder's warning, and its stat; ``None`` if unreadable. The entries journal is
    the router's own UTF-8 file, read as :mod:`._journal` reads it."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            data = handle.read()
    except OSError:
        return None
    decoded = decode(data) if kind != "journal" else Decoded(text=journal_text(data), encoding="")
    if decoded.text is None:
        return None, decoded.warning, info
    return hashlib.sha256(decoded.text.encode("utf-8")).hexdigest(), decoded.warning, info


def _document(
    path: str,
    rel: str,
    kind: str,
    known: KnownFiles | None,
    warnings: dict[str, str],
    max_bytes: int = 0,
) -> Document | None:
    if max_bytes and kind != "journal":
        size = _size(path)
        if size > max_bytes:
            warnings[rel] = too_large(size, max_bytes)
            return None
    previous = known.get(rel) if known is not None else None
    if previous is not None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        if previous[0] == info.st_mtime and previous[1] == info.st_size:
            return _make(path, rel, kind, previous[2], info)
    hashed = _hash_file(path, kind)
    if hashed is None:
        return None
    digest, warning, info = hashed
    if warning:
        warnings[rel] = warning
    if digest is None:
        return None
    return _make(path, rel, kind, digest, info)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def too_large(size: int, limit: int) -> str:
    """The warning for a note of ``size`` bytes over the ``[sync] max_file_bytes`` limit."""
    return f"{_mb(size)}, over [sync] max_file_bytes ({_mb(limit)}); not indexed"


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size:,} bytes"


def _make(path: str, rel: str, kind: str, digest: str, info: os.stat_result) -> Document:
    return Document(
        path=rel,
        abs_path=path,
        source="memory",
        kind="journal" if kind == "journal" else "markdown",
        hash=digest,
        mtime=info.st_mtime,
        size=info.st_size,
    )


class Found(NamedTuple):
    """What :func:`discover` found: the documents, and a warning per file that is not plain
    UTF-8 (``path -> warning``; a file that looks binary is there and not a document)."""

    documents: list[Document]
    warnings: dict[str, str]


def discover(config: Config, known: KnownFiles | None = None) -> Found:
    """The workspace's memory files as :class:`Document` records, sorted by path.

    ``source`` is ``"memory"``; ``kind`` is ``"journal"`` for the entries journal and
    ``"markdown"`` otherwise; ``hash`` is the sha256 of the file's text. Unreadable files
    are skipped, and so are files that look binary, symbolic links and notes over
    ``[sync] max_file_bytes`` (each with a warning, as are files read with a fallback
    encoding: see :mod:`._decoding`). With ``known`` (``path -> (mtime, size,
    hash)``, e.g. from a backend's files table) a file whose mtime and size both match
    keeps its known hash without being read: the fast path for re-syncing a large, mostly
    unchanged workspace.
    """
    workspace = config.workspace_path
    extra = [config.expand(p) for p in config.extra_paths]
    journal = Path(os.path.normpath(workspace / config.entries.path))
    base = os.path.normpath(workspace)
    journal_rel = relative_path(workspace, journal)
    documents = []
    links: list[str] = []
    warnings: dict[str, str] = {}
    for path in list_memory_files(workspace, [*extra, journal], links):
        rel = _relative_fast(base, path)
        kind = "journal" if rel == journal_rel else "markdown"
        doc = _document(path, rel, kind, known, warnings, config.sync.max_file_bytes)
        if doc is not None:
            documents.append(doc)
    for link in links:
        warnings[_relative_fast(base, link)] = LINK_WARNING
    documents.sort(key=lambda d: d.path)
    return Found(documents, dict(sorted(warnings.items())))
