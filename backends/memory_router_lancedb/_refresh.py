"""Following other processes' commits off the query path (``read_consistency_interval_s > 0``).

LanceDB's own interval makes the first read after it expires check the store for a newer
version: on object storage that is a LIST request on the query path, for each table a
query touches. With an interval, the store's connection instead never checks by itself
(LanceDB's ``read_consistency_interval=None``) and this thread calls ``checkout_latest()``
on every open table once per interval: a reader sees another process's commit within
about one interval, and no query waits for the check. This process's own writes are
seen at once (the handle that wrote moves to its commit).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any


class Refresher:
    """A daemon thread that moves ``handles()`` to their latest version every ``interval_s``."""

    def __init__(self, interval_s: float, handles: Callable[[], Iterable[Any]]) -> None:
        self.interval_s = interval_s
        self._handles = handles
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.rounds = 0

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="lancedb-refresh", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.refresh()

    def refresh(self) -> None:
        """One round; a handle that cannot be refreshed now is tried again next round."""
        for handle in list(self._handles()):
            if self._stop.is_set():
                return
            try:
                handle.checkout_latest()
            except Exception:  # unreachable store, dropped table: the next query reports it
                continue
        self.rounds += 1

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=self.interval_s + 30)
