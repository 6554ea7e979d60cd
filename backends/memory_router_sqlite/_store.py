"""The index file and its connections: one writer behind a lock, a pool of readers.

Searches run on reader connections (WAL lets them proceed while a sync writes); a full
rebuild swaps a new file into place, after which every reader is reopened. :meth:`close`
closes them all, so the file can be moved or deleted afterwards.
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

from ._damage import (
    diagnose,
    index_lock,
    is_corruption,
    mark_damaged,
    move_aside,
    remove_orphans,
    unwritable_hint,
)
from ._db import (
    Connection,
    Driver,
    connect,
    ensure_fts,
    migrate,
    table_exists,
    translate,
    vec_dims,
)
from ._vectors import Matrix

_SUFFIXES = ("", "-wal", "-shm", "-journal")
_SIDE = ("-wal", "-shm", "-journal")
# Gate waits re-check in slices, so a main thread waiting here still sees Ctrl-C (as
# memory_router's wait helpers do: the kernel may give the signal to another thread).
_GATE_SLICE_S = 0.1
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
        self._swapping = False
        self._idle: list[Connection] = []
        self._generation = 0
        self._closed = False
        self.fts_error: str | None = None
        self._models: frozenset[str] | None = None
        self._matrix: tuple[str, Matrix] | None = None
        self._counts: tuple[int, str, int] | None = None
        self._middle: tuple[int, int | None] | None = None  # version, rowid
        self._version = 0
        self.schema_version = 0
        self._make_folder()
        recover(self.path)
        self._inode: int | None = None
        # Found on open, healed by the next write (sync); reads refuse a damaged file.
        self.damage = diagnose(path, driver, busy_timeout_ms=busy_timeout_ms, indexed=indexed)
        self.healed: str | None = None
        self.writer: Connection = None if self.damage else self._open_writer()

    def _make_folder(self) -> None:
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".write-probe-{uuid.uuid4().hex}"
            probe.touch()
            probe.unlink()
        except OSError as error:
            not_folder = folder.exists() and not folder.is_dir()
            why = "it is not a folder" if not_folder else error.strerror or str(error)
            raise BackendUnavailable(
                f"cannot write the index folder {folder}: {why}",
                backend=self.name,
                hint=unwritable_hint(folder, error),
            ) from error

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
        """Move a damaged index aside and open a fresh one, which the caller then fills."""
        if self.damage is None:
            return
        with self.write_lock, index_lock(self.path, wait_s=self.busy_timeout_ms / 1000) as held:
            if self.damage is None:
                return
            if not held:
                raise self.damaged_error()
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
    def rebuilding(self) -> Iterator[None]:
        """Hold the index lock while a temporary rebuild file exists (see :mod:`._damage`)."""
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

    def follow_swaps(self) -> None:
        """Reopen every connection if another process swapped a rebuilt index into place.

        Connections keep reading the file they opened even after it was replaced (and
        writes would go to the replaced file), so a changed inode means: start over.
        """
        if self.damage is not None or _inode(self.path) in (self._inode, None):
            return
        with self.write_lock:
            if _inode(self.path) not in (self._inode, None) and not self._closed:
                self._drop_connections()
                self.changed()
                self.writer = self._open_writer()

    @contextlib.contextmanager
    def reader(self) -> Iterator[Connection]:
        """A read connection for the current file, returned to the pool afterwards."""
        with self._gate:
            while self._swapping:
                self._gate.wait(_GATE_SLICE_S)
            self._readers += 1
        try:
            with self._reader() as conn:
                yield conn
        finally:
            with self._gate:
                self._readers -= 1
                self._gate.notify_all()

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection]:
        if self.damage is not None:
            raise self.damaged_error()
        self.follow_swaps()
        with self._pool_lock:
            if self._closed:
                raise BackendUnavailable("the sqlite backend is closed", backend=self.name)
            generation = self._generation
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect_reader()
        try:
            yield conn
        finally:
            with self._pool_lock:
                keep = not self._closed and generation == self._generation
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def _connect_reader(self) -> Connection:
        """Open a reader; while a rebuild is being swapped in the file may be missing a moment."""
        for attempt in range(20):
            try:
                return connect(
                    self.driver, self.path, busy_timeout_ms=self.busy_timeout_ms, create=False
                )
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
        rows = conn.execute("SELECT id, source, embedding FROM chunks WHERE model = ?", (model,))
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

    def changed(self) -> None:
        """Forget what was cached about the contents (call after every write)."""
        with self._pool_lock:
            self._version += 1
            self._models = None
            self._matrix = None

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
            for suffix in _SUFFIXES:
                live = Path(f"{self.path}{suffix}")
                if live.exists():
                    os.replace(live, f"{backup}{suffix}")
                    moved.append((Path(f"{backup}{suffix}"), live))
            for suffix in _SUFFIXES:
                if Path(f"{temp}{suffix}").exists():
                    os.replace(f"{temp}{suffix}", f"{self.path}{suffix}")
        except OSError:
            for saved, live in moved:
                os.replace(saved, live)
            self.writer = self._open_writer()
            raise
        for saved, _ in moved:
            saved.unlink(missing_ok=True)
        self.writer = self._open_writer()

    def _drop_connections(self) -> None:
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
            self._drop_connections()
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


def recover(path: Path) -> None:
    """Undo what a process killed during :meth:`Store.replace_with` or a rebuild left behind.

    A missing index with a ``.backup-*`` beside it was moved aside and never replaced: it
    is put back. Temporary rebuild files are deleted once no process holds the index lock
    (every rebuild holds it while its file exists).
    """
    backups = sorted(
        (p for p in path.parent.glob(f"{path.name}.backup-*") if not p.name.endswith(_SIDE)),
        key=lambda p: p.stat().st_mtime,
    )
    if not path.exists() and backups:
        for suffix in _SUFFIXES:
            if Path(f"{backups[-1]}{suffix}").exists():
                os.replace(f"{backups[-1]}{suffix}", f"{path}{suffix}")
    remove_orphans(path)


def remove_db(path: Path) -> None:
    """Delete a database file and its -wal/-shm/-journal companions, if present (a hot
    rollback journal left behind would be rolled into the next file of that name)."""
    for suffix in _SUFFIXES:
        Path(f"{path}{suffix}").unlink(missing_ok=True)
