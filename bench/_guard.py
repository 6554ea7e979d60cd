"""Benches that guard themselves: each headline figure beside the one recorded, normalised.

A figure measured on this shared machine moves with its load, so every figure is divided
by a **reference operation timed in the same run** — one exact float32 scan of 100k × 384
vectors plus a top-80 selection, on one core (numpy ``einsum``, no BLAS threads: ~13 ms on
a quiet core here). ``figure / reference`` then compares across runs and loads; the check
fails when it is more than :data:`LIMIT` × the recorded one (for a throughput, when it is
less than 1 / :data:`LIMIT` of it).

The recorded figures live in docs/performance.md, in the table under the heading
``## Baselines``: one row per figure with its value, the reference measured with it, the
load average, the date and the command. ``--record`` rewrites a figure's row from the run.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
HEADING = "## Baselines"
LIMIT = 1.5
_ROW = re.compile(
    r"^\| `(?P<name>[^`]+)` \| (?P<value>[\d.]+) (?P<unit>\S+) \| (?P<ref>[\d.]+) ms \|"
)


@dataclass(frozen=True)
class Reference:
    """The reference operation's median wall time in this run, and the load around it."""

    ms: float
    load: float


@dataclass(frozen=True)
class Figure:
    """One headline figure: ``unit`` ``ms`` or ``s`` (lower is better) or ``req/s`` (higher)."""

    name: str
    value: float
    unit: str
    command: str

    @property
    def higher_is_better(self) -> bool:
        return self.unit.endswith("/s")


def reference(runs: int = 15) -> Reference:
    """Time the reference operation (median of ``runs``) with the 1-minute load average."""
    import numpy as np

    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((100_000, 384), dtype=np.float32)
    query = matrix[7].copy()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        scores = np.einsum("ij,j->i", matrix, query)
        np.argpartition(-scores, 79)[:80]
        times.append((time.perf_counter() - started) * 1000)
    return Reference(ms=statistics.median(times), load=os.getloadavg()[0])


def recorded(doc: Path = DOC) -> dict[str, tuple[float, float]]:
    """``name → (value, reference ms)`` from the doc's baselines table."""
    found: dict[str, tuple[float, float]] = {}
    inside = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line.startswith(HEADING)
        elif inside and (match := _ROW.match(line)):
            found[match["name"]] = (float(match["value"]), float(match["ref"]))
    return found


def worse_by(figure: Figure, ref_ms: float, value: float, value_ref_ms: float) -> float:
    """How many times worse ``figure`` (measured beside ``ref_ms``) is than ``value``
    (recorded beside ``value_ref_ms``), each normalised by its reference."""
    now, then = figure.value / ref_ms, value / value_ref_ms
    if figure.higher_is_better:
        now, then = figure.value * ref_ms, value * value_ref_ms
        return then / now if now > 0 else float("inf")
    return now / then if then > 0 else float("inf")


def check(figures: list[Figure], ref: Reference, *, doc: Path = DOC) -> int:
    """Print each figure beside the recorded one; the number of figures over the limit."""
    baselines = recorded(doc)
    print(f"\nreference operation {ref.ms:.1f} ms, load {ref.load:.1f}")
    print("| figure | now | now ÷ ref | recorded | recorded ÷ ref | worse by | verdict |")
    print("|---|---|---|---|---|---|---|")
    failed = 0
    for figure in figures:
        if figure.name not in baselines:
            print(f"| `{figure.name}` | {figure.value:.2f} {figure.unit} | | (none) | | | new |")
            continue
        value, value_ref = baselines[figure.name]
        ratio = worse_by(figure, ref.ms, value, value_ref)
        verdict = "REGRESSION" if ratio > LIMIT else "ok"
        failed += ratio > LIMIT
        print(
            f"| `{figure.name}` | {figure.value:.2f} {figure.unit} | {figure.value / ref.ms:.3f}"
            f" | {value:.2f} {figure.unit} | {value / value_ref:.3f} | {ratio:.2f}× | {verdict} |"
        )
    return failed


def record(figures: list[Figure], ref: Reference, *, doc: Path = DOC) -> None:
    """Write each figure's row into the baselines table (replacing the figure's old row)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADING))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    names = {f.name for f in figures}
    kept = [
        line for line in lines[start:end] if not ((m := _ROW.match(line)) and m["name"] in names)
    ]
    table_end = max(i for i, line in enumerate(kept) if line.startswith("|")) + 1
    today = date.today().isoformat()
    rows = [
        f"| `{f.name}` | {f.value:.2f} {f.unit} | {ref.ms:.1f} ms | {ref.load:.1f} | {today}"
        f" | `{f.command}` |"
        for f in figures
    ]
    section = kept[:table_end] + rows + kept[table_end:]
    doc.write_text("\n".join([*lines[:start], *section, *lines[end:]]) + "\n", encoding="utf-8")


def finish(figures: list[Figure], ref: Reference, *, check_: bool, record_: bool) -> None:
    """What a bench does at its end with ``--check`` / ``--record``; exits 1 on regression."""
    if record_:
        record(figures, ref)
        print(f"recorded {len(figures)} figure(s) in {DOC.name}")
    if check_ and check(figures, ref):
        raise SystemExit(f"a figure is more than {LIMIT}× worse than recorded")
