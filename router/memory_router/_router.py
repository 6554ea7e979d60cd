"""The :class:`Router`: one search/get interface over a chain of backends.

A facade: it checks arguments and hands each call to one of the parts it composes —
the backends and their embedding setup (:mod:`._routing.backends`), the circuit
breakers and the walk down the chain (:mod:`._routing.chain`), the syncs
(:mod:`._routing.sync`) and the entries journal (:mod:`._entries.book`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pluggy

from . import _plugins
from ._backend import Backend, BackendSpec
from ._config.config import Config, apply_overrides, load_config
from ._embedding.embedder import Embedder
from ._embedding.setup import EmbeddingSetup
from ._entries.book import (
    DEFAULT_RECALL_LIMIT,
    EntryBook,
    ForgetResult,
    RecallResult,
    StoreResult,
    valid_category,
)
from ._exceptions import ConfigError, InvalidInput
from ._routing.backends import Backends
from ._routing.calls import positive_int
from ._routing.chain import Breakers, Chain
from ._routing.indexlock import INDEX_WAIT_S
from ._routing.status import noting_workspace, router_status
from ._routing.sync import Syncer
from ._types import (
    BreakerState,
    Category,
    Entry,
    Fallback,
    FileText,
    IndexFingerprint,
    Progress,
    RouterStatus,
    SearchResponse,
    Source,
    SyncReport,
    no_progress,
)
from ._workspace import files as _files
from ._workspace.checks import check_workspace
from ._workspace.snapshot import Snapshot, scrub


class Router:
    """Memory for one agent: search, get, store, forget, sync and status over a backend chain.

    Build it with :meth:`from_config`. Backends and the embedding setup are built on first
    use. Thread-safe for concurrent searches. A search never waits on a sidecar's sync,
    and at most ``router.sync_wait_s`` for a standby's (see :meth:`search`). Migration is
    a function of a router: :func:`memory_router.migrate`.
    """

    def __init__(
        self, config: Config, *, plugin_manager: pluggy.PluginManager | None = None
    ) -> None:
        self.config = config
        self.pm = plugin_manager or _plugins.get_plugin_manager()
        providers = functools.partial(_plugins.provider_specs, self.pm)
        self._backends = Backends(config, _plugins.backend_specs(self.pm), providers)
        self._breakers = Breakers(config)
        self._syncer = Syncer(config, self._backends, recovered=self._breakers.recovered)
        self._chain = Chain(config, self._backends, self._breakers, self._syncer)
        self._book = EntryBook(
            config,
            lambda: self._backends.embedder,
            changed=self._syncer.changed,
            native=self._chain.recall,
        )

    @classmethod
    def from_config(
        cls,
        config: Config | str | os.PathLike[str] | None = None,
        *,
        plugins: Iterable[object] = (),
        plugin_manager: pluggy.PluginManager | None = None,
        require_workspace: bool = True,
        **overrides: Any,
    ) -> Router:
        """Build a router from a :class:`Config`, a TOML path, or the discovered config.

        ``overrides`` are nested config values (``workspace="~/notes"``,
        ``query={"max_results": 10}``). ``plugins`` are extra plugin objects to register.
        A missing or unreadable workspace is a :class:`ConfigError` (see
        :meth:`check_workspace`) unless ``require_workspace`` is false, for tools that
        diagnose it (``status``, ``doctor``) or answer from the index as it was (``search``).
        """
        if not isinstance(config, Config):
            config = load_config(config, overrides=overrides)
        elif overrides:
            config = apply_overrides(config, overrides)
        if require_workspace:
            check_workspace(config)
        pm = plugin_manager or _plugins.get_plugin_manager(plugins=plugins)
        return cls(config, plugin_manager=pm)

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- construction -----------------------------------------------------------------

    @property
    def backend_specs(self) -> dict[str, BackendSpec]:
        """The installed backends, by name."""
        return self._backends.specs

    def embedding_setup(self) -> EmbeddingSetup:
        """The embedding setup, built on the first call (the only step that picks a provider).

        Raises :class:`ConfigError` or :class:`EmbeddingError` when the configured
        provider cannot be built.
        """
        return self._backends.embedding_setup()

    @property
    def embedder(self) -> Embedder | None:
        """The shared embedder, or ``None`` in keyword-only mode."""
        return self._backends.embedder

    def check_workspace(self) -> Path:
        """The workspace folder; a :class:`ConfigError` when it is missing or unreadable.

        The one workspace check: every operation that reads or writes memory calls it
        first, so a typo or an unmounted volume is an error, never an emptied index.
        """
        return check_workspace(self.config)

    def unset_secret(self, name: str) -> ConfigError | None:
        """The error for a secret of ``[backends.<name>]`` whose variable or file is unset."""
        return self._backends.unset_secret(name)

    def backend(self, name: str) -> Backend:
        """The backend called ``name``, built on first use."""
        return self._backends.get(name)

    def check_backend_names(self, names: Iterable[str]) -> None:
        """Refuse a name no installed backend has, in the chain or not: :class:`NotFound`
        (``key`` the name, the installed ones in the hint). The one check of a backend
        name given by a caller: :meth:`sync`, :meth:`backend` and ``reset`` apply it."""
        self._backends.check_names(names)

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` was called: every operation but reading files then fails."""
        return self._backends.closed

    # -- sync ---------------------------------------------------------------------------

    def fingerprint(self) -> IndexFingerprint:
        """The index fingerprint for the current provider, chunking and memory paths."""
        return self._backends.fingerprint()

    def snapshot(self) -> Snapshot:
        """The workspace's memory files now, with the current fingerprint.

        A missing or unreadable workspace is a :class:`ConfigError`: syncing it would
        look like every file was deleted and empty the index.
        """
        return self._syncer.snapshot()

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
        self._backends.check_open()
        return self._syncer.sync(force=force, backends=backends, progress=progress, wait_s=wait_s)

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
        sources, ``category`` to entries of that category (see :mod:`._search.filters`). A
        missing workspace is not an error here: the index as it was answers, with a note.
        """
        self._backends.check_open()
        request = self._chain.request(
            query,
            max_results=max_results,
            min_score=min_score,
            mode=mode,
            session_key=session_key,
            sources=sources,
            category=category,
        )
        response = self._chain.search(request, session_key=session_key, explain=explain)
        return noting_workspace(self.config, response)

    # -- files and entries ------------------------------------------------------------

    def get(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> FileText:
        """Read lines of a memory file (allow-listed: memory paths and extra paths, ``.md``)."""
        check_workspace(self.config)
        return _files.read_memory_file(self.config, path, from_line=from_line, lines=lines)

    @property
    def journal_path(self) -> Path:
        return self._book.path

    def store(self, text: str, *, importance: float = 0.7, category: Category = "other") -> Entry:
        """Journal a new entry in the workspace; it is indexed on the next sync.

        Always stores; :meth:`remember` checks for a duplicate first. Secrets in ``text``
        are masked first (:meth:`remember` says which).
        """
        return self._book.store(text, importance=importance, category=category)

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
        self._backends.check_open()
        return self._book.remember(text, importance=importance, category=category, force=force)

    def recall(
        self, query: str, *, category: Category | None = None, limit: int | None = None
    ) -> RecallResult:
        """Entries only (optionally of one ``category``), ranked by similarity to ``query``
        weighted by importance and recency (``[entries.ranking]``)."""
        self._backends.check_open()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string", key="query")
        count = positive_int(limit, "limit") if limit is not None else DEFAULT_RECALL_LIMIT
        chosen = valid_category(category)
        return self._book.recall(scrub(query), category=chosen, limit=count)

    def forget_entry(
        self, *, entry_id: str | None = None, query: str | None = None
    ) -> ForgetResult:
        """Forget by id, or by query: exactly one entry with similarity ≥
        ``entries.forget_threshold`` is removed; otherwise nothing is, and the closest
        entries come back as candidates."""
        self._backends.check_open()
        if (entry_id is None) == (query is None):
            raise InvalidInput("give either an entry id or a query", key="id")
        return self._book.forget_entry(entry_id=entry_id, query=query)

    def forget(self, entry_id: str) -> Entry:
        """Remove an entry from the journal by id; raises :class:`NotFound` if absent."""
        return self._book.forget(entry_id)

    def entries(self) -> list[Entry]:
        """Every journaled entry, in file order."""
        return self._book.entries()

    # -- status -------------------------------------------------------------------------

    def status(self, *, deep: bool = False) -> RouterStatus:
        """Backends, breakers, the embedding provider and source counts; ``deep`` probes."""
        return router_status(self.config, self._backends, self._breakers, deep=deep)

    def breakers(self) -> dict[str, BreakerState]:
        """Each backend's circuit breaker state now (what ``status`` reports)."""
        return self._breakers.states()

    @property
    def last_fallback(self) -> Fallback | None:
        """The last time a search fell back from a backend in this process, and why."""
        return self._breakers.last_fallback

    def close(self) -> None:
        """Close backends (killing their children), the embedder and the cache. Idempotent."""
        if not self._backends.close():  # backends first: their running syncs fail fast
            return
        self._syncer.close()  # those syncs get a moment to end; the Markdown scans close
        self._backends.close_embedding()  # last: a sync still running may embed
