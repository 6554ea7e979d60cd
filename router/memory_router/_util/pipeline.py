"""Overlapping the stages of indexing: read and chunk, embed, write.

:func:`prefetch` runs an iterator in a background thread a few items ahead of its
consumer. A backend's sync chains two of them — chunking and hashing the next files while
the current group is embedded, embedding the next group while the current one is written
— so the embedder, which releases the GIL, is never idle waiting for Python work.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from .waits import SLICE_S, join_thread

T = TypeVar("T")
_END = object()


def prefetch(
    items: Iterable[T],
    *,
    depth: int = 1,
    name: str = "prefetch",
    cancel: threading.Event | None = None,
) -> Iterator[T]:
    """Yield ``items`` in order, computed by a background thread up to ``depth`` ahead.

    An exception in the producer is raised at the consumer's next step. When the
    consumer stops early (``break``, an exception such as Ctrl-C's, ``close()``), the
    producer stops after its current item and is joined, and ``items`` is closed when it
    is a generator. ``cancel`` is set then (never when the items simply ran out): work
    that computes an item may watch it to end early, so the consumer does not wait for
    a long item it no longer wants.
    """
    slots: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not put((True, item)):
                    return
            put((True, _END))
        except BaseException as error:  # handed to the consumer, raised there
            put((False, error))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    finished = False
    try:
        while True:
            try:  # in slices: a consumer on the main thread must still see Ctrl-C
                ok, item = slots.get(timeout=SLICE_S)
            except queue.Empty:
                if thread.is_alive() or not slots.empty():
                    continue
                raise RuntimeError(f"{name}: the producer ended without a last item") from None
            if not ok:
                raise item
            if item is _END:
                finished = True
                return
            yield item
    finally:
        stop.set()
        if not finished and cancel is not None:
            cancel.set()
        join_thread(thread)
