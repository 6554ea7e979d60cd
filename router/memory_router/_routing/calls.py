"""Small pieces of the router's call path: argument checks and calls with a deadline."""

from __future__ import annotations

import contextlib
import math
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
from .._util.waits import join_thread

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


def call_with_deadline(name: str, call: Callable[[], T], timeout: float) -> T:
    """Run ``call`` on a thread of its own and wait at most ``timeout`` seconds.

    A thread per call, not a shared pool: a hung backend keeps only its own abandoned
    threads busy, so the next backend of the chain still gets its full budget.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the caller's thread below
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True, name=f"memory-router-{name}")
    thread.start()
    if not join_thread(thread, timeout):
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
