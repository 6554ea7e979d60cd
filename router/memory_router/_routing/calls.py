"""Small pieces of the router's call path: argument checks and calls with a deadline."""

from __future__ import annotations

import contextlib
import math
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
from .._util.waits import wait_event

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


class _Worker:
    """A daemon thread that runs the calls handed to it, one at a time, and goes back to
    the idle list after each; idle for :data:`IDLE_S` it ends."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._serve, daemon=True, name="memory-router-call").start()

    def _serve(self) -> None:
        while True:
            try:
                job, done = self.inbox.get(timeout=IDLE_S)
            except queue.Empty:
                with _idle_lock:
                    if self in _idle:  # no call is on its way: end
                        _idle.remove(self)
                        return
                continue  # taken just now: its call is on its way
            job()
            with _idle_lock:
                idle = len(_idle) < MAX_IDLE
                if idle:
                    _idle.append(self)
            done.set()  # after it is idle again: the caller's next call finds it
            if not idle:
                return


IDLE_S = 60.0
MAX_IDLE = 8
_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def call_with_deadline(name: str, call: Callable[[], T], timeout: float) -> T:
    """Run ``call`` on a worker thread and wait at most ``timeout`` seconds.

    Workers are reused (starting a thread per call was a tenth of a warm search), but
    only once their call has ended: one whose call overran is abandoned to it, so a hung
    backend keeps only its own threads busy and the next backend of the chain still gets
    its full budget on another.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def job() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the caller's thread below
            box["error"] = error

    with _idle_lock:
        worker = _idle.pop() if _idle else None
    (worker or _Worker()).inbox.put((job, done))
    if not wait_event(done, timeout):
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
