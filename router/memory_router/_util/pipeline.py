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
    producer = _Producer(items, depth=depth, name=name)
    producer.thread.start()
    finished = False
    try:
        while True:
            ok, item = producer.take()
            if not ok:
                raise item
            if item is _END:
                finished = True
                return
            yield item
    finally:
        producer.stop.set()
        if not finished and cancel is not None:
            cancel.set()
        join_thread(producer.thread)


class _Producer:
    """The background half of :func:`prefetch`: computes items into a bounded queue,
    ``(True, item)`` each, then ``(True, _END)``, or ``(False, error)``; stops putting
    once ``stop`` is set."""

    def __init__(self, items: Iterable[Any], *, depth: int, name: str) -> None:
        self.name = name
        self.slots: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=max(1, depth))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(items,), name=name, daemon=True)

    def take(self) -> tuple[bool, Any]:
        """The next slot. Waits in slices: a consumer on the main thread must still see
        Ctrl-C."""
        while True:
            try:
                return self.slots.get(timeout=SLICE_S)
            except queue.Empty:
                if self.thread.is_alive() or not self.slots.empty():
                    continue
                raise RuntimeError(f"{self.name}: the producer ended without a last item") from None

    def _put(self, item: tuple[bool, Any]) -> bool:
        while not self.stop.is_set():
            try:
                self.slots.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, items: Iterable[Any]) -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not self._put((True, item)):
                    return
            self._put((True, _END))
        except BaseException as error:  # handed to the consumer, raised there
            self._put((False, error))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
