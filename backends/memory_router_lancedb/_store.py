"""The LanceDB store: connection, generations of tables, the live pointer, upserts.

A *generation* is one set of tables (``chunks_<g>``, ``entries_<g>``, ``files_<g>``)
built for one index fingerprint. The ``meta`` table's ``current`` row names the live
generation and holds its fingerprint. A rebuild fills a new generation beside the live
one and switches the pointer in one commit; readers follow it on their next query, and
the previous generation is kept (``keep_generations``) for readers still on it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_router import BackendUnavailable, MemoryRouterError
from memory_router.kit import wait_future

from . import _light, _schema
from ._lance import lancedb, on_thread, translate, unreachable, with_retries, within
from ._settings import LanceSettings, is_remote

if TYPE_CHECKING:  # a local read runs no call on a thread (concurrent.futures: ~15 ms)
    from concurrent.futures import Future

KINDS = ("chunks", "entries", "files")
STAGING_KEY = "staging"
"""The ``meta`` key naming a migration's copy (its generation and fingerprint)."""
ABANDONED_HINT = (
    "retry in a moment: it ends once the object store answers it again or LanceDB gives"
    " up on it (restarting the process ends it at once)"
)


@dataclass(frozen=True, slots=True)
class Pointer:
    """The live generation, its fingerprint and vector size."""

    generation: str
    fingerprint: dict[str, Any]
    dims: int | None


@dataclass(frozen=True, slots=True)
class Tables:
    generation: str
    chunks: Any
    entries: Any
    files: Any


class LanceStore:
    """One LanceDB database (a folder or an object-store prefix) for one agent."""

    def __init__(self, settings: LanceSettings, uri: str, *, name: str, shown_uri: str) -> None:
        self.settings = settings
        self.uri = uri
        self.shown_uri = shown_uri
        self.name = name
        self._db: Any = None
        self._meta: Any = None
        self._tables: dict[str, Tables] = {}
        self._pointer: tuple[float, Pointer | None] | None = None
        self._pointer_version: int | None = None
        self._lock = threading.RLock()
        self.write_lock = threading.Lock()
        self.writes_since_optimize = 0
        self.remote = is_remote(uri)
        # One object-store call's deadline, and the unreachable store's last error and when
        # it may be tried again.
        self.call_timeout_s = settings.connect_timeout_s + settings.request_timeout_s
        self._down: tuple[float, BackendUnavailable] | None = None
        # The thread holding ``write_lock`` (see :meth:`writing`), and the last write that
        # :meth:`_watched` gave up on while it may still be running.
        self._writer: int | None = None
        self._abandoned: Future[Any] | None = None
        # Reads through pylance until lancedb is needed (see :mod:`._light`).
        self._light_ok = settings.reader == "auto" and "://" not in uri and _light.available()
        self._light: dict[str, Any] = {}  # table name → LightTable

    def guard(self, doing: str, action: Callable[[], Any], *, long: bool = False) -> Any:
        """Run ``action``, translating any third-party error (see :mod:`._lance`).

        On object storage a short ``action`` (a read, a status, one small write) gets
        ``call_timeout_s``; a ``long`` one (a sync, a migration, an optimize) runs as long
        as it needs while the store answers a probe within that deadline, first and then
        every ``call_timeout_s`` (:meth:`_watched`). A store that did not answer fails
        every call at once for ``request_timeout_s``, so one command never waits for it
        twice.
        """
        self._check_down()
        try:
            if not self.remote:
                return action()
            # Imported before the deadline starts: the first import takes seconds on a
            # busy machine, and a slow import is no unanswering store.
            lancedb()
            if long:
                return self._watched(action)
            return within(action, self.call_timeout_s)
        except MemoryRouterError:
            raise
        except Exception as error:
            raise self._translated(doing, error) from error

    def _watched(self, action: Callable[[], Any]) -> Any:
        """``action`` on a thread of its own, given up on (left to end there) when the
        store stops answering the probe: LanceDB alone would wait about eight request
        timeouts for each unanswered call of it. A write given up on is remembered, so
        the next writer waits for it (:meth:`writing`)."""
        self._probe()
        future = on_thread(action)
        try:
            while True:
                try:
                    return wait_future(future, self.call_timeout_s)
                except TimeoutError:  # concurrent.futures' since Python 3.11
                    self._probe()
        except BaseException:
            if not future.done() and self._writer == threading.get_ident():
                self._abandoned = future
            raise

    @contextlib.contextmanager
    def writing(self, doing: str) -> Iterator[None]:
        """Hold :attr:`write_lock` for a write, once a write given up on earlier has ended.

        A write :meth:`_watched` gave up on goes on on its thread until the store answers
        it again or LanceDB gives up on it; the next writer of this process waits for
        that, at most ``call_timeout_s``, so two writes never interleave. Raises
        :class:`BackendUnavailable` while the store is known to be down, or when the
        earlier write is still running after that wait.
        """
        self._check_down()
        self.drop_light()  # a writer reads what it writes through lancedb
        with self.write_lock:
            self._await_abandoned(doing)
            self._writer = threading.get_ident()
            try:
                yield
            finally:
                self._writer = None

    def _await_abandoned(self, doing: str) -> None:
        abandoned = self._abandoned
        if abandoned is None:
            return
        try:
            abandoned.exception(self.call_timeout_s)  # its own error was reported then
        except TimeoutError:
            raise BackendUnavailable(
                f"lancedb {doing} failed at {self.shown_uri}: an earlier write, given up on"
                " when the object store stopped answering, is still running"
                f" (waited {self.call_timeout_s:g} s for it to end)",
                backend=self.name,
                hint=ABANDONED_HINT,
            ) from None
        self._abandoned = None

    def _probe(self) -> None:
        """One listing request within ``call_timeout_s`` (the connection as it is: a
        probe never waits for a lock the action holds)."""
        db = self._db
        within(lambda: (db or self.db()).list_tables(limit=1), self.call_timeout_s)

    @contextlib.contextmanager
    def translating(self, doing: str) -> Iterator[None]:
        """:meth:`guard` for a block (a generator's body), without a deadline."""
        self._check_down()
        try:
            yield
        except MemoryRouterError:
            raise
        except Exception as error:
            raise self._translated(doing, error) from error

    def _translated(self, doing: str, error: Exception) -> MemoryRouterError:
        translated = translate(error, backend=self.name, doing=doing, uri=self.shown_uri)
        if isinstance(translated, BackendUnavailable) and unreachable(error):
            self._down = (time.monotonic() + self.settings.request_timeout_s, translated)
        return translated

    def _check_down(self) -> None:
        down = self._down
        if down is None:
            return
        if time.monotonic() >= down[0]:
            self._down = None
            return
        raise BackendUnavailable(
            f"{down[1].message} (not retried for {self.settings.request_timeout_s:g} s)",
            backend=self.name,
            hint=down[1].hint,
        )

    # -- connection and meta ----------------------------------------------------------------

    @property
    def light(self) -> bool:
        """Whether reads go through pylance (:mod:`._light`): ``reader = "auto"``, a local
        folder, pylance installed, and no lancedb connection or write in this process."""
        return self._light_ok and self._db is None

    def drop_light(self) -> None:
        """Read through lancedb from now on (its first use, a write, or a failed light read)."""
        with self._lock:
            self._light_ok = False
            self._light.clear()

    def _light_table(self, name: str) -> Any:
        """The table ``name`` read through pylance (opened once; ``FileNotFoundError``
        when it does not exist, as lancedb's ``open_table`` raises ``ValueError``)."""
        with self._lock:
            table = self._light.get(name)
            if table is None:
                path = Path(self.uri) / f"{name}.lance"
                if not path.is_dir():
                    raise FileNotFoundError(f"table {name} was not found at {self.shown_uri}")
                interval = self.settings.read_consistency_interval_s
                table = self._light[name] = _light.LightTable(str(path), interval)
            return table

    def db(self) -> Any:
        with self._lock:
            self._light_ok = False
            self._light.clear()
            if self._db is None:
                interval = timedelta(seconds=self.settings.read_consistency_interval_s)
                module = lancedb()

                def connect() -> Any:
                    return module.connect(
                        self.uri,
                        read_consistency_interval=interval,
                        storage_options=self.settings.options(),
                    )

                # Connecting lists the prefix: an unanswering server holds it like a call.
                self._db = within(connect, self.call_timeout_s) if self.remote else connect()
            return self._db

    def _open_or_create(self, name: str, schema: Any) -> Any:
        db = self.db()
        try:
            return db.open_table(name)
        except (ValueError, FileNotFoundError):
            pass
        try:
            return db.create_table(name, schema=schema, exist_ok=True)
        except (ValueError, OSError, RuntimeError):  # another process created it first
            return db.open_table(name)

    def meta(self, *, create: bool) -> Any:
        if not create and self.light:
            try:
                return self._light_table("meta")
            except FileNotFoundError:
                return None
        with self._lock:
            if self._meta is None:
                if not create and not self._exists("meta"):
                    return None
                self._meta = self._open_or_create("meta", _schema.meta_schema())
            return self._meta

    def _exists(self, name: str) -> bool:
        return name in self.table_names()

    def table_names(self) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            page = self.db().list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    def read_meta(self) -> dict[str, Any]:
        meta = self.meta(create=False)
        if meta is None:
            return {}
        rows = meta.to_arrow().to_pylist()
        return {r["key"]: json.loads(r["value"]) for r in rows}

    def write_meta(self, key: str, value: Any) -> None:
        pa = _schema._pa()
        meta = self.meta(create=True)
        row = pa.Table.from_pylist(
            [{"key": key, "value": json.dumps(value, sort_keys=True)}], schema=meta.schema
        )
        with_retries(lambda: upsert(meta, "key", row), attempts=self.settings.write_retries)

    def delete_meta(self, key: str) -> None:
        meta = self.meta(create=True)
        with_retries(
            lambda: meta.delete(f"key = {quote(key)}"), attempts=self.settings.write_retries
        )

    # -- the live generation --------------------------------------------------------------

    def pointer(self, *, fresh: bool = False) -> Pointer | None:
        """The live generation; cached for ``read_consistency_interval_s`` unless ``fresh``.

        At an interval of 0 every call checks ``meta``'s version (one manifest check) and
        reads its rows only when another commit moved it.
        """
        now = time.monotonic()
        cached = self._pointer
        interval = self.settings.read_consistency_interval_s
        if not fresh and cached is not None and interval > 0 and now - cached[0] < interval:
            return cached[1]
        meta = self.meta(create=False)
        version = int(meta.version) if meta is not None else -1
        seen = self._pointer_version
        if not fresh and cached is not None and seen is not None and seen == version:
            self._pointer = (now, cached[1])
            return cached[1]
        current = self.read_meta().get("current")
        pointer = (
            None
            if current is None
            else Pointer(current["generation"], current["fingerprint"], current.get("dims"))
        )
        self._pointer = (now, pointer)
        self._pointer_version = version
        return pointer

    def opened(self, generation: str) -> Tables | None:
        """The generation's tables to read if this process has them open (no call, no
        lock): :meth:`read_tables`'s."""
        if self.light:
            light = self._light
            found = [light.get(f"{kind}_{generation}") for kind in KINDS]
            return Tables(generation, *found) if all(found) else None
        return self._tables.get(generation)

    def read_tables(self, generation: str) -> Tables:
        """The generation's tables to read: through pylance while :attr:`light`, else
        :meth:`tables`. Writes always go through :meth:`tables`."""
        if self.light:
            opened = [self._light_table(f"{kind}_{generation}") for kind in KINDS]
            return Tables(generation, *opened)
        return self.tables(generation)

    def tables(self, generation: str) -> Tables:
        with self._lock:
            if generation not in self._tables:
                db = self.db()
                opened = [db.open_table(f"{kind}_{generation}") for kind in KINDS]
                self._tables[generation] = Tables(generation, *opened)
            return self._tables[generation]

    def new_generation(self, dims: int | None) -> Tables:
        """Empty tables for a rebuild, named after their creation time."""
        generation = f"g{int(time.time() * 1000)}{uuid.uuid4().hex[:6]}"
        db = self.db()
        schemas = (
            _schema.chunks_schema(dims),
            _schema.entries_schema(dims),
            _schema.files_schema(),
        )
        opened = [
            db.create_table(f"{kind}_{generation}", schema=schema)
            for kind, schema in zip(KINDS, schemas, strict=True)
        ]
        with self._lock:
            self._tables[generation] = Tables(generation, *opened)
        return self._tables[generation]

    def switch(self, tables: Tables, fingerprint: dict[str, Any], dims: int | None) -> None:
        """Make ``tables`` the live generation (one commit to ``meta``)."""
        value = {
            "generation": tables.generation,
            "fingerprint": fingerprint,
            "dims": dims,
            "switched_at": datetime.now(UTC).isoformat(),
        }
        self.write_meta("current", value)
        self._pointer = (time.monotonic(), Pointer(tables.generation, fingerprint, dims))
        self._pointer_version = None

    def drop_generation(self, generation: str) -> None:
        with self._lock:
            self._tables.pop(generation, None)
        for kind in KINDS:
            self.db().drop_table(f"{kind}_{generation}", ignore_missing=True)

    def generations(self) -> list[str]:
        """Every generation with tables in the store, oldest first."""
        names = self.table_names()
        found = {n.split("_", 1)[1] for n in names if n.startswith("chunks_g")}
        return sorted(found)

    def prune(self, live: str) -> None:
        """Drop generations beyond the live one and the newest ``keep_generations - 1``.

        A migration's copy (recorded in ``meta`` under ``staging``) is never dropped
        here: a rebuild that ends while a migration fills it must not pull its tables
        from under it (a resumed or fresh migration replaces it, ``reset`` drops it).
        """
        staging = self.read_meta().get(STAGING_KEY, {}).get("generation")
        others = [g for g in self.generations() if g not in (live, staging)]
        keep = set(others[-(self.settings.keep_generations - 1) :]) if others else set()
        if self.settings.keep_generations <= 1:
            keep = set()
        for generation in others:
            if generation not in keep:
                self.drop_generation(generation)

    def reset(self) -> list[str]:
        """Drop every table (``memory-router reset``); the table folders removed.

        A local table too damaged to drop through LanceDB has its folder removed instead.
        """
        with self.writing("reset"):
            names = self.guard("reset", self.table_names)
            self.close()
            for name in names:
                self.guard("reset", functools.partial(self._drop, name), long=True)
            self.close()
        return [f"{self.shown_uri.rstrip('/')}/{name}.lance" for name in names]

    def _drop(self, name: str) -> None:
        try:
            self.db().drop_table(name, ignore_missing=True)
        except Exception:
            if self.remote:
                raise
            import shutil  # only here: its import (bz2, lzma) is ~5 ms of every search

            shutil.rmtree(Path(self.uri) / f"{name}.lance", ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            self._light.clear()
            self._tables.clear()
            self._meta = None
            self._db = None
            self._pointer = None
            self._pointer_version = None


def upsert(table: Any, key: str, rows: Any, *, stale: str | None = None) -> Any:
    """``merge_insert`` on ``key``: update matches, insert the rest, and delete rows of the
    table matching ``stale`` that ``rows`` do not hold — all in one commit."""
    builder = table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all()
    if stale is not None:
        builder = builder.when_not_matched_by_source_delete(stale)
    return builder.execute(rows)


def quote(value: str) -> str:
    """A SQL string literal for a Lance filter."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in values)})"
