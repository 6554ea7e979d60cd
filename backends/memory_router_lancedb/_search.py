"""The two search legs over one generation, with the built-in backend's semantics.

* keyword: Lance's native FTS (BM25) over the OR of the extracted keywords (numbers kept),
  the raw score mapped into [0, 1) as ``s / (1 + s)`` — the SQLite backend's mapping;
* vector: cosine distance (exact ``1 − cos`` thanks to ``refine_factor`` once an ANN index
  exists), score ``1 − distance``;
* both legs take the same prefilter (sources), then the built-in backend's fusion
  (`memory_router.fuse` with `query.hybrid.fusion`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_router import query_keywords

from ._store import in_list

MAX_TERMS = 64
COLUMNS = ["id", "path", "source", "start_line", "end_line", "text"]
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Row:
    """A candidate chunk and one leg's score in [0, 1]."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    score: float


def keywords(query: str) -> list[str]:
    """The keyword leg's terms: extracted keywords (raw tokens when none), numbers kept."""
    tokens = _WORD.findall(query)
    return (query_keywords(query) or [t.lower() for t in tokens])[:MAX_TERMS]


def prefilter(sources: Sequence[str] | None) -> str | None:
    return in_list("source", list(sources)) if sources else None


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


def keyword_rows(table: Any, query: str, *, where: str | None, limit: int) -> dict[str, Row]:
    """BM25 over the OR of :func:`keywords`; ``{}`` when there is nothing to match."""
    terms = keywords(query)
    if not terms:
        return {}
    from lancedb import query as lance_query

    match_query: Any = lance_query.MatchQuery  # its stub marks every option as required
    match = match_query(" ".join(terms), "text", operator=lance_query.FullTextOperator.OR)
    builder = table.search(match, query_type="fts")
    if where:
        builder = builder.where(where, prefilter=True)
    records = builder.limit(limit).select([*COLUMNS, "_score"]).to_arrow().to_pylist()
    return _rows(records, lambda r: r["_score"] / (1.0 + r["_score"]))


def vector_rows(
    table: Any,
    vector: Any,
    *,
    where: str | None,
    limit: int,
    refine_factor: int | None,
) -> dict[str, Row]:
    """Nearest chunks by cosine similarity (score = 1 − cosine distance)."""
    builder = table.search(list(vector), vector_column_name="vector").distance_type("cosine")
    if refine_factor:
        builder = builder.refine_factor(refine_factor)
    if where:
        builder = builder.where(where, prefilter=True)
    records = builder.limit(limit).select([*COLUMNS, "_distance"]).to_arrow().to_pylist()
    return _rows(records, lambda r: 1.0 - r["_distance"])
