"""Keyword (FTS5 BM25) and vector (sqlite-vec KNN or numpy) candidate queries (ref §1.7–1.8).

Every user term reaches ``MATCH`` as a quoted FTS5 string built by ``memory_router``'s
keyword helpers, and ``LIKE`` patterns are escaped, so no query text is parsed as syntax.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memory_router.kit import (
    ScoredChunk,
    bm25_to_score,
    build_match_query,
    build_or_query,
    extract_keywords,
    query_keywords,
)

from ._db import BY_ROWID, ROW_COLUMNS, Connection
from ._impact import Postings
from ._parallel import share
from ._vectors import Matrix, encode

if TYPE_CHECKING:
    from ._vectors import Nearest, Vector

MAX_TERMS = 64  # a pasted megabyte of text is not a useful FTS query; its head is
_COLUMNS = ", ".join(ROW_COLUMNS)
_WORD = re.compile(r"\w+")  # the reference's [\p{L}\p{N}_]+
# Kana, CJK and Hangul: a trigram index cannot match a term of fewer than 3 of them.
TRIGRAM_SHORT = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u3131-\u3163]")


def query_tokens(query: str) -> list[str]:
    return _WORD.findall(query)


Row = ScoredChunk  # a candidate chunk and one side's score in [0, 1]


@dataclass(frozen=True, slots=True)
class Halves:
    """A large full-text index searched as two rowid ranges side by side: rows up to
    ``middle`` on the search's own connection, the rest on ``other``."""

    middle: int
    other: Connection


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """Which chunks a query may return: the current model, optional sources, a limit.

    ``filter_model = False`` when every stored chunk has the current model: the filter
    then only costs time (a column lookup per FTS match). ``rows``: the query that reads
    the candidates' columns by rowid (:func:`._db.fts_rows_sql`). ``halves``: how a ranked
    full-text query may be split over two cores (``None``: it is not); ``postings``: the
    index's in-memory BM25 postings, which rank an OR of keywords when set (see
    :mod:`._impact`).
    """

    model: str
    sources: tuple[str, ...] | None
    limit: int
    trigram: bool = False
    filter_model: bool = True
    rows: str = BY_ROWID
    halves: Halves | None = None
    postings: Postings | None = None

    def where(self, prefix: str = "") -> tuple[str, list[object]]:
        sql = f"{prefix}model = ?" if self.filter_model else "1"
        params: list[object] = [self.model] if self.filter_model else []
        if self.sources:
            sql += f" AND {prefix}source IN ({','.join('?' * len(self.sources))})"
            params.extend(self.sources)
        return sql, params


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _split_trigram(terms: Sequence[str], trigram: bool) -> tuple[list[str], list[str]]:
    """(terms for MATCH, terms for LIKE): short CJK terms cannot match a trigram index."""
    if not trigram:
        return list(terms), []
    short = [t for t in terms if TRIGRAM_SHORT.search(t) and len(t) < 3]
    return [t for t in terms if t not in short], short


def _run(
    conn: Connection,
    scope: Scope,
    match: str | None,
    likes: list[str],
    any_like: bool,
    phrases: Sequence[str] = (),
) -> dict[str, Row]:
    """The best ``scope.limit`` rows for ``match`` and ``likes``; ``phrases``, when given,
    are the quoted phrases ``match`` is the OR of (then the postings may rank them)."""
    conditions: list[str] = []
    params: list[object] = []
    if match:
        conditions.append("chunks_fts MATCH ?")
        params.append(match)
    if likes:
        joined = (" OR " if any_like else " AND ").join(["text LIKE ? ESCAPE '\\'"] * len(likes))
        conditions.append(f"({joined})")
        params.extend(_like(t) for t in likes)
    if not conditions:
        return {}
    where, extra = scope.where()
    ranked = None
    if phrases and not likes and scope.postings is not None:
        ranked = scope.postings.ranked(conn, phrases, where, extra, scope.limit, wait=False)
    if ranked is None:  # FTS5 ranks it (a phrase's postings are not kept yet)
        conditions.append(where)
        ranked = _ranked(conn, scope, " AND ".join(conditions), [*params, *extra], match)
    return _by_rowid(conn, scope.rows, ranked)


def _ranked(
    conn: Connection, scope: Scope, where: str, params: list[object], match: str | None
) -> list[tuple[int, float]]:
    """``(rowid, bm25)`` of the best ``scope.limit`` rows, best first.

    Only rowids and ranks are sorted: the columns of the few rows kept are read after
    (:func:`_by_rowid`), not carried through the sort for every match. With
    ``scope.halves`` the two rowid ranges are ranked side by side and merged (BM25 takes
    its statistics from the whole index, so the halves' ranks compare).
    """
    rank = "bm25(chunks_fts)" if match else "0"
    sql = f"SELECT rowid, {rank} AS r FROM chunks_fts WHERE {where}"
    order = " ORDER BY r, rowid LIMIT ?"
    halves = scope.halves if match else None
    if halves is None:
        rows = conn.execute(sql + order, [*params, scope.limit]).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
    low, high = f"{sql} AND rowid <= ?{order}", f"{sql} AND rowid > ?{order}"
    args = [*params, halves.middle, scope.limit]
    parts = share(
        [
            lambda: conn.execute(low, args).fetchall(),
            lambda: halves.other.execute(high, args).fetchall(),
        ]
    )
    merged = sorted((float(r[1]), int(r[0])) for part in parts for r in part)
    return [(rowid, rank_) for rank_, rowid in merged[: scope.limit]]


def _by_rowid(conn: Connection, sql: str, ranked: list[tuple[int, float]]) -> dict[str, Row]:
    """The full-text rows of ``ranked`` (those still there) by chunk id, in its order,
    each scored by its BM25 rank; ``sql`` reads them (:attr:`Scope.rows`)."""
    if not ranked:
        return {}
    marks = ",".join("?" * len(ranked))
    rows = {r[0]: r for r in conn.execute(f"{sql}({marks})", [rowid for rowid, _ in ranked])}
    found = {}
    for rowid, rank in ranked:
        if (r := rows.get(rowid)) is not None:
            found[r[1]] = Row(r[1], r[2], r[3], int(r[4]), int(r[5]), r[6], bm25_to_score(rank))
    return found


def keyword_and(conn: Connection, scope: Scope, query: str) -> dict[str, Row]:
    """The hybrid keyword side: every token of ``query`` must match (quoted-AND)."""
    tokens = query_tokens(query)[:MAX_TERMS]
    match_terms, likes = _split_trigram(tokens, scope.trigram)
    match = build_match_query(" ".join(match_terms)) if match_terms else None
    return _run(conn, scope, match, likes, any_like=False)


def keyword_or(conn: Connection, scope: Scope, query: str) -> dict[str, Row]:
    """One BM25 query over the OR of the extracted keywords; ``{}`` when it has none (a
    question of function words only, or a bare ``AND``, matches nothing)."""
    keywords = query_keywords(query, trigram=scope.trigram)
    match_terms, likes = _split_trigram(keywords[:MAX_TERMS], scope.trigram)
    phrases = [p for term in match_terms if (p := build_or_query([term]))]
    found = _run(conn, scope, " OR ".join(phrases) or None, [], any_like=True, phrases=phrases)
    if likes:
        # Matched only by short CJK terms: no BM25 rank exists, so they rank below matches.
        for row in _run(conn, scope, None, likes, any_like=True).values():
            if row.id not in found:
                found[row.id] = replace(row, score=0.5)
    return dict(sorted(found.items(), key=lambda kv: -kv[1].score)[: scope.limit])


def boost(row: Row, query: str) -> Row:
    """The reference's FTS-only ranking boost (ref §1.8), capped at 1."""
    q_tokens = set(_WORD.findall(query.lower()))
    if not q_tokens:
        return row
    text = row.text.lower()
    c_tokens = set(_WORD.findall(text))
    found = len(q_tokens & c_tokens)
    path = row.path.lower()
    score = (
        row.score
        + 0.45 * found / len(q_tokens)
        + 0.2 * (found / len(c_tokens) if c_tokens else 0.0)
        + 0.18 * sum(1 for t in q_tokens if t in path)
        + min(len(row.text) / 160, 0.18)
    )
    return replace(row, score=min(1.0, score))


def keyword_reference(conn: Connection, scope: Scope, query: str) -> dict[str, Row]:
    """OpenClaw's keyword-only search (ref §1.7 step 3).

    The whole query ANDed, with the fallback ranking boost; if that finds nothing, one
    AND query per extracted keyword (or the raw query), keeping each chunk's best score.
    """
    full = keyword_and(conn, scope, query)
    if full:
        boosted = {k: boost(r, query) for k, r in full.items()}
        return dict(sorted(boosted.items(), key=lambda kv: -kv[1].score))
    best: dict[str, Row] = {}
    terms = extract_keywords(query, trigram=scope.trigram)[:MAX_TERMS] or [query]
    for term in terms:
        for chunk_id, row in keyword_and(conn, scope, term).items():
            if chunk_id not in best or row.score > best[chunk_id].score:
                best[chunk_id] = row
    return dict(sorted(best.items(), key=lambda kv: -kv[1].score)[: scope.limit])


def vector_rows(
    conn: Connection,
    scope: Scope,
    query: Vector,
    *,
    use_vec: bool,
    matrix: Matrix | None,
    known: Mapping[str, Row] | None = None,
) -> dict[str, Row]:
    """Nearest chunks by cosine similarity (score = 1 − cosine distance).

    sqlite-vec KNN when ``use_vec`` (``chunks_vec`` holds vectors of the query's size);
    otherwise search over ``matrix`` (the current model's vectors in memory), reading
    only the rows ``known`` (the keyword leg's, by id) does not hold.
    """
    if use_vec:
        return _knn(conn, scope, query)
    if matrix is None:
        return {}
    return vector_details(conn, matrix.top(query, scope.limit, scope.sources), known or {})


def vector_details(
    conn: Connection, best: Sequence[Nearest], known: Mapping[str, Row]
) -> dict[str, Row]:
    """The rows of ``best`` (best first) scored by their cosine; rows in ``known`` are not
    read again, chunks no longer stored are left out."""
    details = _details(conn, {n.id: n for n in best if n.id not in known})
    found = {}
    for n in best:
        if (row := details.get(n.id)) is None and (row := known.get(n.id)) is not None:
            row = Row(row.id, row.path, row.source, row.start_line, row.end_line, row.text, n.score)
        if row is not None:
            found[n.id] = row
    return found


def _knn(conn: Connection, scope: Scope, query: Vector) -> dict[str, Row]:
    sql = str(conn.execute("SELECT sql FROM sqlite_master WHERE name='chunks_vec'").fetchone()[0])
    cosine = "distance_metric=cosine" in sql.replace(" ", "").lower()
    # Oversample: rows of another model or source are dropped after the KNN.
    k = min(4096, scope.limit * (8 if scope.sources else 2))
    where, params = scope.where("c.")
    rows = conn.execute(
        f"SELECT {', '.join('c.' + c.strip() for c in _COLUMNS.split(','))}, v.distance"
        " FROM (SELECT id, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?) v"
        f" JOIN chunks c ON c.id = v.id WHERE {where} ORDER BY v.distance LIMIT ?",
        [encode(query), k, *params, scope.limit],
    ).fetchall()
    out = {}
    for r in rows:
        distance = float(r[6])
        # A seed table without the cosine metric measures L2; for unit vectors
        # cos = 1 − d²/2.
        score = 1.0 - distance if cosine else 1.0 - distance * distance / 2
        out[r[0]] = Row(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], score)
    return out


def _details(conn: Connection, wanted: Mapping[str, Nearest]) -> dict[str, Row]:
    """The stored rows of ``wanted`` (by chunk id), each scored by its cosine: read by
    rowid (half the work of finding each id), then by id those a write since moved."""
    found: dict[str, Row] = {}
    _read(conn, "rowid", [n.rowid for n in wanted.values()], wanted, found)
    if len(found) < len(wanted):
        _read(conn, "id", [i for i in wanted if i not in found], wanted, found)
    return found


def _read(
    conn: Connection,
    column: str,
    keys: Sequence[object],
    wanted: Mapping[str, Nearest],
    found: dict[str, Row],
) -> None:
    """Add to ``found`` the rows of ``chunks`` whose ``column`` is one of ``keys`` and
    whose id is ``wanted``."""
    for start in range(0, len(keys), 500):
        part = keys[start : start + 500]
        marks = ",".join("?" * len(part))
        sql = f"SELECT {_COLUMNS} FROM chunks WHERE {column} IN ({marks})"
        for r in conn.execute(sql, part):
            if (n := wanted.get(r[0])) is not None:
                found[r[0]] = Row(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], n.score)
