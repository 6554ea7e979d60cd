"""The edge to the ``lancedb`` package: lazy import, exception translation, write retries.

No lancedb, pyarrow or object-store exception leaves this package: :func:`translate`
turns them into :class:`BackendError` subclasses, once.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

from memory_router import BackendError, BackendUnavailable, MemoryRouterError

T = TypeVar("T")
INSTALL_HINT = "install the extra: pip install 'memory-router[lancedb]'"
# Lance logs harmless notices (a table about to be created, centroid statistics) to stderr.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")

_RETRYABLE = re.compile(
    r"too many concurrent writers|commit conflict|retryable|conflicting|incompatible transaction"
    r"|was concurrently",
    re.IGNORECASE,
)
_CAUSES = (
    (re.compile(r"NoSuchBucket|bucket does not exist", re.IGNORECASE), "the bucket does not exist"),
    (
        re.compile(
            r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|403 Forbidden|"
            r"status: 403|InvalidClientTokenId",
            re.IGNORECASE,
        ),
        "the object store refused the credentials",
    ),
    (
        re.compile(r"Connection refused|connect error|dns error|timed out|timeout", re.IGNORECASE),
        "the object store cannot be reached",
    ),
    (
        re.compile(r"not found|No such file|does not exist|manifest", re.IGNORECASE),
        "a table is missing or half-written",
    ),
)


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
    text = str(error)
    for pattern, cause in _CAUSES:
        if pattern.search(text):
            return cause
    first = text.splitlines()[0] if text else type(error).__name__
    return first if len(first) <= 300 else first[:297] + "..."


def translate(error: BaseException, *, backend: str, doing: str, uri: str) -> BackendError:
    """A third-party exception as a :class:`BackendError` (unavailable unless retryable)."""
    if isinstance(error, BackendError):
        return error
    message = f"lancedb {doing} failed at {uri}: {describe(error)}"
    if isinstance(error, MemoryRouterError):
        return BackendError(f"{message}: {error.message}", backend=backend)
    if retryable(error):
        return BackendError(message, backend=backend, hint="retry; another writer was busy")
    return BackendUnavailable(message, backend=backend)


def retryable(error: BaseException) -> bool:
    return bool(_RETRYABLE.search(str(error)))


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
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")  # pragma: no cover
