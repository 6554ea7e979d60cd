"""``memory-router bench``: retrieval quality and speed of real routers on judged data.

Each *variant* (backend × mode × fusion) indexes every group of a :class:`BenchSet` as a
workspace and asks its queries through :meth:`Router.search` (20 results, ``min_score``
0, citations off). Metrics per query, averaged:

* ``recall@k`` — judged units inside the top-k hits' line ranges ÷ judged units;
* ``mrr`` — 1 / rank of the first hit holding a judged unit;
* ``ndcg@10`` — gain ``2^grade − 1`` for each judged unit a hit adds, discounted by
  ``log2(rank + 1)``, over the ideal of one unit per rank (capped at 1: a chunk may hold
  several units);
* ``budget@N`` — judged units *visible* to an agent that reads the snippets in order until
  N tokens (4 characters each) are spent: a unit is visible when at least 100 characters
  of its line (the whole line if shorter) are inside the snippets read.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pluggy

from .._config.config import Config, apply_overrides
from .._exceptions import MemoryRouterError
from .._router import Router
from .._types import Hit
from .bench_data import BenchSet, Group, Query

RECALL_AT = (1, 5, 10, 20)
BUDGETS = (500, 1000, 2000)
CHARS_PER_TOKEN = 4
VISIBLE_CHARS = 100
METRICS = (
    *(f"recall@{k}" for k in RECALL_AT),
    "mrr",
    "ndcg@10",
    *(f"budget@{b}" for b in BUDGETS),
)
Mode = Literal["keyword", "hybrid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One configuration to measure."""

    backend: str
    mode: Mode
    fusion: str | None = None

    @property
    def label(self) -> str:
        return f"{self.backend}/{self.mode}" + (f"/{self.fusion}" if self.fusion else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantReport:
    """Averaged metrics of one variant, overall and per query category."""

    variant: Variant
    queries: int
    metrics: Mapping[str, float]
    by_category: Mapping[str, Mapping[str, float]]
    index_s: float
    p50_ms: float
    p95_ms: float
    answered_modes: Mapping[str, int] = field(default_factory=dict)
    embedded: int = 0
    cache_hits: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.variant.backend,
            "mode": self.variant.mode,
            "fusion": self.variant.fusion,
            "queries": self.queries,
            "metrics": dict(self.metrics),
            "by_category": {k: dict(v) for k, v in self.by_category.items()},
            "index_s": self.index_s,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "answered_modes": dict(self.answered_modes),
            "embedded": self.embedded,
            "cache_hits": self.cache_hits,
        }


# -- metrics ----------------------------------------------------------------------------


def covered(hit: Hit, units: Mapping[str, Mapping[int, str]]) -> set[str]:
    """The judged units on the hit's lines."""
    lines = units.get(hit.path, {})
    return {lines[n] for n in range(hit.start_line, hit.end_line + 1) if n in lines}


def visible(
    hit: Hit, shown: str, units: Mapping[str, Mapping[int, str]], text_lines: Sequence[str]
) -> set[str]:
    """The units whose line shows at least :data:`VISIBLE_CHARS` characters in ``shown``."""
    lines = units.get(hit.path, {})
    seen: dict[int, int] = {}
    for piece in shown.split("\n"):
        if not piece.strip():
            continue
        for number in range(hit.start_line, min(hit.end_line, len(text_lines)) + 1):
            if piece in text_lines[number - 1]:
                seen[number] = seen.get(number, 0) + len(piece)
                break
    return {
        lines[n]
        for n, chars in seen.items()
        if n in lines and chars >= min(VISIBLE_CHARS, len(text_lines[n - 1].strip()))
    }


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def score_query(
    query: Query,
    hits: Sequence[Hit],
    group: Group,
    text_lines: Mapping[str, Sequence[str]],
) -> dict[str, float]:
    """Every metric of :data:`METRICS` for one query's ranked hits."""
    relevant = query.relevant
    per_hit = [covered(h, group.units) & relevant.keys() for h in hits]
    out: dict[str, float] = {}
    for k in RECALL_AT:
        found = set().union(*per_hit[:k]) if per_hit[:k] else set()
        out[f"recall@{k}"] = len(found) / len(relevant)
    first = next((rank for rank, units in enumerate(per_hit, start=1) if units), None)
    out["mrr"] = 1.0 / first if first else 0.0
    seen: set[str] = set()
    gains = []
    for units in per_hit[:10]:
        new = units - seen
        seen |= units
        gains.append(sum(2 ** relevant[u] - 1 for u in new))
    ideal = _dcg(sorted((2**g - 1 for g in relevant.values()), reverse=True)[:10])
    out["ndcg@10"] = min(1.0, _dcg(gains) / ideal) if ideal else 0.0
    for budget in BUDGETS:
        out[f"budget@{budget}"] = _budget_recall(query, hits, group, text_lines, budget)
    return out


def _budget_recall(
    query: Query,
    hits: Sequence[Hit],
    group: Group,
    text_lines: Mapping[str, Sequence[str]],
    budget: int,
) -> float:
    left = budget * CHARS_PER_TOKEN
    found: set[str] = set()
    for hit in hits:
        if left <= 0:
            break
        shown = hit.snippet[:left]
        left -= len(shown)
        found |= visible(hit, shown, group.units, text_lines.get(hit.path, ()))
    return len(found & query.relevant.keys()) / len(query.relevant)


# -- running ----------------------------------------------------------------------------


def variant_config(
    base: Config,
    variant: Variant,
    workspace: Path,
    state_dir: Path,
    agent: str,
    cache: Path | None = None,
) -> Config:
    """``base`` pointed at one group's workspace, with the variant's backend and mode.

    ``cache`` is the embedding cache to share between runs (so a re-run embeds nothing).
    """
    query: dict[str, Any] = {"max_injected_chars": 0}
    if variant.fusion:
        query["hybrid"] = {"fusion": variant.fusion}
    overrides: dict[str, Any] = {
        "workspace": str(workspace),
        "state_dir": str(state_dir),
        "agent_id": agent,
        "extra_paths": [],
        "sources": ["memory"],
        "citations": "off",
        "router": {"chain": [variant.backend], "fallback": "none", "standby": "cold"},
        "query": query,
    }
    if variant.mode == "keyword":
        overrides["embedding"] = {"provider": "none"}
    if cache is not None:
        overrides["cache"] = {"path": str(cache)}
    return apply_overrides(base, overrides)


def _agent_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name) or "group"


def write_group(group: Group, workspace: Path) -> None:
    """Write a group's files under ``workspace`` (once: an existing tree is kept)."""
    for rel, text in group.files.items():
        target = workspace / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


Progress = Callable[[str, int, int], None]


def _no_progress(label: str, done: int, total: int) -> None:
    return None


def run_variant(
    dataset: BenchSet,
    variant: Variant,
    *,
    base: Config,
    work_dir: Path,
    cache: Path | None = None,
    progress: Progress = _no_progress,
    plugin_manager: pluggy.PluginManager | None = None,
) -> VariantReport:
    """Index and query every group with one variant; averaged metrics."""
    rows: list[tuple[str, dict[str, float]]] = []
    latencies: list[float] = []
    index_s = 0.0
    embedded = [0, 0]
    modes: dict[str, int] = {}
    done, total = 0, dataset.query_count
    state_dir = work_dir / "state" / f"{variant.backend}-{variant.mode}"
    for group in dataset.groups:
        workspace = work_dir / "workspaces" / _agent_name(group.name)
        write_group(group, workspace)
        agent = _agent_name(group.name)
        config = variant_config(base, variant, workspace, state_dir, agent, cache)
        text_lines = {path: text.split("\n") for path, text in group.files.items()}
        with Router.from_config(config, plugin_manager=plugin_manager) as router:
            started = time.perf_counter()
            for sync in router.sync():
                embedded[0] += sync.embedded
                embedded[1] += sync.cache_hits
                if sync.errors:
                    raise MemoryRouterError(f"{variant.label}: indexing failed: {sync.errors[0]}")
            index_s += time.perf_counter() - started
            for query in group.queries:
                started = time.perf_counter()
                response = router.search(query.text, max_results=max(RECALL_AT), min_score=0.0)
                latencies.append((time.perf_counter() - started) * 1000)
                modes[response.mode] = modes.get(response.mode, 0) + 1
                rows.append(
                    (query.category, score_query(query, response.results, group, text_lines))
                )
                done += 1
                progress(variant.label, done, total)
    report = _report(variant, rows, latencies, index_s, modes)
    return dataclasses.replace(report, embedded=embedded[0], cache_hits=embedded[1])


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: statistics.fmean(r[m] for r in rows) if rows else 0.0 for m in METRICS}


def _percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def _report(
    variant: Variant,
    rows: Sequence[tuple[str, dict[str, float]]],
    latencies: Sequence[float],
    index_s: float,
    modes: Mapping[str, int],
) -> VariantReport:
    categories: dict[str, list[dict[str, float]]] = {}
    for category, metrics in rows:
        if category:
            categories.setdefault(category, []).append(metrics)
    return VariantReport(
        variant=variant,
        queries=len(rows),
        metrics=_mean([m for _, m in rows]),
        by_category={c: {**_mean(r), "n": float(len(r))} for c, r in sorted(categories.items())},
        index_s=index_s,
        p50_ms=_percentile(latencies, 0.5),
        p95_ms=_percentile(latencies, 0.95),
        answered_modes=dict(modes),
    )
