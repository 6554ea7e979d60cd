"""What the QMD backend's ``search`` scores mean: the numbers behind ``min_score`` for QMD.

    .venv/bin/python bench/calibrate_qmd.py [--conversations 2]

For LoCoMo questions (data read in place, see ``bench/calibrate.py``) two scores per
question, through a router whose chain is QMD alone (keyword mode, ``min_score`` 0):
*match* — the best hit holding an evidence turn, asked of its own conversation; *noise* —
the best hit when asked of another conversation (different people and events: nothing
there answers it). Prints percentiles of both (on the router's scale, see
``memory_router_qmd._results.calibrated``), and the share of each that the default
``min_score``, the backend's relaxation floor and a strict 0.5 raw score keep.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from memory_router import Router, load_config, testing
from memory_router._ops.bench import covered
from memory_router._ops.bench_data import Group, load_locomo
from memory_router_qmd._results import CROSSING, calibrated

DATA = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)


def percentiles(values: list[float]) -> str:
    ordered = sorted(values) or [0.0]
    pick = [ordered[int(p * (len(ordered) - 1))] for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    return " / ".join(f"{v:.3f}" for v in pick)


def qmd_router(base: Path, group: Group) -> Router:
    workspace = testing.write_workspace(base / "ws", group.files)
    config = load_config(
        None,
        overrides={
            "workspace": str(workspace),
            "state_dir": str(base / "state"),
            "sources": ["memory"],
            "citations": "off",
            "router": {"chain": ["qmd"], "fallback": "none"},
            "embedding": {"provider": "none"},
            "backends": {"qmd": {"search_timeout_s": 60, "update_on_boot": False}},
        },
    )
    router = Router(config)
    for _ in router.sync():
        pass
    return router


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=2)
    args = parser.parse_args()
    groups = load_locomo(DATA).groups[: max(2, args.conversations)]
    match: list[float] = []
    noise: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        routers = [qmd_router(Path(tmp) / str(i), g) for i, g in enumerate(groups)]
        try:
            for index, group in enumerate(groups):
                other = routers[(index + 1) % len(routers)]
                for query in group.queries:
                    hits = routers[index].search(query.text, max_results=20, min_score=0).results
                    useful = [
                        h.score for h in hits if covered(h, group.units) & query.relevant.keys()
                    ]
                    if useful:
                        match.append(max(useful))
                    stray = other.search(query.text, max_results=1, min_score=0).results
                    noise.append(stray[0].score if stray else 0.0)
        finally:
            for router in routers:
                router.close()
    print(f"{len(match)} questions with an evidence hit, {len(noise)} asked elsewhere")
    print(f"match p5/p25/p50/p75/p95: {percentiles(match)}")
    print(f"noise p5/p25/p50/p75/p95: {percentiles(noise)}")
    for raw in (0.3, CROSSING, 0.5):  # the relaxation floor, the default, a strict one
        floor = calibrated(raw)
        kept = sum(s >= floor for s in match) / max(1, len(match))
        let = sum(s >= floor for s in noise) / max(1, len(noise))
        print(f"score >= {floor:.3f} (raw {raw}): keeps {kept:.1%} of matches, {let:.1%} of noise")


if __name__ == "__main__":
    main()
