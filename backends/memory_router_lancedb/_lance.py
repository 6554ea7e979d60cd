"""The edge to the ``lancedb`` package: lazy import, exception translation, write retries.

No lancedb, pyarrow or object-store exception leaves this package: :func:`translate`
turns them into :class:`BackendError` subclasses, once.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from memory_router import BackendError, BackendUnavailable, MemoryRouterError
from memory_router.kit import wait_future

if TYPE_CHECKING:  # a local read runs no call on a thread (concurrent.futures: ~15 ms)
    from concurrent.futures import Future

T = TypeVar("T")
INSTALL_HINT = "install the extra: pip install 'memory-router[lancedb]'"
# Lance logs harmless notices (a table about to be created, centroid statistics) to stderr.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")

_RETRYABLE = re.compile(
    r"too many concurrent writers|commit conflict|retryable|conflicting|incompatible transaction"
    r"|was concurrently",
    re.IGNORECASE,
)
_UNREACHABLE = "the object store cannot be reached"
_UNREACHABLE_HINT = (
    "check that the object store is running and [backends.lancedb] storage_options"
    " endpoint; `memory-router doctor` checks again"
)
_DAMAGED = "a table is missing or damaged"
_UNWRITABLE = "its folder cannot be written (a read-only file system, or no permission)"
_UNWRITABLE_HINT = (
    "make the folder writable, or set [backends.lancedb] uri to a folder this user can write"
)
_NO_CREDENTIALS = re.compile(r"Failed to get AWS credentials|no credentials", re.IGNORECASE)
_CAUSES = (
    (
        _NO_CREDENTIALS,
        "no credentials for the object store (the AWS default credential chain found none)",
        "set access_key_id and secret_access_key in [backends.lancedb] storage_options"
        ' (for example { env = "AWS_ACCESS_KEY_ID" }), and check those variables are set'
        " where memory-router runs",
    ),
    (
        re.compile(r"NoSuchBucket|bucket does not exist", re.IGNORECASE),
        "the bucket does not exist",
        "create the bucket, or fix the bucket in [backends.lancedb] uri",
    ),
    (
        re.compile(
            r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|403 Forbidden|"
            r"status: 403|InvalidClientTokenId",
            re.IGNORECASE,
        ),
        "the object store refused the credentials",
        "check access_key_id and secret_access_key in [backends.lancedb] storage_options",
    ),
    (
        re.compile(
            r"Connection refused|connect error|dns error|timed out|timeout|did not answer"
            r"|error sending request|Error performing (GET|PUT|HEAD|POST|DELETE|list)",
            re.IGNORECASE,
        ),
        _UNREACHABLE,
        _UNREACHABLE_HINT,
    ),
    (
        re.compile(
            r"Read-only file system|Permission denied|Operation not permitted"
            r"|os error (1|13|30)\)",
            re.IGNORECASE,
        ),
        _UNWRITABLE,
        _UNWRITABLE_HINT,
    ),
    (
        re.compile(
            r"not found|No such file|does not exist|manifest|sufficient data|corrupt"
            r"|decode|unexpected end|invalid (file|data)",
            re.IGNORECASE,
        ),
        _DAMAGED,
        "rebuild it from the Markdown: memory-router reset --backend lancedb --yes,"
        " then memory-router index",
    ),
)


class NoAnswer(Exception):
    """An object-store call that outlived its deadline (abandoned on its thread)."""


def lancedb() -> ModuleType:
    """The ``lancedb`` module, or :class:`BackendUnavailable` naming the extra."""
    try:
        import lancedb as module
    except ImportError as error:
        raise BackendUnavailable(
            f"the lancedb backend needs the lancedb package ({error})",
            backend="lancedb",
            hint=INSTALL_HINT,
        ) from None
    return module


def describe(error: BaseException) -> str:
    """A short cause for a lancedb error (their messages carry whole request dumps)."""
    return _cause(error)[0]


def _cause(error: BaseException) -> tuple[str, str | None]:
    text = str(error)
    if isinstance(error, NoAnswer):
        return f"{_UNREACHABLE} ({text})", _UNREACHABLE_HINT
    for pattern, cause, hint in _CAUSES:
        if pattern.search(text):
            return cause, hint
    first = text.splitlines()[0] if text else type(error).__name__
    return (first if len(first) <= 300 else first[:297] + "..."), None


def unwritable_folder(path: str, error: OSError, *, backend: str) -> BackendUnavailable:
    """The error for a store folder that cannot be created."""
    why = error.strerror or type(error).__name__
    return BackendUnavailable(
        f"lancedb cannot create its folder {path}: {why}", backend=backend, hint=_UNWRITABLE_HINT
    )


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the object store did not answer (refused, timed out)."""
    return _cause(error)[0].startswith(_UNREACHABLE)


def translate(error: BaseException, *, backend: str, doing: str, uri: str) -> BackendError:
    """A third-party exception as a :class:`BackendError` (unavailable unless retryable),
    with a hint saying what to do about its cause."""
    if isinstance(error, BackendError):
        return error
    cause, hint = _cause(error)
    message = f"lancedb {doing} failed at {uri}: {cause}"
    if isinstance(error, MemoryRouterError):
        return BackendError(f"{message}: {error.message}", backend=backend)
    if retryable(error):
        return BackendError(message, backend=backend, hint="retry; another writer was busy")
    return BackendUnavailable(message, backend=backend, hint=hint)


def within(action: Callable[[], T], timeout_s: float) -> T:
    """``action()`` on a daemon thread, waited for at most ``timeout_s`` seconds.

    LanceDB retries a failed object-store request several times on its own (a server
    that accepts connections and never answers holds one call for about eight request
    timeouts), so calls get a deadline here; an abandoned call ends on its own thread
    and never keeps the process alive. Raises :class:`NoAnswer` past the deadline.
    """
    try:
        return wait_future(on_thread(action), timeout_s)
    except TimeoutError:  # concurrent.futures.TimeoutError is this class since Python 3.11
        _cancel_at_exit()
        raise NoAnswer(f"no answer within {timeout_s:g} s") from None


_cancelling = threading.Lock()
_cancel_registered = False


def _cancel_at_exit() -> None:
    """Once a call was abandoned: at exit, cancel LanceDB's calls still in flight, which
    its runtime would otherwise wait about 5 s for before giving up on them itself."""
    global _cancel_registered
    with _cancelling:
        if not _cancel_registered:
            atexit.register(_cancel_in_flight)
            _cancel_registered = True


def _cancel_in_flight() -> None:
    import asyncio  # only here: its import costs tens of ms of a one-shot command

    try:
        from lancedb.background_loop import LOOP

        loop = LOOP.loop
        done = threading.Event()

        def cancel() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            done.set()

        loop.call_soon_threadsafe(cancel)
        done.wait(1.0)
    except (ImportError, AttributeError, RuntimeError):  # no loop, or it is closed
        return


def on_thread(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on a daemon thread of its own: a ``ThreadPoolExecutor``'s workers are
    joined when the interpreter exits, so one stuck on an unanswering object store would
    keep the command alive long after it answered."""
    from concurrent.futures import Future

    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as error:  # the caller gets it from the future
            future.set_exception(error)

    threading.Thread(target=run, daemon=True, name="lancedb-leg").start()
    return future


def retryable(error: BaseException) -> bool:
    """A commit conflict or busy writer; never missing credentials (their dumps may say
    "retryable" about the credential provider's own attempts)."""
    text = str(error)
    return bool(_RETRYABLE.search(text)) and not _NO_CREDENTIALS.search(text)


def with_retries(action: Callable[[], T], *, attempts: int, budget_s: float = 120.0) -> T:
    """Run a write, retrying commit conflicts and writer contention with jittered backoff.

    Lance retries conflicts itself; this adds attempts beyond its own (on slow object
    stores it gives up with "Too many concurrent writers"). Other errors raise at once.
    """
    deadline = time.monotonic() + budget_s
    delay = 0.05
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as error:
            if not retryable(error) or attempt == attempts or time.monotonic() > deadline:
                raise
        import random  # only here: a read never retries

        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")  # pragma: no cover
