"""Readers in one process survive rebuilds swapped in by other processes.

A rebuild renames three files (the index, its ``-wal`` and ``-shm``); SQLite opens the
companions by name after the main file, so a connection opened (or closed) in another
process halfway through a swap paired one file with another's log ("disk I/O error",
about once per 300 swaps), and a process opening the index in the middle of a swap
found it missing: it put the old file back from its backup or created an empty index.

The first test pauses a swap halfway in another process (as a loaded machine deschedules
one): an open must wait for it and then see the new index. The second runs the real
thing for 10 s: two processes rebuild in a loop, two open the backend afresh per search
(as CLI commands do), and two threads here search through one long-lived Router: not
one search may fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from memory_router import Router, testing
from memory_router.kit import SearchRequest

SECONDS = 10.0
WORKER = Path(__file__).with_name("swap_worker.py")


def notes(tmp_path: Path, word: str = "topic") -> Path:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    for n in range(12):
        facts = "\n".join(f"fact {n}-{i} about {word}{(n + i) % 7}" for i in range(8))
        (workspace / f"memory/note-{n:02d}.md").write_text(f"# note {n}\n\n{facts}\n")
    return workspace


def hits(router: Router, query: str) -> list[str]:
    request = SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10)
    return [h.snippet for h in router.backend("sqlite").search(request).hits]


def test_an_open_in_the_middle_of_another_process_swap_waits_for_the_new_index(
    tmp_path: Path,
) -> None:
    old = testing.router_config(tmp_path, notes(tmp_path), backend="sqlite")
    new = testing.router_config(
        tmp_path / "new", notes(tmp_path / "new", word="zephyr"), backend="sqlite"
    )
    with Router.from_config(new, plugins=[testing]) as router:
        router.sync()
    index = tmp_path / "state/agents/main/memory.sqlite"
    temp = index.with_name("memory.sqlite.tmp-paused")
    with Router.from_config(old, plugins=[testing]) as before:
        before.sync()
        assert hits(before, "topic3")
        shutil.copy(tmp_path / "new/state/agents/main/memory.sqlite", temp)
        swap = subprocess.Popen(
            [sys.executable, str(WORKER), "pause", str(index), str(temp), "1.5"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not Path(f"{index}.paused").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert Path(f"{index}.paused").exists(), "the swap did not start"
            # An open connection keeps reading its own file meanwhile, without waiting.
            assert hits(before, "topic3")
            started = time.monotonic()
            with Router.from_config(old, plugins=[testing]) as fresh:
                found = hits(fresh, "zephyr3")
                waited = time.monotonic() - started
                assert found, "the fresh open did not see the new index"
                assert not hits(fresh, "topic3")
        finally:
            _, err = swap.communicate(timeout=60)
        assert swap.returncode == 0, err
        assert waited > 0.5  # it waited for the swap instead of opening half of it
        assert hits(before, "zephyr3")  # and the open Router follows the swap
    assert not list(index.parent.glob("*.backup-*"))


def search_until(
    router: Router, stop: threading.Event, counts: list[int], errors: list[str]
) -> None:
    backend = router.backend("sqlite")
    request = SearchRequest(query="topic3 fact", max_results=5, min_score=0.0, candidates=10)
    while not stop.is_set():
        try:
            if not backend.search(request).hits:
                errors.append("reader: no hits")
        except Exception as error:
            errors.append(f"reader: {type(error).__name__}: {error}")
        counts.append(1)


def worker(role: str, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), role, str(config), str(SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, object]:
    try:
        out, err = process.communicate(timeout=SECONDS + 120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 0, err[-2000:]
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def test_searches_survive_rebuilds_swapped_in_by_other_processes(
    tmp_path: Path,
) -> None:
    workspace = notes(tmp_path)
    config = testing.router_config(tmp_path, workspace, backend="sqlite", embedding="hash")
    path = tmp_path / "config-0.toml"
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()
        processes = [worker(role, path) for role in ("rebuild", "rebuild", "open", "open")]
        stop = threading.Event()
        counts: list[int] = []
        errors: list[str] = []
        threads = [
            threading.Thread(target=search_until, args=(router, stop, counts, errors))
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        try:
            results = [finish(p) for p in processes]
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        status = router.backend("sqlite").status()
    for result in results:
        errors += result["errors"]  # type: ignore[arg-type]
    swaps = results[0]["rounds"] + results[1]["rounds"]  # type: ignore[operator]
    print(
        f"swaps {swaps} searches {len(counts)} opens {results[2]['rounds']} {results[3]['rounds']}"
    )
    assert not errors, f"{len(errors)} of {len(counts)} searches failed: {errors[:5]}"
    assert status.available, status.error
    assert swaps >= 5, swaps  # the test means something only if swaps happened
    assert len(counts) >= 200
    assert results[2]["rounds"] >= 20  # type: ignore[operator]
    assert results[3]["rounds"] >= 20  # type: ignore[operator]


def test_a_second_reader_of_one_thread_does_not_wait_for_a_swap_waiting_for_its_first(
    tmp_path: Path,
) -> None:
    """A search takes a second reader for its other half while holding one; a rebuild of
    this process swapping the file in between waits for the first, so the second must not
    wait for the swap (before, both waited forever)."""
    old = testing.router_config(tmp_path, notes(tmp_path), backend="sqlite")
    new = testing.router_config(
        tmp_path / "new", notes(tmp_path / "new", word="zephyr"), backend="sqlite"
    )
    with Router.from_config(new, plugins=[testing]) as router:
        router.sync()
    router = Router.from_config(old, plugins=[testing])  # closed only if nothing hung
    router.sync()
    store = router.backend("sqlite").store  # type: ignore[attr-defined]
    temp = store.temp_path()
    shutil.copy(tmp_path / "new/state/agents/main/memory.sqlite", temp)
    nested, other_done = threading.Event(), threading.Event()

    def swap() -> None:
        with store.write_lock:
            store.replace_with(temp)

    def other_reader() -> None:  # another thread's first reader: it waits for the swap
        with store.reader():
            other_done.set()

    def search_halves() -> None:
        with store.reader():
            swapper.start()
            deadline = time.monotonic() + 30
            while not store._swapping and time.monotonic() < deadline:
                time.sleep(0.01)
            assert store._swapping, "the swap did not start waiting for the reader"
            with store.reader() as conn:  # the other half's reader
                assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
                nested.set()
            other.start()
            assert not other_done.wait(0.3)

    swapper = threading.Thread(target=swap, daemon=True)
    other = threading.Thread(target=other_reader, daemon=True)
    search = threading.Thread(target=search_halves, daemon=True)
    search.start()
    search.join(timeout=30)
    assert nested.is_set(), "the second reader waited for a swap waiting for the first"
    swapper.join(timeout=30)
    assert not swapper.is_alive(), "the swap never ended"
    other.join(timeout=30)
    assert other_done.is_set()
    assert hits(router, "zephyr3")
    assert not hits(router, "topic3")
    router.close()


def test_a_reader_follows_another_process_swap_only_when_the_write_lock_is_free(
    tmp_path: Path,
) -> None:
    """A search that finds the index replaced by another process's rebuild reopens its
    connections only if it can take the write lock at once (its holder may be this
    process's own swap, waiting for that very search): meanwhile it answers from the file
    its connection has open, without waiting; the first search once the lock is free
    follows the swap."""
    old = testing.router_config(tmp_path, notes(tmp_path), backend="sqlite")
    new = testing.router_config(
        tmp_path / "new", notes(tmp_path / "new", word="zephyr"), backend="sqlite"
    )
    with Router.from_config(new, plugins=[testing]) as router:
        router.sync()
    with Router.from_config(old, plugins=[testing]) as router:
        router.sync()
        store = router.backend("sqlite").store  # type: ignore[attr-defined]
        assert hits(router, "topic3")  # a pooled connection to the old file
        rebuilt = store.path.with_name("memory.sqlite.other")  # another process's rebuild
        shutil.copy(tmp_path / "new/state/agents/main/memory.sqlite", rebuilt)
        rebuilt.replace(store.path)
        held, release = threading.Event(), threading.Event()

        def writer() -> None:  # this process's writer, busy meanwhile
            with store.write_lock:
                held.set()
                release.wait(30)

        busy = threading.Thread(target=writer, daemon=True)
        busy.start()
        assert held.wait(30)
        answers: list[list[str]] = []
        reader = threading.Thread(target=lambda: answers.append(hits(router, "topic3")))
        reader.start()
        reader.join(timeout=30)
        assert answers, "the search waited for the write lock"
        assert answers[0], "it answered from the file its connection has open"
        release.set()
        busy.join(timeout=30)
        assert hits(router, "zephyr3")
        assert not hits(router, "topic3")
