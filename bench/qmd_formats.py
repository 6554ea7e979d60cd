"""Which query/document formatting suits all-MiniLM-L6-v2 inside QMD? (issue 23, item 5)

QMD formats what it embeds by the embed model's file name (``src/llm.ts``):

- ``nomic`` (any other name, QMD's default): ``task: search result | query: {q}`` and
  ``title: {title} | text: {chunk}``;
- ``qwen`` (a name matching ``qwen.*embed``): ``Instruct: Retrieve relevant documents for
  the given query\\nQuery: {q}`` and ``{title}\\n{chunk}``;
- ``plain``: the text alone, as MiniLM was trained (QMD cannot be told to do this).

Pairs: each LoCoMo question of the first ``--conversations`` conversations (default 1) against its
evidence turns (``[D1:3] Speaker: text``), ranked among every turn of its conversation
(turn level), and among the conversation's ~2,000-character runs of turns (chunk level,
close to what QMD embeds). Prints R@1, R@10 and MRR per formatting. The model is the GGUF
the QMD backend writes (``--model``), run by llama-cpp-python as QMD's llama.cpp runs it.

    .venv/bin/python bench/qmd_formats.py --model STATE/models/all-MiniLM-L6-v2.f32.gguf
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from memory_router._ops.bench_data import load_locomo

INSTRUCT = "Instruct: Retrieve relevant documents for the given query\nQuery: "
FORMATS: dict[str, tuple[Callable[[str], str], Callable[[str, str], str]]] = {
    "plain": (lambda q: q, lambda t, d: d),
    "nomic": (
        lambda q: f"task: search result | query: {q}",
        lambda t, d: f"title: {t} | text: {d}",
    ),
    "qwen": (lambda q: INSTRUCT + q, lambda t, d: f"{t}\n{d}"),
}
CHUNK_CHARS = 2000


def _units(files: dict[str, str], units: dict[str, dict[int, str]]) -> tuple[list, list]:
    """(turns, chunks): ``(title, text, {dia ids})`` for each turn and each run of turns."""
    turns, chunks = [], []
    for path, text in files.items():
        lines = text.split("\n")
        title = lines[0].lstrip("# ")
        run: list[str] = []
        ids: set[str] = set()
        for number, dia in sorted(units[path].items()):
            line = lines[number - 1]
            turns.append((title, line, {dia}))
            if run and sum(len(x) + 1 for x in run) + len(line) > CHUNK_CHARS:
                chunks.append((title, "\n".join(run), ids))
                run, ids = [], set()
            run.append(line)
            ids = ids | {dia}
        if run:
            chunks.append((title, "\n".join(run), ids))
    return turns, chunks


def _norm(v: Sequence[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default="/work/shared/data/locomo/locomo10.json")
    parser.add_argument("--conversations", type=int, default=1)
    args = parser.parse_args()
    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=args.model, embedding=True, n_ctx=512, n_threads=1, verbose=False
    )

    def embed(text: str) -> list[float]:
        ids = llm.tokenize(text.encode(), add_bos=True)[:508]
        return _norm(llm.embed(llm.detokenize(ids).decode(errors="ignore")))

    groups = load_locomo(Path(args.data)).groups[: args.conversations]
    totals: dict[tuple[str, str], list[float]] = {}
    for group in groups:
        turns, chunks = _units(dict(group.files), {k: dict(v) for k, v in group.units.items()})
        for name, (fq, fd) in FORMATS.items():
            for level, docs in (("turn", turns), ("chunk", chunks)):
                vectors = [embed(fd(t, d)) for t, d, _ in docs]
                for query in group.queries:
                    q = embed(fq(query.text))
                    scores = [sum(a * b for a, b in zip(q, v, strict=True)) for v in vectors]
                    order = sorted(range(len(docs)), key=lambda i: -scores[i])
                    ranks = [
                        r for r, i in enumerate(order, 1) if docs[i][2] & query.relevant.keys()
                    ]
                    first = ranks[0] if ranks else len(docs) + 1
                    row = totals.setdefault((name, level), [0, 0, 0, 0])
                    row[0] += first == 1
                    row[1] += first <= 10
                    row[2] += 1 / first
                    row[3] += 1
    print(f"{'format':8} {'level':6} {'n':>5} {'R@1':>6} {'R@10':>6} {'MRR':>6}")
    for (name, level), (r1, r10, mrr, n) in sorted(
        totals.items(), key=lambda x: (x[0][1], x[0][0])
    ):
        print(f"{name:8} {level:6} {n:5.0f} {r1 / n:6.3f} {r10 / n:6.3f} {mrr / n:6.3f}")


if __name__ == "__main__":
    main()
