"""The fallback: a search walks the backend chain until one answers.

Each backend of ``router.chain`` has a circuit breaker (:class:`Breakers`); one whose
circuit is open is not asked. A backend that is asked is first brought up to date
(:class:`~.reconcile.Reconciler`), then searched within ``router.timeout_s``. Every way
it can fail goes through :meth:`Breakers.failed`, which counts it and records why; the
next backend then answers with a fresh budget, unless ``router.fallback = "none"``.
What the breakers saw is kept in ``health.json`` for the other processes of the agent.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from .._config.config import Config
from .._entries.book import RecallResult
from .._entries.recall import native_recall
from .._exceptions import (
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
    InvalidInput,
    MemoryRouterError,
)
from .._search import filters as _filters
from .._search import ranking as _ranking
from .._search.explain import with_guidance
from .._types import (
    BackendResult,
    BreakerState,
    Category,
    Fallback,
    FallbackKind,
    Hit,
    SearchRequest,
    SearchResponse,
    Source,
)
from .._workspace.snapshot import scrub
from .backends import Backends
from .breaker import CircuitBreaker, CircuitOpen, FallbackLog
from .calls import call_with_deadline, check_mode, contained, fail_closed, positive_int, unit_float
from .health import HealthFile, seen_breakers
from .sync import Syncer


class Breakers:
    """A circuit breaker per backend of the chain, the last fallback, and the health file
    they are recorded in (and started from: see :meth:`HealthFile.restore`)."""

    def __init__(self, config: Config) -> None:
        settings = config.router.breaker
        self._breakers = {
            name: CircuitBreaker(
                failure_threshold=settings.failure_threshold,
                cooldown_s=settings.cooldown_s,
                name=name,
            )
            for name in config.router.chain
        }
        self._cooldown_s = settings.cooldown_s
        self.last_fallback: Fallback | None = None
        self._log = FallbackLog()
        self._health = HealthFile(config.agent_state_path)
        self._health.restore(self._breakers, settings.cooldown_s)

    def states(self) -> dict[str, BreakerState]:
        """Each backend's circuit breaker state now."""
        return {name: breaker.snapshot() for name, breaker in self._breakers.items()}

    def seen(self) -> tuple[dict[str, BreakerState], Fallback | None, datetime | None]:
        """What ``status`` reports (see :func:`seen_breakers`)."""
        return seen_breakers(self._health, self.states(), self.last_fallback, self._cooldown_s)

    def record(self) -> None:
        """Write the breakers and the last fallback to ``health.json`` if they changed."""
        self._health.record(self.states(), self.last_fallback)

    def check(self, name: str) -> None:
        """Raise :class:`CircuitOpen` unless backend ``name`` may be asked now."""
        breaker = self._breakers[name]
        if not breaker.allow():
            last_error = breaker.snapshot().last_error or "failing"
            raise CircuitOpen(f"circuit open after failures (last: {last_error})", backend=name)

    def succeeded(self, name: str) -> None:
        self._breakers[name].success()

    def recovered(self, name: str) -> None:
        """A sync of ``name`` worked: stop skipping it (a backend outside the chain has no
        breaker)."""
        breaker = self._breakers.get(name)
        if breaker is not None:
            breaker.success()
            self.record()

    def failed(self, name: str, error: MemoryRouterError) -> Fallback:
        """The one failure path: count it on the breaker (unless it was open) and record it."""
        if not isinstance(error, CircuitOpen):
            severe = isinstance(error, BackendUnavailable | BackendTimeout)
            self._breakers[name].failure(error.message, severe=severe)
        event = Fallback(
            from_=name,
            reason=error.message,
            at=datetime.now(UTC),
            hint=error.hint,
            kind=_kind(error),
        )
        self.last_fallback = event
        self._log.note(name, error.message)
        return event


def _kind(error: MemoryRouterError) -> FallbackKind:
    if isinstance(error, CircuitOpen):
        return "circuit_open"
    if isinstance(error, BackendTimeout):
        return "timeout"
    if isinstance(error, BackendUnavailable):
        return "unavailable"
    return "error"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """One search on its way down the chain: the query as the caller wrote it (cleaned),
    the request the backends receive, and what shaping the answer needs."""

    query: str
    request: SearchRequest
    session_key: str | None
    new_session: bool
    explain: bool
    started: float


class Chain:
    """Searches (and native entry recalls) over the chain: see the module docstring."""

    def __init__(
        self, config: Config, backends: Backends, breakers: Breakers, syncer: Syncer
    ) -> None:
        self.config = config
        self._backends = backends
        self._breakers = breakers
        self._syncer = syncer

    def request(
        self,
        query: object,
        *,
        max_results: int | None,
        min_score: float | None,
        mode: str | None,
        session_key: str | None,
        sources: Sequence[Source] | None,
        category: Category | None,
    ) -> SearchRequest:
        """The checked request (its query not yet cleaned: :meth:`search` does that).

        Raises :class:`InvalidInput` naming the first argument that is not valid.
        """
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
        check_mode(mode, self._backends.specs.get(self.config.router.chain[0]))
        return SearchRequest(
            query=query,
            max_results=limit,
            min_score=threshold,
            candidates=q.hybrid.candidates(limit),
            mode=mode,
            timeout=self.config.router.timeout_s,
            sources=chosen[0],
            category=chosen[1],
        )

    def search(
        self, request: SearchRequest, *, session_key: str | None, explain: bool
    ) -> SearchResponse:
        """Answer ``request`` (from :meth:`request`) from the first backend that can."""
        # Lone surrogates (from JSON, or undecodable bytes in argv) cannot reach a backend
        # nor be echoed in the response, which must encode as UTF-8 JSON; NUL cannot either.
        query = scrub(request.query)
        text = query.replace("\x00", " ").strip()
        started = time.perf_counter()
        if not text:
            return self._response(query, (), backend=self.config.router.chain[0], mode="empty")
        self._backends.embedding_setup()  # configuration errors surface here, not as failures
        new_session = self._syncer.begin_session(session_key)
        asked = Asked(
            query=query,
            request=dataclasses.replace(request, query=text, explain=explain),
            session_key=session_key,
            new_session=new_session,
            explain=explain,
            started=started,
        )
        try:
            return self._walk(asked)
        finally:
            self._breakers.record()

    def _walk(self, asked: Asked) -> SearchResponse:
        """Ask each backend in turn; every way one can fail goes through ``failed``."""
        attempts: list[Fallback] = []
        chain = self.config.router.chain
        for name in chain:
            try:
                result, notes = self._attempt(name, asked, last=name == chain[-1])
            except ConfigError:
                raise  # the same for every backend: no fallback can fix it
            except MemoryRouterError as error:
                attempts.append(self._breakers.failed(name, error))
                if self.config.router.fallback == "none":
                    raise fail_closed(name, error) from error
                continue
            return self._answered(name, result, asked, tuple(attempts), notes)
        reasons = "; ".join(f"{a.from_}: {a.reason}" for a in attempts)
        raise BackendUnavailable(f"no backend could answer ({reasons})", backend=chain[-1])

    def _attempt(
        self, name: str, asked: Asked, *, last: bool
    ) -> tuple[BackendResult, tuple[str, ...]]:
        """Ask one backend: breaker, reconcile, then a search within the deadline."""
        self._breakers.check(name)
        request = asked.request
        notes, scan = self._syncer.before_search(name, new_session=asked.new_session, last=last)
        if scan is not None:
            result = scan.search(request, backend=name)
        else:
            backend = self._backends.get(name)

            def call() -> BackendResult:
                with contained(name, "search"):
                    return backend.search(request)

            result = call_with_deadline(name, call, self.config.router.timeout_s)
        self._breakers.succeeded(name)
        return _filters.keep(result, request), notes

    def _answered(
        self,
        name: str,
        result: BackendResult,
        asked: Asked,
        attempts: tuple[Fallback, ...],
        notes: tuple[str, ...],
    ) -> SearchResponse:
        """The response from backend ``name``'s result, shaped (ranking, snippets)."""
        shape_started = time.perf_counter()
        hits, dropped = _ranking.shape_all(
            result,
            asked.request,
            self.config,
            session_key=asked.session_key,
            explain=asked.explain,
        )
        timings = {
            "search_ms": (shape_started - asked.started) * 1000,
            "shape_ms": (time.perf_counter() - shape_started) * 1000,
        }
        response = self._response(
            asked.query,
            hits,
            backend=name,
            mode=result.mode,
            timings=timings,
            attempts=attempts,
            notes=(*notes, *result.notes),
            dropped=dropped,
        )
        return with_guidance(response, result, asked.request, self.config)

    def _response(
        self,
        query: str,
        hits: Sequence[Hit],
        *,
        backend: str,
        mode: str,
        timings: dict[str, float] | None = None,
        attempts: tuple[Fallback, ...] = (),
        notes: tuple[str, ...] = (),
        dropped: Sequence[Hit] = (),
    ) -> SearchResponse:
        setup = self._backends.built_setup
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
            dropped=tuple(dropped),
        )

    def recall(self, query: str, category: Category | None, limit: int) -> RecallResult | None:
        """Entries recalled by the chain's first backend from its own entries table, or
        ``None`` when it keeps none or cannot answer now (see :mod:`._entries.recall`)."""
        return native_recall(
            lambda: self._backends.get(self.config.router.chain[0]),
            self._syncer.fresh,
            self._backends.embedder,
            self.config,
            query,
            category=category,
            limit=limit,
        )
