"""Waits on the main thread end on a signal the kernel delivered to another thread.

Each test blocks the main thread (pytest's) in one of the helpers with nothing to end the
wait but a watchdog 30 s later, and has a second thread receive the signal (as Linux does
with a process-directed signal when the main thread already has one pending). The
handler's exception must end the wait before the watchdog does: with the plain
``Event.wait`` / ``Thread.join`` / ``Popen.communicate`` the main thread slept on.
"""

from __future__ import annotations

import concurrent.futures
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memory_router.kit import acquire_lock, communicate, join_thread, wait_event, wait_future

WATCHDOG_S = 30.0


class Interrupted(Exception):
    pass


@pytest.fixture
def interrupt_from_another_thread() -> Iterator[threading.Event]:
    """SIGUSR1 (handler: raise ``Interrupted``) sent to a thread that is not the main one,
    once the main thread is waiting; yields the watchdog's event (set if nothing else
    ended the wait)."""

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    receiver_ready = threading.Event()
    stop = threading.Event()
    watchdog = threading.Event()

    def receiver() -> None:  # the thread the kernel picks
        receiver_ready.set()
        stop.wait(WATCHDOG_S)

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    receiver_ready.wait(5)
    timer = threading.Timer(0.3, signal.pthread_kill, (thread.ident, signal.SIGUSR1))
    fallback = threading.Timer(WATCHDOG_S, watchdog.set)
    timer.start()
    fallback.start()
    try:
        yield watchdog
    finally:
        timer.cancel()
        fallback.cancel()
        stop.set()
        thread.join(5)
        signal.signal(signal.SIGUSR1, previous)


def interrupted(wait: Callable[[], object], watchdog: threading.Event) -> bool:
    try:
        wait()
    except Interrupted:
        return not watchdog.is_set()
    return False


def test_wait_event_ends_on_the_interrupt(interrupt_from_another_thread: threading.Event) -> None:
    watchdog = interrupt_from_another_thread
    assert interrupted(lambda: wait_event(watchdog), watchdog)


def test_join_thread_ends_on_the_interrupt(interrupt_from_another_thread: threading.Event) -> None:
    watchdog = interrupt_from_another_thread
    sleeper = threading.Thread(target=watchdog.wait, daemon=True)
    sleeper.start()
    assert interrupted(lambda: join_thread(sleeper, WATCHDOG_S * 2), watchdog)


def test_acquire_lock_ends_on_the_interrupt(interrupt_from_another_thread: threading.Event) -> None:
    watchdog = interrupt_from_another_thread
    lock = threading.Lock()
    lock.acquire()
    threading.Thread(target=lambda: (watchdog.wait(), lock.release()), daemon=True).start()
    assert interrupted(lambda: acquire_lock(lock), watchdog)


def test_wait_future_ends_on_the_interrupt(interrupt_from_another_thread: threading.Event) -> None:
    watchdog = interrupt_from_another_thread
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    threading.Thread(target=lambda: (watchdog.wait(), future.set_result(1)), daemon=True).start()
    assert interrupted(lambda: wait_future(future), watchdog)


def test_communicate_ends_on_the_interrupt(interrupt_from_another_thread: threading.Event) -> None:
    watchdog = interrupt_from_another_thread
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"print('started', flush=True); import time; time.sleep({WATCHDOG_S})",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert interrupted(lambda: communicate(process, WATCHDOG_S * 2), watchdog)
        process.kill()
        out, _ = communicate(process, 10)
        assert out == "started\n"  # what was read before the interrupt is not lost
    finally:
        process.kill()
        process.wait(10)


def test_the_helpers_still_answer_and_time_out_as_the_plain_calls() -> None:
    event = threading.Event()
    assert wait_event(event, 0.2) is False
    event.set()
    assert wait_event(event, None) is True
    lock = threading.Lock()
    assert acquire_lock(lock, 0.2) is True
    assert acquire_lock(lock, 0.2) is False
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    with pytest.raises(TimeoutError):
        wait_future(future, 0.2)
    future.set_result(7)
    assert wait_future(future) == 7
    thread = threading.Thread(target=event.wait)
    thread.start()
    assert join_thread(thread, 5) is True
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired) as expired:
            communicate(sleeper, 0.3)
        assert expired.value.timeout == pytest.approx(0.3, abs=0.01)
    finally:
        sleeper.kill()
        sleeper.wait(10)
    echo = subprocess.Popen([sys.executable, "-c", "print('x' * 100000)"], stdout=subprocess.PIPE)
    out, _ = communicate(echo, 30)
    assert out == b"x" * 100000 + b"\n"
