"""A writer or reader process sharing one LanceDB store (run as a script by the tests).

``python lance_worker.py writer|reader CONFIG SECONDS OUT [N]``: a writer stores an entry
and syncs, again and again, for SECONDS (and at least 5 times); a reader searches and
counts the store's entries until ``OUT.done`` appears (written after the test's final
sync), then polls until it sees the number of entries in that file and records how long
that took. Results go to OUT as JSON. Each process is started fresh (no fork after
lancedb is imported).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from memory_router import MemoryRouterError, Router, testing


def entry_rows(router: Router) -> int:
    backend: Any = router.backend("lancedb")
    pointer = backend.store.pointer()
    if pointer is None:
        return 0
    count: int = backend.store.tables(pointer.generation).entries.count_rows()
    return count


def writer(router: Router, seconds: float, number: int) -> dict[str, Any]:
    ids, errors = [], []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline or i < 5:
        i += 1
        entry = router.store(f"writer {number} note {i}: the kiln reached {900 + i} degrees")
        ids.append(entry.id)
        errors.extend(e for report in router.sync() for e in report.errors)
    return {"ids": ids, "errors": errors}


def reader(router: Router, out: Path) -> dict[str, Any]:
    errors: list[str] = []
    searches = 0
    done = out.with_suffix(".done")
    give_up = time.monotonic() + 300
    while not done.exists() and time.monotonic() < give_up:
        try:
            router.backend("lancedb").search(_request("kiln degrees"))
            entry_rows(router)
            searches += 1
        except MemoryRouterError as error:
            errors.append(error.message)
    expected = int(done.read_text(encoding="utf-8"))
    seen_at = time.monotonic()
    count = entry_rows(router)
    while count != expected and time.monotonic() - seen_at < 120:
        time.sleep(0.05)
        count = entry_rows(router)
    return {
        "errors": errors,
        "searches": searches,
        "final_count": count,
        "converged_s": time.monotonic() - seen_at,
    }


def _request(query: str) -> Any:
    from memory_router.kit import SearchRequest

    return SearchRequest(query=query, max_results=10, min_score=0.0, candidates=40)


def main(argv: list[str]) -> None:
    role, config, seconds, out = argv[0], argv[1], float(argv[2]), Path(argv[3])
    with Router.from_config(config, plugins=[testing]) as router:
        writing = role == "writer"
        result = writer(router, seconds, int(argv[4])) if writing else reader(router, out)
    out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
