"""Bringing a backend up to date before it answers, without ever holding a search long.

A sidecar's sync (``Backend.sync_in_background``) only ever runs in the background; the
chain's first backend is synced before it answers (cheap for SQLite, and what makes hand
edits visible); a standby gets ``router.sync_wait_s``, past which it answers from the index
it has, or keyword-only from the Markdown (:class:`MarkdownScan`) while it is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .._backend import Backend
from .._config.config import Config
from .._exceptions import BackendError, MemoryRouterError
from .._search.coldread import MarkdownScan
from .._types import SyncReport
from .calls import contained
from .indexlock import IndexBusy
from .jobs import SyncJob, SyncJobs
from .ledger import SyncLedger

Notes = tuple[str, ...]


class Reconciler:
    """Runs the syncs due before searches; see the module docstring for the policy.

    ``backend(name)`` gives a backend; ``run(name, seen)`` syncs it (raising on failure)
    and records the sync in the ledger.
    """

    def __init__(
        self,
        config: Config,
        ledger: SyncLedger,
        backend: Callable[[str], Backend],
        run: Callable[[str, int], SyncReport],
    ) -> None:
        self.config = config
        self.ledger = ledger
        self._backend = backend
        self.jobs = SyncJobs(run)
        self._scans: dict[str, MarkdownScan] = {}
        self._lock = threading.Lock()

    def before_search(
        self, name: str, *, new_session: bool, last: bool
    ) -> tuple[Notes, MarkdownScan | None]:
        """Notes for the answer, and the Markdown scan to read instead of the index, if any.

        Raises a :class:`BackendError` when the backend's last sync failed, unless it is
        the chain's ``last`` backend: that one answers from the index it has, with a note.
        """
        backend = self._backend(name)
        failed = self._failure(name, last=last)
        if failed:
            return failed, None
        job = self._due_job(name, new_session)
        if job is None:
            self._drop_scan(name)
            return (), None
        if getattr(backend, "sync_in_background", False):
            # Said only of changes this router knows of: a sidecar keeps its own index
            # fresh, and a process's first sync only checks (every CLI search has one).
            if not self.ledger.pending(name):
                return (), None
            return (f"{name}: the index may be stale: a sync is running in the background",), None
        # The primary's own reconcile stays synchronous (cheap, and what makes hand edits
        # visible); a standby gets sync_wait_s, so a cold one answers within seconds.
        primary = name == self.config.router.chain[0]
        router = self.config.router
        if job.wait(None if primary else min(router.sync_wait_s, router.timeout_s)):
            return self.before_search(name, new_session=False, last=last)
        if self.has_index(name):
            return (
                f"{name}: the index may be stale: its sync has run {job.age:.1f} s"
                " and goes on in the background",
            ), None
        return (
            f"{name}: degraded: its index is still being built ({job.age:.1f} s so far);"
            " answered keyword-only from the Markdown",
        ), self._scan(name)

    def _failure(self, name: str, *, last: bool) -> Notes:
        finished = self.jobs.collect(name)
        if finished is None or finished.error is None:
            return ()
        error = finished.error
        # Another process building this index: answer from the index there is, and try
        # again on the next search (not a failure of the backend).
        if not last and not isinstance(error, IndexBusy):
            kind = type(error) if isinstance(error, BackendError) else BackendError
            raise kind(
                f"index sync failed: {error.message}", backend=name, hint=error.hint
            ) from error
        hint = f" ({error.hint})" if error.hint else ""  # e.g. how to fix a missing workspace
        return (f"index not brought up to date ({name}): {error.message}{hint}",)

    def _due_job(self, name: str, new_session: bool) -> SyncJob | None:
        """The sync running for ``name``, or one started now when due, or ``None``."""
        running = self.jobs.running(name)
        if running is not None:
            return running
        primary = name == self.config.router.chain[0]
        due = self.ledger.due(name, new_session=new_session) or (
            not primary and not self.ledger.ever_synced(name)
        )
        return self.jobs.start(name, self.ledger.changes) if due else None

    def has_index(self, name: str) -> bool:
        """Whether ``name`` holds anything to search (its status counts files or chunks)."""
        try:
            with contained(name, "status"):
                status = self._backend(name).status()
        except MemoryRouterError:
            return False
        return status.available and (status.chunks > 0 or status.files > 0)

    def _scan(self, name: str) -> MarkdownScan:
        with self._lock:
            scan = self._scans.get(name)
            if scan is None:
                scan = self._scans[name] = MarkdownScan(self.config)
            return scan

    def _drop_scan(self, name: str) -> None:
        with self._lock:
            scan = self._scans.pop(name, None)
        if scan is not None:
            scan.close()

    def close(self) -> None:
        """Give running syncs a moment (backends are closed first), then drop the scans."""
        self.jobs.wait_all(2.0)
        with self._lock:
            scans, self._scans = list(self._scans.values()), {}
        for scan in scans:
            scan.close()
