"""``prefetch``: a background stage that runs ahead, keeps order, hands errors over, stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from memory_router.kit import prefetch


def test_items_come_in_order_from_a_thread_that_runs_ahead() -> None:
    produced: list[tuple[int, float]] = []
    threads: set[str] = set()

    def source() -> Iterator[int]:
        for i in range(4):
            threads.add(threading.current_thread().name)
            produced.append((i, time.monotonic()))
            yield i

    consumed = []
    for item in prefetch(source(), depth=2, name="stage"):
        time.sleep(0.05)  # the consumer is the slow stage
        consumed.append((item, time.monotonic()))
    assert [i for i, _ in consumed] == [0, 1, 2, 3]
    assert threads == {"stage"}
    # Item 1 was ready before the consumer finished item 0: the stages overlapped.
    assert produced[1][1] < consumed[0][1]


def test_a_producer_error_reaches_the_consumer_after_the_good_items() -> None:
    def source() -> Iterator[int]:
        yield 1
        raise ValueError("disk went away")

    stream = prefetch(source())
    assert next(stream) == 1
    with pytest.raises(ValueError, match="disk went away"):
        next(stream)


def test_stopping_early_stops_and_closes_the_producer() -> None:
    closed = threading.Event()
    produced = []

    def source() -> Iterator[int]:
        try:
            for i in range(1000):
                produced.append(i)
                yield i
        finally:
            closed.set()

    stream = prefetch(source(), depth=1)
    assert next(stream) == 0
    stream.close()  # joins the producer thread
    assert closed.is_set()
    assert len(produced) <= 3  # it stopped within its look-ahead, not at the end


def test_cancel_is_set_when_the_consumer_stops_early_so_a_long_item_can_end() -> None:
    cancel = threading.Event()
    steps: list[int] = []

    def long_items() -> Iterator[int]:
        yield 0
        for step in range(600):  # a long second item that watches ``cancel`` (60 s)
            if cancel.is_set():
                return
            steps.append(step)
            time.sleep(0.1)
        yield 1

    items = prefetch(long_items(), cancel=cancel)
    assert next(items) == 0
    while not steps:  # the producer is inside the long item
        time.sleep(0.01)
    items.close()  # the consumer stops early: close() returns once the producer ended
    assert cancel.is_set()
    assert len(steps) < 600


def test_cancel_stays_clear_when_the_items_run_out_even_in_chained_stages() -> None:
    # Two stages sharing one event (as the SQLite sync's chunking and embedding do): the
    # first running out must not stop the second, which would then never deliver its end.
    cancel = threading.Event()
    first = prefetch(iter(range(5)), cancel=cancel, name="first")
    second = prefetch((i * 2 for i in first), cancel=cancel, name="second")
    assert list(second) == [0, 2, 4, 6, 8]
    assert not cancel.is_set()
