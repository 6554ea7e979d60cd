"""The router's sync bookkeeping: which changes each backend has seen, and when.

Asking whether a sync is due (:meth:`SyncLedger.due`) changes nothing; the ledger only
moves when a change, a session or a finished sync is recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .._config.config import SyncConfig


class SyncLedger:
    """Changes made through the router (``store``/``forget``) against what each backend saw.

    The change counter starts at 1 and a backend's seen count at 0, so every backend is
    due once. A sync records the counter it started from: a store made while it ran stays
    pending.
    """

    def __init__(self, sync: SyncConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._sync = sync
        self._clock = clock
        self._lock = threading.Lock()
        self._changes = 1
        self._seen: dict[str, int] = {}
        self._last: dict[str, float] = {}
        self._sessions: set[str] = set()

    @property
    def changes(self) -> int:
        """The current change count; pass it to :meth:`synced` once a sync from it ends."""
        return self._changes

    def changed(self) -> None:
        with self._lock:
            self._changes += 1

    def is_new_session(self, session_key: str | None) -> bool:
        return bool(session_key) and session_key not in self._sessions

    def note_session(self, session_key: str | None) -> None:
        if session_key:
            with self._lock:
                self._sessions.add(session_key)

    def ever_synced(self, name: str) -> bool:
        return name in self._seen

    def last_sync(self, name: str) -> float | None:
        """When ``name`` last finished a sync (monotonic seconds), or ``None``."""
        return self._last.get(name)

    def due(self, name: str, *, new_session: bool = False) -> bool:
        """Whether ``name`` should be reconciled before it answers (see ``[sync]``).

        With ``on_search``: never synced by this router, changed since (store/forget), or
        ``interval_minutes`` passed since its last sync (hand edits without a watcher).
        With ``on_session_start``: the first search of a new session key.
        """
        seen = self._seen.get(name, 0)
        interval = self._sync.interval_minutes * 60
        last = self._last.get(name)
        stale = interval > 0 and (last is None or self._clock() - last >= interval)
        dirty = seen != self._changes or stale
        return (dirty and self._sync.on_search) or (new_session and self._sync.on_session_start)

    def pending(self, name: str) -> bool:
        """Whether changes made through this router (``store``/``forget``) are not yet in
        ``name``'s index. A first sync alone is no known change: it checks."""
        return self._changes > max(1, self._seen.get(name, 0))

    def synced(self, name: str, seen: int) -> None:
        """Record that ``name`` finished a sync that started at change count ``seen``."""
        with self._lock:
            self._seen[name] = max(seen, self._seen.get(name, 0))
            self._last[name] = self._clock()
