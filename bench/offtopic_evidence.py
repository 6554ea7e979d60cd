"""Query-relative evidence against off-topic near misses (issue 22, item 3): a simulation.

    .venv/bin/python bench/offtopic_evidence.py dump [--provider minilm] [--out FILE]
    .venv/bin/python bench/offtopic_evidence.py simulate [--data FILE]
    .venv/bin/python bench/offtopic_evidence.py locomo [--provider minilm]

``dump`` asks every question of ``bench/curated`` (paraphrases and off-topic ones) as
``memory-router bench curated`` does (hybrid, the defaults), once more with ``min_score`` 0,
and records the cosine of the question against every chunk of its workspace (chunk vectors
through the bench's embedding cache) and the answer's hits (score, cosine, keyword
score). ``simulate`` then tries rules that may only *drop* hits of the default answer —
a hit (or a whole answer) is kept when its cosine stands out from the question's cosines
over the workspace — and prints found@3 / off-topic answered for each rule and threshold,
overall and per workspace (bench/NOTES.md, "Query-relative evidence"). ``locomo`` is the
guard: on LoCoMo's first two conversations, the share of questions whose answer the
answer-level rules would keep at the thresholds that did best here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import Router, testing
from memory_router._config.config import Config, apply_overrides
from memory_router._ops.bench import Variant, write_group
from memory_router._ops.bench_curated import curated_config, load_curated, shows
from memory_router._ops.bench_data import Group, load_locomo

HERE = Path(__file__).resolve().parent
LOCOMO = os.environ.get("MEMORY_ROUTER_LOCOMO") or "/work/shared/data/locomo/locomo10.json"
BACKGROUND = (
    "I went to the shop this morning.",
    "The meeting was moved to next week.",
    "We talked about it for a while.",
    "It was a normal day, nothing special happened.",
    "Remember to check the details later.",
    "She said she would call back tomorrow.",
    "The weather was fine and we stayed at home.",
    "He sent the document by email.",
)


def _hit_row(hit: Any, fact: Any) -> dict[str, Any]:
    return {
        "chunk": hit.chunk_id,
        "where": f"{hit.path}:{hit.start_line}-{hit.end_line}",
        "score": hit.score,
        "cosine": hit.vector_score,
        "text": hit.text_score,
        "shows": bool(fact is not None and shows(hit, fact)),
    }


def dump(provider: str, out: Path, cache: Path) -> None:
    dataset = load_curated(HERE / "curated")
    base = apply_overrides(Config(), {"embedding": {"provider": provider}})
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for group in dataset.groups:
            workspace = Path(tmp) / "ws" / group.name
            write_group(Group(name=group.name, files=group.files, units={}, queries=()), workspace)
            variant = Variant(backend="sqlite", mode="hybrid")
            config = curated_config(base, variant, workspace, Path(tmp) / "s", group.name, cache)
            with Router.from_config(config) as router:
                for _ in router.sync():
                    pass
                embedder = router.embedder
                assert embedder is not None
                snapshot = router.snapshot()
                chunks = [c for d in snapshot.documents for c in snapshot.chunks(d)]
                matrix = np.array(embedder.embed_documents([c.text for c in chunks]))
                background = np.array(embedder.embed_documents(list(BACKGROUND)))
                asked = [(q, f) for f in group.facts for q in f.questions]
                for question, fact in [*asked, *((q, None) for q in group.off_topic)]:
                    vector = np.array(embedder.embed_query(question))
                    default = router.search(question).results
                    loose = router.search(question, min_score=0.0, max_results=8).results
                    rows.append(
                        {
                            "group": group.name,
                            "question": question,
                            "fact": f"{fact.path}:{fact.line}" if fact else None,
                            "cosines": [round(float(c), 4) for c in matrix @ vector],
                            "chunks": [f"{c.path}:{c.start_line}-{c.end_line}" for c in chunks],
                            "background": [round(float(c), 4) for c in background @ vector],
                            "default": [_hit_row(h, fact) for h in default],
                            "loose": [_hit_row(h, fact) for h in loose],
                        }
                    )
    out.write_text(json.dumps(rows), encoding="utf-8")
    print(f"{len(rows)} questions → {out}")


# -- simulation -------------------------------------------------------------------------

Stat = Callable[[float, Sequence[float], dict[str, Any]], float]


def _others(cosines: Sequence[float], cosine: float) -> list[float]:
    ordered = sorted(cosines, reverse=True)
    if cosine in ordered:
        ordered.remove(cosine)
    return ordered


def _pct(values: Sequence[float], p: float) -> float:
    return sorted(values)[int(p * (len(values) - 1))]


STATS: dict[str, Stat] = {
    "cosine": lambda c, cs, r: c,
    "minus mean": lambda c, cs, r: c - statistics.fmean(cs),
    "minus median": lambda c, cs, r: c - statistics.median(cs),
    "z": lambda c, cs, r: (c - statistics.fmean(cs)) / (statistics.pstdev(cs) or 1.0),
    "minus 2nd": lambda c, cs, r: c - _others(cs, c)[0],
    "minus 3rd": lambda c, cs, r: c - _others(cs, c)[1],
    "minus 5th": lambda c, cs, r: c - _others(cs, c)[3],
    "minus mean top5": lambda c, cs, r: c - statistics.fmean(_others(cs, c)[:5]),
    "minus mean top10": lambda c, cs, r: c - statistics.fmean(_others(cs, c)[:10]),
    "minus 90th pct": lambda c, cs, r: c - _pct(cs, 0.9),
    "z top20": lambda c, cs, r: (
        (c - statistics.fmean(sorted(cs)[-20:])) / (statistics.pstdev(sorted(cs)[-20:]) or 1.0)
    ),
    "minus background max": lambda c, cs, r: c - max(r["background"]),
    "minus background mean": lambda c, cs, r: c - statistics.fmean(r["background"]),
}


def _hit_cosine(row: dict[str, Any], hit: dict[str, Any]) -> float:
    if hit["cosine"] is not None:
        return float(hit["cosine"])
    where = hit["where"]
    return float(max(c for c, w in zip(row["cosines"], row["chunks"], strict=True) if w == where))


def _outcome(row: dict[str, Any], keep: Callable[[dict[str, Any]], bool]) -> tuple[int, int]:
    """(rank of the first hit showing the fact among kept hits, kept hit count)."""
    kept = [h for h in row["default"] if keep(h)]
    rank = next((n for n, h in enumerate(kept, 1) if h["shows"]), 0)
    return rank, len(kept)


def figures(rows: Sequence[dict[str, Any]], keep_of: Callable[[dict[str, Any]], Any]) -> str:
    parts = []
    for name in ("all", *sorted({r["group"] for r in rows})):
        some = [r for r in rows if name in ("all", r["group"])]
        outcomes = [(_outcome(r, keep_of(r)), r["fact"]) for r in some]
        facts = [o for o, f in outcomes if f]
        off = [o for o, f in outcomes if not f]
        found = statistics.fmean(0 < rank <= 3 for rank, _ in facts)
        answered = statistics.fmean(hits > 0 for _, hits in off)
        parts.append(f"{found:.3f}/{answered:.3f}")
    return " | ".join(parts)


def rule(stat: Stat, threshold: float, *, per_hit: bool, floor: float = 9.0):
    """``keep_of``: a hit is kept when ``stat`` of its cosine (``per_hit``) or of the
    answer's best cosine (else) reaches ``threshold``, or its score reaches ``floor``."""

    def keep_of(row: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
        cs = row["cosines"]
        best = max(cs)
        answer_ok = stat(best, cs, row) >= threshold

        def keep(hit: dict[str, Any]) -> bool:
            if hit["score"] >= floor:
                return True
            if per_hit:
                return stat(_hit_cosine(row, hit), cs, row) >= threshold
            return answer_ok

        return keep

    return keep_of


def front(rows: Sequence[dict[str, Any]], stat: Stat, *, per_hit: bool) -> list[str]:
    """The rule's best points (no other threshold finds more for as few off-topic
    answers), with found@3 at least 0.8: one line per threshold."""
    cuts = sorted(
        {round(stat(_hit_cosine(r, h), r["cosines"], r), 3) for r in rows for h in r["default"]}
    )
    points = []
    for cut in cuts:
        line = figures(rows, rule(stat, cut, per_hit=per_hit))
        found, answered = (float(x) for x in line.split(" | ")[0].split("/"))
        points.append((answered, -found, cut, line))
    best, lines = -1.0, []
    for _, negative, cut, line in sorted(points):
        if -negative > best + 1e-9:
            best = -negative
            if best >= 0.8:
                lines.append(f"  ≥ {cut:+.3f}: {line}")
    return lines


def simulate(data: Path) -> None:
    rows = json.loads(data.read_text(encoding="utf-8"))
    groups = sorted({r["group"] for r in rows})
    print("found@3/off-topic answered: all | " + " | ".join(groups))
    print(f"as is: {figures(rows, lambda r: lambda h: True)}")
    for name, stat in STATS.items():
        for per_hit in (False, True):
            print(f"{name} ({'per hit' if per_hit else 'per answer'})")
            print("\n".join(front(rows, stat, per_hit=per_hit)))
    for floor in (0.5, 0.6, 0.7):
        for cut in (0.09, 0.11, 0.13):
            line = figures(rows, rule(STATS["minus 3rd"], cut, per_hit=False, floor=floor))
            print(f"minus 3rd ≥ {cut} unless score ≥ {floor}: {line}")


def locomo(provider: str, cache: Path, data: Path) -> None:
    """Answer-level rules on LoCoMo (2 conversations): the share of answers kept."""
    gaps: list[float] = []
    zs: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, group in enumerate(load_locomo(data).groups[:2]):
            base = Path(tmp) / str(index)
            workspace = testing.write_workspace(base / "ws", group.files)
            config = testing.router_config(
                base, workspace, backend="sqlite", embedding=provider, cache={"path": str(cache)}
            )
            with Router.from_config(config) as router:
                embedder = router.embedder
                assert embedder is not None
                snapshot = router.snapshot()
                chunks = [c for d in snapshot.documents for c in snapshot.chunks(d)]
                matrix = np.array(embedder.embed_documents([c.text for c in chunks]))
                for query in group.queries:
                    cs = np.sort(matrix @ np.array(embedder.embed_query(query.text)))[::-1]
                    gaps.append(float(cs[0] - cs[2]))
                    zs.append(float((cs[0] - cs.mean()) / cs.std()))
    print(f"LoCoMo, {len(gaps)} questions: share of answers kept")
    for cut in (0.042, 0.074, 0.11, 0.13):
        print(f"  best minus 3rd ≥ {cut}: {statistics.fmean(g >= cut for g in gaps):.3f}")
    for cut in (2.5, 2.76, 3.0):
        print(f"  z of the best ≥ {cut}: {statistics.fmean(z >= cut for z in zs):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("dump", "simulate", "locomo"))
    parser.add_argument("--provider", default="minilm")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "offtopic.json"))
    parser.add_argument("--locomo", default=str(LOCOMO))
    cache = Config().state_path / "bench" / "embedding-cache.sqlite"  # the bench's default
    parser.add_argument("--cache", default=str(cache))
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.provider, Path(args.data), Path(args.cache))
    elif args.command == "locomo":
        locomo(args.provider, Path(args.cache), Path(args.locomo))
    else:
        simulate(Path(args.data))


if __name__ == "__main__":
    main()
