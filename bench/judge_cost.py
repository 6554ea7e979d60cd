"""What an answerability judge on MiniLM-L6 would cost per query (issue 22, item 2).

    .venv/bin/python bench/judge_cost.py

No registry package reachable here ships a cross-encoder (bench/NOTES.md, "An answerability
judge"), so this measures a stand-in: ``cross-encoder/ms-marco-MiniLM-L-6-v2`` has the trunk of
the all-MiniLM-L6-v2 we ship (6 layers of 384, the same vocabulary) and adds only a pooler and
a 384 -> 1 head. Each question of ``bench/curated`` is paired, as a cross-encoder pairs its
input, with 6 bullets of its workspace (an answer's default ``max_results``), and the 6 pairs
run through the minilm plugin's ONNX graph on one thread, fp32 and int8 as ``minilm-int8``
quantises it. Prints the median and 90th percentile per query, of wall-clock time and of the
process's CPU time (which a machine shared with other work inflates far less).
"""

from __future__ import annotations

import random
import statistics
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_router_minilm import model_dir
from memory_router_minilm._bert import BertEncoder
from memory_router_minilm._fast import ort_session
from memory_router_minilm._graph import build_model
from memory_router_minilm._provider import load_tokenizer
from memory_router_minilm._quantized import _quantize

CURATED = Path(__file__).resolve().parent / "curated"
HITS = 6  # pairs per query: the default max_results


def question_pairs(seed: int = 0) -> list[list[tuple[str, str]]]:
    """Per question of every curated workspace: HITS (question, bullet) pairs of its workspace."""
    rng = random.Random(seed)
    queries: list[list[tuple[str, str]]] = []
    for spec_file in sorted(CURATED.glob("*.toml")):
        spec = tomllib.loads(spec_file.read_text(encoding="utf-8"))
        notes = spec_file.with_suffix("")
        bullets = [
            line.strip().lstrip("-* ")
            for path in sorted(notes.rglob("*.md"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip().startswith(("- ", "* "))
        ]
        questions = [*spec["off_topic"], *(q for fact in spec["fact"] for q in fact["questions"])]
        queries += [[(q, rng.choice(bullets)) for _ in range(HITS)] for q in questions]
    return queries


def pair_runner(session: Any, tokenizer: Any) -> Callable[[Sequence[tuple[str, str]]], Any]:
    """One onnxruntime call over the pairs, tokenised as pairs and padded to the longest."""
    names = [i.name for i in session.get_inputs()]

    def run(pairs: Sequence[tuple[str, str]]) -> Any:
        encodings = tokenizer.encode_batch(list(pairs))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return session.run(None, dict(zip(names, (ids, mask), strict=False)))

    return run


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[int(0.9 * len(ordered))]
    return f"median {statistics.median(ordered):.1f} ms, p90 {p90:.1f} ms"


def main() -> None:
    folder = model_dir()
    tokenizer = load_tokenizer(folder)
    encoder = BertEncoder.from_dir(folder)
    queries = question_pairs()
    models = (("fp32", build_model(encoder).SerializeToString()), ("int8", _quantize(encoder)))
    for name, model in models:
        run = pair_runner(ort_session(model), tokenizer)
        for pairs in queries[:5]:
            run(pairs)  # warm-up
        wall, cpu = [], []
        for pairs in queries:
            start, start_cpu = time.perf_counter(), time.process_time()
            run(pairs)
            wall.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        print(f"{name}: {len(queries)} queries x {HITS} pairs;", end=" ")
        print(f"{_spread(wall)} wall, {_spread(cpu)} CPU")


if __name__ == "__main__":
    main()
