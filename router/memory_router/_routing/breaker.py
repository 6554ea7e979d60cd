"""A circuit breaker per backend: closed → open after failures → half-open probe → closed."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._exceptions import CircuitOpen as CircuitOpen  # its home until now; re-exported
from .._types import BreakerState

if TYPE_CHECKING:
    import logging

_logger: logging.Logger | None = None
_making = threading.Lock()


def log() -> logging.Logger:
    """The core's logger (``memory_router.chain``), made when something is first logged:
    ``import logging`` (with ``traceback``, ``string``…) is ~10 ms of every CLI command,
    and a search that neither falls back nor trips a breaker logs nothing."""
    global _logger
    with _making:
        if _logger is None:
            import logging

            # A library logs, the application shows: without this, Python's last-resort
            # handler would print the router's warnings on every CLI's stderr.
            logging.getLogger("memory_router").addHandler(logging.NullHandler())
            _logger = logging.getLogger("memory_router.chain")
        return _logger


class CircuitBreaker:
    """Counts consecutive failures; a crash (``severe``) opens the circuit at once.

    While open, :meth:`allow` is False until ``cooldown_s`` has passed; then one caller
    is let through as a probe (half-open). Its success closes the circuit, its failure
    opens it again for another cooldown.
    """

    def __init__(  # type: ignore[no-untyped-def]
        self, *, failure_threshold: int, cooldown_s: float, clock=time.monotonic, name: str = ""
    ) -> None:
        self.name = name or "backend"
        self.failure_threshold = max(1, failure_threshold)
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state: str = "closed"
        self._failures = 0
        self._opened_mono = 0.0
        self._opened_at: datetime | None = None
        self._last_error: str | None = None
        self._probing = False

    def allow(self) -> bool:
        """Whether a call may go to the backend now (claims the probe when half-open)."""
        with self._lock:
            if self._state == "closed":
                return True
            if self._state == "open" and self._clock() - self._opened_mono >= self.cooldown_s:
                self._state = "half-open"
                self._probing = False
            if self._state == "half-open" and not self._probing:
                self._probing = True
                return True
            return False

    def success(self) -> None:
        with self._lock:
            was = self._state
            self._state = "closed"
            self._failures = 0
            self._probing = False
            self._opened_at = None
        if was != "closed":  # once per state change, never per call
            log().info("backend %s recovered: circuit closed (was %s)", self.name, was)

    def failure(self, error: str, *, severe: bool = False) -> None:
        with self._lock:
            was = self._state
            self._failures += 1
            self._last_error = error
            self._probing = False
            if severe or self._state == "half-open" or self._failures >= self.failure_threshold:
                self._state = "open"
                self._opened_mono = self._clock()
                self._opened_at = datetime.now(UTC)
            opened = was != "open" and self._state == "open"
            failures = self._failures
        if opened:
            log().warning(
                "backend %s: circuit opened after %d failure(s), not asked for %g s: %s",
                self.name,
                failures,
                self.cooldown_s,
                error,
            )

    def restore(self, recorded: BreakerState) -> None:
        """Take over what another process recorded: an open circuit stays open for the rest
        of its cooldown (counted from when it opened), a half-open one probes with one call.

        Only a trouble state is taken; a closed record changes nothing.
        """
        if recorded.state == "closed":
            return
        with self._lock:
            self._failures = recorded.failures
            self._last_error = recorded.last_error
            self._opened_at = recorded.opened_at
            elapsed = self.cooldown_s
            if recorded.state == "open" and recorded.opened_at is not None:
                elapsed = max(0.0, (datetime.now(UTC) - recorded.opened_at).total_seconds())
            if elapsed < self.cooldown_s:
                self._state = "open"
                self._opened_mono = self._clock() - elapsed
            else:
                self._state = "half-open"
                self._probing = False

    def snapshot(self) -> BreakerState:
        with self._lock:
            state = self._state
            if state == "open" and self._clock() - self._opened_mono >= self.cooldown_s:
                state = "half-open"
            return BreakerState(
                state=state,  # type: ignore[arg-type]
                failures=self._failures,
                last_error=self._last_error,
                opened_at=self._opened_at,
            )


class FallbackLog:
    """A WARNING per search that falls back from a backend, rate-limited: the same
    backend and reason is logged again only after ``every_s`` seconds, with how many
    fallbacks went unlogged in between (a dead backend under load writes a line a minute).
    """

    def __init__(self, *, every_s: float = 60.0, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, tuple[str, float]] = {}
        self._quiet: dict[str, int] = {}

    def note(self, backend: str, reason: str) -> bool:
        """Log the fallback unless the same one was logged lately; whether it was logged."""
        now = self._clock()
        with self._lock:
            last = self._last.get(backend)
            if last is not None and last[0] == reason and now - last[1] < self.every_s:
                self._quiet[backend] = self._quiet.get(backend, 0) + 1
                return False
            self._last[backend] = (reason, now)
            quiet = self._quiet.pop(backend, 0)
        more = f" ({quiet} more like it not logged)" if quiet else ""
        log().warning("search fell back from backend %s: %s%s", backend, reason, more)
        return True
