"""Build a small BEIR-layout corpus from documentation every CPython ships.

    .venv/bin/python bench/build_pydocs_beir.py OUT_DIR
    .venv/bin/memory-router bench beir --data OUT_DIR

Documents (no download: both come with the interpreter): the language-reference topics of
``pydoc_data.topics`` (what ``help("with")`` prints; ``topic:<name>``) and the docstrings of
top-level standard-library modules at least 300 characters long (``module:<name>``).
Queries: the 40 questions in :data:`QUERIES`, written by hand for this corpus — phrased as
a user would ask, mostly *not* with the document's own words — with relevance judged by
reading the documents (2 = answers it, 1 = related). They were written before any run and
not changed after; the constants of the retrieval code were not tuned on them. The corpus
depends on the Python version: ``memory-router bench`` prints the dataset's sha256.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from pathlib import Path

MIN_DOC_CHARS = 300
SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "__phello__"}

# (query, {doc id: grade})
QUERIES: list[tuple[str, dict[str, int]]] = [
    ("make my own class usable in a with block", {"topic:context-managers": 2, "topic:with": 2}),
    ("catch an error and always run cleanup code", {"topic:try": 2, "topic:exceptions": 1}),
    (
        "parse command line flags and positional arguments",
        {"module:argparse": 2, "module:getopt": 1, "module:optparse": 1},
    ),
    ("read and write comma separated spreadsheet files", {"module:csv": 2}),
    ("run another program and capture what it prints", {"module:subprocess": 2}),
    ("pick random numbers and shuffle a list", {"module:random": 2}),
    (
        "turn python objects into bytes and load them back later",
        {"module:pickle": 2, "module:marshal": 1, "module:shelve": 1},
    ),
    ("match text against a pattern with groups", {"module:re": 2}),
    ("match file names against shell wildcards like *.txt", {"module:fnmatch": 2}),
    ("show a number with thousands separators and padding", {"topic:formatstrings": 2}),
    ("what happens when a generator function pauses and resumes", {"topic:yield": 2}),
    ("small anonymous functions written in one expression", {"topic:lambda": 2}),
    ("how floor division and remainder behave", {"topic:binary": 2}),
    (
        "how objects are compared for equality and ordering",
        {"topic:comparisons": 2, "topic:customization": 1},
    ),
    ("intercept reading a missing attribute on an object", {"topic:attribute-access": 2}),
    (
        "take every second element of a list with a slice",
        {"topic:slicings": 2, "topic:typesseq": 1},
    ),
    ("methods of text strings such as split, strip and replace", {"topic:string-methods": 2}),
    ("dictionary keys values and items views", {"topic:typesmapping": 2, "topic:dict": 1}),
    (
        "leave a loop early and the else clause of loops",
        {"topic:break": 2, "topic:for": 1, "topic:while": 1},
    ),
    (
        "change a variable of the enclosing function from a nested function",
        {"topic:nonlocal": 2, "topic:naming": 1, "topic:global": 1},
    ),
    ("how the import statement finds and loads a module", {"topic:import": 2, "module:runpy": 1}),
    ("which values are treated as false in a condition", {"topic:truth": 2, "topic:booleans": 1}),
    ("send an email through a mail server", {"module:smtplib": 2}),
    ("compress and decompress data", {"module:zlib": 2, "module:lzma": 2}),
    ("current time, sleeping and converting timestamps", {"module:time": 2}),
    (
        "pause a running program at a breakpoint and step through it",
        {"topic:debugger": 2, "module:pdb": 2},
    ),
    (
        "coroutines defined with async def and the await expression",
        {"topic:async": 2, "topic:await": 2},
    ),
    ("raise an exception from another one to chain the cause", {"topic:raise": 2}),
    ("pack numbers into a binary record of bytes", {"module:struct": 2}),
    ("create temporary files and folders that clean up", {"module:tempfile": 2}),
    ("average, median and standard deviation of data", {"module:statistics": 2}),
    ("duplicate an object including nested objects", {"module:copy": 2}),
    ("compute a sha256 digest of some bytes", {"module:hashlib": 2}),
    (
        "make an object behave like a container with len and indexing",
        {"topic:sequence-types": 2, "topic:specialnames": 1},
    ),
    ("how to write float literals with an exponent", {"topic:floating": 2, "topic:numbers": 1}),
    ("remove a name binding or an item from a list", {"topic:del": 2}),
    ("priority queue with the smallest item first", {"module:heapq": 2}),
    ("show the differences between two texts line by line", {"module:difflib": 2}),
    ("read settings from an ini style configuration file", {"module:configparser": 2}),
    ("write tests for my code and run them", {"module:unittest": 2, "module:doctest": 1}),
]


def module_docs() -> dict[str, str]:
    docs: dict[str, str] = {}
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in SKIP:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception:  # platform-specific or deprecated modules
            continue
        text = (module.__doc__ or "").strip()
        if len(text) >= MIN_DOC_CHARS:
            docs[f"module:{name}"] = text
    return docs


def corpus() -> dict[str, tuple[str, str]]:
    from pydoc_data.topics import topics

    docs = {f"topic:{k}": (k, v.strip()) for k, v in sorted(topics.items())}
    docs.update({k: (k.split(":", 1)[1], v) for k, v in module_docs().items()})
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", metavar="OUT_DIR", type=Path, help="where the BEIR files go")
    out = parser.parse_args().out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    docs = corpus()
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, (title, text) in docs.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for index, (text, _) in enumerate(QUERIES, start=1):
            f.write(json.dumps({"_id": f"q{index}", "text": text}) + "\n")
    missing = []
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for index, (_, judged) in enumerate(QUERIES, start=1):
            for doc_id, grade in judged.items():
                if doc_id not in docs:
                    missing.append(doc_id)
                f.write(f"q{index}\t{doc_id}\t{grade}\n")
    print(f"{len(docs)} documents, {len(QUERIES)} queries; judged but absent: {missing or 'none'}")


if __name__ == "__main__":
    main()
