"""Process start-up: ``memory-router --help`` and a keyword-only ``search``, now vs a baseline.

The baseline is the code of another git revision (default ``ed16496``, before lazy
start-up), extracted to a temporary folder and put first on ``PYTHONPATH``, run by the
same interpreter with the same installed packages, so the two differ only in our code.
The two take turns ``--runs`` times; figures are medians of wall time per process.

    .venv/bin/python bench/bench_startup.py [--runs 7] [--baseline ed16496]

Targets (idle machine): ``--help`` ≤ 150 ms, keyword-only ``search`` ≤ 250 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTES = "# Notes\n\nDeploys run on Tuesdays; rollbacks need two approvals.\n"


def extract(revision: str, into: Path) -> str:
    """The revision's packages under ``into``; returns the ``PYTHONPATH`` that selects them."""
    archive = subprocess.run(
        ["git", "archive", revision, "router", "backends", "plugins"],
        cwd=ROOT, capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=60)
    return os.pathsep.join(str(into / part) for part in ("router", "backends", "plugins"))


def workspace(folder: Path) -> Path:
    (folder / "ws" / "memory").mkdir(parents=True)
    (folder / "ws" / "MEMORY.md").write_text(NOTES, encoding="utf-8")
    config = folder / "keyword.toml"
    config.write_text(
        f'workspace = "{folder / "ws"}"\nstate_dir = "{folder / "state"}"\n'
        '[embedding]\nprovider = "none"\n',
        encoding="utf-8",
    )
    return config


def wall_ms(args: list[str], pythonpath: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memory_router", *args],
        env=env, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", default="ed16496", help="git revision to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        (folder / "base").mkdir()
        base = extract(args.baseline, folder / "base")
        config = str(workspace(folder))
        wall_ms(["--config", config, "index"], None)  # build the index once
        cases = {
            "python -c pass (interpreter alone)": None,
            "memory-router --help": ["--help"],
            "memory-router search (keyword-only)": ["--config", config, "search", "deploys"],
        }
        print(f"load before {os.getloadavg()[0]:.1f}, {args.runs} runs each, taking turns")
        print(f"| process | baseline {args.baseline} ms | now ms | now / baseline |")
        print("|---|---|---|---|")
        for name, argv in cases.items():
            now: list[float] = []
            then: list[float] = []
            for _ in range(args.runs):
                if argv is None:
                    now.append(interpreter_ms())
                    then.append(now[-1])
                    continue
                then.append(wall_ms(argv, base))
                now.append(wall_ms(argv, None))
            a, b = statistics.median(then), statistics.median(now)
            print(f"| {name} | {a:.0f} | {b:.0f} | {b / a:.2f} |")
        print(f"load after {os.getloadavg()[0]:.1f}")


def interpreter_ms() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=60)
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    main()
