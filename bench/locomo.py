"""LoCoMo retrieval harness: turn- and session-level recall@k through a real Router.

    .venv/bin/python bench/locomo.py --backend sqlite --keyword-mode or|reference [--decay]

Each of the 10 conversations gets its own workspace (so a question is searched only within
its own conversation): one dated memory file per session, ``memory/YYYY-MM-DD.md`` (a
``-sN`` suffix when two sessions share a date), one line per turn, ``[D1:3] Speaker: text``.
For every QA item with evidence, the top-k hits' line ranges are mapped back to dialogue
ids: turn recall = evidence ids found ÷ evidence ids; session recall = evidence sessions
found ÷ evidence sessions. The data is read in place and never copied.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_router import Router, testing

# The data stays in ../shared beside the checkout (never copied in); override it with
# MEMORY_ROUTER_LOCOMO.
DATA = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass
class Conversation:
    """A conversation's memory files and, per file, which dialogue id each line holds."""

    sample_id: str
    files: dict[str, str] = field(default_factory=dict)
    lines: dict[str, dict[int, str]] = field(default_factory=dict)


def session_date(raw: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` → ``"2023-05-08"``."""
    text = raw.split(" on ", 1)[-1].strip()
    return datetime.strptime(text, "%d %B, %Y").strftime("%Y-%m-%d")


def sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    numbers = sorted(int(m[1]) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if turns:
            yield n, conversation[f"session_{n}_date_time"], turns


def build(sample: dict[str, Any]) -> Conversation:
    conv = Conversation(sample_id=sample["sample_id"])
    for number, when, turns in sessions(sample["conversation"]):
        name = f"memory/{session_date(when)}.md"
        if name in conv.files:
            name = name.replace(".md", f"-s{number}.md")
        lines = [f"# Session {number} — {when}", ""]
        mapping: dict[int, str] = {}
        for turn in turns:
            text = turn["text"].replace("\n", " ")
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            lines.append(f"[{turn['dia_id']}] {turn['speaker']}: {text}")
            mapping[len(lines)] = turn["dia_id"]
        conv.files[name] = "\n".join(lines) + "\n"
        conv.lines[name] = mapping
    return conv


def evidence_ids(qa: dict[str, Any]) -> set[str]:
    return {f"D{m[1]}:{m[2]}" for e in qa.get("evidence", []) for m in _DIA.finditer(str(e))}


def session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


@dataclass
class Scores:
    turn: list[float] = field(default_factory=list)
    session: list[float] = field(default_factory=list)
    by_category: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    latency_ms: list[float] = field(default_factory=list)
    skipped: int = 0
    index_s: float = 0.0
    chunks: int = 0


def evaluate(
    sample: dict[str, Any], conv: Conversation, router: Router, k: int, scores: Scores
) -> None:
    for qa in sample["qa"]:
        wanted = evidence_ids(qa)
        if not wanted:
            scores.skipped += 1
            continue
        started = time.perf_counter()
        hits = router.search(qa["question"], max_results=k, min_score=0.0).results
        scores.latency_ms.append((time.perf_counter() - started) * 1000)
        found: set[str] = set()
        for hit in hits:
            mapping = conv.lines.get(hit.path, {})
            found.update(d for line, d in mapping.items() if hit.start_line <= line <= hit.end_line)
        turn = len(wanted & found) / len(wanted)
        want_sessions = {session_of(d) for d in wanted}
        session = len(want_sessions & {session_of(d) for d in found}) / len(want_sessions)
        scores.turn.append(turn)
        scores.session.append(session)
        scores.by_category[int(qa.get("category", 0))].append(turn)


def run(args: argparse.Namespace) -> Scores:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    scores = Scores()
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        for index, sample in enumerate(data[: args.conversations or None]):
            conv = build(sample)
            base = Path(tmp) / f"conv-{index}"
            workspace = testing.write_workspace(base / "ws", conv.files)
            config = testing.router_config(
                base,
                workspace,
                backend=args.backend,
                embedding=args.embedding,
                citations="off",
                query={
                    "keyword_mode": args.keyword_mode,
                    "max_injected_chars": 0,
                    "temporal_decay": {"enabled": args.decay},
                    "hybrid": {"keyword_query": args.hybrid_keyword},
                },
                **({"cache": {"path": str(Path(args.cache).resolve())}} if args.cache else {}),
            )
            with Router.from_config(config, plugins=[testing]) as router:
                started = time.perf_counter()
                report = router.sync()[0]
                scores.index_s += time.perf_counter() - started
                scores.chunks += report.chunks
                evaluate(sample, conv, router, args.k, scores)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite")
    parser.add_argument("--keyword-mode", choices=["or", "reference"], default="or")
    parser.add_argument("--embedding", default="none", help="provider name; none = keyword-only")
    parser.add_argument("--decay", action="store_true", help="enable temporal decay (30 days)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument(
        "--conversations", type=int, default=0, help="only the first N conversations (0: all)"
    )
    parser.add_argument(
        "--hybrid-keyword",
        choices=["and", "or"],
        default="or",
        help="query.hybrid.keyword_query: how hybrid's keyword side matches",
    )
    parser.add_argument(
        "--cache",
        default="",
        help="an embedding cache file kept between runs (re-runs embed nothing)",
    )
    args = parser.parse_args()
    digest = hashlib.sha256(DATA.read_bytes()).hexdigest()
    print(f"dataset {DATA} sha256 {digest}")
    started = time.perf_counter()
    scores = run(args)
    n = len(scores.turn)
    print(
        f"backend={args.backend} embedding={args.embedding} keyword_mode={args.keyword_mode}"
        f" hybrid_keyword={args.hybrid_keyword}"
        f" decay={args.decay} k={args.k}"
    )
    print(f"questions={n} (skipped without evidence: {scores.skipped})")
    print(f"turn recall@{args.k}    = {statistics.fmean(scores.turn):.4f}")
    print(f"session recall@{args.k} = {statistics.fmean(scores.session):.4f}")
    for category in sorted(scores.by_category):
        values = scores.by_category[category]
        print(f"  category {category}: n={len(values)} turn recall={statistics.fmean(values):.4f}")
    print(f"first index: {scores.chunks} chunks in {scores.index_s:.1f} s"
          f" ({scores.chunks / max(scores.index_s, 1e-9):.1f} chunks/s)")  # fmt: skip
    p50 = statistics.median(scores.latency_ms)
    print(f"search p50 {p50:.1f} ms; total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
