"""A process that rebuilds or opens one SQLite index in a loop (run as a script by the tests).

``python swap_worker.py rebuild|open CONFIG SECONDS``: ``rebuild`` syncs the backend with
``force`` again and again (each a new file built and swapped into place); ``open`` opens
the backend afresh, as each one-shot CLI command does, and searches once, in four threads
again and again. Each prints one JSON line: how many rounds ran and the errors seen.

``python swap_worker.py pause INDEX NEW SECONDS``: one swap of ``NEW`` into ``INDEX`` done
the way the backend does it (the swap lock held exclusively, the live file and its
companions renamed to a ``.backup-*``, the new file renamed in) but paused ``SECONDS``
halfway, as a loaded machine may deschedule a swapping process. It writes
``INDEX.paused`` when the live file is gone, and exits after the swap.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from memory_router import Router, load_config, testing
from memory_router.kit import SearchRequest

REQUEST = SearchRequest(query="topic3 fact", max_results=5, min_score=0.0, candidates=10)


def rebuild(router: Router, deadline: float, errors: list[str]) -> int:
    backend = router.backend("sqlite")
    snapshot = router.snapshot()
    swaps = 0
    while time.monotonic() < deadline:
        try:
            swaps += backend.sync(snapshot, force=True).full_rebuild
        except Exception as error:
            errors.append(f"rebuild: {type(error).__name__}: {error}")
    return swaps


def open_and_search(router: Router, deadline: float, errors: list[str]) -> int:
    shared: Any = router.backend("sqlite")
    rounds = 0
    while time.monotonic() < deadline:
        try:
            backend = type(shared)(shared.context)  # the backend's own open path, afresh
            try:
                if not backend.search(REQUEST).hits:
                    errors.append("open: no hits")
            finally:
                backend.close()
        except Exception as error:
            errors.append(f"open: {type(error).__name__}: {error}")
        rounds += 1
    return rounds


def main(role: str, config: Path, seconds: float) -> dict[str, object]:
    errors: list[str] = []
    with Router.from_config(load_config(config, environ={}), plugins=[testing]) as router:
        deadline = time.monotonic() + seconds
        if role == "rebuild":
            return {"rounds": rebuild(router, deadline, errors), "errors": errors}
        counts: list[int] = []
        threads = [
            threading.Thread(
                target=lambda: counts.append(open_and_search(router, deadline, errors))
            )
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {"rounds": sum(counts), "errors": errors}


def paused_swap(index: Path, new: Path, seconds: float) -> None:
    backup = index.with_name(f"{index.name}.backup-paused")
    rebuilding = os.open(index.with_name(f"{index.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(rebuilding, fcntl.LOCK_EX)  # held by every rebuild while its new file exists
    fd = os.open(index.with_name(f"{index.name}.swap"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{index}{suffix}").exists():
                os.replace(f"{index}{suffix}", f"{backup}{suffix}")
        Path(f"{index}.paused").touch()
        time.sleep(seconds)
        os.replace(new, index)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{backup}{suffix}").unlink(missing_ok=True)
    finally:
        os.close(fd)
        os.close(rebuilding)


if __name__ == "__main__":
    if sys.argv[1] == "pause":
        paused_swap(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
        sys.exit(0)
    result = main(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]))
    print(json.dumps(result), flush=True)
