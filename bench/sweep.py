"""Configuration sweeps for retrieval quality, on LoCoMo halves and a BEIR-layout corpus.

    .venv/bin/python bench/sweep.py --set multiplier [--data-beir /tmp/pydocs] [--json OUT]

Each *set* is a list of variants (a label, a mode and configuration overrides); every
variant runs through :func:`memory_router._ops.bench.run_variant` — the same code as
``memory-router bench`` — on LoCoMo conversations 1–5 (``A``: where defaults are chosen),
6–10 (``B``: held out) and, with ``--data-beir``, the BEIR corpus. It prints R@10, B1000
and nDCG@10 per part, and per LoCoMo category. MiniLM vectors come from one embedding
cache (``--cache``), so a sweep embeds each chunk and question once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from memory_router import load_config
from memory_router._ops.bench import Variant, VariantReport, run_variant
from memory_router._ops.bench_data import BenchSet, load_beir, load_locomo

LOCOMO = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if nested else value
    return out


def _hyb(**query: Any) -> dict[str, Any]:
    return {"query": {"hybrid": query}}


SETS: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "default": [("keyword", "keyword", {}), ("hybrid", "hybrid", {})],
    "keyword": [("keyword", "keyword", {})],
    "hybrid": [("hybrid", "hybrid", {})],
    "chunks-keyword": [
        (f"keyword {t}/{o}", "keyword", {"chunking": {"tokens": t, "overlap": o}})
        for t, o in ((200, 40), (200, 60), (200, 80), (160, 60))
    ],
    "mmr": [
        (f"{mode} mmr {lam}", mode, {"query": {"mmr": {"enabled": lam < 1, "lambda": lam}}})
        for mode in ("keyword", "hybrid")
        for lam in (0.7, 0.5)
    ],
    "snippet": [
        (f"keyword snippet {c}", "keyword", {"query": {"max_snippet_chars": c}})
        for c in (300, 400, 500, 700)
    ],
    "merge": [
        (f"{mode} merge {c}", mode, {"query": {"merge_reading_chars": c}})
        for mode in ("keyword", "hybrid")
        for c in (0, 4000)
    ],
    "multiplier": [
        (f"hybrid m={m}", "hybrid", _hyb(candidate_multiplier=m)) for m in (1, 2, 4, 8, 16)
    ],
    "weights": [
        (f"hybrid {v}/{round(1 - v, 2)}", "hybrid", _hyb(vector_weight=v, text_weight=1 - v))
        for v in (0.3, 0.4, 0.5, 0.6, 0.7)
    ],
    "fusion": [
        (f"hybrid {f}", "hybrid", _hyb(fusion=f)) for f in ("convex", "weighted", "rrf", "zscore")
    ],
    "chunks": [
        (f"{mode} {t}/{o}", mode, {"chunking": {"tokens": t, "overlap": o}})
        for t, o in ((200, 60), (200, 80), (250, 50), (300, 60))
        for mode in ("keyword", "hybrid")
    ],
}


def parts(beir: Path | None) -> list[tuple[str, BenchSet]]:
    """The bench sets as scored: LoCoMo's two halves (A, B), and the BEIR set if given."""
    locomo = load_locomo(LOCOMO)
    parts = [
        ("A", dataclasses.replace(locomo, groups=locomo.groups[:5])),
        ("B", dataclasses.replace(locomo, groups=locomo.groups[5:])),
    ]
    if beir is not None:
        parts.append(("beir", load_beir(beir)))
    return parts


def _line(label: str, part: str, report: VariantReport) -> str:
    m = report.metrics
    cats = " ".join(
        f"{c[:5]} {v['recall@10']:.3f}/{v['budget@1000']:.3f}"
        for c, v in report.by_category.items()
    )
    return (
        f"{label:24} {part:4} R@10 {m['recall@10']:.3f} B1000 {m['budget@1000']:.3f}"
        f" nDCG {m['ndcg@10']:.3f} R@1 {m['recall@1']:.3f}  {cats}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="default")
    parser.add_argument("--data-beir", type=Path, default=None)
    parser.add_argument("--parts", default="A,B,beir", help="which parts to run")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memory-router-sweep-cache.sqlite"))
    parser.add_argument("--provider", default="minilm")
    parser.add_argument(
        "--override", type=json.loads, default={}, help="JSON overrides under every variant"
    )
    parser.add_argument("--json", type=Path, default=None, help="append results to this file")
    args = parser.parse_args()
    wanted = set(args.parts.split(","))
    base = _merge({"embedding": {"provider": args.provider}}, args.override)
    out: list[dict[str, Any]] = []
    for part, dataset in parts(args.data_beir):
        if part not in wanted:
            continue
        for label, mode, overrides in SETS[args.set]:
            config = load_config(None, overrides=_merge(base, overrides))
            with tempfile.TemporaryDirectory(prefix="memory-router-sweep-") as tmp:
                report = run_variant(
                    dataset,
                    Variant(backend="sqlite", mode=mode),  # type: ignore[arg-type]
                    base=config,
                    work_dir=Path(tmp),
                    cache=args.cache,
                )
            print(_line(label, part, report), flush=True)
            out.append({"set": args.set, "label": label, "part": part, **report.to_dict()})
    if args.json:
        with args.json.open("a", encoding="utf-8") as handle:
            for row in out:
                handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
