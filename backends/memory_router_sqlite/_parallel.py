"""Pieces of one query's work shared between the calling thread and one helper thread.

A full-text query over a large index spends its time computing BM25 for every matching
row, in SQLite, which releases the GIL: two halves of the rowid range on two connections
use both cores. On a busy machine the helper may get no core for a while, so nothing
waits for it to start: each piece is claimed by whichever thread is free first, and the
caller, which claims pieces until none is left, waits only for a piece the helper has
already started. While another search is running (``serve`` with concurrent clients) the
other core is already busy, so :func:`alone` tells callers not to split at all.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from memory_router.kit import wait_event

T = TypeVar("T")

_running = [0]  # searches in flight in this process
_running_lock = threading.Lock()


@contextlib.contextmanager
def searching() -> Iterator[None]:
    """Count this search as running (see :func:`alone`)."""
    with _running_lock:
        _running[0] += 1
    try:
        yield
    finally:
        with _running_lock:
            _running[0] -= 1


def alone() -> bool:
    """Whether the calling search (inside :func:`searching`) is the only one running."""
    return _running[0] <= 1


@functools.cache
def _helper() -> queue.SimpleQueue[Callable[[], None]]:
    """The helper thread's inbox (the thread starts on first use, not at import)."""
    inbox: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def serve() -> None:
        while True:
            inbox.get()()

    threading.Thread(target=serve, daemon=True, name="sqlite-search-helper").start()
    return inbox


def share(pieces: Sequence[Callable[[], T]]) -> list[T]:
    """Every piece's result, in order; the pieces run on this thread and the helper.

    The first exception a piece raised is raised here, after every claimed piece ended.
    """
    results: list[Any] = [None] * len(pieces)
    errors: list[BaseException] = []
    claims = itertools.count()
    left = [len(pieces)]
    lock = threading.Lock()
    done = threading.Event()

    def work() -> None:
        while (index := next(claims)) < len(pieces):
            try:
                results[index] = pieces[index]()
            except BaseException as error:  # raised on the caller's thread below
                errors.append(error)
            with lock:
                left[0] -= 1
                if not left[0]:
                    done.set()

    if len(pieces) > 1:
        _helper().put(work)
    work()
    wait_event(done)
    if errors:
        raise errors[0]
    return results
