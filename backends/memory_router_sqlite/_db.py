"""Opening the index: driver choice, sqlite-vec loading, schema and numbered migrations.

The schema keeps OpenClaw's table and column names (ref §1.5) so an index built by the
reference opens and is searchable here. ``PRAGMA user_version`` records which of
:data:`MIGRATIONS` have run; each runs once, in order, on open.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_router import BackendError, BackendUnavailable

META_KEY = "memory_index_meta_v1"
Connection = Any  # sqlite3.Connection or sqlean's look-alike: the same DB-API surface


@dataclass(frozen=True, slots=True, kw_only=True)
class Driver:
    """Which SQLite module connects, and whether and why sqlite-vec is (not) loaded."""

    name: str
    module: Any
    vector_path: str | None
    reason: str


def choose_driver(*, vector: bool, extension_path: str) -> Driver:
    """stdlib ``sqlite3`` when it can load extensions, else ``sqlean``; then try sqlite-vec."""
    module: Any = sqlite3
    name = "sqlite3"
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        try:
            import sqlean

            module, name = sqlean, "sqlean"
        except ImportError:
            pass
    if not vector:
        return Driver(name=name, module=module, vector_path=None, reason="vector = false")
    path = extension_path or _bundled_vec()
    if not path:
        return Driver(name=name, module=module, vector_path=None, reason="no sqlite_vec")
    try:
        probe = module.connect(":memory:")
        try:
            _load_vec(probe, path)
        finally:
            probe.close()
    except (AttributeError, Exception) as error:  # any driver's load failure means numpy
        return Driver(name=name, module=module, vector_path=None, reason=f"load failed: {error}")
    return Driver(name=name, module=module, vector_path=path, reason="sqlite-vec loaded")


def _bundled_vec() -> str:
    """sqlite-vec's bundled library, as ``sqlite_vec.loadable_path()`` gives it, found
    without importing the package (its ``__init__`` imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        return os.path.normpath(os.path.join(folder, "vec0"))
    return ""


def _load_vec(conn: Connection, path: str) -> None:
    conn.enable_load_extension(True)
    try:
        conn.load_extension(path)
    finally:
        conn.enable_load_extension(False)


def connect(
    driver: Driver,
    path: Path | str,
    *,
    busy_timeout_ms: int,
    create: bool = True,
    read_only: bool = False,
) -> Connection:
    """A connection in WAL mode with a busy timeout and sqlite-vec loaded when available.

    ``create = False`` (readers) never creates the file: a reader that arrives while a
    rebuilt index is being swapped in fails to open instead of creating an empty one.
    ``read_only`` (an index in a folder that cannot be written) never writes anything.
    """
    if read_only:
        return _connect_read_only(driver, path, busy_timeout_ms)
    target = str(path) if create else f"file:{urllib.parse.quote(str(path))}?mode=rw"
    conn = driver.module.connect(
        target,
        check_same_thread=False,
        timeout=busy_timeout_ms / 1000,
        isolation_level=None,
        uri=not create,
    )
    try:
        if driver.vector_path:
            _load_vec(conn, driver.vector_path)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except Exception:
        conn.close()
        raise
    return conn


def _connect_read_only(driver: Driver, path: Path | str, busy_timeout_ms: int) -> Connection:
    """A connection that writes nothing, not even a ``-shm``.

    SQLite reads a WAL index read-only only while its ``-shm`` exists (another process
    has it open); otherwise — the usual state once the last connection closed — the file
    is opened as immutable, which is what it is in a folder nobody can write.
    """
    quoted = urllib.parse.quote(str(path))
    failure: Exception | None = None
    for params in ("mode=ro", "immutable=1"):
        conn = driver.module.connect(
            f"file:{quoted}?{params}",
            check_same_thread=False,
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,
            uri=True,
        )
        try:
            if driver.vector_path:
                _load_vec(conn, driver.vector_path)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except Exception as error:
            conn.close()
            failure = error
    assert failure is not None
    raise failure


@contextlib.contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _m1_seed(conn: Connection) -> None:
    """The reference schema (ref §1.5), created only where absent so seed indexes survive."""
    # One statement at a time: executescript() would commit the migration's transaction.
    script = """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS files (
            path TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'memory',
            hash TEXT NOT NULL, mtime INTEGER NOT NULL, size INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS chunks (
            id TEXT PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory',
            start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
            model TEXT NOT NULL, text TEXT NOT NULL, embedding TEXT NOT NULL,
            updated_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
        CREATE INDEX IF NOT EXISTS idx_chunks_source ON chunks(source);
        CREATE TABLE IF NOT EXISTS embedding_cache (
            provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL,
            hash TEXT NOT NULL, embedding TEXT NOT NULL, dims INTEGER,
            updated_at INTEGER NOT NULL, PRIMARY KEY (provider, model, provider_key, hash));
        CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at
            ON embedding_cache(updated_at);
        """
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _m2_entries(conn: Connection) -> None:
    """Entry metadata for chunks of the entries journal (not in the reference)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS entries (chunk_id TEXT PRIMARY KEY, entry_id TEXT NOT NULL,"
        " importance REAL NOT NULL, category TEXT NOT NULL, created_at TEXT NOT NULL,"
        " text TEXT NOT NULL DEFAULT '')"
    )


def _m3_model_index(conn: Connection) -> None:
    """Lets a search learn cheaply whether the index holds more than one model."""
    conn.execute("CREATE INDEX IF NOT EXISTS idx_chunks_model ON chunks(model)")


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (_m1_seed, _m2_entries, _m3_model_index)


def migrate(conn: Connection) -> int:
    """Apply the migrations this file has not seen; returns the schema version."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for number, step in enumerate(MIGRATIONS, start=1):
        if number > version:
            with transaction(conn):
                step(conn)
                conn.execute(f"PRAGMA user_version = {number}")
    return max(version, len(MIGRATIONS))


def ensure_fts(conn: Connection, tokenizer: str) -> str | None:
    """Create ``chunks_fts`` if missing; the error text when FTS5 is unavailable."""
    tokenize = {"trigram": "trigram case_sensitive 0", "porter": "porter unicode61"}.get(
        tokenizer, "unicode61"
    )
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, id UNINDEXED,"
            " path UNINDEXED, source UNINDEXED, model UNINDEXED, start_line UNINDEXED,"
            f" end_line UNINDEXED, tokenize='{tokenize}')"
        )
    except Exception as error:  # no FTS5 in this build: vector-only search
        return str(error)
    return None


def ensure_vec(conn: Connection, dims: int) -> None:
    """Create ``chunks_vec`` for ``dims``, recreating it when the stored size differs."""
    current = vec_dims(conn)
    if current == dims:
        return
    if current is not None:
        conn.execute("DROP TABLE chunks_vec")
    conn.execute(
        "CREATE VIRTUAL TABLE chunks_vec USING vec0(id TEXT PRIMARY KEY,"
        f" embedding FLOAT[{int(dims)}] distance_metric=cosine)"
    )


def vec_dims(conn: Connection) -> int | None:
    """The vector size of ``chunks_vec``, or ``None`` when it does not exist."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    if row is None or not row[0]:
        return None
    sql = str(row[0]).lower()
    start = sql.find("float[")
    if start < 0:
        return None
    return int(sql[start + 6 : sql.index("]", start)])


ROW_COLUMNS = ("id", "path", "source", "start_line", "end_line", "text")
"""A candidate row's columns, in the order the searches read them (after its rowid)."""
BY_ROWID = f"SELECT rowid, {', '.join(ROW_COLUMNS)} FROM chunks_fts WHERE rowid IN "
"""The :data:`ROW_COLUMNS` of ``chunks_fts`` rows by rowid, through FTS5 (any layout)."""


def fts_rows_sql(conn: Connection) -> str:
    """The query (its ``IN`` list to append) that reads the :data:`ROW_COLUMNS` of
    ``chunks_fts`` rows by rowid.

    FTS5 stores a table's own columns in its shadow table ``chunks_fts_content`` (``id``
    the rowid, ``c0``, ``c1``, … the declared columns in order); read there, a row is one
    B-tree lookup instead of a pass through the virtual table (80 rows: 0.29 ms instead of
    0.41). A table of another layout (external or no content) is read through FTS5.
    """
    declared = [str(r[1]) for r in conn.execute("PRAGMA table_info(chunks_fts)")]
    stored = {str(r[1]) for r in conn.execute("PRAGMA table_info(chunks_fts_content)")}
    if all(c in declared for c in ROW_COLUMNS):
        columns = [f"c{declared.index(c)}" for c in ROW_COLUMNS]
        if "id" in stored and stored.issuperset(columns):
            return f"SELECT id, {', '.join(columns)} FROM chunks_fts_content WHERE id IN "
    return BY_ROWID


def table_exists(conn: Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return row is not None


def read_meta(conn: Connection) -> dict[str, Any] | None:
    """The stored index fingerprint, or ``None`` when there is none (or it is unreadable)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_meta(conn: Connection, meta: dict[str, Any]) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        (META_KEY, json.dumps(meta, sort_keys=True)),
    )


_UNAVAILABLE = (
    "unable to open",
    "disk i/o",
    "not a database",
    "malformed",
    "locked",
    "readonly",
    "read-only",
    "no such table",
)


def translate(error: Exception, *, backend: str, doing: str) -> BackendError:
    """A driver exception as a :class:`BackendError`.

    Errors of the file itself (cannot open, corrupt, locked, read-only, missing tables)
    are :class:`BackendUnavailable`: the router opens the circuit at once. Anything else
    concerns one call (one odd query or value) and must not take the backend down.
    """
    message = f"sqlite {doing} failed: {error}"
    text = str(error).lower()
    if isinstance(error, OSError) or any(marker in text for marker in _UNAVAILABLE):
        return BackendUnavailable(message, backend=backend)
    return BackendError(message, backend=backend)
