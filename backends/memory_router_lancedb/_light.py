"""Reads through pylance (the ``lance`` package) for a process that has not written.

``import lancedb`` costs about 1.5–2.8 s of CPU (two thirds of it building the pydantic
validators of the generated namespace REST client that ``lancedb.db`` imports eagerly,
which this backend never uses); ``import lance`` costs about 0.2 s on top of numpy and
pyarrow (bench/NOTES.md, "A search on a LanceDB chain"). A
one-shot ``memory-router search`` on a local store only reads: its sync finds nothing to
write (:func:`~._sync.settled`) and its search reads the FTS index, the vectors and a few
rows. So while ``reader = "auto"``, the store is a folder, pylance is installed and the
process has not connected through lancedb, :class:`LanceStore` hands out
:class:`LightTable` readers over the same tables; the first write (or anything else that
needs lancedb) connects through lancedb and every later read goes there too.

Both packages embed Lance's engine: the same files, the same BM25 and the same row ids
(``tests/backends/test_lancedb_light.py`` compares the two paths' hits on one table).
Object storage always reads through lancedb: its deadlines, probes and the cancelling of
abandoned calls are built on lancedb's runtime.

The reads call pylance's compiled module ``lance.lance`` (its ``_Dataset`` and
``_Scanner``, what ``lance.LanceDataset`` wraps) loaded without running the ``lance``
package's ``__init__``: that imports ``lance.dataset``, hence ``pyarrow.dataset`` (parquet,
ORC, Acero) and ``pyarrow.compute``, about half of a keyword-only search's CPU
(bench/NOTES.md, "A search on a LanceDB chain"). The scanner's keyword arguments are those
``lance.dataset.ScannerBuilder.to_scanner`` passes, with its defaults; pylance is pinned
in pyproject.toml and the tests above hold the two paths equal, so a pylance upgrade that
changes them fails there. A later ``import lance`` reuses the loaded module.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

_AVAILABLE: bool | None = None
TAKE_BATCH = 1000  # row ids per filter of :meth:`LightTable.take`
_ENGINE = "lance.lance"
_LOADING = threading.Lock()
# ``lance.dataset.ScannerBuilder``'s defaults for what :meth:`LightTable.scan` leaves unset.
_SCAN_DEFAULTS: dict[str, Any] = {
    "prefilter": False,
    "scan_in_order": True,
    "with_row_id": False,
    "with_row_address": False,
    "use_stats": True,
    "fast_search": False,
    "strict_batch_size": False,
    "disable_scoring_autoprojection": False,
}


def available() -> bool:
    """Whether pylance is installed (looked up once, without importing it)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = importlib.util.find_spec("lance") is not None
    return _AVAILABLE


def engine() -> Any:
    """pylance's compiled module ``lance.lance``, loaded without the ``lance`` package.

    Registered in ``sys.modules`` under its own name, so a later ``import lance`` (its
    ``from .lance import …``) reuses it. Falls back to an ordinary import when the
    package does not hold it where expected.
    """
    with _LOADING:
        module = sys.modules.get(_ENGINE)
        if module is not None:
            return module
        package = importlib.util.find_spec("lance")  # finds, does not import, the package
        folders = package.submodule_search_locations if package is not None else None
        spec = importlib.machinery.PathFinder.find_spec(_ENGINE, folders) if folders else None
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return importlib.import_module(_ENGINE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[_ENGINE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[_ENGINE]
            raise
        return module


@dataclass(frozen=True, slots=True)
class IndexName:
    """One index as ``Table.list_indices()`` names it (the only field read here)."""

    name: str


class LightTable:
    """One table read with pylance: the reads of lancedb's ``Table`` that a search and a
    sync finding nothing to do use, each at the table's latest version, checked at most
    every ``interval_s`` (lancedb's ``read_consistency_interval``: 0 checks every read)."""

    def __init__(self, path: str, interval_s: float) -> None:
        self.path = path
        self._interval_s = interval_s
        self._dataset = engine()._Dataset(path)
        self._wrapped: Any = None  # a ``lance.LanceDataset``, for :meth:`nearest` only
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def _fresh(self) -> Any:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self._interval_s:
                latest = self._dataset.latest_version()
                if latest != self._dataset.version():
                    self._dataset = self._dataset.checkout_version(latest)
                self._checked = now
            return self._dataset

    @property
    def version(self) -> int:
        return int(self._fresh().version())

    @property
    def schema(self) -> Any:
        return self._fresh().schema

    def count_rows(self, filter: str | None = None) -> int:
        return int(self._fresh().count_rows(filter))

    def list_indices(self) -> list[IndexName]:
        names = dict.fromkeys(d.name for d in self._fresh().describe_indices())
        return [IndexName(n) for n in names]

    def to_arrow(self) -> Any:
        return self._read()

    def prewarm_index(self, name: str) -> None:
        self._fresh().prewarm_index(name, with_position=False, index_segments=None)

    def _read(self, columns: list[str] | dict[str, str] | None = None, **options: Any) -> Any:
        """One scan of the latest version as an Arrow table (``lance.LanceDataset.to_table``
        with ``options`` over :data:`_SCAN_DEFAULTS`); a dict of ``columns`` maps output
        names to SQL expressions."""
        if isinstance(columns, dict):
            options["columns_with_transform"] = list(columns.items())
        elif columns is not None:
            options["columns"] = columns
        scanner = self._fresh().scanner(**{**_SCAN_DEFAULTS, **options})
        return scanner.to_pyarrow().read_all()

    def scan(
        self,
        columns: list[str],
        *,
        where: str | None = None,
        limit: int | None = None,
        row_ids: bool = False,
    ) -> Any:
        """``columns`` of the rows matching ``where`` (all when ``None``), as Arrow."""
        return self._read(columns, filter=where, limit=limit, with_row_id=row_ids)

    def take(self, row_ids: list[int], columns: list[str]) -> Any:
        """``columns`` and the row id of the rows ``row_ids`` (those still live), as Arrow."""
        import pyarrow as pa

        parts = [
            self.scan(columns, where=f"_rowid IN ({', '.join(map(str, batch))})", row_ids=True)
            for batch in (row_ids[i : i + TAKE_BATCH] for i in range(0, len(row_ids), TAKE_BATCH))
        ]
        return pa.concat_tables(parts) if parts else self.scan(columns, limit=0, row_ids=True)

    def fts(
        self,
        terms: str,
        *,
        column: str,
        columns: list[str] | dict[str, str],
        where: str | None,
        limit: int,
        row_ids: bool = False,
    ) -> Any:
        """BM25 over the OR of ``terms`` in ``column``, prefiltered by ``where``, best
        first, with ``_score``; as lancedb's ``search(MatchQuery(…), "fts")`` runs it."""
        query = engine().PyFullTextQuery.match_query(
            terms,
            column,
            boost=1.0,
            fuzziness=0,
            max_expansions=50,
            operator="OR",
            prefix_length=0,
            document_granularity=None,
        )  # ``lance.query.MatchQuery(terms, column, operator=FullTextOperator.OR).inner``
        return self._read(
            columns,
            full_text_query=query,
            filter=where,
            prefilter=where is not None,
            limit=limit,
            with_row_id=row_ids,
        )

    def nearest(
        self,
        vector: list[float],
        *,
        columns: list[str] | dict[str, str],
        where: str | None,
        limit: int,
        ann: dict[str, int] | None,
    ) -> Any:
        """The ``limit`` rows nearest ``vector`` by cosine, with ``_distance``, prefiltered
        by ``where``; ``ann`` holds ``nprobes``, ``refine_factor`` and ``ef`` when the ANN
        index answers (as lancedb's ``search(vector)`` runs it)."""
        query: dict[str, Any] = {"column": "vector", "q": vector, "k": limit, "metric": "cosine"}
        return self._full().to_table(
            columns=columns,
            nearest={**query, **(ann or {})},
            filter=where,
            prefilter=where is not None,
        )

    def _full(self) -> Any:
        """The latest version as a ``lance.LanceDataset`` (the whole package: a vector query
        is coerced and its ANN options checked in its Python layer), sharing the engine's
        session and so its caches; kept while the version holds."""
        import lance

        dataset = self._fresh()
        version = dataset.version()
        with self._lock:
            if self._wrapped is None or self._wrapped.version != version:
                self._wrapped = lance.LanceDataset(
                    self.path, version=version, session=dataset.session()
                )
            return self._wrapped
