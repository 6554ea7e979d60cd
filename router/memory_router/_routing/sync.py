"""Keeping the backends in line with the workspace: the syncs asked for
(:meth:`Syncer.sync`) and those due before a search (:class:`~.reconcile.Reconciler`),
counted in one :class:`~.ledger.SyncLedger`, one process per backend at a time
(:func:`~.indexlock.index_lock`)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .._config.config import Config
from .._exceptions import BackendError, ConfigError, MemoryRouterError
from .._search.coldread import MarkdownScan
from .._types import Progress, SyncReport, no_progress
from .._workspace.checks import check_workspace
from .._workspace.snapshot import Snapshot, take_snapshot
from .backends import Backends
from .calls import contained, stopping_on
from .indexlock import index_lock
from .ledger import SyncLedger
from .reconcile import Reconciler

if TYPE_CHECKING:
    from .reconcile import Notes


class Syncer:
    """The syncs of one router's backends.

    ``recovered(name)`` is called when an asked-for sync of ``name`` works (the chain
    then stops skipping it).
    """

    def __init__(
        self, config: Config, backends: Backends, *, recovered: Callable[[str], None]
    ) -> None:
        self.config = config
        self._backends = backends
        self._recovered = recovered
        self.ledger = SyncLedger(config.sync)
        self.reconciler = Reconciler(config, self.ledger, backends.get, self._job)

    def snapshot(self) -> Snapshot:
        """The workspace's memory files now, with the current fingerprint.

        A missing or unreadable workspace is a :class:`ConfigError`: syncing it would
        look like every file was deleted and empty the index.
        """
        check_workspace(self.config)
        setup = self._backends.embedding_setup()
        fingerprint = setup.fingerprint(self.config).to_dict()
        return take_snapshot(self.config, fingerprint=fingerprint, model=setup.model)

    def sync(
        self, *, force: bool, backends: Iterable[str] | None, progress: Progress, wait_s: float
    ) -> list[SyncReport]:
        """See :meth:`Router.sync`."""
        hot = self.config.router.standby == "hot"
        names = list(backends) if backends is not None else list(self.config.router.chain)
        self._backends.check_names(names)
        snapshot = self.snapshot()
        reports: list[SyncReport] = []
        for name in names:
            report = self._one(name, snapshot, force=force, progress=progress, wait_s=wait_s)
            reports.append(report)
            if backends is None and not hot and not report.errors:
                break
        return reports

    def _one(
        self, name: str, snapshot: Snapshot, *, force: bool, progress: Progress, wait_s: float
    ) -> SyncReport:
        started = time.perf_counter()
        seen = self.ledger.changes
        with self._index_lock(name, wait_s=wait_s, progress=progress):  # IndexBusy goes up
            try:
                with contained(name, "sync"):
                    report = self._backends.get(name).sync(
                        snapshot, force=force, progress=self._stopping(name, progress)
                    )
            except ConfigError:
                raise  # a setting to fix, not a backend failure
            except MemoryRouterError as error:
                return SyncReport(
                    backend=name,
                    errors=(error.message,),
                    hint=error.hint,
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
        self.ledger.synced(name, seen)
        if snapshot.warnings:
            report = dataclasses.replace(
                report, warnings=(*snapshot.warning_lines(), *report.warnings)
            )
        if not report.errors:
            self._recovered(name)
        return report

    def _index_lock(
        self, name: str, *, wait_s: float, progress: Progress = no_progress
    ) -> contextlib.AbstractContextManager[None]:
        """The cross-process lock around syncs of backend ``name`` (see ``indexlock``)."""
        return index_lock(
            self.config.agent_state_path / name,
            agent=self.config.agent_id,
            backend=name,
            wait_s=wait_s,
            progress=progress,
        )

    def _stopping(self, name: str, progress: Progress) -> Progress:
        return stopping_on(self._backends.closing, progress, backend=name)

    def _job(self, name: str, seen: int) -> SyncReport:
        """A sync started on the read path (on a thread of its own, see :class:`SyncJobs`).

        When another process is syncing the backend it does not wait: the search answers
        from the index there is, with a note (``IndexBusy``), and the next one tries again.
        """
        with self._index_lock(name, wait_s=0):
            report = self._backends.get(name).sync(
                self.snapshot(), progress=self._stopping(name, no_progress)
            )
        if report.errors:
            raise BackendError("; ".join(report.errors), backend=name)
        self.ledger.synced(name, seen)
        return report

    # -- the read path ----------------------------------------------------------------

    def begin_session(self, session_key: str | None) -> bool:
        """Note a search of ``session_key``; whether it is the session's first."""
        new = self.ledger.is_new_session(session_key)
        self.ledger.note_session(session_key)
        return new

    def before_search(
        self, name: str, *, new_session: bool, last: bool
    ) -> tuple[Notes, MarkdownScan | None]:
        """See :meth:`Reconciler.before_search`."""
        return self.reconciler.before_search(name, new_session=new_session, last=last)

    def fresh(self, name: str) -> bool:
        """Reconcile ``name`` as before a search; whether its index holds every change."""
        notes, scan = self.reconciler.before_search(name, new_session=False, last=False)
        return not notes and scan is None

    def changed(self) -> None:
        """A change made through the router (a store or forget): every backend is due."""
        self.ledger.changed()

    def close(self) -> None:
        """Give running syncs a moment (the backends are closed first), drop the scans."""
        self.reconciler.close()
