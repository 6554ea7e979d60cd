"""Syncs that run on a thread of their own, so the read path can wait for them at most
a bounded time (or not at all) and answer from the index a backend already has."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .._exceptions import MemoryRouterError
from .._types import SyncReport
from .._util.waits import wait_event
from .calls import contained


@dataclass(slots=True, kw_only=True)
class SyncJob:
    """One sync of one backend; ``report`` or ``error`` is set once ``done`` is."""

    name: str
    seen: int
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    report: SyncReport | None = None
    error: MemoryRouterError | None = None

    def wait(self, timeout: float | None) -> bool:
        return wait_event(self.done, timeout)

    @property
    def age(self) -> float:
        return time.monotonic() - self.started


class SyncJobs:
    """At most one running sync per backend; a finished one is kept until collected.

    ``run(name, seen)`` does the sync (``seen``: the change count it started from);
    whatever it raises becomes the job's ``error`` (any non-library exception is
    contained as a :class:`BackendError` first).
    """

    def __init__(self, run: Callable[[str, int], SyncReport]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._jobs: dict[str, SyncJob] = {}

    def start(self, name: str, seen: int) -> SyncJob:
        """The running job for ``name``, or a new one started now."""
        with self._lock:
            job = self._jobs.get(name)
            if job is not None and not job.done.is_set():
                return job
            job = SyncJob(name=name, seen=seen)
            self._jobs[name] = job
        thread = threading.Thread(
            target=self._target, args=(job,), name=f"memory-router-sync-{name}", daemon=True
        )
        thread.start()
        return job

    def running(self, name: str) -> SyncJob | None:
        job = self._jobs.get(name)
        return job if job is not None and not job.done.is_set() else None

    def collect(self, name: str) -> SyncJob | None:
        """A finished job for ``name`` not collected before (removed now), or ``None``."""
        with self._lock:
            job = self._jobs.get(name)
            if job is None or not job.done.is_set():
                return None
            del self._jobs[name]
            return job

    def _target(self, job: SyncJob) -> None:
        try:
            with contained(job.name, "sync"):
                job.report = self._run(job.name, job.seen)
        except MemoryRouterError as error:
            job.error = error
        finally:
            job.done.set()

    def wait_all(self, timeout: float) -> None:
        """Give running jobs up to ``timeout`` seconds in total (used when closing)."""
        deadline = time.monotonic() + timeout
        for job in list(self._jobs.values()):
            job.wait(max(0.0, deadline - time.monotonic()))
