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
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_router import Entry, Router, testing
from memory_router._bench_data import _session_date, _sessions, file_sha256, load_locomo
from memory_router._journal import journal_text

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


def make_router(base: Path, workspace: Path, backend: str, embedding: str, on: bool) -> Router:
    settings = {"uri": str(base / "lance")} if backend == "lancedb" else None
    config = testing.router_config(
        base,
        workspace,
        backend=backend,
        embedding=embedding,
        settings=settings,
        entries={"ranking": {"enabled": on}},
        query={"min_score": 0.0, "max_injected_chars": 0},
        citations="off",
        cache={"path": str(base.parent / "embedding-cache.sqlite")},
    )
    return Router.from_config(config, plugins=[testing])


def turns(ids: list[str]) -> set[str]:
    return {i.removeprefix("e-") for i in ids}


def run(args: argparse.Namespace) -> None:
    data = Path(args.data)
    samples = json.loads(data.read_text(encoding="utf-8"))[: args.groups]
    questions = {g.name: g.queries for g in load_locomo(data).groups}
    scores: dict[tuple[str, bool], list[float]] = {}
    answered_by: set[str | None] = set()
    latencies: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bench-entry-ranking-") as tmp:
        for sample in samples:
            name = str(sample["sample_id"])
            workspace = testing.write_workspace(
                Path(tmp) / name / "ws", {"MEMORY.md": "# Memory\n"}
            )
            journal = workspace / "memory" / "entries.md"
            journal.parent.mkdir(parents=True, exist_ok=True)
            journal.write_text(journal_text(conversation_entries(sample)), encoding="utf-8")
            for on in (True, False):
                base = Path(tmp) / name / ("on" if on else "off")
                with make_router(base, workspace, args.backend, args.embedding, on) as router:
                    router.sync()
                    for query in questions[name]:
                        wanted = set(query.relevant)
                        started = time.perf_counter()
                        recalled = router.recall(query.text, limit=K)
                        latencies[on].append((time.perf_counter() - started) * 1000)
                        answered_by.add(recalled.backend)
                        found = turns([m.entry.id for m in recalled.results])
                        scores.setdefault(("recall", on), []).append(
                            len(found & wanted) / len(wanted)
                        )
                        hits = router.search(query.text, max_results=K).results
                        found = turns([h.entry.id for h in hits if h.entry is not None])
                        scores.setdefault(("search", on), []).append(
                            len(found & wanted) / len(wanted)
                        )
            print(f"# {name} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print(f"# LoCoMo {data.name} sha256 {file_sha256(data)}, {args.groups} conversation(s)")
    print(f"# backend {args.backend}, embedding {args.embedding}, recall answered by {answered_by}")
    print("| operation | ranking off: turn recall@10 | ranking on | on − off | questions |")
    print("|---|---|---|---|---|")
    for op in ("recall", "search"):
        off, on_ = statistics.fmean(scores[(op, False)]), statistics.fmean(scores[(op, True)])
        n = len(scores[(op, True)])
        print(f"| {op} | {off:.3f} | {on_:.3f} | {on_ - off:+.3f} | {n} |")
    for on in (False, True):
        ordered = sorted(latencies[on])
        print(f"# recall p50 {'on' if on else 'off'}: {ordered[len(ordered) // 2]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="LoCoMo's locomo10.json")
    parser.add_argument("--backend", default="lancedb")
    parser.add_argument("--embedding", default="minilm", help="provider (hash: plumbing only)")
    parser.add_argument("--groups", type=int, default=10, help="conversations to use")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
