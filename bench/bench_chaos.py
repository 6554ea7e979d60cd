"""Chaos benchmark: queries through ``chain = ["qmd", "sqlite"]`` while QMD misbehaves.

    .venv/bin/python bench/bench_chaos.py [--faulty 1000] [--clean 200] [--rate 0.3]
        [--seed 7] [--timeout 1.0] [--cooldown 2.0] [--interval 0.02] [--quick]

QMD is the fault-injecting fake (``tests/qmd_fakes/fake_qmd.py``): every call it gets
(``update``, ``embed``, ``--version``, the MCP child's start and each MCP request) crashes,
hangs, prints garbage, answers slowly, dies mid-answer or behaves, chosen by a seed and a
fault rate. First ``--faulty`` queries with faults, then ``--clean`` with none, one every
``--interval`` seconds. SQLite (keyword-only) is the fallback; its own latency is measured
first through ``chain = ["sqlite"]`` on the same workspace.

It prints the share of queries answered, the share answered within ``timeout_s`` plus the
fallback's slowest latency, the share of fallback answers that carry a reason, p50/p99
latency, how many queries (and seconds) it took after the faults stopped until QMD
answered again (target: within one breaker cooldown), and how many child processes were
left once the router closed (target 0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_router import MemoryRouterError, Router, load_config

FAKE = Path(__file__).resolve().parents[1] / "tests" / "qmd_fakes" / "fake_qmd.py"
FAULTS = ["crash", "hang", "garbage", "slow:5", "die-mid-answer"]
TOPICS = ["green tea", "Lisbon flights", "billing team", "zebra quartz", "staging database"]


def write_workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\nanswered by the fake qmd\n", encoding="utf-8")
    for n, topic in enumerate(TOPICS * 8):
        text = f"# Note {n}\n\nA note about {topic}, number {n}.\n"
        (root / "memory" / f"note-{n}.md").write_text(text, encoding="utf-8")
    return root


def make_config(base: Path, chain: list[str], args: argparse.Namespace) -> Any:
    qmd = {
        "command": str(base / "fake" / "qmd"),
        "search_timeout_s": args.timeout,
        "update_timeout_s": 2.0,
        "embed_timeout_s": 2.0,
        "command_timeout_s": args.timeout,
        "kill_grace_s": 0.1,
        "update_interval_s": 0,
    }
    return load_config(
        None,
        environ={},
        overrides={
            "workspace": str(base / "ws"),
            "state_dir": str(base / "state"),
            "embedding": {"provider": "none"},
            "query": {"min_score": 0.0},
            "router": {
                "chain": chain,
                "timeout_s": args.timeout,
                "breaker": {"cooldown_s": args.cooldown, "failure_threshold": 3},
            },
            "backends": {"qmd": qmd} if "qmd" in chain else {},
        },
    )


def fallback_latency(base: Path, args: argparse.Namespace) -> float:
    """The slowest of 100 answers through ``chain = ["sqlite"]`` (seconds)."""
    with Router.from_config(make_config(base, ["sqlite"], args)) as router:
        router.sync()
        times = []
        for n in range(100):
            started = time.perf_counter()
            router.search(TOPICS[n % len(TOPICS)])
            times.append(time.perf_counter() - started)
    return max(times)


def set_chaos(base: Path, rate: float, seed: int) -> None:
    chaos = {"seed": seed, "rate": rate, "faults": FAULTS}
    (base / "fake" / "chaos.json").write_text(json.dumps(chaos), encoding="utf-8")


def ask(router: Router, n: int) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        response = router.search(TOPICS[n % len(TOPICS)])
    except MemoryRouterError as error:
        return {"ok": False, "s": time.perf_counter() - started, "error": error.message}
    reason = response.fallback.reason if response.fallback else None
    return {
        "ok": True,
        "s": time.perf_counter() - started,
        "backend": response.backend,
        "reason": reason,
    }


def run_phase(router: Router, count: int, interval: float, offset: int) -> list[dict[str, Any]]:
    results = []
    for n in range(count):
        results.append({**ask(router, offset + n), "at": time.monotonic()})
        time.sleep(interval)
    return results


def descendants_alive(root_pid: int, marker: str) -> list[int]:
    """Live (non-zombie) processes descended from ``root_pid`` or naming ``marker``."""
    parents, found = {}, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if stat[0] in ("Z", "X"):
            continue
        parents[int(entry.name)] = int(stat[1])
        if marker in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    for pid in list(parents):
        ancestor = parents.get(pid)
        while ancestor and ancestor != root_pid:
            ancestor = parents.get(ancestor)
        if ancestor == root_pid and pid not in found:
            found.append(pid)
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summarise(
    faulty: list[dict[str, Any]],
    clean: list[dict[str, Any]],
    clean_start: float,
    bound: float,
    left: list[int],
) -> dict[str, Any]:
    every = faulty + clean
    answered = [r for r in every if r["ok"]]
    fallbacks = [r for r in answered if r["backend"] != "qmd"]
    back = next((i for i, r in enumerate(clean) if r.get("backend") == "qmd"), None)
    latencies = [r["s"] for r in every]
    return {
        "queries": len(every),
        "answered": len(answered) / len(every),
        "within_bound": sum(r["s"] <= bound for r in answered) / len(every),
        "bound_s": round(bound, 3),
        "fallback_answers": len(fallbacks),
        "fallbacks_with_reason": (
            sum(bool(r["reason"]) for r in fallbacks) / len(fallbacks) if fallbacks else 1.0
        ),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
        "qmd_answers_faulty_phase": sum(r.get("backend") == "qmd" for r in faulty),
        "queries_until_qmd_answers": back + 1 if back is not None else None,
        "seconds_until_qmd_answers": (
            round(clean[back]["at"] - clean_start, 2) if back is not None else None
        ),
        "children_left": len(left),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faulty", type=int, default=1000)
    parser.add_argument("--clean", type=int, default=200)
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--cooldown", type=float, default=2.0)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--quick", action="store_true", help="200 faulty + 100 clean queries")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON only")
    args = parser.parse_args()
    if args.quick:
        args.faulty, args.clean = 200, 100
    base = Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    try:
        write_workspace(base / "ws")
        (base / "fake").mkdir()
        shutil.copy(FAKE, base / "fake" / "qmd")
        (base / "fake" / "qmd").chmod(0o755)
        bound = args.timeout + fallback_latency(base, args)
        set_chaos(base, args.rate, args.seed)
        router = Router.from_config(make_config(base, ["qmd", "sqlite"], args))
        faulty = run_phase(router, args.faulty, args.interval, 0)
        set_chaos(base, 0.0, args.seed)
        clean_start = time.monotonic()
        clean = run_phase(router, args.clean, args.interval, args.faulty)
        router.close()
        time.sleep(1.0)  # guardians see the close and kill their groups
        left = descendants_alive(os.getpid(), str(base))
        summary = summarise(faulty, clean, clean_start, bound, left)
        summary.update(rate=args.rate, seed=args.seed, cooldown_s=args.cooldown)
        summary["timeout_s"] = args.timeout
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(summary))
        return
    print(f"chaos: chain qmd -> sqlite, {args.faulty} queries at {args.rate:.0%} faulty calls")
    print(f"then {args.clean} with none (seed {args.seed}, timeout_s {args.timeout},")
    print(f"cooldown_s {args.cooldown}, one query every {args.interval} s)")
    for key, value in summary.items():
        print(f"  {key:28} {value}")


if __name__ == "__main__":
    main()
