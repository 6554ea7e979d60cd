"""The two search legs over one generation, with the built-in backend's semantics.

* keyword: Lance's native FTS (BM25) over the OR of the extracted keywords (numbers kept),
  the raw score mapped into [0, 1) as ``s / (1 + s)`` — the SQLite backend's mapping;
* vector: cosine distance (exact ``1 − cos`` thanks to ``refine_factor`` once an ANN index
  exists, see :class:`Ann`), score ``1 − distance``;
* both legs take the same prefilter (sources), then the built-in backend's fusion
  (`memory_router.kit.fuse` with `query.hybrid.fusion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memory_router.kit import ScoredChunk, query_keywords

from ._light import LightTable
from ._store import Tables, in_list, quote

MAX_TERMS = 64
COLUMNS = ["id", "path", "source", "start_line", "end_line", "text"]
# The same row shape read from the ``entries`` table (a hit names the entry's chunk).
ENTRY_COLUMNS = {
    "id": "chunk_id",
    "path": "path",
    "source": "'memory'",
    "start_line": "start_line",
    "end_line": "end_line",
    "text": "text",
}
Columns = list[str] | dict[str, str]

Row = ScoredChunk  # a candidate chunk and one leg's score in [0, 1]


class Known(Protocol):
    """Rows of one table version already in memory, by LanceDB row id."""

    def row_at(self, row_id: int, score: float) -> Row | None: ...

    def current(self, table: Any) -> bool:
        """Whether ``table`` is still at the version the rows were read from."""
        ...


def keywords(query: str) -> list[str]:
    """The keyword leg's terms: extracted keywords, numbers kept (none for a question of
    function words only, or a bare ``AND``: it matches nothing)."""
    return query_keywords(query)[:MAX_TERMS]


def prefilter(sources: Sequence[str] | None) -> str | None:
    return in_list("source", list(sources)) if sources else None


@dataclass(frozen=True, slots=True)
class Scope:
    """What one search reads: ``table`` under the ``where`` prefilter, as ``columns``.

    ``chunks`` is true for the chunks table (vectors in memory and the ANN index apply);
    a search for one category of entries reads the ``entries`` table instead.
    """

    table: Any
    where: str | None
    columns: Columns
    chunks: bool


def scope(tables: Tables, sources: Sequence[str] | None, category: str | None) -> Scope | None:
    """The search's :class:`Scope`; ``None`` when the filters exclude everything."""
    if category is None:
        return Scope(tables.chunks, prefilter(sources), COLUMNS, True)
    if sources and "memory" not in sources:
        return None  # entries live in the journal, a memory file
    return Scope(tables.entries, f"category = {quote(category)}", ENTRY_COLUMNS, False)


def _rows(records: list[dict[str, Any]], score: Any) -> dict[str, Row]:
    return {
        r["id"]: Row(
            r["id"],
            r["path"],
            r["source"],
            int(r["start_line"]),
            int(r["end_line"]),
            r["text"],
            float(score(r)),
        )
        for r in records
    }


def _with(columns: Columns, extra: str) -> Columns:
    return {**columns, extra: extra} if isinstance(columns, dict) else [*columns, extra]


def keyword_rows(
    table: Any,
    query: str,
    *,
    where: str | None,
    limit: int,
    known: Known | None = None,
    columns: Columns = COLUMNS,
) -> dict[str, Row]:
    """BM25 over the OR of :func:`keywords`; ``{}`` when there is nothing to match.

    With ``known`` (the rows held in memory) only row ids and scores come from the index,
    no data file is read (on object storage a take of the hits' rows costs ~16 ranged
    GETs at 100k chunks); when the table moved past ``known``'s version meanwhile, the
    rows are read instead.
    """
    terms = keywords(query)
    if not terms:
        return {}
    if isinstance(table, LightTable):
        return _light_keyword_rows(table, " ".join(terms), where, limit, known, columns)
    from lancedb import query as lance_query

    match_query: Any = lance_query.MatchQuery  # its stub marks every option as required
    match = match_query(" ".join(terms), "text", operator=lance_query.FullTextOperator.OR)
    builder = table.search(match, query_type="fts")
    if where:
        builder = builder.where(where, prefilter=True)
    if known is not None:
        scored = builder.limit(limit).with_row_id(True).select(["_score"])
        found = scored.to_arrow().to_pydict()
        ids, scores = found["_rowid"], found["_score"]
        rows = [known.row_at(i, bm25(s)) for i, s in zip(ids, scores, strict=True)]
        # Versions only move forward: at ``known``'s version after the query, it ran there.
        if known.current(table) and all(r is not None for r in rows):
            return {r.id: r for r in rows if r is not None}
    records = builder.limit(limit).select(_with(columns, "_score")).to_arrow().to_pylist()
    return _rows(records, lambda r: bm25(r["_score"]))


def _light_keyword_rows(
    table: LightTable,
    terms: str,
    where: str | None,
    limit: int,
    known: Known | None,
    columns: Columns,
) -> dict[str, Row]:
    """:func:`keyword_rows` read through pylance (the same query, the same engine)."""
    if known is not None:
        found = table.fts(
            terms, column="text", columns=["_score"], where=where, limit=limit, row_ids=True
        )
        ids, scores = found.column("_rowid").to_pylist(), found.column("_score").to_pylist()
        rows = [known.row_at(i, bm25(s)) for i, s in zip(ids, scores, strict=True)]
        if known.current(table) and all(r is not None for r in rows):
            return {r.id: r for r in rows if r is not None}
    found = table.fts(
        terms, column="text", columns=_with(columns, "_score"), where=where, limit=limit
    )
    return _rows(found.to_pylist(), lambda r: bm25(r["_score"]))


def bm25(score: float) -> float:
    """A raw BM25 score mapped into [0, 1) as ``s / (1 + s)``."""
    return float(score) / (1.0 + float(score))


def vector_rows(
    table: Any,
    vector: Any,
    *,
    where: str | None,
    limit: int,
    ann: Ann | None = None,
    columns: Columns = COLUMNS,
) -> dict[str, Row]:
    """Nearest chunks by cosine similarity (score = 1 − cosine distance); with an ANN
    index, the :class:`Ann` knobs apply."""
    if isinstance(table, LightTable):
        knobs = ann.knobs(limit) if ann is not None else None
        found = table.nearest(
            list(vector), columns=_with(columns, "_distance"), where=where, limit=limit, ann=knobs
        )
        return _rows(found.to_pylist(), lambda r: 1.0 - r["_distance"])
    builder = table.search(list(vector), vector_column_name="vector").distance_type("cosine")
    if ann is not None:
        builder = ann.apply(builder, limit)
    if where:
        builder = builder.where(where, prefilter=True)
    records = builder.limit(limit).select(_with(columns, "_distance")).to_arrow().to_pylist()
    return _rows(records, lambda r: 1.0 - r["_distance"])


@dataclass(frozen=True, slots=True)
class Ann:
    """How a search uses the ANN index: ``nprobes`` partitions read, each HNSW graph
    searched ``ef`` wide, and ``refine_factor × limit`` candidates re-ranked by their
    exact distance (so scores stay exact ``1 − cos``)."""

    nprobes: int
    refine_factor: int
    ef: int

    def knobs(self, limit: int) -> dict[str, int]:
        # LanceDB refuses an ef below the candidates it must return (limit × refine).
        ef = max(self.ef, limit * self.refine_factor)
        return {"nprobes": self.nprobes, "refine_factor": self.refine_factor, "ef": ef}

    def apply(self, builder: Any, limit: int) -> Any:
        knobs = self.knobs(limit)
        return (
            builder.nprobes(knobs["nprobes"]).refine_factor(knobs["refine_factor"]).ef(knobs["ef"])
        )
