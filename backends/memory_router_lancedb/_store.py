"""The LanceDB store: connection, generations of tables, the live pointer, upserts.

A *generation* is one set of tables (``chunks_<g>``, ``entries_<g>``, ``files_<g>``)
built for one index fingerprint. The ``meta`` table's ``current`` row names the live
generation and holds its fingerprint. A rebuild fills a new generation beside the live
one and switches the pointer in one commit; readers follow it on their next query, and
the previous generation is kept (``keep_generations``) for readers still on it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_router import MemoryRouterError

from . import _schema
from ._lance import lancedb, translate, with_retries
from ._settings import LanceSettings

KINDS = ("chunks", "entries", "files")


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

    def guard(self, doing: str, action: Callable[[], Any]) -> Any:
        """Run ``action``, translating any third-party error (see :mod:`._lance`)."""
        try:
            return action()
        except MemoryRouterError:
            raise
        except Exception as error:
            raise translate(error, backend=self.name, doing=doing, uri=self.shown_uri) from error

    # -- connection and meta ----------------------------------------------------------------

    def db(self) -> Any:
        with self._lock:
            if self._db is None:
                interval = timedelta(seconds=self.settings.read_consistency_interval_s)
                self._db = lancedb().connect(
                    self.uri,
                    read_consistency_interval=interval,
                    storage_options=self.settings.options(),
                )
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
        """Drop generations beyond the live one and the newest ``keep_generations - 1``."""
        others = [g for g in self.generations() if g != live]
        keep = set(others[-(self.settings.keep_generations - 1) :]) if others else set()
        if self.settings.keep_generations <= 1:
            keep = set()
        for generation in others:
            if generation not in keep:
                self.drop_generation(generation)

    def close(self) -> None:
        with self._lock:
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
