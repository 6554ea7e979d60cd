"""Benchmark the QMD backend: warm MCP sidecar vs one process per query, and LoCoMo recall.

    .venv/bin/python bench/bench_qmd.py [--data ../shared/data/locomo/locomo10.json]
        [--conversations 10] [--latency-queries 200] [--skip-recall] [--embed-model X.gguf]
        [--failover-only]

1. Latency, same corpus (LoCoMo conversation 0 written as one Markdown file per session),
   same run, same questions: ``Backend.search`` through the warm ``qmd mcp`` child (lex
   sub-queries from the extracted keywords, rerank off), one raw ``tools/call`` with a
   single lex term (transport cost alone), the same sub-queries as one
   ``qmd query --no-rerank`` process per query, and ``qmd search`` (verbatim question)
   as one process per query. Median and p95 in ms, and the ratios.
2. Maintenance: one ``update`` (+ ``embed`` with ``--embed-model``) cycle on that corpus,
   then an unchanged one. Failover: seconds until ``chain = ["qmd", "sqlite"]`` answers
   from SQLite when a fake ``qmd`` (``tests/qmd_fakes/fake_qmd.py``) crashes or hangs
   (a hung query through the MCP sidecar and as a one-shot ``qmd query``).
3. Session recall@10 through :class:`memory_router.Router` with ``chain = ["qmd"]`` in
   ``search`` mode next to the built-in ``sqlite`` backend (keyword-only): for each
   evaluable question, the share of its evidence sessions among the sessions of the top
   10 hits, averaged; ``hit@10`` is the share of questions with at least one.

The data is read where it lies and never copied into the repository; workspaces and
indexes live in a temporary folder. QMD must be installed (``scripts/install-qmd.sh``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_router import Router, testing
from memory_router.kit import SearchRequest

# The data stays in ../shared beside the checkout (never copied in); override with --data
# or MEMORY_ROUTER_LOCOMO.
DATA = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)
_EVIDENCE = re.compile(r"^D(\d+):\d+$")
_SESSION_FILE = re.compile(r"session-(\d+)\.md$")


def write_conversation(sample: dict[str, Any], root: Path) -> Path:
    """One ``memory/session-<n>.md`` per session: date heading, ``Speaker: text`` lines."""
    conversation = sample["conversation"]
    folder = root / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if not match or not isinstance(turns, list):
            continue
        date = conversation.get(f"{key}_date_time", "")
        lines = [f"# Session {match[1]} ({date})", ""]
        lines += [f"{turn['speaker']}: {turn['text']}" for turn in turns]
        (folder / f"session-{int(match[1]):02d}.md").write_text("\n".join(lines) + "\n")
    return root


def evidence_sessions(qa: dict[str, Any], sessions: set[int]) -> set[int]:
    """Sessions named by a question's evidence ids (split on ``;``/``,``/space)."""
    found = set()
    for item in qa.get("evidence") or []:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _EVIDENCE.match(part)
            if match and int(match[1]) in sessions:
                found.add(int(match[1]))
    return found


def session_of(path: str) -> int | None:
    match = _SESSION_FILE.search(path)
    return int(match[1]) if match else None


def router_for(base: Path, workspace: Path, backend: str) -> Router:
    config = testing.router_config(
        base,
        workspace,
        backend=backend,
        embedding="none",
        settings={"update_on_boot": False} if backend == "qmd" else None,
        query={"max_results": 10, "min_score": 0.0, "max_injected_chars": 0},
    )
    return Router.from_config(config)


def recall(samples: list[dict[str, Any]], backend: str, base: Path) -> dict[str, float]:
    """Mean session recall@10 and hit@10 over every evaluable question."""
    recalls: list[float] = []
    hits = 0
    started = time.perf_counter()
    for n, sample in enumerate(samples):
        workspace = write_conversation(sample, base / f"ws-{n}")
        sessions = {session_of(p.name) for p in (workspace / "memory").iterdir()} - {None}
        with router_for(base / f"{backend}-{n}", workspace, backend) as router:
            router.sync()
            for qa in sample["qa"]:
                wanted = evidence_sessions(qa, sessions)  # type: ignore[arg-type]
                if not wanted:
                    continue
                response = router.search(str(qa["question"]), max_results=10, min_score=0.0)
                got = {session_of(h.path) for h in response.results}
                recalls.append(len(wanted & got) / len(wanted))
                hits += bool(wanted & got)
    return {
        "questions": len(recalls),
        "recall@10": statistics.fmean(recalls),
        "hit@10": hits / len(recalls),
        "seconds": time.perf_counter() - started,
    }


def timed(call: Callable[[str], object], questions: list[str]) -> list[float]:
    samples = []
    for question in questions:
        started = time.perf_counter()
        call(question)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def latency(sample: dict[str, Any], base: Path, count: int) -> dict[str, list[float]]:
    """Per-query ms: warm MCP sidecar, a ``qmd query`` process, a ``qmd search`` process."""
    workspace = write_conversation(sample, base / "latency-ws")
    questions = [str(q["question"]) for q in sample["qa"]][:count]
    out: dict[str, list[float]] = {}
    for use_mcp in (True, False):
        config = testing.router_config(
            base / f"latency-{use_mcp}",
            workspace,
            backend="qmd",
            settings={"update_on_boot": False, "use_mcp": use_mcp},
        )
        with Router.from_config(config) as router:
            router.sync()
            backend = router.backend("qmd")

            def search(question: str, backend: Any = backend) -> object:
                return backend.search(
                    SearchRequest(query=question, max_results=10, min_score=0.0, candidates=10)
                )

            search("warm up")
            out["mcp sidecar (lex sub-queries)" if use_mcp else "qmd query process"] = timed(
                search, questions
            )
            if use_mcp:
                sidecar = backend.sidecar  # type: ignore[attr-defined]

                def raw(question: str, sidecar: Any = sidecar) -> object:
                    word = max(question.split(), key=len).strip("?,.!'\"")
                    arguments = {
                        "searches": [{"type": "lex", "query": word}],
                        "collections": ["memory-dir"],
                        "limit": 10,
                        "rerank": False,
                    }
                    return sidecar.call_tool("query", arguments, timeout=10)

                out["mcp sidecar (one raw lex call)"] = timed(raw, questions)
            if not use_mcp:
                runner = backend.runner  # type: ignore[attr-defined]

                def one_shot(question: str, runner: Any = runner) -> object:
                    argv = ["search", "--format", "json", "-n", "10", "--", question]
                    return runner.run(argv, timeout=30)

                out["qmd search process (verbatim)"] = timed(one_shot, questions)
    return out


def maintenance(sample: dict[str, Any], base: Path, embed_model: Path | None) -> dict[str, float]:
    """Seconds for a first ``qmd update`` (+ ``embed``) cycle and an unchanged one."""
    workspace = write_conversation(sample, base / "maintenance-ws")
    settings: dict[str, Any] = {"update_on_boot": False}
    if embed_model is not None:
        settings["models"] = {"embed": str(embed_model)}
    config = testing.router_config(
        base / "maintenance", workspace, backend="qmd", settings=settings
    )
    out = {}
    with Router.from_config(config) as router:
        cycle = router.backend("qmd").cycle  # type: ignore[attr-defined]
        for label in ("first", "unchanged"):
            update, embed = cycle.run(force=True)
            out[f"{label} update"] = update.duration_s
            if embed.status != "skipped":
                out[f"{label} embed ({embed.status})"] = embed.duration_s
    return out


def failover(sample: dict[str, Any], base: Path) -> dict[str, float]:
    """Seconds until ``chain = ["qmd", "sqlite"]`` answers from SQLite with a fake QMD
    that crashes or hangs ignoring SIGTERM (``search_timeout_s = 2``, the default
    ``kill_grace_s`` 5), through the MCP sidecar and through one-shot ``qmd query``."""
    fake_source = Path(__file__).resolve().parents[1] / "tests" / "qmd_fakes" / "fake_qmd.py"
    workspace = write_conversation(sample, base / "failover-ws")
    out = {}
    for behaviour, use_mcp in (("crash", True), ("hang", True), ("hang", False)):
        label = f"{behaviour}{'' if use_mcp else ' (one-shot query)'}"
        folder = base / f"fake-{behaviour}-{use_mcp}"
        folder.mkdir()
        fake = folder / "qmd"
        fake.write_bytes(fake_source.read_bytes())
        fake.chmod(0o755)
        config = testing.router_config(
            base / f"failover-{behaviour}-{use_mcp}",
            workspace,
            backend="qmd",
            settings={
                "command": str(fake),
                "use_mcp": use_mcp,
                "update_on_boot": False,
                "search_timeout_s": 2.0,
            },
            router={"chain": ["qmd", "sqlite"], "fallback": "next"},
        )
        with Router.from_config(config) as router:
            router.sync(backends=["qmd", "sqlite"])
            (folder / "behaviour").write_text(behaviour)
            started = time.perf_counter()
            response = router.search("warm up question", min_score=0.0)
            assert response.backend == "sqlite", response
            out[f"fake qmd {label} -> sqlite"] = time.perf_counter() - started
    return out


def print_failover(sample: dict[str, Any], base: Path) -> None:
    print("failover: fake qmd, chain qmd -> sqlite (search_timeout_s 2, kill_grace_s 5)")
    for name, seconds in failover(sample, base).items():
        print(f"  {name:42s} {seconds:6.2f} s")


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--embed-model", type=Path, help="a GGUF embedding model for embed timing")
    parser.add_argument("--failover-only", action="store_true", help="only the failover times")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text())[: args.conversations]
    with tempfile.TemporaryDirectory(prefix="bench-qmd-") as temp:
        base = Path(temp)
        if args.failover_only:
            print_failover(samples[0], base)
            return
        print(f"latency: conversation {samples[0]['sample_id']}, same questions, same run")
        times = latency(samples[0], base, args.latency_queries)
        mcp = summary(times["mcp sidecar (lex sub-queries)"])[0]
        for name, values in times.items():
            p50, p95 = summary(values)
            print(
                f"  {name:34s} n={len(values):4d}  p50 {p50:8.2f} ms  p95 {p95:8.2f} ms  "
                f"x{p50 / mcp:6.1f} of the sidecar"
            )
        print("maintenance: conversation 0, through the backend's update cycle")
        for name, seconds in maintenance(samples[0], base, args.embed_model).items():
            print(f"  {name:34s} {seconds:8.2f} s")
        print_failover(samples[0], base)
        if args.skip_recall:
            return
        print(f"recall: {len(samples)} conversations, session recall@10 via Router")
        for backend in ("qmd", "sqlite"):
            result = recall(samples, backend, base)
            print(
                f"  {backend:8s} questions={result['questions']}"
                f"  recall@10 {result['recall@10']:.3f}  hit@10 {result['hit@10']:.3f}"
                f"  ({result['seconds']:.1f} s)"
            )


if __name__ == "__main__":
    main()
