"""Process start-up: ``memory-router --help`` and a keyword-only ``search``, now vs a baseline.

The baseline is the code of another git revision (default ``ed16496``, before lazy
start-up), extracted to a temporary folder and put first on ``PYTHONPATH``, run by the
same interpreter with the same installed packages, so the two differ only in our code.
The two take turns ``--runs`` times; figures are medians of each process's CPU time (user
+ system), which a busy machine disturbs far less than wall time (on an idle machine the
two are close: start-up is single-threaded and not I/O-bound once files are cached).

    .venv/bin/python bench/bench_startup.py [--runs 7] [--baseline ed16496]

Targets (idle machine): ``--help`` ≤ 150 ms, keyword-only ``search`` ≤ 250 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import tomllib
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


def baseline_plugins(revision: str) -> str:
    """The entry-point names the revision declares (later plugins cannot run on its code)."""
    text = subprocess.run(
        ["git", "show", f"{revision}:pyproject.toml"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    table = tomllib.loads(text)["project"]["entry-points"]["memory_router"]
    return ",".join(sorted(table))


def wall_ms(args: list[str], pythonpath: str | None, plugins: str | None = None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if plugins is not None:
        env["MEMORY_ROUTER_PLUGINS"] = plugins
    return timed([sys.executable, "-m", "memory_router", *args], env)


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    """CPU milliseconds (user + system) of the child: steadier than wall time under load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, capture_output=True, check=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1000


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
        plugins = baseline_plugins(args.baseline)
        cases = {
            "memory-router --help": ["--help"],
            "memory-router search (keyword-only)": ["--config", config, "search", "deploys"],
        }
        print(f"load before {os.getloadavg()[0]:.1f}, {args.runs} runs each, taking turns;"
              f" both sides load the baseline's plugins ({plugins})")  # fmt: skip
        print(f"| process | baseline {args.baseline} ms | now ms | now / baseline "
              "| now, every plugin ms |")  # fmt: skip
        print("|---|---|---|---|---|")
        python = statistics.median(interpreter_ms() for _ in range(args.runs))
        print(f"| python -c pass (interpreter alone) | {python:.0f} | {python:.0f} | 1.00 | |")
        for name, argv in cases.items():
            then, now, every = [], [], []
            for _ in range(args.runs):
                then.append(wall_ms(argv, base, plugins))
                now.append(wall_ms(argv, None, plugins))
                every.append(wall_ms(argv, None))
            a, b, c = (statistics.median(x) for x in (then, now, every))
            print(f"| {name} | {a:.0f} | {b:.0f} | {b / a:.2f} | {c:.0f} |")
        print(f"load after {os.getloadavg()[0]:.1f}")


def interpreter_ms() -> float:
    return timed([sys.executable, "-c", "pass"])


if __name__ == "__main__":
    main()
