"""The files beside the index: its locks, and what killed rebuilds and swaps leave behind.

``<name>.lock`` is held (``flock``) by every process that rebuilds or heals the index, so a
process that finds it free knows that the ``.tmp-*`` files beside the index belong to
nobody and can be removed.

``<name>.swap`` makes replacing the live file one step for every other process: SQLite
opens the ``-wal`` and ``-shm`` companions by name after the main file (and deletes them
by name on the last close), so a connection opened or closed while another process
renames the three files could pair one file with another's log ("disk I/O error", or
worse, a shared-memory index built from the wrong log). Every open and close of a
connection to the live file holds it shared (:func:`swap_lock`); renaming the live file
(a swap, moving a damaged file aside, putting back a backup) holds it exclusively. A
connection that is open keeps its own three files and needs no lock to read.
``<name>.swap-next`` is its turnstile: a swap holds it exclusively while it waits, and an
open passes it (shared, let go at once) before it asks for ``.swap``, so opens that keep
overlapping (one-shot CLI commands, each checking the file) cannot starve a swap.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

SUFFIXES = ("", "-wal", "-shm", "-journal")
"""The index file and its companions, renamed together."""
_SIDE = ("-wal", "-shm", "-journal")


def lock_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.lock")


def swap_lock_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.swap")


def swap_next_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.swap-next")


@contextlib.contextmanager
def index_lock(path: Path, *, wait_s: float) -> Iterator[bool]:
    """Hold ``<index>.lock`` exclusively; yields whether it was taken within ``wait_s``."""
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        with _flock(fd, fcntl.LOCK_EX, wait_s=wait_s, slice_s=0.05) as held:
            yield held
    finally:
        os.close(fd)


@contextlib.contextmanager
def swap_lock(path: Path, *, exclusive: bool, wait_s: float) -> Iterator[bool]:
    """Hold ``<index>.swap`` behind its turnstile (see the module docstring); yields
    whether both were had within ``wait_s`` in all.

    Each use locks descriptors of its own, so threads of one process exclude each other
    as processes do. In a folder where the files can be neither created nor opened (a
    read-only folder) nobody can swap the index, and the lock counts as held.
    """
    deadline = time.monotonic() + wait_s
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    with _file_lock(swap_next_path(path), mode, deadline) as queued:
        if exclusive and queued:  # held until the swap is done: later opens wait
            with _file_lock(swap_lock_path(path), mode, deadline) as held:
                yield held
            return
    if not queued:
        yield False
        return
    with _file_lock(swap_lock_path(path), mode, deadline) as held:
        yield held


@contextlib.contextmanager
def _file_lock(path: Path, mode: int, deadline: float) -> Iterator[bool]:
    """``flock`` ``path`` (created when missing) on a descriptor of its own until
    ``deadline``; a file that can be neither created nor opened counts as held."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            yield True
            return
    try:
        # A swap holds its locks for a few renames: short slices keep the waits short.
        wait_s = max(0.0, deadline - time.monotonic())
        with _flock(fd, mode, wait_s=wait_s, slice_s=0.005) as held:
            yield held
    finally:
        os.close(fd)


@contextlib.contextmanager
def _flock(fd: int, mode: int, *, wait_s: float, slice_s: float) -> Iterator[bool]:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(slice_s)
    try:
        yield True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def remove_orphans(path: Path) -> list[Path]:
    """Delete ``<index>.tmp-*`` files when no process holds the index lock; the removed ones."""
    temps = list(path.parent.glob(f"{path.name}.tmp-*"))
    if not temps:
        return []
    removed = []
    with index_lock(path, wait_s=0) as free:
        if not free:
            return []
        for temp in temps:
            with contextlib.suppress(OSError):
                temp.unlink()
                removed.append(temp)
    return removed


def recover(path: Path, *, wait_s: float) -> None:
    """Undo what a process killed during :meth:`Store.replace_with` or a rebuild left behind.

    A missing index with a ``.backup-*`` beside it was moved aside and never replaced: it
    is put back, under the swap lock (a live swap holds it, so a backup of a swap in
    progress is left alone). Temporary rebuild files are deleted once no process holds
    the index lock (every rebuild holds it while its file exists).
    """
    if not path.exists() and _backups(path):
        with swap_lock(path, exclusive=True, wait_s=wait_s) as held:
            backups = _backups(path) if held and not path.exists() else []
            if backups:
                for suffix in SUFFIXES:
                    if Path(f"{backups[-1]}{suffix}").exists():
                        os.replace(f"{backups[-1]}{suffix}", f"{path}{suffix}")
    remove_orphans(path)


def _backups(path: Path) -> list[Path]:
    """The ``.backup-*`` copies beside ``path``, oldest first."""
    found = []
    for backup in path.parent.glob(f"{path.name}.backup-*"):
        with contextlib.suppress(OSError):  # deleted by a swap finishing meanwhile
            if not backup.name.endswith(_SIDE):
                found.append((backup.stat().st_mtime, backup))
    return [backup for _, backup in sorted(found)]


def remove_db(path: Path) -> None:
    """Delete a database file and its -wal/-shm/-journal companions, if present (a hot
    rollback journal left behind would be rolled into the next file of that name), and its
    swap lock: only for files no other process uses (a rebuild's or a migration's copy)."""
    for suffix in SUFFIXES:
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    swap_lock_path(path).unlink(missing_ok=True)
    swap_next_path(path).unlink(missing_ok=True)
