"""``recall`` from the ``entries`` table's native columns (:meth:`Backend.recall_entries`).

Nearest entries by cosine (``1 − distance``), the category applied as a ``where``
prefilter, each returned with the importance, category and creation time stored beside
its vector; the router weighs them (``[entries.ranking]``).
"""

from __future__ import annotations

from typing import Any

from memory_router import Entry, EntryMatch
from memory_router.kit import EntryRequest

from ._store import quote

COLUMNS = [
    "id",
    "text",
    "importance",
    "category",
    "created_at",
    "path",
    "start_line",
    "end_line",
    "_distance",
]


def recall(table: Any, request: EntryRequest) -> tuple[EntryMatch, ...]:
    """Up to ``request.candidates`` entries of ``table``, nearest first."""
    builder = table.search(list(request.vector), vector_column_name="vector")
    builder = builder.distance_type("cosine")
    if request.category is not None:
        builder = builder.where(f"category = {quote(request.category)}", prefilter=True)
    records = builder.limit(request.candidates).select(COLUMNS).to_arrow().to_pylist()
    return tuple(_match(r) for r in records if 1.0 - r["_distance"] >= request.min_similarity)


def _match(record: dict[str, Any]) -> EntryMatch:
    similarity = min(1.0, max(0.0, 1.0 - float(record["_distance"])))
    entry = Entry(
        id=record["id"],
        text=record["text"],
        importance=float(record["importance"]),
        category=record["category"],
        created_at=record["created_at"],
    )
    return EntryMatch(
        entry=entry,
        score=similarity,
        similarity=similarity,
        path=record["path"],
        start_line=int(record["start_line"]),
        end_line=int(record["end_line"]),
    )
