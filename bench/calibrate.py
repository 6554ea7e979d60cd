"""Where an embedding model's cosine stops meaning "unrelated": the numbers behind
``memory_router._search.calibration``.

    .venv/bin/python bench/calibrate.py [--provider minilm] [--conversations 2]

For LoCoMo questions (data read in place, see ``bench/locomo.py``) two cosines per
question: *match* — the best chunk holding an evidence turn of its own conversation (the
questions paraphrase their evidence); *noise* — the best chunk of another conversation
(different people and events: nothing there answers it). Chunk vectors come through the
embedding cache (``--cache``), so after a ``memory-router bench`` run only the questions
are embedded. Prints percentiles of both, and the share of each that a vector-only hit
keeps under each candidate ``min_score`` with the current calibration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from memory_router import Router, testing
from memory_router._ops.bench_data import load_locomo
from memory_router.kit import Chunk, vector_scale

DATA = Path(
    os.environ.get("MEMORY_ROUTER_LOCOMO")
    or Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"
)


def covered(chunk: Chunk, units: Mapping[str, Mapping[int, str]]) -> set[str]:
    lines = units.get(chunk.path, {})
    return {lines[n] for n in range(chunk.start_line, chunk.end_line + 1) if n in lines}


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    pick = [ordered[int(p * (len(ordered) - 1))] for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    return " / ".join(f"{v:.3f}" for v in pick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="minilm")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--cache", default="")
    args = parser.parse_args()
    groups = load_locomo(DATA).groups[: max(2, args.conversations)]
    match: list[float] = []
    noise: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        vectors, units, model = [], [], ""
        for index, group in enumerate(groups):
            base = Path(tmp) / str(index)
            workspace = testing.write_workspace(base / "ws", group.files)
            cache = {"cache": {"path": args.cache}} if args.cache else {}
            config = testing.router_config(
                base, workspace, backend="sqlite", embedding=args.provider, **cache
            )
            with Router.from_config(config) as router:
                embedder = router.embedder
                assert embedder is not None
                model = embedder.model
                snapshot = router.snapshot()
                chunks = [c for d in snapshot.documents for c in snapshot.chunks(d)]
                matrix = np.array(embedder.embed_documents([c.text for c in chunks]))
                held = [covered(c, group.units) for c in chunks]
                questions = np.array([embedder.embed_query(q.text) for q in group.queries])
            vectors.append((matrix, held, questions))
            units.append(group)
        for index, (matrix, held, questions) in enumerate(vectors):
            other = vectors[(index + 1) % len(vectors)][0]
            for q, query in zip(questions, units[index].queries, strict=True):
                own = matrix @ q
                best = [own[i] for i, h in enumerate(held) if h & query.relevant.keys()]
                if best:
                    match.append(float(max(best)))
                noise.append(float(np.max(other @ q)))
    scale = vector_scale(model)
    print(f"model {model}: {len(match)} questions; percentiles 5/25/50/75/95")
    print(f"match cosine (best evidence chunk)       {percentiles(match)}")
    print(f"noise cosine (best chunk, other people) {percentiles(noise)}")
    print(f"calibration floor {scale.floor} ceiling {scale.ceiling}")
    # Equal error: the cosine where the share of matches kept equals the share of noise dropped.
    cut = min(
        (c / 1000 for c in range(1000)),
        key=lambda c: abs(
            statistics.fmean(m >= c for m in match) - statistics.fmean(n < c for n in noise)
        ),
    )
    kept = statistics.fmean(m >= cut for m in match)
    print(f"equal-error cosine {cut:.3f}: matches kept {kept:.3f}, noise dropped {kept:.3f}")
    for threshold in (0.25, 0.3, 0.35, 0.4):
        keep = statistics.fmean(0.7 * scale(c) >= threshold for c in match)
        leak = statistics.fmean(0.7 * scale(c) >= threshold for c in noise)
        print(f"min_score {threshold}: vector-only match kept {keep:.3f}, noise kept {leak:.3f}")


if __name__ == "__main__":
    main()
