"""Waits that Ctrl-C and SIGTERM can end, whichever thread the kernel gives the signal to.

Python runs signal handlers on the main thread only, and a signal sent to the process may
be delivered to any of its threads: Linux picks another thread when the main one already
has a signal pending, and then nothing wakes the main thread. A main thread blocked in one
long lock, event, future or pipe wait notices the interrupt only when that wait ends: a
``search`` waiting 60 s for a hung sidecar ignored Ctrl-C for those 60 s. These helpers
wait in slices of at most :data:`SLICE_S` on the main thread, so the interrupt is raised
within that time; on any other thread they wait in one piece, as the plain call would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported where used: a keyword-only CLI search needs neither
    import concurrent.futures
    import subprocess

T = TypeVar("T")

SLICE_S = 0.1


def _sliced(wait: Callable[[float | None], bool], timeout: float | None) -> bool:
    """``wait(t)`` until it returns true or ``timeout`` (``None``: no limit) has passed."""
    if threading.current_thread() is not threading.main_thread():
        return wait(timeout)
    deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
    while True:
        left = SLICE_S if deadline is None else min(SLICE_S, deadline - time.monotonic())
        if wait(max(0.0, left)):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def wait_event(event: threading.Event, timeout: float | None = None) -> bool:
    """:meth:`threading.Event.wait`, interruptible on the main thread."""
    return _sliced(event.wait, timeout)


def join_thread(thread: threading.Thread, timeout: float | None = None) -> bool:
    """:meth:`threading.Thread.join`; returns whether the thread has ended."""

    def join(step: float | None) -> bool:
        thread.join(step)
        return not thread.is_alive()

    return _sliced(join, timeout)


def acquire_lock(lock: Any, timeout: float | None = None) -> bool:
    """``lock.acquire()`` (a ``Lock`` or ``RLock``); returns whether it was acquired."""
    return _sliced(lambda step: bool(lock.acquire(timeout=-1 if step is None else step)), timeout)


def wait_future(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """:meth:`concurrent.futures.Future.result`: raises ``TimeoutError`` past ``timeout``."""
    import concurrent.futures

    def done(step: float | None) -> bool:
        return bool(concurrent.futures.wait([future], timeout=step).done)

    if not _sliced(done, timeout):
        raise concurrent.futures.TimeoutError()
    return future.result()


def communicate(process: subprocess.Popen[Any], timeout: float | None) -> tuple[Any, Any]:
    """:meth:`subprocess.Popen.communicate` (retrying it after a slice loses no output);
    past ``timeout`` raises ``TimeoutExpired`` with what was read so far."""
    import subprocess

    answer: list[tuple[Any, Any]] = []
    expired: list[subprocess.TimeoutExpired] = []

    def attempt(step: float | None) -> bool:
        try:
            answer.append(process.communicate(timeout=step))
        except subprocess.TimeoutExpired as error:
            expired[:] = [error]
            return False
        return True

    if not _sliced(attempt, timeout):
        raise subprocess.TimeoutExpired(
            process.args, timeout or 0.0, expired[-1].output, expired[-1].stderr
        ) from None
    return answer[0]
