"""Hybrid against its parts on LoCoMo, question by question (issue 22, item 6).

    .venv/bin/python bench/hybrid_parts.py dump [--limit N] [--cache PATH] [--out FILE]
    .venv/bin/python bench/hybrid_parts.py lost [--category temporal] [--metric budget@1000]

``dump`` asks every LoCoMo question three ways through one hybrid router (MiniLM, the
defaults, 20 results, ``min_score`` 0, ``explain``) — ``hybrid``, ``keyword`` and
``vector`` (``Router.search(mode=…)``) — and writes one JSON line per question: its
metrics in each mode (the same :func:`~memory_router._ops.bench.score_query` as
``memory-router bench``) and each mode's hits (lines, score, both legs' raw scores and
parts, snippet length, which judged units it covers and shows). ``lost`` reads that file
and prints the questions where hybrid scores under keyword-only on ``--metric``: where
the evidence was in each mode's ranking, and the hits hybrid put before it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_router import Router, load_config
from memory_router._ops.bench import (
    CHARS_PER_TOKEN,
    Variant,
    covered,
    score_query,
    variant_config,
    visible,
    write_group,
)
from memory_router._ops.bench_data import Group, load_locomo

LOCOMO = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)
MODES = ("hybrid", "keyword", "vector")


def _hit_row(hit: Any, group: Group, lines: Sequence[str], relevant: Mapping[str, int]) -> dict:
    ex = hit.explain
    return {
        "path": hit.path,
        "lines": [hit.start_line, hit.end_line],
        "score": round(hit.score, 4),
        "vector": None if hit.vector_score is None else round(hit.vector_score, 4),
        "text": None if hit.text_score is None else round(hit.text_score, 4),
        "vpart": None if ex is None or ex.vector_part is None else round(ex.vector_part, 4),
        "tpart": None if ex is None or ex.text_part is None else round(ex.text_part, 4),
        "keywords": list(ex.keywords) if ex is not None else [],
        "chars": len(hit.snippet),
        "covers": sorted(covered(hit, group.units) & relevant.keys()),
        "shows": sorted(visible(hit, hit.snippet, group.units, lines) & relevant.keys()),
        "head": hit.snippet[:160].replace("\n", " | "),
    }


def dump(args: argparse.Namespace) -> None:
    dataset = load_locomo(args.data)
    groups = dataset.groups[: args.limit] if args.limit else dataset.groups
    base = load_config(None, overrides={"embedding": {"provider": args.provider}})
    with tempfile.TemporaryDirectory(prefix="hybrid-parts-") as tmp, args.out.open("w") as out:
        for group in groups:
            workspace = Path(tmp) / "ws" / group.name
            write_group(group, workspace)
            variant = Variant(backend="sqlite", mode="hybrid")
            config = variant_config(base, variant, workspace, Path(tmp) / "state", "g", args.cache)
            text_lines = {path: text.split("\n") for path, text in group.files.items()}
            with Router.from_config(config) as router:
                for _ in router.sync():
                    pass
                for query in group.queries:
                    row: dict[str, Any] = {
                        "group": group.name,
                        "id": query.id,
                        "q": query.text,
                        "category": query.category,
                        "evidence": sorted(query.relevant),
                    }
                    for mode in MODES:
                        response = router.search(
                            query.text, max_results=20, min_score=0.0, mode=mode, explain=True
                        )
                        hits = response.results
                        row[mode] = {
                            "metrics": score_query(query, hits, group, text_lines),
                            "hits": [
                                _hit_row(h, group, text_lines.get(h.path, ()), query.relevant)
                                for h in hits
                            ],
                        }
                    out.write(json.dumps(row) + "\n")
            print(f"{group.name}: {len(group.queries)} questions", file=sys.stderr, flush=True)


def _first(hits: Sequence[Mapping[str, Any]], key: str = "covers") -> int | None:
    return next((rank for rank, h in enumerate(hits, start=1) if h[key]), None)


def _budget_rank(hits: Sequence[Mapping[str, Any]], budget: int = 1000) -> int:
    """How many hits an agent reads (at least in part) within ``budget`` tokens."""
    left, read = budget * CHARS_PER_TOKEN, 0
    for hit in hits:
        if left <= 0:
            break
        left -= hit["chars"]
        read += 1
    return read


def lost(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in args.dump.open()]
    if args.category:
        rows = [r for r in rows if r["category"] == args.category]
    worse = [
        r
        for r in rows
        if r["hybrid"]["metrics"][args.metric] < r["keyword"]["metrics"][args.metric]
    ]
    better = [
        r
        for r in rows
        if r["hybrid"]["metrics"][args.metric] > r["keyword"]["metrics"][args.metric]
    ]
    counts = f"hybrid worse on {len(worse)}, better on {len(better)}"
    print(f"{len(rows)} questions; {counts} ({args.metric})")
    for r in worse if not args.better else better:
        print(f"\n[{r['group']} {r['id']} {r['category']}] {r['q']}  evidence {r['evidence']}")
        for mode in MODES:
            hits = r[mode]["hits"]
            m = r[mode]["metrics"]
            print(
                f"  {mode:7} first covering rank {_first(hits)},"
                f" first showing {_first(hits, 'shows')}, read in budget {_budget_rank(hits)};"
                f" R@10 {m['recall@10']:.2f} B1000 {m['budget@1000']:.2f}"
            )
        for rank, h in enumerate(r["hybrid"]["hits"][: args.show], start=1):
            mark = "*" if h["covers"] else " "
            where = f"{h['path']}:{h['lines'][0]}-{h['lines'][1]}"
            print(
                f"   {mark}{rank:2} {h['score']:.3f} v {h['vector']} ({h['vpart']})"
                f" t {h['text']} ({h['tpart']}) kw {h['keywords']} {h['chars']}c {where}"
                f"  {h['head'][:90]}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="ask every question in the three modes")
    d.add_argument("--data", type=Path, default=LOCOMO)
    d.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    d.add_argument("--cache", type=Path, default=Path("/tmp/temporal-cache.sqlite"))
    d.add_argument("--provider", default="minilm")
    d.add_argument("--out", type=Path, default=Path("/tmp/hybrid-parts.jsonl"))
    lo = sub.add_parser("lost", help="the questions hybrid loses against keyword-only")
    lo.add_argument("--dump", type=Path, default=Path("/tmp/hybrid-parts.jsonl"))
    lo.add_argument("--category", default="temporal")
    lo.add_argument("--metric", default="budget@1000")
    lo.add_argument("--show", type=int, default=8, help="hybrid hits printed per question")
    lo.add_argument("--better", action="store_true", help="the questions hybrid wins instead")
    args = parser.parse_args()
    dump(args) if args.command == "dump" else lost(args)


if __name__ == "__main__":
    sys.exit(main())
