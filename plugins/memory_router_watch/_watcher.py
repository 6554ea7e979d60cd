"""Keep the index fresh: watch the workspace and sync after a quiet period.

Markdown changes under the memory paths schedule a sync once no event has arrived for
``sync.watch_debounce_ms``. Session transcripts count appended bytes and lines and
schedule a sync only once ``sync.sessions.delta_bytes`` or ``delta_messages`` is reached
(a shrunk file counts whole). ``sync.interval_minutes`` adds a periodic reconcile, which
also catches anything the watcher missed. When inotify cannot watch more (EMFILE,
ENOSPC), the watcher falls back to polling rather than going silently stale.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_router import MemoryRouterError, Router, SyncReport

IGNORED = frozenset({".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__"})


@dataclass
class WatchStats:
    """What the watcher has seen and done, for status output and tests."""

    events: int = 0
    kinds: set[str] = field(default_factory=set)
    """Every kind of file-system event the observer delivered (``"modified"``, ...)."""
    syncs: int = 0
    last_event: float | None = None
    last_sync: float | None = None
    last_error: str | None = None
    observer: str = ""
    reports: list[SyncReport] = field(default_factory=list)


class Watcher:
    """Watches one router's workspace; :meth:`start` returns at once, :meth:`stop` joins."""

    def __init__(self, router: Router, *, poll: bool = False) -> None:
        self.router = router
        config = router.config
        self.debounce = config.sync.watch_debounce_ms / 1000
        self.interval = config.sync.interval_minutes * 60
        self.workspace = config.workspace_path
        self.roots = self._roots()
        self.sessions_dir = config.expand(config.sessions_dir) if config.sessions_enabled else None
        self.stats = WatchStats()
        self._poll = poll
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._sizes: dict[str, int] = {}
        self._pending: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._observer: Any = None
        self._ticker: threading.Thread | None = None

    def _roots(self) -> list[Path]:
        """Folders watched recursively: the workspace and extra-path folders."""
        config = self.router.config
        roots = [self.workspace]
        roots += [p for p in (config.expand(e) for e in config.extra_paths) if p.is_dir()]
        return roots

    @property
    def files(self) -> set[str]:
        """Extra paths that are single files (their folder is watched, not recursively)."""
        config = self.router.config
        return {str(p) for p in (config.expand(e) for e in config.extra_paths) if p.is_file()}

    # -- events ---------------------------------------------------------------------------

    def relevant(self, path: str) -> bool:
        if path in self.files:
            return True
        if self.sessions_dir and path.startswith(str(self.sessions_dir)):
            return ".jsonl" in Path(path).name
        root = next((r for r in self.roots if path.startswith(str(r) + os.sep)), None)
        if root is None:
            return False
        # Ignored names count only below the watched root (a workspace may live in ~/venv).
        if IGNORED & set(Path(path).relative_to(root).parts):
            return False
        return path.endswith(".md")

    def on_change(self, path: str) -> None:
        """Called for every created, modified, moved or deleted path."""
        if not self.relevant(path):
            return
        self.stats.events += 1
        self.stats.last_event = time.time()
        if (
            self.sessions_dir
            and path.startswith(str(self.sessions_dir))
            and not self._session_due(path)
        ):
            return
        self.schedule()

    def _session_due(self, path: str) -> bool:
        limits = self.router.config.sync.sessions
        try:
            size = os.stat(path).st_size
        except OSError:
            return True  # deleted: prune it
        old = self._sizes.get(path, 0)
        grown, lines = self._pending.get(path, (0, 0))
        if size < old:
            grown, lines, old = grown + size, lines + _count_lines(path, 0, size), 0
        else:
            grown, lines = grown + size - old, lines + _count_lines(path, old, size)
        self._sizes[path] = size
        due = grown >= limits.delta_bytes or lines >= limits.delta_messages
        due = due or limits.delta_bytes <= 0 or limits.delta_messages <= 0
        self._pending[path] = (0, 0) if due else (grown, lines)
        return due

    def schedule(self) -> None:
        """Sync once no further event arrives for the debounce period."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self.sync_now)
            self._timer.daemon = True
            self._timer.start()

    def sync_now(self) -> None:
        try:
            self.stats.reports = self.router.sync()
            errors = [e for r in self.stats.reports for e in r.errors]
            self.stats.last_error = "; ".join(errors) or None
        except MemoryRouterError as error:
            self.stats.last_error = error.message
        self.stats.syncs += 1
        self.stats.last_sync = time.time()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Index what is there now, then watch (existing files are never skipped).

        A missing or unreadable workspace raises :class:`ConfigError` (the router's
        workspace check): it is never created, and nothing is synced or watched.
        """
        self.router.check_workspace()
        self.sync_now()
        self._observer = self._start_observer()
        if self.interval > 0:
            self._ticker = threading.Thread(
                target=self._tick, daemon=True, name="memory-router-interval"
            )
            self._ticker.start()

    def _start_observer(self) -> Any:
        try:
            from watchdog import events
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
            from watchdog.observers.polling import PollingObserver
        except ImportError as error:
            raise MemoryRouterError(
                "watching needs watchdog", hint="pip install 'memory-router[watch]'"
            ) from error
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher.stats.kinds.add(event.event_type)
                watcher.on_change(os.fsdecode(event.src_path))
                if getattr(event, "dest_path", ""):
                    watcher.on_change(os.fsdecode(event.dest_path))

        # Changes only. Unasked, inotify also reports every open and every close after
        # reading: a search reads the workspace (its folder, snippets), and each read woke
        # the observer's threads, about 1 ms of a server's CPU per search (bench/NOTES.md).
        changes = [
            events.FileCreatedEvent,
            events.FileModifiedEvent,
            events.FileDeletedEvent,
            events.FileMovedEvent,
            events.FileClosedEvent,
            events.DirCreatedEvent,
            events.DirModifiedEvent,
            events.DirDeletedEvent,
            events.DirMovedEvent,
        ]
        dirs = [*self.roots, *([self.sessions_dir] if self.sessions_dir else [])]
        parents = {Path(f).parent for f in self.files} - set(dirs)
        for cls in [PollingObserver] if self._poll else [Observer, PollingObserver]:
            observer = cls(timeout=0.5) if cls is PollingObserver else cls()
            try:
                for root in dirs:
                    if root == self.sessions_dir:  # state, which may not exist yet
                        root.mkdir(parents=True, exist_ok=True)
                    observer.schedule(Handler(), str(root), recursive=True, event_filter=changes)
                for parent in parents:
                    observer.schedule(Handler(), str(parent), event_filter=changes)
                observer.start()
            except OSError as error:  # inotify limits: degrade to polling
                self.stats.last_error = f"{cls.__name__}: {error}"
                continue
            self.stats.observer = cls.__name__
            return observer
        raise MemoryRouterError(f"cannot watch {self.workspace}: {self.stats.last_error}")

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.sync_now()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)


def _count_lines(path: str, start: int, end: int) -> int:
    count = 0
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            left = end - start
            while left > 0:
                block = handle.read(min(65536, left))
                if not block:
                    break
                count += block.count(b"\n")
                left -= len(block)
    except OSError:
        return 0
    return count
