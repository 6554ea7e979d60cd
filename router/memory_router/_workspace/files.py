"""Allow-listed reads of memory files: the ``memory_get`` tool (reference §1.13).

A path is readable when all of these hold:

* it is a relative path (``/abs`` and ``~`` tricks are refused), with no NUL byte, and
  ends in ``.md``; backslashes count as separators;
* once ``..`` parts are resolved it is a memory path inside the workspace
  (``MEMORY.md``, ``memory.md``, ``DREAMS.md``, ``memory/…``), the entries journal, inside
  a configured extra-paths directory, or exactly a configured extra ``.md`` file (extra
  paths outside the workspace are written ``../…``, as search results show them);
* no part of it below the allowed root is a symbolic link, the root itself is not a link
  (for extra paths), and the file is a regular file. Each part is opened relative to its
  parent folder without following links (``openat`` with ``O_NOFOLLOW``), so a folder
  swapped for a link while a read runs cannot lead outside the allowed root.

A missing file reads as ``""``. A file is decoded as indexing decodes it (UTF-8, else a
fallback; see :mod:`._decoding`); one that looks binary is refused. Every refusal is
:class:`InvalidInput` with ``key="path"``.
A search result's citation (``memory/notes.md#L12-L20``, ``…#L12``) or location as the CLI
prints it (``memory/notes.md:12-20``) is accepted as the path: its lines are read, unless
``from_line`` / ``lines`` are given as well (then the request is refused as ambiguous).
Session transcripts (``sessions/*.jsonl``) are search results but are not readable here.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from .._config.config import Config
from .._exceptions import InvalidInput
from .._types import FileText
from .decoding import decode
from .discovery import is_memory_path, relative_path

_MAX_BYTES = 64 * 1024 * 1024  # refuse to load absurdly large files into memory


def _refuse(path: str, why: str) -> InvalidInput:
    return InvalidInput(
        f"cannot read {path!r}: {why}",
        key="path",
        hint="memory_get reads MEMORY.md, memory.md, DREAMS.md, memory/**/*.md and extra paths",
    )


def _normalize(path: object) -> str:
    """The request as a clean relative POSIX path, or :class:`InvalidInput`."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("path is required", key="path")
    if "\x00" in path:
        raise _refuse(path.replace("\x00", "\\0"), "NUL byte in path")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(path.encode("utf-8", "replace").decode(), "not valid Unicode") from None
    clean = path.strip().replace("\\", "/")
    if clean.startswith("/") or os.path.isabs(clean) or clean.startswith("~"):
        raise _refuse(path, "absolute paths are not accepted; use a workspace-relative path")
    if clean.startswith("sessions/") or ".jsonl" in clean:
        raise _refuse(path, "session transcripts are searchable but not readable with get")
    if not clean.endswith(".md"):
        raise _refuse(path, "only Markdown (.md) memory files can be read")
    return os.path.normpath(clean).replace(os.sep, "/")


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip("/") + "/")


def _allowed_root(config: Config, rel: str, target: str) -> str | None:
    """The directory the walk for links starts from, or None when ``target`` is not allowed.

    For a workspace memory file that is the workspace; for an extra path, the extra path's
    parent (so the extra path itself must not be a link).
    """
    workspace = str(config.workspace_path)
    journal = os.path.normpath(config.workspace_path / config.entries.path)
    if _inside(workspace, target) and (is_memory_path(rel) or target == journal):
        return workspace
    for extra in config.extra_paths:
        root = str(config.expand(extra))
        info = _lstat(root)
        if info is None or stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_ISDIR(info.st_mode) and _inside(root, target) and target != root:
            return os.path.dirname(root)
        if stat.S_ISREG(info.st_mode) and target == root and root.endswith(".md"):
            return os.path.dirname(root)
    return None


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _read_beneath(root: str, target: str, shown: str) -> str | None:
    """Read ``target`` by opening each part below ``root`` relative to its parent folder,
    never following a link, so a part swapped for a link between two reads cannot lead
    outside ``root``. ``None`` when some part does not exist (the file is missing)."""
    parts = os.path.relpath(target, root).split(os.sep)
    try:
        fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root itself may be a link
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _refuse(shown, error.strerror or "unreadable") from None
    try:
        for i, part in enumerate(parts):
            parent, fd = fd, -1  # _open_at closes the parent, whatever happens
            fd = _open_at(parent, part, _FILE_FLAGS if i == len(parts) - 1 else _DIR_FLAGS, shown)
            if fd < 0:
                return None
        return _read_regular(fd, shown)
    finally:
        if fd >= 0:
            os.close(fd)


def _open_at(parent: int, name: str, flags: int, shown: str) -> int:
    """Open ``name`` in folder ``parent`` (closing ``parent``); -1 when it is missing."""
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return -1
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(parent, name):
            raise _refuse(shown, "symbolic links are not followed") from None
        raise _refuse(shown, error.strerror or "unreadable") from None
    finally:
        os.close(parent)


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_regular(fd: int, shown: str) -> str:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, "not a regular file")
    if info.st_size > _MAX_BYTES:
        raise _refuse(shown, "too large")
    chunks = []
    size = 0
    while block := os.read(fd, 1 << 20):
        size += len(block)
        if size > _MAX_BYTES:  # it grew since fstat
            raise _refuse(shown, "too large")
        chunks.append(block)
    text = decode(b"".join(chunks)).text  # the same reading as indexing
    if text is None:
        raise InvalidInput(
            f"cannot read {shown!r}: it looks binary, not text (it is not indexed either)",
            key="path",
            hint="move it out of the memory folders, or save it as text (UTF-8) Markdown",
        )
    return text


def _slice(text: str, from_line: int | None, lines: int | None) -> str:
    if from_line is None and lines is None:
        return text
    start = (from_line or 1) - 1
    all_lines = text.split("\n")
    end = len(all_lines) if lines is None else start + lines
    return "\n".join(all_lines[start:end])


_CITATION = re.compile(
    r"^(?P<path>.+\.md)(?:#L(?P<start>\d+)(?:-L?(?P<end>\d+))?|:(?P<first>\d+)(?:-(?P<last>\d+))?)$"
)


def split_citation(path: object) -> tuple[object, int | None, int | None]:
    """``"a.md#L3-L9"`` (a citation) or ``"a.md:3-9"`` (as ``search`` prints a hit) →
    ``("a.md", 3, 7)`` (path, first line, line count); any other value is returned as it
    is, with no lines. Raises :class:`InvalidInput` for a range that ends before it starts
    or starts at line 0."""
    match = _CITATION.match(path.strip()) if isinstance(path, str) else None
    if match is None:
        return path, None, None
    start = int(match["start"] or match["first"])
    last = match["end"] or match["last"]
    end = int(last) if last else start
    if start < 1 or end < start:
        raise InvalidInput(
            f"cannot read {path!r}: the line range #L{start}-L{end} is empty",
            key="path",
            hint="cite lines as path#L<first>-L<last>, as search results do",
        )
    return match["path"], start, end - start + 1


def _check_line_arg(value: int | None, key: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{key} must be a whole number of at least 1, not {value!r}", key=key)


def read_memory_file(
    config: Config, path: str, *, from_line: int | None = None, lines: int | None = None
) -> FileText:
    """Read a memory file, or ``lines`` lines of it starting at 1-based ``from_line``.

    See the module docstring for what is allowed. A missing file gives ``text=""``.
    Raises :class:`InvalidInput` (``key`` ``"path"``, ``"from_line"`` or ``"lines"``).
    """
    _check_line_arg(from_line, "from_line")
    _check_line_arg(lines, "lines")
    bare, cited_from, cited_lines = split_citation(path)
    if cited_from is not None:
        if from_line is not None or lines is not None:
            raise InvalidInput(
                f"cannot read {path!r}: it names its lines and from_line / lines were given too",
                key="path",
                hint="pass either the citation path#L3-L9 or the path with from_line / lines",
            )
        path, from_line, lines = str(bare), cited_from, cited_lines
    rel = _normalize(path)
    target = os.path.normpath(config.workspace_path / rel)
    shown = relative_path(config.workspace_path, Path(target))
    root = _allowed_root(config, shown, target)
    if root is None:
        raise _refuse(path, "not a memory file (MEMORY.md, memory/…, or a configured extra path)")
    text = _read_beneath(root, target, path)
    if text is None:
        return FileText(path=shown, text="", from_line=from_line or 1, lines=lines)
    return FileText(
        path=shown, text=_slice(text, from_line, lines), from_line=from_line or 1, lines=lines
    )
