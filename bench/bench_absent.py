"""Does a search say "nothing" when the answer is not in the memory?

    .venv/bin/python bench/bench_absent.py [--provider minilm] [--cache PATH] [-v]
    .venv/bin/python bench/bench_absent.py --override '{"query": {"min_score": 0.25}}'

Indexes the personal-notes workspace of ``_absent_notes.py`` with the SQLite backend and
asks its two question sets on the defaults (``max_results``, ``min_score``) through
:meth:`Router.search`, as an agent's ``memory_search`` would:

* **absent** (the answer is not in the notes): the share answered with no hit at all
  above ``min_score`` — the agent is told "nothing", instead of a wrong memory to trust;
* **present** (the answer is in the notes): the share whose expected text is in a hit
  (``answered``) and in the first hit (``first``).

``-v`` prints each question's first hit and score. The hashing embedder is plumbing, not a
quality figure: use ``minilm`` (the default) or ``none`` (keyword-only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _absent_notes import ABSENT, FILES, PRESENT

from memory_router import Router, SearchResponse, testing


def first_line(response: SearchResponse) -> str:
    if not response.results:
        return "(nothing)"
    top = response.results[0]
    text = " ".join(top.snippet.split())[:70]
    return f"{top.score:.3f} {top.path}:{top.start_line}-{top.end_line} {text}"


def measure(router: Router, verbose: bool) -> dict[str, float]:
    abstained, answered, first = [], [], []
    for question in ABSENT:
        response = router.search(question)
        abstained.append(not response.results)
        if verbose:
            print(f"absent  {question!r}: {first_line(response)}")
    for question, expected in PRESENT.items():
        response = router.search(question)
        shown = [expected in hit.snippet for hit in response.results]
        answered.append(any(shown))
        first.append(bool(shown) and shown[0])
        if verbose:
            mark = "ok " if any(shown) else "MISS"
            print(f"present {mark} {question!r}: {first_line(response)}")
    return {
        "absent_abstained": statistics.fmean(abstained),
        "present_answered": statistics.fmean(answered),
        "present_first": statistics.fmean(first),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="minilm", help="embedding provider (none: keyword)")
    parser.add_argument("--cache", default="", help="embedding cache kept between runs")
    parser.add_argument("--override", default="{}", help="extra config tables as JSON")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    tables: dict[str, Any] = json.loads(args.override)
    if args.cache:
        tables.setdefault("cache", {})["path"] = args.cache
    with tempfile.TemporaryDirectory() as tmp:
        workspace = testing.write_workspace(Path(tmp) / "ws", FILES)
        config = testing.router_config(
            tmp, workspace, backend="sqlite", embedding=args.provider, **tables
        )
        with Router.from_config(config) as router:
            router.sync()
            figures = measure(router, args.verbose)
            q = router.config.query
    print(
        f"provider {args.provider}, min_score {q.min_score:g}, max_results {q.max_results}: "
        f"{len(ABSENT)} absent, {len(PRESENT)} present questions"
    )
    print(f"absent:  nothing above min_score {figures['absent_abstained']:.3f}")
    print(
        f"present: answer in a hit {figures['present_answered']:.3f}, "
        f"in the first hit {figures['present_first']:.3f}"
    )


if __name__ == "__main__":
    sys.exit(main())
