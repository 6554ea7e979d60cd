"""QMD hits → :class:`memory_router.Hit`: paths, line ranges and a 0–1 score.

Paths: ``qmd://<collection>/<path>`` (CLI) or ``<collection>/<path>`` (MCP), a trailing
``?index=<name>`` stripped, mapped through the managed collection to a workspace-relative
path; hits of unknown collections are dropped. Lines come from the snippet's
``@@ -<start>,<count>`` header, not from MCP's ``N:`` prefixes (off by two). Session
exports map to content line numbers of the transcript (export line minus the header).

Scores are normalised per mode. In ``search`` mode (keyword sub-queries, no reranker)
QMD's own score is a fused rank position (``1/rank``), which says nothing about relevance
across queries; the score is the *coverage* of the cited lines (:mod:`._cite`: the share
of the query's keywords they hold, each weighted by its rarity, 0–1) times a factor for
QMD's fused rank of the document: ``coverage × (0.5 + 0.5 × rank_factor)`` with
``rank_factor = 1 / (1 + (rank-1)/10)`` (rank 1 → 1.0, rank 10 → 0.76, rank 30 → 0.63;
measured against a rank share of 0.1 on LoCoMo (equal) and pydocs (better)), then
:func:`calibrated` so that the router's default ``min_score`` (0.2) stands for a raw 0.35
— about a third of the query's weight in the lines shown. A hit holding only a stray word
of a nonsense query falls under it, a hit holding the rare words is kept; when nothing
reaches ``min_score``, hits at a raw 0.3 or more (about one keyword in three) are kept
anyway (:data:`RELAXED_COVERAGE`). Unreranked ``query`` is scored the same way (QMD's
fused rank then mixes keywords and the vector). ``vsearch`` (no keywords to count) keeps
the rank factor alone or the cosine; a reranked ``query``'s blend is already in 0–1 and
is kept (clipped). Hits are returned best first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memory_router import BackendError, Hit

from ._collections import Collection, workspace_path
from ._export import HEADER_LINES
from ._mirror import COLLECTION as MIRROR
from ._mirror import MirrorEntry

Scoring = Literal["coverage", "rank", "qmd"]
SCORING: dict[str, Scoring] = {"search": "coverage", "vsearch": "qmd", "query": "qmd"}
VECTOR_WEIGHT = 0.4  # the router's default hybrid weights (docs/configuration.md)


def explained_score(explain: Any, mode: str) -> float:
    """A hit's score from ``--explain``: its best cosine in ``vsearch``; in ``query``
    without a reranker, ``0.4 × cosine + 0.6 × BM25`` (QMD's 0–1 BM25), the router's
    default hybrid weights. Comparable across collections, unlike QMD's ``1/rank``."""
    if not isinstance(explain, dict):
        return 0.0
    vector = max(
        (float(x) for x in explain.get("vectorScores") or [] if x is not None), default=0.0
    )
    if mode == "vsearch":
        return max(0.0, vector)
    text = max((float(x) for x in explain.get("ftsScores") or [] if x is not None), default=0.0)
    return max(0.0, VECTOR_WEIGHT * vector + (1 - VECTOR_WEIGHT) * text)


_HEADER = re.compile(r"@@ -(\d+),(\d+) @@")
_LINE_PREFIX = re.compile(r"^\d+: ?")


@dataclass(frozen=True, slots=True, kw_only=True)
class RawHit:
    """One QMD result before mapping: collection, collection-relative path, lines, text."""

    collection: str
    relpath: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    coverage: float | None = None


def split_file(file: str) -> tuple[str, str]:
    """``qmd://coll/a/b.md?index=x`` or ``coll/a/b.md`` → ``("coll", "a/b.md")``."""
    if file.startswith("qmd://"):
        file = file[len("qmd://") :]
    file = re.sub(r"\?index=[^/]*$", "", file)
    collection, _, relpath = file.partition("/")
    return collection, relpath


def parse_snippet(snippet: str, line: int) -> tuple[int, int, str]:
    """``(start, end, text)`` from a snippet whose first line may be an ``@@`` header.

    MCP prefixes every line with ``N: ``; those prefixes are dropped.
    """
    lines = snippet.split("\n")
    if lines and _LINE_PREFIX.match(lines[0]) and all(_LINE_PREFIX.match(x) for x in lines if x):
        lines = [_LINE_PREFIX.sub("", x, count=1) for x in lines]
    header = _HEADER.search(lines[0]) if lines else None
    if header is None:
        body = "\n".join(lines).strip("\n")
        return line, line + max(0, len(body.split("\n")) - 1), body
    start, count = int(header[1]), int(header[2])
    return start, start + max(1, count) - 1, "\n".join(lines[1:]).strip("\n")


def parse_items(items: Any, *, backend: str) -> list[RawHit]:
    """QMD's result list (CLI ``--format json`` or MCP ``structuredContent.results``)."""
    if not isinstance(items, list):
        raise BackendError(
            f"qmd returned {type(items).__name__} where a list of results was expected",
            backend=backend,
        )
    hits = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise BackendError(
                f"qmd returned a malformed result: {str(item)[:200]}", backend=backend
            )
        collection, relpath = split_file(item["file"])
        line = item["line"] if isinstance(item.get("line"), int) else 1
        start, end, text = parse_snippet(str(item.get("snippet") or item.get("body") or ""), line)
        score = item.get("score")
        hits.append(
            RawHit(
                collection=collection,
                relpath=relpath,
                start_line=max(1, start),
                end_line=max(1, start, end),
                snippet=text,
                score=float(score) if isinstance(score, int | float) else 0.0,
            )
        )
    return hits


def rank_score(rank: int) -> float:
    """The score of the hit at 1-based ``rank`` when QMD's own score is only a position."""
    return 1.0 / (1.0 + (rank - 1) / 10.0)


RANK_SHARE = 0.5
"""How much of a ``search`` score QMD's rank may take away (half, at the deepest ranks)."""
CROSSING = 0.35
"""The raw ``search`` score (coverage × rank factor) that the router's default
``min_score`` stands for: on LoCoMo it keeps 96 % of the hits holding evidence and a third
of the best hits of another conversation (``bench/calibrate_qmd.py``)."""
DEFAULT_MIN_SCORE = 0.2
"""``[query] min_score``'s default, which :data:`CROSSING` is mapped to."""
RELAXED_COVERAGE = 0.3
"""When no hit reaches ``min_score``, ``search`` hits whose raw score is this much are
kept (about a third of the query shown), so a real match is not lost to a strict
threshold (as a score: :func:`calibrated` of it)."""


def calibrated(raw: float) -> float:
    """A raw ``search`` score on the router's scale: linear from 0 to :data:`CROSSING` →
    :data:`DEFAULT_MIN_SCORE`, and from there to 1 → 1 (the order is kept)."""
    if raw <= CROSSING:
        return max(0.0, raw) * DEFAULT_MIN_SCORE / CROSSING
    return DEFAULT_MIN_SCORE + (min(1.0, raw) - CROSSING) * (1 - DEFAULT_MIN_SCORE) / (1 - CROSSING)


def hit_score(item: RawHit, rank: int, scoring: Scoring) -> float:
    """The 0–1 score of ``item`` at 1-based ``rank`` (see the module docstring)."""
    if scoring == "qmd":
        return min(1.0, max(0.0, item.score))
    if scoring == "coverage" and item.coverage is not None:
        return calibrated(item.coverage * (1.0 - RANK_SHARE + RANK_SHARE * rank_score(rank)))
    return rank_score(rank)


def to_hits(
    raw: Sequence[RawHit],
    *,
    collections: Mapping[str, Collection],
    workspace: Path,
    backend: str,
    scoring: Scoring,
    side: str | None = None,
    line_maps: Mapping[str, Sequence[int]] | None = None,
    manifest: Mapping[str, MirrorEntry] | None = None,
) -> list[Hit]:
    """Map raw hits to workspace hits, best first; unknown collections are dropped.

    ``scoring``: ``"coverage"`` (``search``), ``"rank"`` (``vsearch``) or ``"qmd"``
    (``query``: QMD's own score), as the module docstring says.

    ``side`` (``"text"`` or ``"vector"``) also fills that half of the hybrid score, so
    the router's keyword relaxation recognises keyword hits. ``line_maps`` maps a
    session export's lines to its transcript's JSONL lines; ``manifest`` maps a chunk
    mirror file (:mod:`._mirror`) to its source file and lines — a mirror file it does
    not name is dropped.
    """
    hits = []
    rank, document = 0, ("", "")
    for item in _known(raw, collections):
        if (item.collection, item.relpath) != document:  # a document's runs share its rank
            rank, document = rank + 1, (item.collection, item.relpath)
        place = _place(item, collections[item.collection], workspace, line_maps, manifest)
        if place is None:
            continue
        path, source, start, end = place
        score = hit_score(item, rank, scoring)
        hits.append(
            Hit(
                path=path,
                start_line=start,
                end_line=max(start, end),
                score=score,
                snippet=item.snippet,
                source=source,  # type: ignore[arg-type]
                backend=backend,
                text_score=score if side == "text" else None,
                vector_score=score if side == "vector" else None,
            )
        )
    return sorted(hits, key=lambda h: -h.score) if scoring == "coverage" else hits


def _place(
    item: RawHit,
    collection: Collection,
    workspace: Path,
    line_maps: Mapping[str, Sequence[int]] | None,
    manifest: Mapping[str, MirrorEntry] | None,
) -> tuple[str, str, int, int] | None:
    """The hit's workspace path, source and source lines; ``None``: a mirror file the
    manifest does not name (written by an interrupted sync, or already replaced)."""
    start, end = item.start_line, item.end_line
    if collection.name == MIRROR and manifest is not None:
        entry = manifest.get(item.relpath)
        if entry is None:
            return None
        return entry.path, entry.source, entry.source_line(start), entry.source_line(end)
    if collection.source == "sessions":
        line_map = (line_maps or {}).get(item.relpath, [])
        start, end = _transcript_line(start, line_map), _transcript_line(end, line_map)
    return workspace_path(collection, item.relpath, workspace), collection.source, start, end


def _transcript_line(line: int, line_map: Sequence[int]) -> int:
    """An export line as a JSONL line (or a content line when there is no map)."""
    content = max(1, line - HEADER_LINES)
    if not line_map:
        return content
    return line_map[min(content, len(line_map)) - 1]


def _known(raw: Iterable[RawHit], collections: Mapping[str, Collection]) -> list[RawHit]:
    return [item for item in raw if item.collection in collections]
