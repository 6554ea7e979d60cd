"""A circuit breaker per backend: closed → open after failures → half-open probe → closed."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from ._exceptions import BackendUnavailable
from ._types import BreakerState


class CircuitOpen(BackendUnavailable):
    """The backend was not asked: its circuit is open (not a new failure of its own)."""


class CircuitBreaker:
    """Counts consecutive failures; a crash (``severe``) opens the circuit at once.

    While open, :meth:`allow` is False until ``cooldown_s`` has passed; then one caller
    is let through as a probe (half-open). Its success closes the circuit, its failure
    opens it again for another cooldown.
    """

    def __init__(self, *, failure_threshold: int, cooldown_s: float, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
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
            self._state = "closed"
            self._failures = 0
            self._probing = False
            self._opened_at = None

    def failure(self, error: str, *, severe: bool = False) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = error
            self._probing = False
            if severe or self._state == "half-open" or self._failures >= self.failure_threshold:
                self._state = "open"
                self._opened_mono = self._clock()
                self._opened_at = datetime.now(UTC)

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
