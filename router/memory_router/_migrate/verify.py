"""``migrate --verify``: do source and target still find the same things?

Count and schema checks prove nothing about retrieval (a migrated index once answered
recall@1 = 0 with every structural check green), so the same queries run on both sides:
queries drawn from the corpus itself (a chunk's opening words) plus any given. Hits are
compared by location (the same file and intersecting lines), not by chunk id: a
re-embedded index has new ids, and another engine may cut chunks a little differently.
"""

from __future__ import annotations

import contextlib
import random
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._backend import Backend, BackendContext
from .._config.settings import parse_settings
from .._exceptions import Unsupported
from .._types import Chunk, Hit, SearchRequest, _ToDict

if TYPE_CHECKING:
    from .._router import Router

TOP_K = 10
WORST = 5
QUERY_WORDS = 12
_MARKUP = re.compile(r"[#>*_`|\[\]()-]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDiff(_ToDict):
    """One query's agreement: top-k ``overlap`` in [0, 1], each side's first hit, and
    whether those are the same passage."""

    query: str
    overlap: float
    source_top: str | None
    target_top: str | None
    same_top: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyReport(_ToDict):
    """How far the target agrees with the source on the same queries.

    ``overlap`` is the mean share of the top ``k`` hits both return (1.0 = identical);
    ``top_hit_share`` the share of queries whose first hit is the same; ``worst`` the
    queries that differ most, worst first.
    """

    queries: int
    k: int
    overlap: float
    top_hit_share: float
    source_chunks: int
    target_chunks: int
    worst: tuple[QueryDiff, ...] = ()


class Exporter(Protocol):
    name: str

    def export_chunks(self) -> Iterator[Chunk]: ...


def query_of(text: str) -> str | None:
    """A query made of a chunk's opening words, or ``None`` when it has too few, or when
    they are not text (an index built before binary files were left out): the queries
    are printed."""
    words = _MARKUP.sub(" ", text).split()
    query = " ".join(words[:QUERY_WORDS])
    junk = sum(1 for char in query if not char.isprintable() or char == "\ufffd")
    return query if len(words) >= 3 and junk <= len(query) // 20 else None


def sample_queries(chunks: Iterable[Chunk], count: int, *, seed: int = 0) -> list[str]:
    """``count`` queries from chunks picked uniformly at random (reservoir sampling)."""
    rng = random.Random(seed)
    picked: list[str] = []
    seen = 0
    for chunk in chunks:
        query = query_of(chunk.text)
        if query is None:
            continue
        seen += 1
        if len(picked) < count:
            picked.append(query)
        else:
            slot = rng.randrange(seen)
            if slot < count:
                picked[slot] = query
    return picked


def top_hits(backend: Backend, query: str, k: int = TOP_K) -> list[str]:
    """The backend's top ``k`` locations, ties broken by location so both sides agree."""
    request = SearchRequest(query=query, max_results=k, min_score=0.0, candidates=2 * k)
    hits = sorted(backend.search(request).hits, key=lambda h: (-round(h.score, 6), _where(h)))
    return [_where(h) for h in hits[:k]]


def _where(hit: Hit) -> str:
    return f"{hit.path}#L{hit.start_line}-L{hit.end_line}"


def same_place(a: str, b: str) -> bool:
    """Whether two ``path#La-Lb`` locations are the same file with intersecting lines.

    Engines that chunk differently (QMD) give the same passage slightly different line
    ranges; within one engine the ranges are equal.
    """
    path_a, _, lines_a = a.rpartition("#L")
    path_b, _, lines_b = b.rpartition("#L")
    if path_a != path_b:
        return False
    start_a, end_a = (int(x) for x in lines_a.split("-L"))
    start_b, end_b = (int(x) for x in lines_b.split("-L"))
    return start_a <= end_b and start_b <= end_a


def compare(query: str, source: list[str], target: list[str]) -> QueryDiff:
    """Top-k agreement: hits of ``source`` matched one to one with hits of ``target``."""
    unmatched = list(target)
    both = 0
    for hit in source:
        match = next((t for t in unmatched if same_place(hit, t)), None)
        if match is not None:
            unmatched.remove(match)
            both += 1
    size = max(len(source), len(target))
    top_a, top_b = (source[0] if source else None), (target[0] if target else None)
    return QueryDiff(
        query=query,
        overlap=both / size if size else 1.0,
        source_top=top_a,
        target_top=top_b,
        same_top=top_a == top_b
        or (top_a is not None and top_b is not None and same_place(top_a, top_b)),
    )


def verify_backends(
    router: Router,
    source: Any,
    target: Backend,
    *,
    count: int,
    queries: Sequence[str] = (),
    k: int = TOP_K,
) -> VerifyReport:
    """Run ``count`` corpus queries plus ``queries`` on both sides and compare the top ``k``."""
    asked = [q for q in queries if q.strip()] + sample_queries(source.export_chunks(), count)
    with searcher(router, source) as left:
        diffs = [compare(q, top_hits(left, q, k), top_hits(target, q, k)) for q in asked]
        source_chunks = left.status().chunks
    total = len(diffs)
    ranked = sorted(diffs, key=lambda d: (d.overlap, d.same_top))
    return VerifyReport(
        queries=total,
        k=k,
        overlap=sum(d.overlap for d in diffs) / total if total else 1.0,
        top_hit_share=sum(d.same_top for d in diffs) / total if total else 1.0,
        source_chunks=source_chunks,
        target_chunks=target.status().chunks,
        worst=tuple(d for d in ranked[:WORST] if d.overlap < 1.0 or not d.same_top),
    )


@contextlib.contextmanager
def searcher(router: Router, source: Any) -> Iterator[Backend]:
    """``source`` itself when it is a backend; for an index file, a SQLite backend on a copy."""
    if isinstance(source, Backend):
        yield source
        return
    spec = router.backend_specs.get("sqlite")
    if spec is None or spec.settings is None:
        raise Unsupported(
            "verifying against an index file needs the sqlite backend", backend="sqlite"
        )
    with tempfile.TemporaryDirectory(prefix="memory-router-verify-") as folder:
        copy = Path(folder) / "source.sqlite"
        source.copy_to(copy)
        settings: Any = parse_settings(
            spec.settings, {"path": str(copy)}, path="<migrate --from-path>", table="backends"
        )
        context = BackendContext(
            name="source",
            config=router.config,
            settings=settings,
            state_dir=Path(folder),
            embedder=router.embedder,
        )
        backend = spec.factory(context)
        try:
            yield backend
        finally:
            backend.close()
