"""The :class:`Router`: one search/get interface over a chain of backends."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pluggy

from . import _entries, _files, _journal, _migrate, _plugins, _ranking
from ._backend import Backend, BackendContext, BackendSpec, validate_backend_settings
from ._breaker import CircuitBreaker
from ._calls import call_with_deadline, fail_closed, positive_int, unit_float
from ._config import Config, apply_overrides, load_config
from ._embedding import Embedder, EmbeddingCache, provider_key
from ._entries import EntryBook, ForgetResult, RecallResult, StoreResult
from ._exceptions import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
    MemoryRouterError,
    NotFound,
)
from ._explain import check_mode, check_workspace, with_below_min_score
from ._health import HealthFile, seen_breakers
from ._indexlock import INDEX_WAIT_S, index_lock, unusable_folder
from ._migrate import MigrationReport
from ._providers import ProviderChoice, ProviderContext, choose_provider, fallback_factory
from ._status import embedding_status, source_counts
from ._types import (
    BackendStatus,
    Category,
    Entry,
    Fallback,
    FileText,
    Progress,
    RouterStatus,
    SearchRequest,
    SearchResponse,
    SyncReport,
    no_progress,
)
from ._workspace import FTS_ONLY, Snapshot, fingerprint_for, scrub, take_snapshot


class Router:
    """Memory for one agent: search, get, store, forget, sync and status over a backend chain.

    Build it with :meth:`from_config`. Backends and the embedding provider are created
    on first use. Thread-safe for concurrent searches; syncs are serialised.
    """

    def __init__(
        self, config: Config, *, plugin_manager: pluggy.PluginManager | None = None
    ) -> None:
        self.config = config
        self.pm = plugin_manager or _plugins.get_plugin_manager()
        self.backend_specs: dict[str, BackendSpec] = _plugins.backend_specs(self.pm)
        self._settings = validate_backend_settings(config, self.backend_specs)
        self._backends: dict[str, Backend] = {}
        self._synced: set[str] = set()
        self._breakers = {
            name: CircuitBreaker(
                failure_threshold=config.router.breaker.failure_threshold,
                cooldown_s=config.router.breaker.cooldown_s,
            )
            for name in config.router.chain
        }
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._choice: ProviderChoice | None = None
        self._embedder: Embedder | None = None
        self._cache: EmbeddingCache | None = None
        # Changes to the workspace made through this router (store/forget), and the count
        # the last sync saw: a store during a running sync stays pending.
        self._changes = 1
        self._synced_changes = 0
        self._last_sync = 0.0
        self._sessions: set[str] = set()
        self._probed_dims: tuple[tuple[str, str, str], int] | None = None
        self.last_fallback: Fallback | None = None
        self._health = HealthFile(config.agent_state_path)
        self._closed = False
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

    def _provider_choice(self) -> ProviderChoice:
        with self._lock:
            if self._choice is not None:
                return self._choice
            context = ProviderContext(config=self.config, state_dir=self.config.agent_state_path)
            specs = _plugins.provider_specs(self.pm)
            choice = choose_provider(specs, context)
            if choice.provider is not None:
                if self.config.cache.enabled:
                    path = self.config.expand(self.config.cache.path)
                    self._cache = EmbeddingCache(
                        path, max_entries=self.config.cache.max_entries or None
                    )
                self._embedder = Embedder(
                    choice.provider,
                    cache=self._cache,
                    fallback=fallback_factory(specs, context, choice.provider.id),
                )
            self._choice = choice
            return choice

    @property
    def embedder(self) -> Embedder | None:
        """The shared embedder, or ``None`` in keyword-only mode."""
        self._provider_choice()
        return self._embedder

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this router is closed; build a new one", key="router")

    def backend(self, name: str) -> Backend:
        """The backend called ``name``, built on first use."""
        self._check_open()
        with self._lock:
            if name in self._backends:
                return self._backends[name]
            spec = self.backend_specs.get(name)
            if spec is None:
                raise NotFound(f"no backend named {name!r}", key=name)
            state_dir = self.config.agent_state_path / name
            try:
                state_dir.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise unusable_folder(state_dir, error) from error
            context = BackendContext(
                name=name,
                config=self.config,
                settings=self._settings.get(name),
                state_dir=state_dir,
                embedder=self.embedder,
            )
            try:
                backend = spec.factory(context)
            except MemoryRouterError:
                raise
            except Exception as error:  # a plugin's own failure, translated once here
                raise BackendUnavailable(
                    f"backend {name!r} failed to start: {error}", backend=name
                ) from error
            self._backends[name] = backend
            return backend

    # -- sync ---------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """The index fingerprint for the current provider (see :func:`fingerprint_for`)."""
        embedder = self.embedder
        if embedder is None:
            return fingerprint_for(
                self.config, provider="none", model=FTS_ONLY, provider_key=FTS_ONLY, dims=None
            )
        return fingerprint_for(
            self.config,
            provider=embedder.provider_id,
            model=embedder.model,
            provider_key=provider_key(embedder.provider),
            dims=self._dims(embedder),
        )

    def _dims(self, embedder: Embedder) -> int:
        """The vector size; probed once when the provider only learns it from an answer.

        Without the probe the fingerprint would change from ``None`` to N after the first
        embedding, and the next sync would rebuild the whole index for nothing.
        """
        key = (embedder.provider_id, embedder.model, provider_key(embedder.provider))
        if self._probed_dims is None or self._probed_dims[0] != key:
            dims = embedder.dims or len(embedder.embed_query("dimension probe"))
            self._probed_dims = (key, dims)
        return self._probed_dims[1]

    def snapshot(self) -> Snapshot:
        """The workspace's memory files now, with the current fingerprint."""
        embedder = self.embedder
        return take_snapshot(
            self.config,
            fingerprint=self.fingerprint(),
            model=embedder.model if embedder else FTS_ONLY,
        )

    def sync(
        self,
        *,
        force: bool = False,
        backends: Iterable[str] | None = None,
        progress: Progress = no_progress,
        wait_s: float = INDEX_WAIT_S,
    ) -> list[SyncReport]:
        """Bring backends in line with the workspace.

        By default the first backend of the chain, plus every other one when
        ``standby = "hot"``. A backend that fails gets a report with ``errors`` set;
        other backends still sync. A missing or unreadable workspace is a
        :class:`ConfigError` (the index is left as it is). One process syncs an agent at a
        time: another one's sync is waited for up to ``wait_s`` seconds, then
        ``IndexBusy`` is raised.
        """
        chain = self.config.router.chain
        names = (
            list(backends)
            if backends is not None
            else (list(chain) if self.config.router.standby == "hot" else [chain[0]])
        )
        self._check_open()
        check_workspace(self.config)
        lock = index_lock(
            self.config.agent_state_path,
            agent=self.config.agent_id,
            wait_s=wait_s,
            progress=progress,
        )
        with self._sync_lock, lock:
            seen = self._changes
            snapshot = self.snapshot()
            reports = [
                self._sync_one(name, snapshot, force=force, progress=progress) for name in names
            ]
            self._synced_changes = seen
            self._last_sync = time.monotonic()
            return reports

    def _sync_one(
        self, name: str, snapshot: Snapshot, *, force: bool, progress: Progress
    ) -> SyncReport:
        started = time.perf_counter()
        try:
            report = self.backend(name).sync(snapshot, force=force, progress=progress)
        except MemoryRouterError as error:
            return SyncReport(
                backend=name,
                errors=(error.message,),
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        self._synced.add(name)
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
    ) -> SearchResponse:
        """Search memory; the first healthy backend of the chain answers.

        Any string is a valid query (FTS syntax, control characters and all). When a
        backend fails, the next one answers and ``fallback`` says why, unless the policy
        is ``fallback = "none"``, which raises instead.
        """
        self._check_open()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string", key="query")
        if session_key is not None and not isinstance(session_key, str):
            raise InvalidInput("session_key must be a string", key="session_key")
        q = self.config.query
        limit = (
            positive_int(max_results, "max_results") if max_results is not None else q.max_results
        )
        threshold = unit_float(min_score, "min_score") if min_score is not None else q.min_score
        check_mode(mode, self.backend_specs.get(self.config.router.chain[0]))
        # NUL and lone surrogates (they arrive through JSON) cannot reach a backend.
        text = scrub(query.replace("\x00", " ")).strip()
        started = time.perf_counter()
        timings: dict[str, float] = {}
        if not text:
            return self._response(
                query, (), backend=self.config.router.chain[0], mode="empty", timings=timings
            )
        self._provider_choice()  # configuration errors surface here, not as backend failures
        sync_notes = self._reconcile(session_key)
        if self._last_sync and started <= self._last_sync:
            timings["sync_ms"] = (time.perf_counter() - started) * 1000
        request = SearchRequest(
            query=text,
            max_results=limit,
            min_score=threshold,
            candidates=min(200, max(1, limit * q.hybrid.candidate_multiplier)),
            mode=mode,
            timeout=self.config.router.timeout_s,
        )
        try:
            response = self._answer(
                query, request, session_key=session_key, started=started, timings=timings
            )
        finally:
            self._health.record(
                {n: b.snapshot() for n, b in self._breakers.items()}, self.last_fallback
            )
        if sync_notes:
            response = dataclasses.replace(response, notes=(*sync_notes, *response.notes))
        return response

    def _answer(
        self,
        query: str,
        request: SearchRequest,
        *,
        session_key: str | None,
        started: float,
        timings: dict[str, float],
    ) -> SearchResponse:
        """Walk the chain: the first backend that answers is shaped into the response."""
        attempts: list[Fallback] = []
        for name in self.config.router.chain:
            breaker = self._breakers[name]
            if not breaker.allow():
                last = breaker.snapshot().last_error or "failing"
                reason = f"circuit open after failures (last: {last})"
                attempts.append(self._fail(name, reason))
                if self.config.router.fallback == "none":
                    raise fail_closed(name, BackendUnavailable(reason, backend=name))
                continue
            try:
                result = self._call_search(name, request)
            except MemoryRouterError as error:
                severe = isinstance(error, BackendUnavailable | BackendTimeout)
                breaker.failure(error.message, severe=severe)
                attempts.append(self._fail(name, error.message))
                if self.config.router.fallback == "none":
                    raise fail_closed(name, error) from error
                continue
            breaker.success()
            shape_started = time.perf_counter()
            hits = _ranking.shape(result, request, self.config, session_key=session_key)
            timings["search_ms"] = (shape_started - started) * 1000
            timings["shape_ms"] = (time.perf_counter() - shape_started) * 1000
            response = self._response(
                query,
                hits,
                backend=name,
                mode=result.mode,
                timings=timings,
                attempts=tuple(attempts),
                notes=result.notes,
            )
            return with_below_min_score(response, result, request, self.config)
        reasons = "; ".join(f"{a.from_}: {a.reason}" for a in attempts)
        raise BackendUnavailable(
            f"no backend could answer ({reasons})", backend=self.config.router.chain[-1]
        )

    def _needs_sync(self, session_key: str | None) -> bool:
        """Reconcile before searching (see ``[sync]`` in the configuration docs).

        With ``on_search``: before the first search, after ``store``/``forget``, and, when
        ``interval_minutes`` is set, once that long has passed since the last sync (which
        catches hand edits without a watcher). With ``on_session_start``: on the first
        search of each new session key.
        """
        new_session = bool(session_key) and session_key not in self._sessions
        if session_key:
            self._sessions.add(session_key)
        sync = self.config.sync
        interval = sync.interval_minutes * 60
        stale = interval > 0 and time.monotonic() - self._last_sync >= interval
        dirty = self._changes != self._synced_changes or stale
        return (dirty and sync.on_search) or (new_session and sync.on_session_start)

    def _reconcile(self, session_key: str | None) -> tuple[str, ...]:
        """Sync before a search when due; failures become notes, never a failed search."""
        if not self._needs_sync(session_key):
            return ()
        try:
            reports = self.sync(wait_s=0)  # another process syncing: answer from the index
        except MemoryRouterError as error:
            return (f"index not brought up to date: {error.message}",)
        return tuple(
            f"index not brought up to date ({r.backend}): {e}" for r in reports for e in r.errors
        )

    def _fail(self, name: str, reason: str) -> Fallback:
        event = Fallback(from_=name, reason=reason, at=datetime.now(UTC))
        self.last_fallback = event
        return event

    def _call_search(self, name: str, request: SearchRequest) -> Any:
        backend = self.backend(name)
        if name not in self._synced and name != self.config.router.chain[0]:
            # Cold standby: built from the Markdown on first use.
            with self._sync_lock:
                if name not in self._synced:
                    self._sync_one(name, self.snapshot(), force=False, progress=no_progress)
        deadline = self.config.router.timeout_s
        try:
            return call_with_deadline(name, lambda: backend.search(request), deadline)
        except MemoryRouterError:
            raise
        except Exception as error:  # an untranslated plugin error: contain it here
            raise BackendError(f"{type(error).__name__}: {error}", backend=name) from error

    def _response(
        self,
        query: str,
        hits: Any,
        *,
        backend: str,
        mode: str,
        timings: dict[str, float],
        attempts: tuple[Fallback, ...] = (),
        notes: tuple[str, ...] = (),
    ) -> SearchResponse:
        embedder = self._embedder
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
            or (self._choice.fallback if self._choice else None),
            citations=self.config.citations,
            timings=timings,
            notes=notes,
        )

    # -- migration ----------------------------------------------------------------------

    def migrate(
        self,
        target: str,
        *,
        source: str | None = None,
        source_path: str | os.PathLike[str] | None = None,
        resume: bool = False,
        verify: int | None = None,
        queries: Sequence[str] = (),
        copy: bool = True,
        batch_size: int = 1000,
        progress: Progress = no_progress,
    ) -> MigrationReport:
        """Copy the index of backend ``source`` (or the index file ``source_path``) into
        backend ``target``, reusing vectors when the fingerprints match; built beside the
        live index and switched over when complete. ``resume`` continues a killed run;
        ``verify`` runs that many corpus queries (plus ``queries``) on both sides;
        ``copy = False`` only verifies. See :mod:`memory_router._migrate`.
        """
        self._check_open()
        path = os.fspath(source_path) if source_path is not None else None
        return _migrate.migrate(
            self,
            target,
            source=source,
            source_path=path,
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
        self._changes += 1
        return entry

    def forget(self, entry_id: str) -> Entry:
        """Remove an entry from the journal by id; raises :class:`NotFound` if absent."""
        try:
            entry = _journal.remove_entry(self.journal_path, entry_id)
        except OSError as error:
            raise MemoryRouterError(
                f"cannot rewrite the entries journal {self.journal_path}: {error.strerror or error}"
            ) from error
        self._changes += 1
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
                statuses.append(self.backend(name).status(deep=deep))
            except MemoryRouterError as error:
                statuses.append(BackendStatus(name=name, available=False, error=error.message))
        own = {n: b.snapshot() for n, b in self._breakers.items()}
        breakers, last, seen_at = seen_breakers(
            self._health, own, self.last_fallback, self.config.router.breaker.cooldown_s
        )
        return RouterStatus(
            agent_id=self.config.agent_id,
            workspace=str(self.config.workspace_path),
            chain=self.config.router.chain,
            fallback_policy=self.config.router.fallback,
            backends=tuple(statuses),
            breakers=breakers,
            last_fallback=last,
            embedding=self._embedding_status(deep=deep),
            sources=source_counts(self.config),
            can_answer=any(s.available for s in statuses),
            breakers_seen_at=seen_at,
        )

    def _embedding_status(self, *, deep: bool) -> dict[str, Any]:
        try:
            choice = self._provider_choice()
        except MemoryRouterError as error:
            return {
                "available": False,
                "requested": self.config.embedding.provider,
                "error": error.message,
            }
        return embedding_status(choice, self._embedder, self._cache, deep=deep)

    def close(self) -> None:
        """Close backends, the embedder and the cache. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()
        if self._embedder is not None:
            self._embedder.close()
        if self._cache is not None:
            self._cache.close()
