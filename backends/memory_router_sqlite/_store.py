"""The index file and its connections: one writer behind a lock, a pool of readers.

Searches run on reader connections (WAL lets them proceed while a sync writes); a full
rebuild swaps a new file into place, after which every reader is reopened. :meth:`close`
closes them all, so the file can be moved or deleted afterwards.

An index in a folder that cannot be written (a read-only mount, a folder of another
user) is opened read-only (:attr:`Store.read_only`): searches answer from it as it is,
and every write (a sync, an import) is refused with what to do.

Other processes may swap the file too. Connections are opened and closed only under the
swap lock of :mod:`._files` (shared), and the file is renamed only under it (exclusive),
so no process ever opens or closes a connection halfway through another's swap.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from memory_router import BackendUnavailable, MemoryRouterError
from memory_router.kit import acquire_lock

from ._damage import diagnose, is_corruption, mark_damaged, move_aside, unwritable_hint
from ._db import (
    Connection,
    Driver,
    connect,
    ensure_fts,
    fts_rows_sql,
    migrate,
    table_exists,
    translate,
    vec_dims,
)
from ._files import SUFFIXES, index_lock, recover, swap_lock, swap_lock_path, swap_next_path
from ._files import remove_db as remove_db  # where the backend's modules import it from
from ._impact import Postings
from ._vectors import Matrix

# Gate waits re-check in slices, so a main thread waiting here still sees Ctrl-C (as
# memory_router's wait helpers do: the kernel may give the signal to another thread).
_GATE_SLICE_S = 0.1
# The swap lock is held for a few renames, or while another process opens a connection
# (its migrations wait up to busy_timeout_ms for SQLite's own write lock).
_MIN_SWAP_WAIT_S = 10.0
HALVES_ROWS = 20_000
"""Chunks from which a ranked full-text query is split in two rowid halves (below, one
query takes a few milliseconds at most and splitting would only add its overhead)."""


class Store:
    """One SQLite index file: schema on open, a writer lock, readers, atomic replacement."""

    def __init__(
        self,
        path: Path,
        driver: Driver,
        *,
        tokenizer: str,
        busy_timeout_ms: int,
        name: str,
        indexed: bool = True,
    ) -> None:
        self.path = path
        self.driver = driver
        self.tokenizer = tokenizer
        self.busy_timeout_ms = busy_timeout_ms
        self.name = name
        self.write_lock = threading.RLock()
        self._pool_lock = threading.Lock()
        # Readers in flight, and a swap waiting for them: a rebuilt index is never moved
        # into place under a reader's open connection (that gave "disk I/O error").
        self._gate = threading.Condition()
        self._readers = 0
        self._held = threading.local()  # readers the calling thread holds (``count``)
        self._swapping = False
        self._idle: list[Connection] = []
        self._generation = 0
        self._closed = False
        self.fts_error: str | None = None
        self._models: frozenset[str] | None = None
        self._matrix: tuple[str, Matrix] | None = None
        self._counts: tuple[int, str, int] | None = None
        self._middle: tuple[int, int | None] | None = None  # version, rowid
        self._rows_sql: tuple[int, str] | None = None  # generation (file), query
        self._reading: dict[int, int] = {}  # id of a reader in use → its generation
        self.postings = Postings(self.reader)  # follows the index's state (see ._impact)
        self._version = 0
        self.schema_version = 0
        self.swap_wait_s = max(_MIN_SWAP_WAIT_S, 2 * busy_timeout_ms / 1000)
        # Why the folder cannot be written, and what to do, for an index still readable.
        self.read_only: tuple[str, str] | None = self._make_folder()
        if self.read_only is None:
            recover(self.path, wait_s=self.swap_wait_s)
        self._inode: int | None = None
        self.healed: str | None = None
        with self._files():
            # Found on open, healed by the next write (sync); reads refuse a damaged file.
            self.damage = diagnose(
                path,
                driver,
                busy_timeout_ms=busy_timeout_ms,
                indexed=indexed,
                read_only=self.read_only is not None,
            )
            writable = self.damage is None and self.read_only is None
            self.writer: Connection = self._open_writer() if writable else None

    def _make_folder(self) -> tuple[str, str] | None:
        """Create the index folder. One that cannot be written is refused, unless the
        index in it can be read: then the index is read-only (returns why, and the hint)."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".write-probe-{uuid.uuid4().hex}"
            probe.touch()
            probe.unlink()
        except OSError as error:
            not_folder = folder.exists() and not folder.is_dir()
            why = "it is not a folder" if not_folder else error.strerror or str(error)
            message = f"cannot write the index folder {folder}: {why}"
            if not not_folder and self.path.is_file() and os.access(self.path, os.R_OK):
                return message, unwritable_hint(folder, error)
            raise BackendUnavailable(
                message, backend=self.name, hint=unwritable_hint(folder, error)
            ) from error
        return None

    def check_writable(self) -> None:
        """Refuse a write to a read-only index, saying why and what to do."""
        if self.read_only is not None:
            message, hint = self.read_only
            raise BackendUnavailable(
                f"{message}: the index is read-only", backend=self.name, hint=hint
            )

    def damaged_error(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"the sqlite index {self.path} is damaged ({self.damage})",
            backend=self.name,
            hint="run `memory-router index` (or `memory-router doctor --fix`): the damaged"
            " file is moved aside and the index rebuilt from the Markdown",
        )

    @contextlib.contextmanager
    def translating(self, doing: str, *, heal: bool = True) -> Iterator[None]:
        """Driver and file errors of the block raised as :class:`BackendError` (see
        :func:`translate`): the one place they are translated; a
        :class:`MemoryRouterError` passes unchanged.

        With ``heal`` (this store is the live index) an error saying the file is corrupt
        also flags it damaged: reads refuse it and the next sync moves it aside and
        rebuilds it. A migration's copy passes ``heal=False``: reopening it checks it.
        """
        try:
            yield
        except MemoryRouterError:
            raise
        except Exception as error:  # sqlite3/sqlean errors, OSError from files and swaps
            if heal and is_corruption(error):
                self.flag_damaged(f"{doing} failed: {error}")
                raise self.damaged_error() from error
            raise translate(error, backend=self.name, doing=doing) from error

    def flag_damaged(self, reason: str) -> None:
        """Record that the file failed as corrupt: reads refuse it, the next sync heals it."""
        self.damage = reason
        mark_damaged(self.path, reason)

    def heal(self) -> None:
        """Ready the index for a write (every write path calls this first): refuse a
        read-only one; move a damaged one aside and open a fresh one, which the caller
        then fills."""
        self.check_writable()
        if self.damage is None:
            return
        with self.write_lock, index_lock(self.path, wait_s=self.busy_timeout_ms / 1000) as held:
            if self.damage is None:
                return
            if not held:
                raise self.damaged_error()
            with self._files(exclusive=True):
                self._heal()

    def _heal(self) -> None:
        # Another process may have healed it while this one waited for the lock.
        reason = diagnose(self.path, self.driver, busy_timeout_ms=self.busy_timeout_ms)
        if reason is not None:
            moved = move_aside(self.path)
            self.healed = (
                f"the index was damaged ({reason}); moved aside to {moved.name} and"
                " rebuilt from the Markdown"
            )
        if self.writer is not None:
            self._drop_connections()
        self.damage = None
        self.changed()
        self.writer = self._open_writer()

    def take_healed(self) -> str | None:
        """The heal report, once (a sync puts it in its report)."""
        healed, self.healed = self.healed, None
        return healed

    @contextlib.contextmanager
    def _files(self, *, exclusive: bool = False) -> Iterator[None]:
        """Hold the swap lock: shared to open or close connections to the live file,
        exclusive to rename it. Refuses after :attr:`swap_wait_s` (a stopped process)."""
        with swap_lock(self.path, exclusive=exclusive, wait_s=self.swap_wait_s) as held:
            if not held:
                doing = "replace the index" if exclusive else "open the index"
                raise BackendUnavailable(
                    f"could not {doing} {self.path}: another process held {self.path.name}.swap"
                    f" for {self.swap_wait_s:.0f} s",
                    backend=self.name,
                    hint="try again; if it persists, look for a stopped memory-router process",
                )
            yield

    def _close(self, conns: list[Connection]) -> None:
        """Close ``conns`` under the shared swap lock (a last close deletes the -wal and
        -shm by name). A lock not had in time is a stuck process, not a swap: close anyway."""
        with swap_lock(self.path, exclusive=False, wait_s=self.swap_wait_s):
            for conn in conns:
                conn.close()

    @contextlib.contextmanager
    def rebuilding(self) -> Iterator[None]:
        """Hold the index lock while a temporary rebuild file exists (see :mod:`._files`)."""
        with index_lock(self.path, wait_s=3600.0):
            yield

    def open(self, path: Path | str) -> Connection:
        """A new connection to ``path`` with the schema in place."""
        conn = connect(self.driver, path, busy_timeout_ms=self.busy_timeout_ms)
        try:
            self.schema_version = migrate(conn)
            self.fts_error = ensure_fts(conn, self.tokenizer)
        except Exception:
            conn.close()
            raise
        return conn

    def _open_writer(self) -> Connection:
        try:
            conn = self.open(self.path)
            self._inode = _inode(self.path)
            return conn
        except Exception as error:
            raise BackendUnavailable(
                f"cannot open sqlite index {self.path}: {error}", backend=self.name
            ) from error

    @property
    def has_fts(self) -> bool:
        return self.fts_error is None

    def follow_swaps(self, *, wait: bool = True) -> None:
        """Reopen every connection if another process swapped a rebuilt index into place.

        Connections keep reading the file they opened even after it was replaced (and
        writes would go to the replaced file), so a changed inode means: start over.
        Without ``wait`` (a reader) nothing happens while this process writes: the write
        lock's holder may be a swap waiting for that very reader; the next reader follows.
        """
        if self.read_only or self.damage is not None or _inode(self.path) in (self._inode, None):
            return
        if not self.write_lock.acquire(blocking=wait):
            return
        try:
            with self._files():
                if _inode(self.path) not in (self._inode, None) and not self._closed:
                    self._drop_connections()
                    self.changed()
                    self.writer = self._open_writer()
        finally:
            self.write_lock.release()

    @contextlib.contextmanager
    def reader(self) -> Iterator[Connection]:
        """A read connection for the current file, returned to the pool afterwards.

        A thread already holding a reader (a search taking a second one for its other
        half) does not wait for a swap: the swap waits for that first reader, so waiting
        here would hold both forever.
        """
        held = getattr(self._held, "count", 0)
        with self._gate:
            while self._swapping and not held:
                self._gate.wait(_GATE_SLICE_S)
            self._readers += 1
        self._held.count = held + 1
        try:
            with self._reader() as conn:
                yield conn
        finally:
            self._held.count = held
            with self._gate:
                self._readers -= 1
                self._gate.notify_all()

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection]:
        if self.damage is not None:
            raise self.damaged_error()
        self.follow_swaps(wait=False)
        with self._pool_lock:
            if self._closed:
                raise BackendUnavailable("the sqlite backend is closed", backend=self.name)
            generation = self._generation
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect_reader()
        self._reading[id(conn)] = generation
        try:
            yield conn
        finally:
            del self._reading[id(conn)]
            with self._pool_lock:
                keep = not self._closed and generation == self._generation
                if keep:
                    self._idle.append(conn)
            if not keep:
                self._close([conn])

    def _connect_reader(self) -> Connection:
        """Open a reader under the swap lock, with its -wal and -shm mapped before the lock
        is let go. A file that is missing a moment (deleted, being rebuilt after a reset)
        is tried again for half a second."""
        for attempt in range(20):
            try:
                with self._files():
                    conn = connect(
                        self.driver,
                        self.path,
                        busy_timeout_ms=self.busy_timeout_ms,
                        create=False,
                        read_only=self.read_only is not None,
                    )
                    try:
                        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                    except Exception:
                        conn.close()
                        raise
                    return conn
            except Exception as error:
                if "unable to open" not in str(error).lower() or attempt == 19:
                    raise
            time.sleep(0.025)
        raise AssertionError("unreachable")

    def models(self, conn: Connection) -> frozenset[str]:
        """The embedding models of the stored chunks (cached until the next write)."""
        models = self._models
        if models is None:
            models = frozenset(r[0] for r in conn.execute("SELECT DISTINCT model FROM chunks"))
            self._models = models
        return models

    def matrix(self, conn: Connection, model: str) -> Matrix:
        """``model``'s vectors in memory, loaded on first use after each write."""
        cached = self._matrix
        if cached is not None and cached[0] == model:
            return cached[1]
        version = self._version
        rows = conn.execute(
            "SELECT id, source, embedding, rowid FROM chunks WHERE model = ?", (model,)
        )
        matrix = Matrix(rows)
        with self._pool_lock:
            if version == self._version:  # no write happened while loading
                self._matrix = (model, matrix)
        return matrix

    def vector_count(self, conn: Connection, model: str) -> int:
        """How many of ``model``'s chunks carry a vector (cached until the next write)."""
        version = self._version
        cached = self._counts
        if cached is not None and cached[:2] == (version, model):
            return cached[2]
        count = int(
            conn.execute(
                "SELECT COUNT(*) FROM chunks WHERE model = ? AND length(embedding) > 0", (model,)
            ).fetchone()[0]
        )
        self._counts = (version, model, count)
        return count

    def fts_middle(self, conn: Connection) -> int | None:
        """The rowid that halves the full-text index once it holds :data:`HALVES_ROWS`
        rows or more, so a ranked query can search the halves side by side; ``None``
        below (cached until the next write; rows written since by another process only
        make the halves uneven)."""
        version = self._version
        cached = self._middle
        if cached is not None and cached[0] == version:
            return cached[1]
        middle = None
        if table_exists(conn, "chunks_fts"):
            first = conn.execute("SELECT rowid FROM chunks_fts ORDER BY rowid LIMIT 1").fetchone()
            last = conn.execute(
                "SELECT rowid FROM chunks_fts ORDER BY rowid DESC LIMIT 1"
            ).fetchone()
            if first and last and last[0] - first[0] + 1 >= HALVES_ROWS:
                count = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
                middle = (first[0] + last[0]) // 2 if count >= HALVES_ROWS else None
        self._middle = (version, middle)
        return middle

    def rows_sql(self, conn: Connection) -> str:
        """:func:`._db.fts_rows_sql` for reader ``conn`` (in use), cached per file: a
        connection reads the file it opened, and a file's table layout never changes,
        while a swap, a heal or following another process's rebuild opens a new
        generation of connections (a layout cached by writes would map the old file's
        columns onto the new one's)."""
        generation = self._reading.get(id(conn))
        cached = self._rows_sql
        if cached is not None and generation is not None and cached[0] == generation:
            return cached[1]
        sql = fts_rows_sql(conn)
        with self._pool_lock:
            if generation is not None and generation == self._generation:
                self._rows_sql = (generation, sql)
        return sql

    def changed(self) -> None:
        """Forget what was cached about the contents (call after every write)."""
        with self._pool_lock:
            self._version += 1
            self._models = None
            self._matrix = None
        self.postings.clear()  # stale now: free them

    def vec_ready(self, conn: Connection, dims: int) -> bool:
        """Whether KNN through sqlite-vec can serve vectors of size ``dims``."""
        return self.driver.vector_path is not None and vec_dims(conn) == dims

    def has_table(self, name: str) -> bool:
        with self.reader() as conn:
            return table_exists(conn, name)

    def temp_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.tmp-{uuid.uuid4().hex}")

    def replace_with(self, temp: Path) -> None:
        """Swap ``temp`` in as the live index (caller holds :attr:`write_lock`).

        The old file (and its -wal/-shm) is moved aside, the new one renamed into place,
        and the old one deleted; if a rename fails the old file is put back.
        """
        with self._gate:
            self._swapping = True
            while self._readers:
                self._gate.wait(_GATE_SLICE_S)
        try:
            with self._files(exclusive=True):
                self._swap(temp)
        finally:
            with self._gate:
                self._swapping = False
                self._gate.notify_all()

    def _swap(self, temp: Path) -> None:
        self._drop_connections()
        self.changed()
        backup = self.path.with_name(f"{self.path.name}.backup-{uuid.uuid4().hex}")
        moved: list[tuple[Path, Path]] = []
        try:
            for suffix in SUFFIXES:
                live = Path(f"{self.path}{suffix}")
                if live.exists():
                    os.replace(live, f"{backup}{suffix}")
                    moved.append((Path(f"{backup}{suffix}"), live))
            for suffix in SUFFIXES:
                if Path(f"{temp}{suffix}").exists():
                    os.replace(f"{temp}{suffix}", f"{self.path}{suffix}")
        except OSError:
            for saved, live in moved:
                os.replace(saved, live)
            self.writer = self._open_writer()
            raise
        for saved, _ in moved:
            saved.unlink(missing_ok=True)
        for lock in (swap_lock_path(temp), swap_next_path(temp)):
            lock.unlink(missing_ok=True)  # a staged copy's own, nobody else's
        self.writer = self._open_writer()

    def _drop_connections(self) -> None:
        """Close the writer and the idle readers (the caller holds the swap lock)."""
        if self.writer is not None:
            self.writer.close()
        with self._pool_lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        """Close every connection. Idempotent. A write in progress is waited for: the
        router stops the syncs it runs at their next progress report when it closes."""
        acquire_lock(self.write_lock)
        try:
            if self._closed:
                return
            with swap_lock(self.path, exclusive=False, wait_s=self.swap_wait_s):
                self._drop_connections()  # closed even when the lock was not had (see _close)
            self.changed()
            with self._pool_lock:
                self._closed = True
        finally:
            self.write_lock.release()


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None
