"""Does importance/recency ranking (``[entries.ranking]``) cost LoCoMo turn recall?

    .venv/bin/python bench/bench_entry_ranking.py --data ../shared/data/locomo/locomo10.json \
        [--backend lancedb] [--embedding minilm] [--groups 10]

Every LoCoMo turn becomes an *entry* (``Speaker: text``) in the conversation's journal,
created on its session's date, shifted so that the last session is today (an agent that
has just talked: recency spans the conversation's months, as it would in use);
importance is the default 0.7. Each question is asked twice per router, ranking on and
off (same index, same embeddings):

* ``recall``: ``Router.recall(question, limit=10)`` — on LanceDB with an embedder this
  reads the ``entries`` table's native columns (``RecallResult.backend``);
* ``search``: ``Router.search(question, max_results=10)``, the entries among the hits.

Turn recall@10 is the share of a question's evidence turns among the 10 entries found.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_router import Entry, Router, testing
from memory_router._ops.bench_data import _session_date, _sessions, file_sha256, load_locomo
from memory_router._workspace.journal import journal_text
from memory_router.kit import entry_weight

K = 10


def conversation_entries(sample: dict[str, Any]) -> list[Entry]:
    """The turns of one conversation as entries, dated by session, last session today."""
    sessions = list(_sessions(sample["conversation"]))
    last = max(datetime.strptime(_session_date(when), "%Y-%m-%d") for _, when, _ in sessions)
    shift = datetime.now(UTC).replace(tzinfo=None) - last
    entries = []
    for _, when, turns in sessions:
        day = datetime.strptime(_session_date(when), "%Y-%m-%d") + shift
        for turn in turns:
            text = f"{turn['speaker']}: {turn['text']}".replace("\n", " ")
            entries.append(
                Entry(
                    id=f"e-{turn['dia_id']}",
                    text=text,
                    importance=0.7,
                    category="other",
                    created_at=day.replace(tzinfo=UTC),
                )
            )
    return entries


def make_router(
    base: Path, workspace: Path, args: argparse.Namespace, ranking: dict[str, Any]
) -> Router:
    settings = {"uri": str(base / "lance")} if args.backend == "lancedb" else None
    config = testing.router_config(
        base,
        workspace,
        backend=args.backend,
        embedding=args.embedding,
        settings=settings,
        entries={"ranking": ranking},
        query={"min_score": 0.0, "max_injected_chars": 0},
        citations="off",
        cache={"path": args.cache},
    )
    return Router.from_config(config, plugins=[testing])


def turns(ids: list[str]) -> set[str]:
    return {i.removeprefix("e-") for i in ids}


def parse_ranking(text: str) -> dict[str, Any]:
    """``"w/h/f"``: the ``[entries.ranking]`` table with those three keys."""
    w, h, f = (float(x) for x in text.split("/"))
    return {"importance_weight": w, "half_life_days": h, "recency_floor": f}


def top(pool: list[tuple[Entry, float]], ranking: Any, now: float) -> list[str]:
    """The 10 best ids of ``pool`` (entry, unweighted score) under ``ranking``."""
    weighted = [(s * entry_weight(e, ranking, now=now), -i, e.id) for i, (e, s) in enumerate(pool)]
    return [entry_id for _, _, entry_id in sorted(weighted, reverse=True)[:K]]


class Tally:
    def __init__(self) -> None:
        self.scores: dict[tuple[str, str], list[float]] = {}

    def add(self, op: str, label: str, found: list[str], wanted: set[str]) -> None:
        self.scores.setdefault((op, label), []).append(len(turns(found) & wanted) / len(wanted))

    def mean(self, op: str, label: str) -> float:
        return statistics.fmean(self.scores[(op, label)])


def ask(router: Router, query: Any, tally: Tally, label: str, grid: list[str]) -> str | None:
    """One question: measured as configured (``label``), and re-weighted for ``grid``."""
    wanted = set(query.relevant)
    recalled = router.recall(query.text, limit=K)
    tally.add("recall", label, [m.entry.id for m in recalled.results], wanted)
    hits = router.search(query.text, max_results=K).results
    tally.add("search", label, [h.entry.id for h in hits if h.entry is not None], wanted)
    if grid:
        now = datetime.now(UTC).timestamp()
        pool = [(m.entry, m.similarity) for m in router.recall(query.text, limit=50).results]
        wide = router.search(query.text, max_results=K * 4).results
        hit_pool = [(h.entry, h.score) for h in wide if h.entry is not None]
        for text in grid:
            template = router.config.entries.ranking
            ranking = dataclasses.replace(template, enabled=True, **parse_ranking(text))
            tally.add("recall", text, top(pool, ranking, now), wanted)
            tally.add("search", text, top(hit_pool, ranking, now), wanted)
    return recalled.backend


def run(args: argparse.Namespace) -> None:
    data = Path(args.data)
    samples = json.loads(data.read_text(encoding="utf-8"))[: args.groups]
    questions = {g.name: g.queries for g in load_locomo(data).groups}
    grid = [g for g in args.grid.split(",") if g]
    on_table = parse_ranking(args.on)
    tally = Tally()
    answered_by: set[str | None] = set()
    with tempfile.TemporaryDirectory(prefix="bench-entry-ranking-") as tmp:
        for sample in samples:
            name = str(sample["sample_id"])
            workspace = testing.write_workspace(
                Path(tmp) / name / "ws", {"MEMORY.md": "# Memory\n"}
            )
            journal = workspace / "memory" / "entries.md"
            journal.parent.mkdir(parents=True, exist_ok=True)
            journal.write_text(journal_text(conversation_entries(sample)), encoding="utf-8")
            runs: list[tuple[str, dict[str, Any], list[str]]] = [
                ("off", {"enabled": False}, grid),
                (f"on {args.on}", on_table, []),
            ]
            for label, ranking, offline in runs:
                folder = Path(tmp) / name / label.split()[0]
                with make_router(folder, workspace, args, ranking) as router:
                    router.sync()
                    for query in questions[name]:
                        answered_by.add(ask(router, query, tally, label, offline))
            print(f"# {name} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print(f"# LoCoMo {data.name} sha256 {file_sha256(data)}, {args.groups} conversation(s)")
    print(f"# backend {args.backend}, embedding {args.embedding}, recall answered by {answered_by}")
    print(
        "| ranking (importance_weight / half_life_days / recency_floor) | recall: turn R@10"
        " | vs off | search: turn R@10 | vs off |"
    )
    print("|---|---|---|---|---|")
    base = {op: tally.mean(op, "off") for op in ("recall", "search")}
    for label in ("off", f"on {args.on}", *grid):
        kind = "" if label.startswith("o") else " (re-weighted offline)"
        r, s = tally.mean("recall", label), tally.mean("search", label)
        print(
            f"| {label}{kind} | {r:.3f} | {r - base['recall']:+.3f} | {s:.3f}"
            f" | {s - base['search']:+.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="LoCoMo's locomo10.json")
    parser.add_argument("--backend", default="lancedb")
    parser.add_argument("--embedding", default="minilm", help="provider (hash: plumbing only)")
    parser.add_argument("--groups", type=int, default=10, help="conversations to use")
    parser.add_argument("--on", default="0.3/60/0.5", help="the ranking measured directly: w/h/f")
    parser.add_argument(
        "--grid", default="", help="more rankings, re-weighted offline: w/h/f,w/h/f,..."
    )
    parser.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "bench-entry-ranking-cache.sqlite"),
        help="embedding cache kept between runs",
    )
    run(parser.parse_args())


if __name__ == "__main__":
    main()
