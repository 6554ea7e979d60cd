"""Retrieval ideas of issue #11, measured on the default hybrid's own candidates.

    python bench/build_pydocs_beir.py /tmp/pydocs
    .venv/bin/python bench/retrieval_ideas.py --data-beir /tmp/pydocs [--ideas merge,lines]

For every LoCoMo conversation (part ``A`` = 1–5, where defaults are chosen; ``B`` = 6–10,
held out) and the BEIR corpus, the script indexes the workspace as ``memory-router bench``
does (sqlite, MiniLM, one embedding cache), then re-creates the hybrid's two legs outside
the backend — every chunk's cosine and the keyword side's 80 best — so that variants of
the fusion and of the shaping can be compared on exactly the same candidates. The
``default`` row re-fuses the legs with the router's own :func:`fuse` and shapes them with
its own ``shape_all``: it reproduces ``bench/sweep.py --set default`` to the third decimal.

Ideas (``--ideas``):

* ``merge`` — hits of one file whose line ranges touch are merged into one hit (the range
  of both, both snippets in line order) while walking the first 10 / 20 shaped hits, so
  the freed places go to the next distinct hits;
* ``lines`` — the vector side scores a chunk by its best line's cosine (each non-empty
  line embedded on its own) instead of, or averaged with, the whole chunk's;
* ``prior`` — each chunk's fused score mixed with its file's best (a session / document
  prior) or its neighbour chunk's best;
* ``prf`` — RM3-style pseudo-relevance feedback: the 5 rarest-weighted words of the first
  pass's 5 best chunks searched as a second OR query, added with a small weight.
* ``rewrite`` — the vector side embeds the question's keywords alone, or mixes their
  cosine with the whole question's (mean, max);
* ``expand`` — expansion by the embedding model's word neighbours: each query keyword
  brings up to 3 corpus words (in at most 20 % of the chunks) within cosine τ of it,
  searched as a second OR query added with weight β.

The baseline is the shaping before touching hits were merged (``merge_reading_chars = 0``);
``merged, reading 4000 chars`` is the router's shaping as adopted (the default since). It
prints R@10, B1000, nDCG@10 and R@20 per part and per LoCoMo category (R@10 / B1000).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import itertools
import math
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sweep import parts

from memory_router import Config, Hit, Router, load_config
from memory_router._ops.bench import Variant, score_query, variant_config, write_group
from memory_router._ops.bench_data import Group, Query
from memory_router._search.calibration import vector_scale
from memory_router._search.fusion import max_scaled
from memory_router._search.ranking import shape_all
from memory_router.kit import (
    BackendResult,
    Chunk,
    SearchRequest,
    build_or_query,
    fuse,
    keyword_coverage,
    query_keywords,
)
from memory_router_sqlite import _search

POOL = 80  # the default candidate pool: 20 results × candidate_multiplier 4
VECTOR_WEIGHT, TEXT_WEIGHT = 0.4, 0.6
_WORD = re.compile(r"[a-z]{3,}")

Scored = dict[str, list[tuple[str, dict[str, float]]]]  # variant → [(category, metrics)]


@dataclasses.dataclass
class Leg:
    """One query's inputs: chunk cosines, best-line cosines, keyword scores."""

    query: Query
    cosines: Any  # one cosine per chunk
    best_line: Any  # one best-line cosine per chunk (0 when ``lines`` is off)
    mean_top2: Any
    text: dict[str, float]
    expansion: dict[str, float]  # PRF second query's scores, max-scaled
    semantic: dict[float, dict[str, float]] = dataclasses.field(default_factory=dict)
    keyword_cosines: Any = None  # cosines of the query's keywords alone (``rewrite``)


def _request(query: str) -> SearchRequest:
    return SearchRequest(query=query, max_results=20, min_score=0.0, candidates=POOL)


def _hits(ranked: Sequence[tuple[str, float]], by_id: Mapping[str, Chunk]) -> BackendResult:
    hits = []
    for key, score in ranked[:POOL]:
        c = by_id[key]
        hits.append(
            Hit(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                score=min(1.0, max(0.0, score)),
                snippet=c.text,
                source="memory",
                backend="sqlite",
                chunk_id=key,
            )
        )
    return BackendResult(hits=tuple(hits), mode="hybrid")


def _fused(
    leg: Leg, vector_scores: Any, chunks: Sequence[Chunk], model: str
) -> list[tuple[str, float]]:
    top = np.argsort(-vector_scores)[:POOL]
    vector = {chunks[i].id: float(vector_scores[i]) for i in top}
    by_id = {c.id: c for c in chunks}
    coverage = {k: keyword_coverage(leg.query.text, by_id[k].text) for k in leg.text}
    fused = fuse(
        "convex",
        vector,
        leg.text,
        vector_weight=VECTOR_WEIGHT,
        text_weight=TEXT_WEIGHT,
        scale=vector_scale(model),
        coverage=coverage,
    )
    return [(f.id, f.score) for f in fused]


def merged(result: BackendResult, request: SearchRequest, config: Config, depth: int) -> list[Hit]:
    """The router's shaping over the whole pool, then touching hits of a file merged."""
    shaped = shape_all(result, dataclasses.replace(request, max_results=POOL), config, now=0)[0]
    groups: list[list[Hit]] = []
    for rank, hit in enumerate(shaped):
        target = None
        if rank < depth:
            for group in groups:
                lo, hi = min(h.start_line for h in group), max(h.end_line for h in group)
                if (
                    group[0].path == hit.path
                    and hit.start_line <= hi + 1
                    and hit.end_line >= lo - 1
                ):
                    target = group
                    break
        if target is None:
            groups.append([hit])
        else:
            target.append(hit)
    out = []
    for group in groups[: request.max_results]:
        parts = sorted(group, key=lambda h: h.start_line)
        out.append(
            dataclasses.replace(
                group[0],
                start_line=min(h.start_line for h in group),
                end_line=max(h.end_line for h in group),
                snippet="\n".join(h.snippet for h in parts),
            )
        )
    return out


def _prior(
    ranked: Sequence[tuple[str, float]], by_id: Mapping[str, Chunk], file_w: float, next_w: float
) -> list[tuple[str, float]]:
    scores = dict(ranked)
    best: dict[str, float] = {}
    for key, score in scores.items():
        path = by_id[key].path
        best[path] = max(best.get(path, 0.0), score)
    neighbours: dict[str, list[str]] = {}
    ordered = sorted(by_id.values(), key=lambda c: (c.path, c.start_line))
    for a, b in itertools.pairwise(ordered):
        if a.path == b.path:
            neighbours.setdefault(a.id, []).append(b.id)
            neighbours.setdefault(b.id, []).append(a.id)
    out = {}
    for key, score in scores.items():
        near = max((scores.get(n, 0.0) for n in neighbours.get(key, [])), default=0.0)
        out[key] = (1 - file_w - next_w) * score + file_w * best[by_id[key].path] + next_w * near
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def _expansion_terms(
    first: Sequence[tuple[str, float]], query: str, tokens: Mapping[str, collections.Counter[str]]
) -> list[str]:
    """RM3-style: words of the 5 best chunks weighted by score × tf × idf; 5 best new ones."""
    df: collections.Counter[str] = collections.Counter()
    for counts in tokens.values():
        df.update(counts.keys())
    total = len(tokens)
    asked = set(query_keywords(query))
    weights: collections.Counter[str] = collections.Counter()
    for key, score in first[:5]:
        counts = tokens[key]
        length = sum(counts.values()) or 1
        for word, n in counts.items():
            if word in asked or df[word] > 0.2 * total or not query_keywords(word):
                continue
            weights[word] += score * n / length * math.log(total / df[word])
    return [w for w, _ in weights.most_common(5)]


def _variants(ideas: set[str]) -> dict[str, Callable[..., Any]]:
    """Variant name → how its hits are made from (leg, chunks, model, config)."""
    v: dict[str, Callable[..., Any]] = {}

    def plain(scores: Callable[[Leg], Any]) -> Callable[..., Any]:
        def run(leg: Leg, chunks: Sequence[Chunk], model: str, config: Config) -> list[Hit]:
            by_id = {c.id: c for c in chunks}
            ranked = _fused(leg, scores(leg), chunks, model)
            return shape_all(_hits(ranked, by_id), _request(leg.query.text), config, now=0)[0]

        return run

    v["default"] = plain(lambda leg: leg.cosines)

    def added(second: Callable[[Leg], Mapping[str, float]], beta: float) -> Callable[..., Any]:
        """The default fusion plus ``beta`` × a second query's max-scaled scores."""

        def run(leg: Leg, chunks: Sequence[Chunk], model: str, config: Config) -> list[Hit]:
            by_id = {c.id: c for c in chunks}
            first = dict(_fused(leg, leg.cosines, chunks, model))
            for key, score in second(leg).items():
                first[key] = first.get(key, 0.0) + beta * score
            ranked = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))
            return shape_all(_hits(ranked, by_id), _request(leg.query.text), config, now=0)[0]

        return run

    def adopted(leg: Leg, chunks: Sequence[Chunk], model: str, config: Config) -> list[Hit]:
        query = dataclasses.replace(config.query, merge_reading_chars=4000)
        return plain(lambda leg: leg.cosines)(
            leg, chunks, model, dataclasses.replace(config, query=query)
        )

    v["merged, reading 4000 chars"] = adopted
    if "merge" in ideas:

        def keyword(leg: Leg, chunks: Sequence[Chunk], model: str, config: Config, d: int = 0):
            by_id = {c.id: c for c in chunks}
            ranked = sorted(leg.text.items(), key=lambda kv: -kv[1])
            result, request = _hits(ranked, by_id), _request(leg.query.text)
            if not d:
                return shape_all(result, request, config, now=0)[0]
            return merged(result, request, config, d)

        v["keyword only"] = keyword
        v["keyword merge first 10"] = functools.partial(keyword, d=10)
        for depth in (10, 20):

            def run(leg: Leg, chunks: Sequence[Chunk], model: str, config: Config, d: int = depth):
                by_id = {c.id: c for c in chunks}
                ranked = _fused(leg, leg.cosines, chunks, model)
                return merged(_hits(ranked, by_id), _request(leg.query.text), config, d)

            v[f"merge first {depth}"] = run
    if "lines" in ideas:
        v["lines: best line"] = plain(lambda leg: leg.best_line)
        v["lines: max(chunk, line)"] = plain(lambda leg: np.maximum(leg.cosines, leg.best_line))
        v["lines: mean(chunk, line)"] = plain(lambda leg: (leg.cosines + leg.best_line) / 2)
        v["lines: mean(chunk, top 2)"] = plain(lambda leg: (leg.cosines + leg.mean_top2) / 2)
    if "prior" in ideas:
        for file_w, next_w in ((0.1, 0.0), (0.2, 0.0), (0.0, 0.1), (0.0, 0.2)):

            def run_p(
                leg: Leg,
                chunks: Sequence[Chunk],
                model: str,
                config: Config,
                f: float = file_w,
                n: float = next_w,
            ) -> list[Hit]:
                by_id = {c.id: c for c in chunks}
                ranked = _prior(_fused(leg, leg.cosines, chunks, model), by_id, f, n)
                return shape_all(_hits(ranked, by_id), _request(leg.query.text), config, now=0)[0]

            v[f"prior file {file_w} next {next_w}"] = run_p
    if "prf" in ideas:
        for beta in (0.05, 0.1, 0.2):
            v[f"prf beta {beta}"] = added(lambda leg: leg.expansion, beta)
    if "rewrite" in ideas:
        v["rewrite: keywords only"] = plain(lambda leg: leg.keyword_cosines)
        v["rewrite: mean(question, keywords)"] = plain(
            lambda leg: (leg.cosines + leg.keyword_cosines) / 2
        )
        v["rewrite: max(question, keywords)"] = plain(
            lambda leg: np.maximum(leg.cosines, leg.keyword_cosines)
        )
    if "expand" in ideas:
        for tau in TAUS:
            for beta in (0.1, 0.2, 0.3):
                v[f"expand tau {tau} beta {beta}"] = added(
                    lambda leg, t=tau: leg.semantic.get(t, {}), beta
                )
    return v


TAUS = (0.5, 0.6, 0.7)


def _stem4(word: str) -> str:
    return word[: max(4, len(word) - 3)] if len(word) > 4 else word


def _semantic_terms(
    keywords: Sequence[str], kv: Any, vocab: Sequence[str], wv: Any, tau: float
) -> list[str]:
    """Corpus words whose vector is within ``tau`` cosine of a query keyword's (3 each)."""
    asked = {_stem4(k) for k in keywords}
    out: list[str] = []
    sims = kv @ wv.T
    for row in sims:
        order = np.argsort(-row)[:20]
        taken = 0
        for j in order:
            if row[j] < tau or taken >= 3:
                break
            word = vocab[j]
            if _stem4(word) in asked or word in out:
                continue
            out.append(word)
            taken += 1
    return out


def _legs(router: Router, group: Group, chunks: list[Chunk], ideas: set[str]) -> list[Leg]:
    backend = router.backend("sqlite")
    embedder = router.embedder
    assert embedder is not None
    matrix = np.asarray([c.embedding for c in chunks], dtype=np.float32)
    line_vectors: dict[str, Any] = {}
    if "lines" in ideas:
        lines = sorted({ln for c in chunks for ln in c.text.split("\n") if ln.strip()})
        for line, vec in zip(lines, embedder.embed_documents(lines), strict=True):
            line_vectors[line] = np.asarray(vec, dtype=np.float32)
    tokens = {c.id: collections.Counter(_WORD.findall(c.text.lower())) for c in chunks}
    by_id = {c.id: c for c in chunks}
    vocab: list[str] = []
    wv: Any = None
    if "expand" in ideas:
        df: collections.Counter[str] = collections.Counter()
        for counts in tokens.values():
            df.update(counts.keys())
        vocab = sorted(
            w for w, n in df.items() if n <= 0.2 * len(tokens) and query_keywords(w) == [w]
        )
        wv = np.asarray(embedder.embed_documents(vocab), dtype=np.float32)
        print(f"  vocabulary {len(vocab)} words", file=sys.stderr, flush=True)
    legs = []
    with backend.store.reader() as conn:  # type: ignore[attr-defined]
        scope = _search.Scope(model=backend.model, sources=None, limit=POOL, filter_model=False)  # type: ignore[attr-defined]
        for query in group.queries:
            qv = np.asarray(embedder.embed_query(query.text), dtype=np.float32)
            keyword = backend.search(dataclasses.replace(_request(query.text), mode="keyword"))
            best, top2 = np.zeros(len(chunks)), np.zeros(len(chunks))
            if line_vectors:
                for i, c in enumerate(chunks):
                    cos = sorted(
                        (float(line_vectors[ln] @ qv) for ln in c.text.split("\n") if ln.strip()),
                        reverse=True,
                    ) or [0.0]
                    best[i], top2[i] = cos[0], sum(cos[:2]) / len(cos[:2])
            leg = Leg(
                query=query,
                cosines=matrix @ qv,
                best_line=best,
                mean_top2=top2,
                text={h.chunk_id: h.text_score or 0.0 for h in keyword.hits if h.chunk_id},
                expansion={},
            )
            if "prf" in ideas:
                first = _fused(leg, leg.cosines, chunks, backend.model)  # type: ignore[attr-defined]
                terms = _expansion_terms(first, query.text, tokens)
                found = _search._run(conn, scope, build_or_query(terms), [], True) if terms else {}
                leg.expansion = max_scaled({k: r.score for k, r in found.items() if k in by_id})
            if "rewrite" in ideas:
                words = " ".join(query_keywords(query.text)) or query.text
                kq = np.asarray(embedder.embed_query(words), dtype=np.float32)
                leg.keyword_cosines = matrix @ kq
            if "expand" in ideas:
                keywords = [k for k in query_keywords(query.text) if not k.isdigit()]
                if keywords:
                    kv = np.asarray(embedder.embed_documents(keywords), dtype=np.float32)
                    for tau in TAUS:
                        terms = _semantic_terms(keywords, kv, vocab, wv, tau)
                        found = (
                            _search._run(conn, scope, build_or_query(terms), [], True)
                            if terms
                            else {}
                        )
                        leg.semantic[tau] = max_scaled(
                            {k: r.score for k, r in found.items() if k in by_id}
                        )
            legs.append(leg)
    return legs


def _summary(label: str, part: str, rows: Sequence[tuple[str, dict[str, float]]]) -> str:
    def mean(metric: str, subset: Sequence[tuple[str, dict[str, float]]]) -> float:
        return statistics.fmean(r[metric] for _, r in subset)

    cats: dict[str, list[tuple[str, dict[str, float]]]] = {}
    for category, metrics in rows:
        if category:
            cats.setdefault(category, []).append((category, metrics))
    per = " ".join(
        f"{c[:5]} {mean('recall@10', r):.3f}/{mean('budget@1000', r):.3f}"
        for c, r in sorted(cats.items())
    )
    return (
        f"{label:26} {part:4} R@10 {mean('recall@10', rows):.3f}"
        f" B1000 {mean('budget@1000', rows):.3f} nDCG {mean('ndcg@10', rows):.3f}"
        f" R@20 {mean('recall@20', rows):.3f}  {per}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-beir", type=Path, default=None)
    parser.add_argument("--ideas", default="merge,lines,prior,prf")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memory-router-sweep-cache.sqlite"))
    args = parser.parse_args()
    ideas = set(args.ideas.split(","))
    variants = _variants(ideas)
    # Every idea is measured against the shaping before touching hits were merged.
    base = load_config(
        None, overrides={"embedding": {"provider": "minilm"}, "query": {"merge_reading_chars": 0}}
    )
    scored: dict[str, Scored] = {}
    with tempfile.TemporaryDirectory(prefix="memory-router-ideas-") as tmp:
        for part, dataset in parts(args.data_beir):
            for group in dataset.groups:
                name = "".join(ch if ch.isalnum() else "-" for ch in group.name)
                workspace = Path(tmp) / "ws" / f"{part}-{name}"
                write_group(group, workspace)
                variant = Variant(backend="sqlite", mode="hybrid")
                config = variant_config(
                    base, variant, workspace, Path(tmp) / "state", name, args.cache
                )
                text_lines = {p: t.split("\n") for p, t in group.files.items()}
                with Router.from_config(config) as router:
                    for _ in router.sync():
                        pass
                    exported = router.backend("sqlite").export_chunks()  # type: ignore[attr-defined]
                    chunks = [c for c in exported if c.embedding]
                    legs = _legs(router, group, chunks, ideas)
                    model = router.backend("sqlite").model  # type: ignore[attr-defined]
                    for label, run in variants.items():
                        rows = scored.setdefault(label, {}).setdefault(part, [])
                        for leg in legs:
                            hits = run(leg, chunks, model, router.config)
                            rows.append(
                                (
                                    leg.query.category,
                                    score_query(leg.query, hits, group, text_lines),
                                )
                            )
            for label in variants:
                print(_summary(label, part, scored[label][part]), flush=True)
    for label in variants:
        both = scored[label]["A"] + scored[label]["B"]
        r10 = statistics.fmean(r["recall@10"] for _, r in both)
        b1000 = statistics.fmean(r["budget@1000"] for _, r in both)
        print(f"{label:26} all LoCoMo R@10 {r10:.3f} B1000 {b1000:.3f}")


if __name__ == "__main__":
    sys.exit(main())
