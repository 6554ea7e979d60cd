"""Finding a damaged index file and moving it aside.

The index is derived data: when :func:`diagnose` finds it damaged (not a SQLite file, a
truncated or corrupt one, a directory in its place, missing tables, rows that disagree,
a vector table of the wrong size), :func:`move_aside` renames it (and its ``-wal`` /
``-shm``) to ``<name>.damaged-<UTC time>`` and the next sync rebuilds it from the Markdown
and the embedding cache. The last :data:`KEEP_DAMAGED` damaged copies are kept for a
post-mortem; nothing else is deleted. The locks, and what killed rebuilds and swaps leave
behind, live in :mod:`._files`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import struct
from datetime import UTC, datetime
from pathlib import Path

from ._db import Connection, Driver, connect, read_meta, table_exists, vec_dims
from ._files import SUFFIXES

MAGIC = b"SQLite format 3\x00"
KEEP_DAMAGED = 3
QUICK_CHECK_MAX_BYTES = 64 * 2**20  # a full page walk above this costs more than it is worth
MARKER = ".damaged"
_REQUIRED = ((1, "meta"), (1, "files"), (1, "chunks"), (2, "entries"))
CORRUPT_MARKERS = ("not a database", "malformed", "file is encrypted", "disk image")


def mark_damaged(path: Path, reason: str) -> None:
    """Leave a note that ``path`` failed as corrupt, so the next open heals it."""
    with contextlib.suppress(OSError):
        Path(f"{path}{MARKER}").write_text(reason + "\n", encoding="utf-8")


def is_corruption(error: BaseException) -> bool:
    """Whether a driver error says the file itself is corrupt (not busy, not one bad query)."""
    text = str(error).lower()
    return any(marker in text for marker in CORRUPT_MARKERS)


def diagnose(
    path: Path,
    driver: Driver,
    *,
    busy_timeout_ms: int,
    indexed: bool = True,
    read_only: bool = False,
) -> str | None:
    """Why the index at ``path`` cannot be trusted, or ``None`` when it looks sound.

    A missing or empty file is not damage (it is simply not built yet). ``indexed =
    False`` (a migration's staging copy, whose full-text table is filled only at the
    end) skips the full-text row count. ``read_only``: the folder cannot be written.
    """
    marker = Path(f"{path}{MARKER}")
    if marker.exists():
        with contextlib.suppress(OSError):
            return marker.read_text(encoding="utf-8").strip() or "marked as corrupt"
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return "a directory is in the index file's place"
    if not stat.S_ISREG(info.st_mode):
        return "the index path is not a regular file"
    if info.st_size == 0:
        return None
    header = None if _has_log(path) else _header_damage(path, info.st_size)
    return header or _content_damage(path, driver, busy_timeout_ms, indexed, read_only)


def _has_log(path: Path) -> bool:
    # A crash in the middle of a checkpoint leaves a main file shorter than its header says
    # while the WAL still holds every committed page; a kill in the middle of a commit in
    # rollback-journal mode (a migration's staging copy) leaves a hot journal. SQLite
    # completes or rolls back either on open, so only the content check (through SQLite)
    # may judge such a file.
    for log in ("-wal", "-journal"):
        try:
            if Path(f"{path}{log}").stat().st_size > 0:
                return True
        except OSError:
            continue
    return False


def _header_damage(path: Path, size: int) -> str | None:
    with path.open("rb") as file:
        header = file.read(100)
    if len(header) < 100 or not header.startswith(MAGIC):
        return "not a SQLite database (bad header)"
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return "not a SQLite database (bad page size)"
    pages, changes, valid_for = struct.unpack(">I", header[28:32])[0], header[24:28], header[92:96]
    if size % page_size:
        return "the file is truncated (not a whole number of pages)"
    if changes == valid_for and pages * page_size > size:
        return f"the file is truncated ({size} of {pages * page_size} bytes)"
    return None


def _content_damage(
    path: Path, driver: Driver, busy_timeout_ms: int, indexed: bool, read_only: bool
) -> str | None:
    try:
        conn = connect(
            driver, path, busy_timeout_ms=busy_timeout_ms, create=False, read_only=read_only
        )
    except Exception as error:
        return f"cannot open: {error}" if is_corruption(error) else None
    try:
        conn.execute("BEGIN")
        try:
            return _check(conn, path, indexed)
        finally:
            conn.execute("ROLLBACK")
    except Exception as error:
        return f"unreadable: {error}" if is_corruption(error) else None
    finally:
        conn.close()


def _check(conn: Connection, path: Path, indexed: bool) -> str | None:
    if path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
        verdict = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)")]
        if verdict != ["ok"]:
            return f"corrupt: {'; '.join(verdict)}"
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for since, table in _REQUIRED:
        if version >= since and not table_exists(conn, table):
            return f"the {table} table is missing"
    if version < 1:
        return None
    chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    return (_fts_damage(conn, chunks) if indexed else None) or _vec_damage(conn)


def _fts_damage(conn: Connection, chunks: int) -> str | None:
    if not table_exists(conn, "chunks_fts"):
        if chunks and _has_fts5(conn):
            return "the full-text table chunks_fts is missing"
        return None
    rows = int(conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0])
    if rows != chunks:
        return f"the full-text table has {rows} rows for {chunks} chunks"
    return None


def _has_fts5(conn: Connection) -> bool:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
    except Exception:
        return False
    conn.execute("DROP TABLE temp.fts5_probe")
    return True


def _vec_damage(conn: Connection) -> str | None:
    dims = vec_dims(conn)
    wanted = (read_meta(conn) or {}).get("vectorDims")
    if dims is not None and isinstance(wanted, int) and dims != wanted:
        return f"the vector table holds {dims}-dimension vectors, the index {wanted}"
    return None


def move_aside(path: Path) -> Path:
    """Rename the damaged index (and companions) to ``<name>.damaged-<time>``; prune old copies."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{target}{suffix}")
    Path(f"{path}{MARKER}").unlink(missing_ok=True)
    _prune(path)
    return target


def _prune(path: Path) -> None:
    copies = sorted(
        p
        for p in path.parent.glob(f"{path.name}.damaged-*")
        if not p.name.endswith(("-wal", "-shm", "-journal"))
    )
    for old in copies[:-KEEP_DAMAGED]:
        for suffix in SUFFIXES:
            target = Path(f"{old}{suffix}")
            if target.is_dir() and not target.is_symlink():
                _remove_tree(target)
            else:
                target.unlink(missing_ok=True)


def _remove_tree(root: Path) -> None:
    for child in sorted(root.rglob("*"), key=lambda p: -len(p.parts)):
        if child.is_dir() and not child.is_symlink():
            child.rmdir()
        else:
            child.unlink()
    root.rmdir()


def unwritable_hint(folder: Path, error: OSError) -> str:
    """What to tell a user whose index folder cannot be written."""
    elsewhere = "set [backends.sqlite] path (or state_dir) to another folder"
    if error.errno == errno.EROFS:  # no chmod helps there
        return f"{folder} is on a read-only file system: {elsewhere} on a writable one"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"make {folder} writable (e.g. chmod u+w {folder}) or {elsewhere}"
    return f"check that {folder} is a folder you can write, or {elsewhere}"


def remove_index_files(path: Path) -> list[Path]:
    """Delete the index and everything this module keeps beside it; the paths removed."""
    patterns = (
        *("", "-wal", "-shm", ".lock", ".swap", ".swap-next", MARKER, ".tmp-*", ".backup-*"),
        ".damaged-*",
        ".migrating*",  # a migration's copy (and its -wal, -shm)
    )
    removed = []
    for pattern in patterns:
        for found in path.parent.glob(f"{path.name}{pattern}"):
            if found.is_dir() and not found.is_symlink():
                _remove_tree(found)
            else:
                found.unlink(missing_ok=True)
            removed.append(found)
    return removed
