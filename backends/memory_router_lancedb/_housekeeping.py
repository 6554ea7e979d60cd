"""Indexes, ``optimize()`` and ``status``.

After a sync the FTS index is created when missing; ``optimize()`` (compaction, folding
new rows into the indexes, removing versions older than ``cleanup_older_than_hours``) runs
every ``optimize_every_writes`` writes (a large rebuild reaches that by itself), or when
``optimize_interval_minutes`` have passed since the last optimize or since the live
generation was switched in (a fresh generation is a few large fragments); the ANN vector
index is built in the same maintenance, after compaction, once ``ann_min_rows`` chunks
exist. Rows written since the last fold stay searchable (Lance scans them), only slower;
a fold adds them to the ANN index as a delta, without rebuilding it.
"""

from __future__ import annotations

import time
import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_router import BackendStatus

from ._settings import LanceSettings
from ._store import KINDS, LanceStore, Tables
from ._vectors import fits

FTS_INDEX = "text_idx"
VECTOR_INDEX = "vector_idx"


INDEX_CHECK_S = 2.0  # how long a search trusts what it last saw of a table's indexes
# Keyed by the table object itself, weakly: an ``id()`` key outlives its table and can be
# reused by another (say a fresh chunks table taking an empty entries table's id, whose
# cached "no FTS index" would then silently drop the keyword leg).
_seen: weakref.WeakKeyDictionary[Any, tuple[float, frozenset[str]]] = weakref.WeakKeyDictionary()


def _indices(table: Any) -> dict[str, Any]:
    return {i.name: i for i in table.list_indices()}


def index_names(table: Any) -> frozenset[str]:
    """The table's index names, re-listed at most every ``INDEX_CHECK_S`` seconds."""
    now = time.monotonic()
    cached = _seen.get(table)
    if cached is not None and now - cached[0] < INDEX_CHECK_S:
        return cached[1]
    names = frozenset(_indices(table))
    _seen[table] = (now, names)
    return names


def has_fts(table: Any) -> bool:
    return FTS_INDEX in index_names(table)


def has_ann(table: Any) -> bool:
    return VECTOR_INDEX in index_names(table)


def ensure_fts(table: Any) -> bool:
    """Create the FTS index on ``text`` when missing (and the table has rows)."""
    if has_fts(table) or table.count_rows() == 0:
        return False
    from lancedb.index import FTS

    # English stemming, as the built-in backend's `porter unicode61` tokenizer does.
    config = FTS(
        with_position=False,
        stem=True,
        language="English",
        remove_stop_words=False,
        ascii_folding=True,
    )
    table.create_index("text", config=config, name=FTS_INDEX)
    _seen.pop(table, None)
    return True


def ensure_ann(store: LanceStore, table: Any) -> bool:
    """Build the ANN vector index once ``ann_min_rows`` chunks with vectors exist and
    searches would use it (:func:`ann_used`).

    Partitions are sized by ``ann_partition_rows`` (LanceDB's ``target_partition_size``),
    never by a count: ``optimize()`` splits partitions above 4× and joins partitions below
    ¼ of the target the index was built with, so a count that disagrees with the target
    (LanceDB's default for HNSW is 1,048,576 rows) makes the first optimize rebuild the
    whole index — minutes at 1M rows.
    """
    if "vector" not in table.schema.names or has_ann(table):
        return False
    rows = table.count_rows()
    if rows < store.settings.ann_min_rows or not ann_used(store.settings, table, rows):
        return False
    table.create_index("vector", config=ann_config(store.settings), name=VECTOR_INDEX)
    _seen.pop(table, None)
    return True


def ann_used(settings: LanceSettings, table: Any, rows: int) -> bool:
    """Whether searches would use an ANN index: never with ``vector_search = "memory"``,
    with ``"auto"`` only once the vectors no longer fit ``memory_budget_mb`` (exact
    search in memory answers until then, so a build would only cost the sync time)."""
    if settings.vector_search == "lance":
        return True
    dims = int(table.schema.field("vector").type.list_size)
    budget = settings.memory_budget_mb * 2**20
    return settings.vector_search == "auto" and not fits(rows, dims, budget)


def ann_config(settings: LanceSettings) -> Any:
    """The LanceDB index config of ``settings.ann_index`` (cosine)."""
    from lancedb import index

    rows = settings.ann_partition_rows
    if settings.ann_index == "ivf_pq":
        return index.IvfPq(distance_type="cosine", target_partition_size=rows)
    if settings.ann_index == "ivf_flat":
        return index.IvfFlat(distance_type="cosine", target_partition_size=rows)
    return index.IvfHnswSq(
        distance_type="cosine", target_partition_size=rows, ef_construction=settings.ef_construction
    )


def optimize(store: LanceStore, tables: Tables, *, ann: bool = True) -> dict[str, Any]:
    """Compact and fold every table of ``tables``; returns what was done and how long it took.

    ``ann = False`` (a migration's publish) leaves the ANN index to the next optimize: its
    build takes minutes at ``ann_min_rows``, and exact search answers meanwhile.
    """
    started = time.perf_counter()
    keep = timedelta(hours=store.settings.cleanup_older_than_hours)
    for table in (tables.chunks, tables.entries, tables.files):
        table.optimize(cleanup_older_than=keep)
    ann = ensure_ann(store, tables.chunks) if ann else False  # on compacted fragments
    store.writes_since_optimize = 0
    done = {
        "at": datetime.now(UTC).isoformat(),
        "ms": round((time.perf_counter() - started) * 1000, 1),
        "generation": tables.generation,
        "ann_built": ann,
    }
    store.write_meta("optimize", done)
    return done


def after_sync(store: LanceStore, tables: Tables, *, written: int, rebuilt: bool) -> None:
    """Indexes and optimize after a sync (see the module docstring)."""

    def run() -> None:
        ensure_fts(tables.chunks)
        ensure_fts(tables.entries)  # for searches filtered by category
        if _due(store, written, rebuilt=rebuilt):
            optimize(store, tables)

    store.guard("optimize", run, long=True)


def _due(store: LanceStore, written: int, *, rebuilt: bool) -> bool:
    settings = store.settings
    if store.writes_since_optimize >= settings.optimize_every_writes:
        return True
    if rebuilt or (written == 0 and store.writes_since_optimize == 0):
        return False  # a fresh generation is a few large fragments, its FTS index complete
    last = _settled_at(store.read_meta())
    if last is None:
        return True
    age = datetime.now(UTC) - last
    return age >= timedelta(minutes=settings.optimize_interval_minutes)


def _settled_at(meta: dict[str, Any]) -> datetime | None:
    """The later of the last optimize and the live generation's switch, if any."""
    stamps = [meta.get("optimize", {}).get("at"), meta.get("current", {}).get("switched_at")]
    known = [datetime.fromisoformat(s) for s in stamps if s]
    return max(known) if known else None


def status(store: LanceStore, name: str, *, deep: bool) -> BackendStatus:
    """Files and chunks; ``deep`` adds rows, index state, versions and the search path."""

    def read() -> BackendStatus:
        pointer = store.pointer(fresh=True)
        details: dict[str, Any] = {"uri": store.shown_uri}
        if pointer is None:
            return BackendStatus(name=name, available=True, details={**details, "built": False})
        tables = store.tables(pointer.generation)
        files, chunks = tables.files.count_rows(), tables.chunks.count_rows()
        if deep:
            details.update(_deep(store, tables, pointer.dims))
        return BackendStatus(name=name, available=True, files=files, chunks=chunks, details=details)

    result: BackendStatus = store.guard("status", read)
    return result


def _vector_path(store: LanceStore, ann: bool, dims: int | None) -> str:
    settings = store.settings
    if dims is None:
        return "none (keyword-only)"
    if settings.vector_search != "lance":
        beyond = f"{settings.ann_index} beyond" if ann else "LanceDB's exact search beyond"
        return f"exact, in memory while it fits memory_budget_mb = {settings.memory_budget_mb}" + (
            f" ({beyond})"
        )
    if ann:
        return (
            f"{settings.ann_index}, nprobes {settings.nprobes}, ef {settings.ef}"
            f" + refine_factor {settings.refine_factor}"
        )
    return "exact (LanceDB brute force)"


def _index_state(table: Any) -> dict[str, Any]:
    """Each index of ``table``: its type and how many rows it covers (the rest are scanned)."""
    indexes = {}
    for index in table.list_indices():
        stats = table.index_stats(index.name)
        indexes[index.name] = {
            "type": str(index.index_type),
            "indexed_rows": stats.num_indexed_rows if stats else None,
            "unindexed_rows": stats.num_unindexed_rows if stats else None,
        }
    return indexes


def _deep(store: LanceStore, tables: Tables, dims: int | None) -> dict[str, Any]:
    meta = store.read_meta()
    rows = {}
    for kind in KINDS:
        table = getattr(tables, kind)
        rows[kind] = {"rows": table.count_rows(), "version": table.version}
        # A counted filter reads every fragment: a missing or cut data file fails here
        # (and the status with it), not only the next search that meets it.
        table.count_rows(f"length({table.schema.names[0]}) >= 0")
    indexes = _index_state(tables.chunks)
    vector = _vector_path(store, VECTOR_INDEX in indexes, dims)
    return {
        "storage_options": store.settings.masked_options(),
        "generation": tables.generation,
        "fingerprint": meta.get("current", {}).get("fingerprint"),
        "tables": rows,
        "indexes": indexes,
        "entries_indexes": _index_state(tables.entries),
        "last_optimize": meta.get("optimize") or "never",
        "search_path": f"FTS (BM25, {'indexed' if FTS_INDEX in indexes else 'missing'}) + vector"
        f" ({vector})",
        "read_consistency_interval_s": store.settings.read_consistency_interval_s,
    }
