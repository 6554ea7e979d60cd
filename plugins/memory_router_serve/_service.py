"""The warm service behind ``serve`` and ``mcp``: one router, the watcher, metrics.

:class:`Service` owns the router for the life of the process. :meth:`Service.start`
indexes the workspace, builds every backend of the chain (which starts sidecar update
cycles, such as QMD's) and loads the embedding model, so the first query is as fast as
the hundredth; then it starts the watcher plugin when it is installed. When the chain's
first backend is a sidecar (``sync_in_background``, such as QMD), that first index and
the watcher start on a thread of their own: the server listens at once, and ``/health``
reports the sidecar not ready (``degraded``) until its first sync has finished.
:meth:`close` stops the watcher and closes the router, which stops the backends' children.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from memory_router import (
    BackendTimeout,
    Entry,
    FileText,
    ForgetResult,
    MemoryRouterError,
    RecallResult,
    Router,
    RouterStatus,
    SearchResponse,
    StoreResult,
)

from ._metrics import Metrics

log = logging.getLogger("memory_router.serve")
T = TypeVar("T")


class SearchThreads:
    """``count`` threads that run what the event loop hands them, one call at a time each,
    and give each answer back to the loop with one ``call_soon_threadsafe``.

    ``ThreadPoolExecutor.submit`` plus ``asyncio.wrap_future`` did the same with a
    ``concurrent.futures.Future`` (a condition, callbacks) chained to an asyncio future:
    about twice the CPU and the latency of this queue (bench/NOTES.md, issue 24).
    """

    def __init__(self, count: int) -> None:
        self._count = count
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` on one of the threads; its value or its exception, here on the loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            if future.cancelled():  # the request is gone: no one waits for the answer
                return
            try:
                if self._closed:  # queued when the server stopped: not run on a closed router
                    raise MemoryRouterError("the server is stopping")
                value = call()
            except BaseException as error:  # handed to the loop, as the executor did
                _hand(loop, future, None, error)
            else:
                _hand(loop, future, value, None)

        self._start()
        self._jobs.put(job)
        return await future

    def _start(self) -> None:
        if self._closed:
            raise MemoryRouterError("the server is stopping")
        if len(self._threads) == self._count:
            return
        with self._lock:
            while len(self._threads) < self._count:
                name = f"serve-search_{len(self._threads)}"
                thread = threading.Thread(target=self._serve, daemon=True, name=name)
                thread.start()
                self._threads.append(thread)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def close(self) -> None:
        """End the threads once they have run what is queued (the loop has stopped)."""
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._jobs.put(None)


def _hand(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], value: Any, error: Any
) -> None:
    """Settle ``future`` on its loop's thread; nothing when the loop has closed."""

    def settle() -> None:
        if future.done():  # cancelled while the call ran
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    with contextlib.suppress(RuntimeError):  # the loop is closed: the server has stopped
        loop.call_soon_threadsafe(settle)


class Service:
    """One agent's router kept warm, with the counters ``/metrics`` shows."""

    def __init__(self, router: Router, *, watch: bool = True, poll: bool = False) -> None:
        self.router = router
        self.metrics = Metrics()
        self.started_at = time.time()
        self.ready = threading.Event()
        self._watch = watch
        self._poll = poll
        self._watcher: Any = None
        self._monitor: threading.Thread | None = None
        self._stop = threading.Event()
        self._indexing: threading.Thread | None = None
        self._sidecar: str | None = None
        limit = router.config.serve.max_concurrent_searches or os.cpu_count() or 1
        self._slots = threading.BoundedSemaphore(limit)
        # As many threads as slots: HTTP searches past the limit queue here, not on the
        # semaphore, where each woke and slept again at every release (CPU on a busy server).
        self._searchers = SearchThreads(limit)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Index, build the chain's backends, load the model, start the watcher.

        A sidecar's first sync (and the watcher after it) runs in the background.
        A missing or unreadable workspace raises :class:`ConfigError` before anything
        starts: a server over no workspace would answer nothing and could empty the index.
        """
        router = self.router
        router.check_workspace()
        started = time.perf_counter()
        for name in router.config.router.chain:
            try:
                router.backend(name)
            except MemoryRouterError as error:
                log.warning("backend %s is not available: %s", name, error.message)
        first = router.config.router.chain[0]
        if self._syncs_in_background(first):
            self._sidecar = first
            self._indexing = threading.Thread(
                target=self._index_in_background, daemon=True, name="serve-index"
            )
            self._indexing.start()
        else:
            self._index()
        try:
            embedder = router.embedder
            if embedder is not None:
                embedder.embed_query("warm up")
        except MemoryRouterError as error:
            log.warning("embedding provider not ready: %s", error.message)
        log.info("warm in %.1f s", time.perf_counter() - started)
        self.ready.set()

    def _syncs_in_background(self, name: str) -> bool:
        try:
            return bool(getattr(self.router.backend(name), "sync_in_background", False))
        except MemoryRouterError:
            return False

    def _index(self) -> None:
        if self._watch and self._start_watcher():
            return  # the watcher's first sync indexed the workspace
        self._record_syncs(self.router.sync())

    def _index_in_background(self) -> None:
        try:
            self._index()
        except MemoryRouterError as error:  # closed while it ran, most likely
            if not self._stop.is_set():
                log.warning("the first sync failed: %s", error.message)
        log.info("first sync finished")

    def _start_watcher(self) -> bool:
        try:
            from memory_router_watch import Watcher
        except ImportError:
            log.warning("the watch plugin is not installed; the index syncs on search only")
            return False
        try:
            self._watcher = Watcher(self.router, poll=self._poll)
            self._watcher.start()
        except MemoryRouterError as error:
            log.warning("not watching the workspace: %s", error.message)
            self._watcher = None
            return False
        self._record_syncs(self._watcher.stats.reports)
        log.info(
            "watching %s (%s)", self.router.config.workspace_path, self._watcher.stats.observer
        )
        self._monitor = threading.Thread(target=self._follow, daemon=True, name="serve-monitor")
        self._monitor.start()
        return True

    def _follow(self) -> None:
        """Log and count the watcher's syncs."""
        seen = self._watcher.stats.syncs
        while not self._stop.wait(0.25):
            stats = self._watcher.stats
            if stats.syncs != seen:
                seen = stats.syncs
                self._record_syncs(stats.reports)

    def _record_syncs(self, reports: Any) -> None:
        for report in reports:
            self.metrics.sync(report.backend, report.duration_ms / 1000, ok=not report.errors)
            log.info(
                "synced %s: +%d ~%d -%d (%d chunks) in %.0f ms%s",
                report.backend,
                report.added,
                report.updated,
                report.removed,
                report.chunks,
                report.duration_ms,
                f"; errors: {'; '.join(report.errors)}" if report.errors else "",
            )

    def close(self) -> None:
        """Stop the watcher and close the router (its backends stop their children)."""
        self._stop.set()
        if self._indexing is not None and self._indexing.is_alive():
            # Closing the router kills the sidecar's children, which ends its sync.
            self.router.close()
            self._indexing.join(timeout=30)
        if self._watcher is not None:
            self._watcher.stop()
        if self._monitor is not None:
            self._monitor.join(timeout=2)
        self._searchers.close()
        self.router.close()

    # -- operations (counted) -----------------------------------------------------------

    def search(self, query: str, **options: Any) -> SearchResponse:
        """``Router.search``, at most ``[serve] max_concurrent_searches`` at a time.

        More concurrent searches than cores only make each one slower; past the router's
        deadline they would time out and open the circuit breaker for a backend that is
        merely busy. Extra requests wait here instead (up to the router's timeout).
        """
        return self._search(query, time.perf_counter(), options)

    async def search_async(self, query: str, **options: Any) -> SearchResponse:
        """:meth:`search` on one of the service's search threads, for the event loop; the
        wait for a thread counts in the same timeout as the wait for a slot."""
        started = time.perf_counter()
        return await self._searchers.run(lambda: self._search(query, started, options))

    def _search(self, query: str, started: float, options: dict[str, Any]) -> SearchResponse:
        left = self.router.config.router.timeout_s - (time.perf_counter() - started)
        if left <= 0 or not self._slots.acquire(timeout=left):
            self.metrics.query(None, time.perf_counter() - started, ok=False)
            raise BackendTimeout(
                "the server is busy: no search slot within the timeout",
                backend=self.router.config.router.chain[0],
            )
        try:
            response = self.router.search(query, **options)
        except MemoryRouterError:
            self.metrics.query(None, time.perf_counter() - started, ok=False)
            raise
        finally:
            self._slots.release()
        self.metrics.query(response.backend, time.perf_counter() - started, ok=True)
        for attempt in response.attempts:
            self.metrics.fallback(attempt.from_, attempt.reason, attempt.kind)
        return response

    def get(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> FileText:
        return self.router.get(path, from_line=from_line, lines=lines)

    def remember(self, text: str, **options: Any) -> StoreResult:
        """Store ``text`` unless a near-identical entry exists (``Router.remember``)."""
        result = self.router.remember(text, **options)
        self.metrics.count("stores" if result.action == "created" else "duplicates")
        return result

    def recall(self, query: str, **options: Any) -> RecallResult:
        return self.router.recall(query, **options)

    def forget(self, entry_id: str) -> Entry:
        entry = self.router.forget(entry_id)
        self.metrics.count("forgets")
        return entry

    def forget_entry(self, **options: Any) -> ForgetResult:
        """Forget by id, or by a query that matches exactly one entry (``Router.forget_entry``)."""
        result = self.router.forget_entry(**options)
        if result.action == "deleted":
            self.metrics.count("forgets")
        return result

    def status(self) -> RouterStatus:
        return self.router.status()

    def health(self) -> dict[str, Any]:
        """Liveness plus per-backend readiness; ``ok`` when some backend can answer and
        the workspace can be read (otherwise ``error`` and ``hint`` say why)."""
        if not self.ready.is_set():
            return {"status": "starting", "ok": False, "backends": {}}
        status = self.router.status()
        if status.workspace_error:  # every memory tool refuses until it is back
            return {
                "status": "unavailable",
                "ok": False,
                "backends": {},
                "error": status.workspace_error,
                "hint": status.workspace_hint,
                "uptime_s": round(time.time() - self.started_at, 3),
            }
        backends = {}
        for backend in status.backends:
            breaker = status.breakers.get(backend.name)
            is_open = breaker is not None and breaker.state == "open"
            backends[backend.name] = {
                "ready": backend.available and not is_open,
                "breaker": breaker.state if breaker else None,
                "error": backend.error,
            }
        indexing = self._indexing
        if indexing is not None and indexing.is_alive() and self._sidecar in backends:
            backends[self._sidecar].update(ready=False, error="its first sync is still running")
        ready = [name for name, b in backends.items() if b["ready"]]
        state = "ok" if len(ready) == len(backends) else "degraded" if ready else "unavailable"
        return {
            "status": state,
            "ok": bool(ready),
            "backends": backends,
            "uptime_s": round(time.time() - self.started_at, 3),
        }

    def watcher_stats(self) -> dict[str, Any] | None:
        if self._watcher is None:
            return None
        stats = self._watcher.stats
        return {
            "observer": stats.observer,
            "events": stats.events,
            "syncs": stats.syncs,
            "last_error": stats.last_error,
        }
