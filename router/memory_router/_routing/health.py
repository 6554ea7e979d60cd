"""What router processes saw, kept in the state dir so ``status`` from any process shows it.

``<state_dir>/agents/<id>/health.json`` holds each backend's circuit breaker and the
recent fallbacks, with times and the process that wrote them. A router writes it only
when something changed (a breaker moved, a new fallback), with a small atomic write
(a temporary file renamed over the old one) under an ``flock``, so readers never see
half a file and concurrent writers never lose each other's fallbacks. A new router starts
its breakers from the record, so a process started after another saw a backend fail
skips it for the rest of the cooldown (:meth:`HealthFile.restore`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._types import BreakerState, Fallback
from .breaker import CircuitBreaker

HEALTH_FILE = "health.json"
KEEP_FALLBACKS = 20


class HealthFile:
    """One agent's ``health.json``: :meth:`record` after searches, :meth:`read` for status."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / HEALTH_FILE
        self._written: object = None

    def record(self, breakers: Mapping[str, BreakerState], last: Fallback | None) -> None:
        """Persist ``breakers`` and ``last`` if they differ from what this process wrote."""
        seen = (_seen(breakers), last.at if last else None)
        if seen == self._written or (self._written is None and _quiet(breakers, last)):
            return
        self._written = seen
        # Never fail a search because the state dir cannot take a note.
        with contextlib.suppress(OSError), self._locked():
            data = self._load()
            fallbacks = [f for f in data.get("fallbacks", []) if isinstance(f, dict)]
            if last is not None and last.to_dict() not in fallbacks:
                fallbacks.append(last.to_dict())
            data.update(
                updated_at=datetime.now(UTC).isoformat(),
                pid=os.getpid(),
                breakers={n: b.to_dict() for n, b in breakers.items()},
                fallbacks=fallbacks[-KEEP_FALLBACKS:],
            )
            _write_atomic(self.path, data)

    def restore(self, breakers: Mapping[str, CircuitBreaker], cooldown_s: float) -> None:
        """Start ``breakers`` from the recorded ones, so a process started after another saw
        a backend fail does not pay that backend's timeout again within the cooldown.

        What was taken counts as written: the next change (a probe closing the circuit)
        is recorded even though it is quiet.
        """
        recorded, _ = self.breakers(cooldown_s)
        for name, state in recorded.items():
            if name in breakers:
                breakers[name].restore(state)
        if any(s.state != "closed" for s in recorded.values()):
            self._written = (_seen({n: b.snapshot() for n, b in breakers.items()}), None)

    def read(self) -> dict[str, Any]:
        """The recorded state (``{}`` when none or unreadable)."""
        return self._load()

    def breakers(self, cooldown_s: float) -> tuple[dict[str, BreakerState], datetime | None]:
        """The recorded breakers (an open one past ``cooldown_s`` shows half-open) and when."""
        data = self._load()
        found: dict[str, BreakerState] = {}
        for name, raw in (data.get("breakers") or {}).items():
            state = _breaker(raw, cooldown_s)
            if state is not None:
                found[str(name)] = state
        return found, _time(data.get("updated_at"))

    def last_fallback(self) -> Fallback | None:
        fallbacks = self._load().get("fallbacks") or []
        return _fallback(fallbacks[-1]) if fallbacks else None

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(f"{HEALTH_FILE}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _seen(breakers: Mapping[str, BreakerState]) -> dict[str, tuple[str, int, str | None]]:
    return {n: (b.state, b.failures, b.last_error) for n, b in breakers.items()}


def _quiet(breakers: Mapping[str, BreakerState], last: Fallback | None) -> bool:
    """Nothing worth a first write: every breaker closed and clean, no fallback."""
    return last is None and all(b.state == "closed" and not b.failures for b in breakers.values())


def _write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _breaker(raw: object, cooldown_s: float) -> BreakerState | None:
    if not isinstance(raw, dict) or raw.get("state") not in ("closed", "open", "half-open"):
        return None
    opened = _time(raw.get("opened_at"))
    state = raw["state"]
    if state == "open" and opened and (datetime.now(UTC) - opened).total_seconds() >= cooldown_s:
        state = "half-open"
    failures = raw.get("failures")
    error = raw.get("last_error")
    return BreakerState(
        state=state,
        failures=failures if isinstance(failures, int) else 0,
        last_error=error if isinstance(error, str) else None,
        opened_at=opened,
    )


def _fallback(raw: object) -> Fallback | None:
    if not isinstance(raw, dict):
        return None
    at = _time(raw.get("at"))
    if at is None:
        return None
    hint = raw.get("hint")
    return Fallback(
        from_=str(raw.get("from")),
        reason=str(raw.get("reason")),
        at=at,
        hint=hint if isinstance(hint, str) else None,
    )


def seen_breakers(
    health: HealthFile,
    own: Mapping[str, BreakerState],
    own_last: Fallback | None,
    cooldown_s: float,
) -> tuple[dict[str, BreakerState], Fallback | None, datetime | None]:
    """What ``status`` reports: this process's breakers once it has seen trouble, else the
    recorded ones (with when they were recorded)."""
    if not _quiet(own, own_last):  # its own, or taken from the record at its start
        return dict(own), own_last or health.last_fallback(), datetime.now(UTC)
    recorded, seen_at = health.breakers(cooldown_s)
    return {n: recorded.get(n, b) for n, b in own.items()}, health.last_fallback(), seen_at
