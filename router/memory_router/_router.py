"""The :class:`Router`: one search/get interface over a chain of backends."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from . import _plugins
from ._backend import Backend, BackendContext, BackendSpec, validate_backend_settings
from ._config.config import Config, apply_overrides, ensure_dir, load_config
from ._config.settings import unset_secret_error
from ._embedding.embedder import Embedder
from ._embedding.setup import EmbeddingSetup
from ._entries import book as _entries
from ._entries.book import EntryBook, ForgetResult, RecallResult, StoreResult
from ._entries.recall import native_recall
from ._exceptions import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
    InvalidInput,
    MemoryRouterError,
    NotFound,
)
from ._routing.breaker import CircuitBreaker, CircuitOpen, FallbackLog
from ._routing.calls import (
    call_with_deadline,
    check_mode,
    contained,
    fail_closed,
    positive_int,
    stopping_on,
    unit_float,
)
from ._routing.health import HealthFile, seen_breakers
from ._routing.indexlock import INDEX_WAIT_S, index_lock
from ._routing.ledger import SyncLedger
from ._routing.reconcile import Reconciler
from ._routing.status import on_disk, workspace_problem
from ._search import filters as _filters
from ._search import ranking as _ranking
from ._search.explain import with_below_min_score
from ._types import (
    BackendResult,
    BackendStatus,
    Category,
    Entry,
    Fallback,
    FallbackKind,
    FileText,
    Progress,
    RouterStatus,
    SearchRequest,
    SearchResponse,
    Source,
    SyncReport,
    no_progress,
)
from ._workspace import files as _files
from ._workspace import journal as _journal
from ._workspace.checks import check_workspace
from ._workspace.snapshot import Snapshot, scrub, take_snapshot

if TYPE_CHECKING:
    from ._migrate.migration import MigrationReport


class Router:
    """Memory for one agent: search, get, store, forget, sync and status over a backend chain.

    Build it with :meth:`from_config`. Backends and the embedding setup are built on first
    use. Thread-safe for concurrent searches. A search never waits on a sidecar's sync,
    and at most ``router.sync_wait_s`` for a standby's (see :meth:`search`).
    """

    def __init__(
        self, config: Config, *, plugin_manager: pluggy.PluginManager | None = None
    ) -> None:
        self.config = config
        self.pm = plugin_manager or _plugins.get_plugin_manager()
        self.backend_specs: dict[str, BackendSpec] = _plugins.backend_specs(self.pm)
        self._settings = validate_backend_settings(config, self.backend_specs)
        self._backends: dict[str, Backend] = {}
        self._breakers = {
            name: CircuitBreaker(
                failure_threshold=config.router.breaker.failure_threshold,
                cooldown_s=config.router.breaker.cooldown_s,
                name=name,
            )
            for name in config.router.chain
        }
        self._lock = threading.RLock()
        self._setup: EmbeddingSetup | None = None
        self._ledger = SyncLedger(config.sync)
        self._reconciler = Reconciler(config, self._ledger, self.backend, self._sync_job)
        self.last_fallback: Fallback | None = None
        self._fallback_log = FallbackLog()
        self._health = HealthFile(config.agent_state_path)
        self._health.restore(self._breakers, config.router.breaker.cooldown_s)
        self._closed = False
        self._closing = threading.Event()  # ends running syncs at their next progress report
        self._book = EntryBook(config, lambda: self.embedder)
        self._remember_lock = threading.Lock()

    @classmethod
    def from_config(
        cls,
        config: Config | str | os.PathLike[str] | None = None,
        *,
        plugins: Iterable[object] = (),
        plugin_manager: pluggy.PluginManager | None = None,
        **overrides: Any,
    ) -> Router:
        """Build a router from a :class:`Config`, a TOML path, or the discovered config.

        ``overrides`` are nested config values (``workspace="~/notes"``,
        ``query={"max_results": 10}``). ``plugins`` are extra plugin objects to register.
        """
        if not isinstance(config, Config):
            config = load_config(config, overrides=overrides)
        elif overrides:
            config = apply_overrides(config, overrides)
        pm = plugin_manager or _plugins.get_plugin_manager(plugins=plugins)
        return cls(config, plugin_manager=pm)

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- construction -----------------------------------------------------------------

    def embedding_setup(self) -> EmbeddingSetup:
        """The embedding setup, built on the first call (the only step that picks a provider).

        Raises :class:`ConfigError` or :class:`EmbeddingError` when the configured
        provider cannot be built.
        """
        with self._lock:
            if self._setup is None:
                self._setup = EmbeddingSetup.build(self.config, _plugins.provider_specs(self.pm))
            return self._setup

    @property
    def embedder(self) -> Embedder | None:
        """The shared embedder, or ``None`` in keyword-only mode."""
        return self.embedding_setup().embedder

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this router is closed; build a new one", key="router")

    def unset_secret(self, name: str) -> ConfigError | None:
        """The error for a secret of ``[backends.<name>]`` whose variable or file is unset."""
        return unset_secret_error(
            self._settings.get(name),
            path=self.config.file or "<defaults>",
            table=f"backends.{name}",
        )

    def backend(self, name: str) -> Backend:
        """The backend called ``name``, built on first use."""
        self._check_open()
        with self._lock:
            if name in self._backends:
                return self._backends[name]
            spec = self.backend_specs.get(name)
            if spec is None:
                raise NotFound(f"no backend named {name!r}", key=name)
            unset = self.unset_secret(name)
            if unset is not None:  # not "no key": a store would try other credentials
                raise BackendUnavailable(unset.message, backend=name, hint=unset.hint)
            # A read-only state folder still answers: the backend refuses only writes.
            state_dir = ensure_dir(
                self.config.agent_state_path / name, key="state_dir", must_write=False
            )
            context = BackendContext(
                name=name,
                config=self.config,
                settings=self._settings.get(name),
                state_dir=state_dir,
                embedder=self.embedder,
            )
            try:
                with contained(name, "starting"):
                    backend = spec.factory(context)
            except BackendError as error:
                if error.backend == name and not isinstance(error, BackendUnavailable):
                    raise BackendUnavailable(
                        f"backend {name!r} failed to start: {error.message}", backend=name
                    ) from error
                raise
            self._backends[name] = backend
            return backend

    # -- sync ---------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """The index fingerprint for the current provider (see :func:`fingerprint_for`)."""
        return self.embedding_setup().fingerprint(self.config)

    def snapshot(self) -> Snapshot:
        """The workspace's memory files now, with the current fingerprint.

        A missing or unreadable workspace is a :class:`ConfigError`: syncing it would
        look like every file was deleted and empty the index.
        """
        check_workspace(self.config)
        setup = self.embedding_setup()
        return take_snapshot(
            self.config, fingerprint=setup.fingerprint(self.config), model=setup.model
        )

    def sync(
        self,
        *,
        force: bool = False,
        backends: Iterable[str] | None = None,
        progress: Progress = no_progress,
        wait_s: float = INDEX_WAIT_S,
    ) -> list[SyncReport]:
        """Bring backends in line with the workspace; one report per backend.

        By default the first backend of the chain (with ``standby = "cold"``, the next
        ones too while the one before could not be indexed) or, with ``standby = "hot"``,
        every backend. Each backend syncs on its own: one that fails or hangs (a sidecar
        is killed at its own timeouts) gets a report with ``errors`` set, and the others
        still sync. One process syncs a backend of an agent at a time: another one's sync
        is waited for up to ``wait_s`` seconds, then ``IndexBusy`` is raised.
        """
        self._check_open()
        chain = self.config.router.chain
        explicit = backends is not None
        names = list(backends) if backends is not None else list(chain)
        for name in names:  # before any lock or folder is made under the name
            if name not in self.backend_specs:
                raise NotFound(
                    f"no backend named {name!r}",
                    key=name,
                    hint=f"use one of: {', '.join(sorted(self.backend_specs))}",
                )
        hot = self.config.router.standby == "hot"
        snapshot = self.snapshot()
        reports: list[SyncReport] = []
        for name in names:
            report = self._sync_one(name, snapshot, force=force, progress=progress, wait_s=wait_s)
            reports.append(report)
            if not explicit and not hot and not report.errors:
                break
        return reports

    def _sync_one(
        self, name: str, snapshot: Snapshot, *, force: bool, progress: Progress, wait_s: float
    ) -> SyncReport:
        started = time.perf_counter()
        seen = self._ledger.changes
        with self._index_lock(name, wait_s=wait_s, progress=progress):  # IndexBusy goes up
            try:
                with contained(name, "sync"):
                    report = self.backend(name).sync(
                        snapshot,
                        force=force,
                        progress=stopping_on(self._closing, progress, backend=name),
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
        self._ledger.synced(name, seen)
        if snapshot.warnings:
            report = dataclasses.replace(
                report, warnings=(*snapshot.warning_lines(), *report.warnings)
            )
        breaker = self._breakers.get(name)  # a backend outside the chain has none
        if breaker is not None and not report.errors:  # it works again: stop skipping it
            breaker.success()
            self._health.record(self.breakers(), self.last_fallback)
        return report

    def _index_lock(
        self, name: str, *, wait_s: float, progress: Progress = no_progress
    ) -> contextlib.AbstractContextManager[None]:
        """The cross-process lock around syncs of backend ``name`` (see ``_indexlock``)."""
        return index_lock(
            self.config.agent_state_path / name,
            agent=self.config.agent_id,
            backend=name,
            wait_s=wait_s,
            progress=progress,
        )

    def _sync_job(self, name: str, seen: int) -> SyncReport:
        """A sync started on the read path (on a thread of its own, see :class:`SyncJobs`).

        When another process is syncing the backend it does not wait: the search answers
        from the index there is, with a note (``IndexBusy``), and the next one tries again.
        """
        with self._index_lock(name, wait_s=0):
            report = self.backend(name).sync(
                self.snapshot(), progress=stopping_on(self._closing, no_progress, backend=name)
            )
        if report.errors:
            raise BackendError("; ".join(report.errors), backend=name)
        self._ledger.synced(name, seen)
        return report

    # -- search -------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        mode: str | None = None,
        session_key: str | None = None,
        explain: bool = False,
        sources: Sequence[Source] | None = None,
        category: Category | None = None,
    ) -> SearchResponse:
        """Search memory; the first healthy backend of the chain answers.

        Any string is a valid query (FTS syntax, control characters and all). When a
        backend fails, the next one answers and ``fallback`` says why, unless the policy
        is ``fallback = "none"``, which raises instead. Each backend tried gets
        ``router.timeout_s``; a sidecar's sync never holds the search, a standby's at most
        ``router.sync_wait_s``, and ``notes`` say when the answer may be stale or
        degraded, and why. ``explain`` attaches an :class:`Explain` to every hit and
        returns the candidates left out in ``dropped``. ``sources`` limits the hits to those
        sources, ``category`` to entries of that category (see :mod:`._filters`).
        """
        self._check_open()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string", key="query")
        chosen = _filters.check_sources(sources), _filters.check_category(category)
        if session_key is not None and not isinstance(session_key, str):
            raise InvalidInput("session_key must be a string", key="session_key")
        q = self.config.query
        limit = (
            positive_int(max_results, "max_results") if max_results is not None else q.max_results
        )
        threshold = unit_float(min_score, "min_score") if min_score is not None else q.min_score
        check_mode(mode, self.backend_specs.get(self.config.router.chain[0]))
        # Lone surrogates (from JSON, or undecodable bytes in argv) cannot reach a backend
        # nor be echoed in the response, which must encode as UTF-8 JSON; NUL cannot either.
        query = scrub(query)
        text = query.replace("\x00", " ").strip()
        started = time.perf_counter()
        if not text:
            return self._response(query, (), backend=self.config.router.chain[0], mode="empty")
        self.embedding_setup()  # configuration errors surface here, not as backend failures
        new_session = self._ledger.is_new_session(session_key)
        self._ledger.note_session(session_key)
        request = SearchRequest(
            query=text,
            max_results=limit,
            min_score=threshold,
            candidates=q.hybrid.candidates(limit),
            mode=mode,
            timeout=self.config.router.timeout_s,
            sources=chosen[0],
            category=chosen[1],
        )
        try:
            return self._answer(
                query,
                request,
                session_key=session_key,
                started=started,
                new_session=new_session,
                explain=explain,
            )
        finally:
            self._health.record(self.breakers(), self.last_fallback)

    def _answer(
        self,
        query: str,
        request: SearchRequest,
        *,
        session_key: str | None,
        started: float,
        new_session: bool,
        explain: bool = False,
    ) -> SearchResponse:
        """Walk the chain; every way a backend can fail goes through :meth:`_fail`."""
        attempts: list[Fallback] = []
        chain = self.config.router.chain
        for name in chain:
            try:
                result, notes = self._attempt(name, request, new_session, last=name == chain[-1])
            except ConfigError:
                raise  # the same for every backend: no fallback can fix it
            except MemoryRouterError as error:
                attempts.append(self._fail(name, error))
                if self.config.router.fallback == "none":
                    raise fail_closed(name, error) from error
                continue
            shape_started = time.perf_counter()
            hits, dropped = _ranking.shape_all(
                result, request, self.config, session_key=session_key, explain=explain
            )
            timings = {
                "search_ms": (shape_started - started) * 1000,
                "shape_ms": (time.perf_counter() - shape_started) * 1000,
            }
            response = self._response(
                query,
                hits,
                backend=name,
                mode=result.mode,
                timings=timings,
                attempts=tuple(attempts),
                notes=(*notes, *result.notes),
                dropped=tuple(dropped),
            )
            return with_below_min_score(response, result, request, self.config)
        reasons = "; ".join(f"{a.from_}: {a.reason}" for a in attempts)
        raise BackendUnavailable(f"no backend could answer ({reasons})", backend=chain[-1])

    def _attempt(
        self, name: str, request: SearchRequest, new_session: bool, *, last: bool
    ) -> tuple[BackendResult, tuple[str, ...]]:
        """Ask one backend: breaker, reconcile, then a search within the deadline."""
        breaker = self._breakers[name]
        if not breaker.allow():
            last_error = breaker.snapshot().last_error or "failing"
            raise CircuitOpen(f"circuit open after failures (last: {last_error})", backend=name)
        notes, scan = self._reconciler.before_search(name, new_session=new_session, last=last)
        if scan is not None:
            result = scan.search(request, backend=name)
        else:
            backend = self.backend(name)
            deadline = self.config.router.timeout_s

            def call() -> BackendResult:
                with contained(name, "search"):
                    return backend.search(request)

            result = call_with_deadline(name, call, deadline)
        breaker.success()
        return _filters.keep(result, request), notes

    def _fail(self, name: str, error: MemoryRouterError) -> Fallback:
        """The one failure path: count it on the breaker (unless it was open) and record it."""
        if not isinstance(error, CircuitOpen):
            severe = isinstance(error, BackendUnavailable | BackendTimeout)
            self._breakers[name].failure(error.message, severe=severe)
        kind: FallbackKind = (
            "circuit_open"
            if isinstance(error, CircuitOpen)
            else "timeout"
            if isinstance(error, BackendTimeout)
            else "unavailable"
            if isinstance(error, BackendUnavailable)
            else "error"
        )
        event = Fallback(
            from_=name, reason=error.message, at=datetime.now(UTC), hint=error.hint, kind=kind
        )
        self.last_fallback = event
        self._fallback_log.note(name, error.message)
        return event

    def _response(
        self,
        query: str,
        hits: Any,
        *,
        backend: str,
        mode: str,
        timings: dict[str, float] | None = None,
        attempts: tuple[Fallback, ...] = (),
        notes: tuple[str, ...] = (),
        dropped: tuple[Any, ...] = (),
    ) -> SearchResponse:
        setup = self._setup
        embedder = setup.embedder if setup else None
        choice = setup.choice if setup else None
        return SearchResponse(
            query=query,
            results=tuple(hits),
            backend=backend,
            mode=mode,
            provider=embedder.provider_id if embedder else None,
            model=embedder.model if embedder else None,
            fallback=attempts[0] if attempts else None,
            attempts=attempts,
            provider_fallback=(embedder.fallback_event if embedder else None)
            or (choice.fallback if choice else None),
            citations=self.config.citations,
            timings=timings or {},
            notes=notes,
            dropped=dropped,
        )

    # -- migration ----------------------------------------------------------------------

    def migrate(
        self,
        target: str | None = None,
        *,
        source: str | None = None,
        source_path: str | os.PathLike[str] | None = None,
        target_path: str | os.PathLike[str] | None = None,
        resume: bool = False,
        verify: int | None = None,
        queries: Sequence[str] = (),
        copy: bool = True,
        batch_size: int | None = None,
        progress: Progress = no_progress,
    ) -> MigrationReport:
        """Copy the index of backend ``source`` (or the index file ``source_path``) into
        backend ``target`` (or the SQLite index file ``target_path``), reusing vectors
        when the fingerprints match; built beside the
        live index and switched over when complete. ``resume`` continues a killed run;
        ``verify`` runs that many corpus queries (plus ``queries``) on both sides;
        ``copy = False`` only verifies; ``batch_size`` (chunks per write and checkpoint)
        defaults to what the target writes best. See :mod:`memory_router._migrate.migration`.
        """
        self._check_open()
        from ._migrate import migration as _migrate  # only `migrate` uses it (and its verification)

        path = os.fspath(source_path) if source_path is not None else None
        to_path = os.fspath(target_path) if target_path is not None else None
        return _migrate.migrate(
            self,
            target,
            source=source,
            source_path=path,
            target_path=to_path,
            resume=resume,
            batch_size=batch_size,
            verify=verify,
            queries=queries,
            copy=copy,
            progress=progress,
        )

    # -- files and entries ------------------------------------------------------------

    def get(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> FileText:
        """Read lines of a memory file (allow-listed: memory paths and extra paths, ``.md``)."""
        return _files.read_memory_file(self.config, path, from_line=from_line, lines=lines)

    @property
    def journal_path(self) -> Path:
        return self.config.workspace_path / self.config.entries.path

    def store(self, text: str, *, importance: float = 0.7, category: Category = "other") -> Entry:
        """Journal a new entry in the workspace; it is indexed on the next sync.

        Always stores; :meth:`remember` checks for a duplicate first.
        """
        text = scrub(text) if isinstance(text, str) else text
        return self._append(_journal.new_entry(text, importance=importance, category=category))

    def remember(
        self,
        text: str,
        *,
        importance: float = 0.7,
        category: Category = "other",
        force: bool = False,
    ) -> StoreResult:
        """:meth:`store`, unless an entry with similarity ≥ ``entries.duplicate_threshold``
        exists: then nothing is stored and the existing entry is returned as a duplicate.
        ``force`` skips the check."""
        self._check_open()
        text = scrub(text) if isinstance(text, str) else text
        entry = _journal.new_entry(text, importance=importance, category=category)
        with self._remember_lock:
            duplicate = None if force else self._book.duplicate(entry.text)
            if duplicate is not None:
                return StoreResult(
                    action="duplicate", entry=duplicate.entry, similarity=duplicate.similarity
                )
            return StoreResult(action="created", entry=self._append(entry))

    def recall(
        self, query: str, *, category: Category | None = None, limit: int | None = None
    ) -> RecallResult:
        """Entries only (optionally of one ``category``), ranked by similarity to ``query``
        weighted by importance and recency (``[entries.ranking]``)."""
        self._check_open()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string", key="query")
        count = positive_int(limit, "limit") if limit is not None else _entries.DEFAULT_RECALL_LIMIT
        chosen = _entries.valid_category(category)
        native = native_recall(
            lambda: self.backend(self.config.router.chain[0]),
            self._reconciler,
            self.embedder,
            self.config,
            scrub(query),
            category=chosen,
            limit=count,
        )
        if native is not None:
            return native
        return self._book.recall(scrub(query), category=chosen, limit=count)

    def forget_entry(
        self, *, entry_id: str | None = None, query: str | None = None
    ) -> ForgetResult:
        """Forget by id, or by query: exactly one entry with similarity ≥
        ``entries.forget_threshold`` is removed; otherwise nothing is, and the closest
        entries come back as candidates."""
        self._check_open()
        if (entry_id is None) == (query is None):
            raise InvalidInput("give either an entry id or a query", key="id")
        if entry_id is not None:
            return ForgetResult(action="deleted", deleted=self.forget(entry_id))
        target, candidates = self._book.forget_target(scrub(query or ""))
        if target is None:
            return ForgetResult(action="candidates", candidates=candidates)
        return ForgetResult(action="deleted", deleted=self.forget(target.entry.id))

    def _append(self, entry: Entry) -> Entry:
        try:
            _journal.append_entry(self.journal_path, entry)
        except OSError as error:
            raise MemoryRouterError(
                f"cannot write the entries journal {self.journal_path}: {error.strerror or error}",
                hint="check that the workspace exists and is writable",
            ) from error
        self._ledger.changed()
        return entry

    def forget(self, entry_id: str) -> Entry:
        """Remove an entry from the journal by id; raises :class:`NotFound` if absent."""
        try:
            entry = _journal.remove_entry(self.journal_path, entry_id)
        except OSError as error:
            raise MemoryRouterError(
                f"cannot rewrite the entries journal {self.journal_path}: {error.strerror or error}"
            ) from error
        self._ledger.changed()
        return entry

    def entries(self) -> list[Entry]:
        """Every journaled entry, in file order."""
        return _journal.read_journal(self.journal_path)

    # -- status -------------------------------------------------------------------------

    def status(self, *, deep: bool = False) -> RouterStatus:
        """Backends, breakers, the embedding provider and source counts; ``deep`` probes."""
        statuses = []
        for name in self.config.router.chain:
            try:
                with contained(name, "status"):
                    statuses.append(self.backend(name).status(deep=deep))
            except MemoryRouterError as error:
                statuses.append(BackendStatus(name=name, available=False, error=error.message))
        breakers, last, seen_at = seen_breakers(
            self._health, self.breakers(), self.last_fallback, self.config.router.breaker.cooldown_s
        )
        sources, file_warnings = on_disk(self.config)
        workspace_error, workspace_hint = workspace_problem(self.config)
        return RouterStatus(
            agent_id=self.config.agent_id,
            workspace=str(self.config.workspace_path),
            chain=self.config.router.chain,
            fallback_policy=self.config.router.fallback,
            backends=tuple(statuses),
            breakers=breakers,
            last_fallback=last,
            embedding=self._embedding_status(deep=deep),
            sources=sources,
            can_answer=any(s.available for s in statuses),
            breakers_seen_at=seen_at,
            workspace_error=workspace_error,
            workspace_hint=workspace_hint,
            file_warnings=file_warnings,
        )

    def breakers(self) -> dict[str, Any]:
        """Each backend's circuit breaker state now (what ``status`` reports)."""
        return {n: b.snapshot() for n, b in self._breakers.items()}

    def _embedding_status(self, *, deep: bool) -> dict[str, Any]:
        try:
            setup = self.embedding_setup()
        except MemoryRouterError as error:
            return {
                "available": False,
                "requested": self.config.embedding.provider,
                "error": error.message,
            }
        return setup.status(deep=deep)

    def close(self) -> None:
        """Close backends (killing their children), the embedder and the cache. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        for name, backend in list(self._backends.items()):
            try:
                with contained(name, "close"):
                    backend.close()
            except MemoryRouterError:
                pass  # closing the others matters more than this backend's complaint
        self._backends.clear()
        self._reconciler.close()
        if self._setup is not None:
            self._setup.close()
