"""Small pieces of the router's call path: argument checks and calls with a deadline."""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from .._exceptions import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
    MemoryRouterError,
)
from .._progress_types import Progress

if TYPE_CHECKING:
    from .._backend import BackendSpec
from .._util.waits import acquire_lock

T = TypeVar("T")


def positive_int(value: object, key: str) -> int:
    try:
        number: int = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(f"{key} must be a whole number, got {value!r}", key=key) from None
    return max(1, number)


def unit_float(value: object, key: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput(f"{key} must be a number, got {value!r}", key=key) from None
    if not math.isfinite(number):
        raise InvalidInput(f"{key} must be a finite number, got {value!r}", key=key)
    return min(max(number, 0.0), 1.0)


@contextlib.contextmanager
def contained(name: str, doing: str) -> Iterator[None]:
    """Map anything but a :class:`MemoryRouterError` that escapes backend ``name`` to a
    :class:`BackendError` (httpx's ``map_exceptions`` idea): the one place per backend
    where an untranslated plugin error becomes a backend failure."""
    try:
        yield
    except MemoryRouterError:
        raise
    except Exception as error:
        raise BackendError(
            f"{doing} failed: {type(error).__name__}: {error}", backend=name
        ) from error


IDLE_WORKERS = 4
"""Idle deadline workers kept per backend; more finish and end."""
IDLE_S = 60.0
"""How long an idle deadline worker waits for its next call before it ends."""


class _Worker:
    """A daemon thread that runs the calls :func:`call_with_deadline` hands it, one at a
    time, then offers itself for the next: starting a thread per call cost about 0.3 ms
    of CPU, a third of a keyword search on a small index."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: queue.SimpleQueue[tuple[Callable[[], None], Any]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True, name=f"memory-router-{name}").start()

    def _serve(self) -> None:
        while True:
            try:
                job, done = self.jobs.get(timeout=IDLE_S)
            except queue.Empty:
                if _retire(self):
                    return
                continue  # a caller took this worker just now: its call is on the way
            job()
            stay = _offer(self)  # before the caller wakes: its next call finds this one
            done.release()
            if not stay:
                return


_idle: dict[str, list[_Worker]] = {}
_idle_lock = threading.Lock()


def _take(name: str) -> _Worker:
    """An idle worker for backend ``name``, or a new one."""
    with _idle_lock:
        idle = _idle.get(name)
        if idle:
            return idle.pop()
    return _Worker(name)


def _offer(worker: _Worker) -> bool:
    """Make ``worker`` idle again; false when enough are idle (it should end)."""
    with _idle_lock:
        idle = _idle.setdefault(worker.name, [])
        if len(idle) >= IDLE_WORKERS:
            return False
        idle.append(worker)
        return True


def _retire(worker: _Worker) -> bool:
    """Remove an idle ``worker`` that waited too long; false if a caller has taken it."""
    with _idle_lock:
        idle = _idle.get(worker.name, [])
        if worker in idle:
            idle.remove(worker)
            return True
        return False


def _forget_workers() -> None:
    """In a forked child: none of the parent's threads exist, and the lock may be held."""
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


def call_with_deadline(name: str, call: Callable[[], T], timeout: float) -> T:
    """Run ``call`` on a worker thread of its own and wait at most ``timeout`` seconds.

    A thread that runs nothing else meanwhile, not a bounded pool: a hung backend keeps
    only its own abandoned threads busy, so the next backend of the chain (and the next
    call) still gets its full budget. Threads are reused once their call has returned.
    """
    box: dict[str, Any] = {}
    done = threading.Lock()
    done.acquire()

    def job() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the caller's thread below
            box["error"] = error

    _take(name).jobs.put((job, done))
    if not acquire_lock(done, timeout):
        raise BackendTimeout(f"no answer within {timeout:g} s", backend=name)
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]


def stopping_on(stop: threading.Event, progress: Progress, *, backend: str) -> Progress:
    """``progress`` that raises once ``stop`` is set: a sync that reports progress (the
    built-in and LanceDB backends do per file and per embedding batch) then ends at its
    next report, rolling back what it had not committed, instead of keeping a closing
    router (Ctrl-C, ``serve`` shutting down) waiting for the rest of the workspace."""

    def report(*, done: int, total: int, label: str) -> None:
        if stop.is_set():
            raise BackendUnavailable(
                f"sync stopped ({label} {done}/{total}): the router is closing", backend=backend
            )
        progress(done=done, total=total, label=label)

    return report


def fail_closed(name: str, error: MemoryRouterError) -> MemoryRouterError:
    """The error to raise when a backend failed and the policy forbids falling back."""
    if not isinstance(error, BackendError):
        return error
    return type(error)(
        f"backend {name!r} failed and fallback is off: {error.message}",
        backend=name,
        hint='set router.fallback = "next" to let the next backend answer',
    )


def check_mode(mode: str | None, spec: BackendSpec | None) -> None:
    """Refuse a search ``mode`` the backend that answers (the chain's first) does not know."""
    if mode is None or spec is None or not spec.modes or mode in spec.modes:
        return
    raise InvalidInput(
        f"{spec.name} has no search mode {mode!r}",
        key="mode",
        hint=f"use one of {', '.join(spec.modes)}, or leave --mode out",
    )
