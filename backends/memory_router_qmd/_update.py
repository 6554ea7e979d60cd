"""The update + embed cycle: on start (in the background) and every ``update_interval_s``.

Cycles are serialised (one lock), so at most one ``qmd update`` and one ``qmd embed``
run at a time for this backend; QMD's own embed lock covers other processes, and its
"another embed is running" answer (exit 0) is reported as ``busy``, not as success.
Each step has its own timeout. A failed step backs off: ``failure_backoff_s × 2^(n-1)``,
at most an hour, reset by a success. Searches never wait for a cycle.

The last ``update`` and ``embed`` outcomes are kept in a small JSON file beside QMD's
state, so ``status`` in another process (the CLI next to a server) shows them too, and
the timer holds across processes: a cycle (the start-up one included) runs only when the
last update of any process is ``interval`` old (a failed one: ``failure_backoff`` old),
so a one-shot command started a minute after the last update starts none. What
``update`` changed is also added up until a sync takes it (:meth:`UpdateCycle.take_changes`):
a sync that ran right after the start-up cycle had built the index reports the files that
cycle added, not "all unchanged".

A child ended by :meth:`UpdateCycle.close` is not a failure of QMD: nothing is recorded
for it. A running ``update`` gets :data:`CLOSE_GRACE_S` to finish first (it takes well
under a second), so a one-shot command that started one does not throw it away.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_router import BackendError, MemoryRouterError
from memory_router.kit import acquire_lock, wait_event

from ._process import QmdRunner

_INDEXED = re.compile(r"^Indexed: (\d+) new, (\d+) updated, (\d+) unchanged, (\d+) removed", re.M)
_EMBED_DONE = re.compile(r"Done! Embedded (\d+) chunks from (\d+) documents")
_EMBED_PARTIAL = re.compile(r"(\d+) chunks still failed after retries")
_MAX_BACKOFF = 3600.0
_CHANGES = ("added", "updated", "removed")
CLOSE_GRACE_S = 2.0
"""How long :meth:`UpdateCycle.close` lets a running ``qmd update`` finish before it is killed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What one ``update`` or ``embed`` did.

    ``status``: ``ok``, ``failed``; for embed also ``done``, ``nothing-to-do``, ``busy``,
    ``partial``, ``skipped``; ``cancelled`` when :meth:`UpdateCycle.close` ended it (never
    recorded). ``counts`` holds parsed numbers (``added``, ``updated``, ``unchanged``,
    ``removed`` / ``chunks``, ``documents``, ``failed``). ``files`` is the fingerprint of
    the memory files a sync's ``update`` indexed (``None`` for a timer's update).
    """

    step: str
    status: str
    at: datetime
    duration_s: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    files: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "at": self.at.isoformat(),
            "duration_s": round(self.duration_s, 3),
            "counts": dict(self.counts),
            "error": self.error,
            **({"files": self.files} if self.files else {}),
        }

    @classmethod
    def from_dict(cls, step: str, data: Any) -> Outcome | None:
        """What :meth:`to_dict` wrote, or ``None`` when ``data`` is not that."""
        try:
            return cls(
                step=step,
                status=str(data["status"]),
                at=datetime.fromisoformat(data["at"]),
                duration_s=float(data["duration_s"]),
                counts={str(k): int(v) for k, v in data["counts"].items()},
                error=None if data["error"] is None else str(data["error"]),
                files=str(data["files"]) if data.get("files") else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def parse_indexed(output: str) -> dict[str, int]:
    """Sum every ``Indexed: N new, …`` line (one per collection)."""
    totals = {"added": 0, "updated": 0, "unchanged": 0, "removed": 0}
    for match in _INDEXED.finditer(output):
        for key, value in zip(totals, match.groups(), strict=True):
            totals[key] += int(value)
    return totals


def parse_embed(output: str) -> tuple[str, dict[str, int]]:
    """Classify ``qmd embed`` output (exit 0 covers all four outcomes)."""
    if "Another embed process is already running" in output:
        return "busy", {}
    if "already have embeddings" in output:
        return "nothing-to-do", {}
    partial = _EMBED_PARTIAL.search(output)
    done = _EMBED_DONE.search(output)
    counts = {"chunks": int(done[1]), "documents": int(done[2])} if done else {}
    if partial:
        return "partial", {**counts, "failed": int(partial[1])}
    return ("done", counts) if done else ("ok", counts)


class UpdateCycle:
    """Runs ``update`` then (when ``can_embed()``) ``embed``; optionally on a timer."""

    def __init__(
        self,
        runner: QmdRunner,
        *,
        update_timeout: float,
        embed_timeout: float,
        failure_backoff: float,
        can_embed: Callable[[], bool],
        prepare: Callable[[], None],
        record: Path | None = None,
    ) -> None:
        """``record`` is the JSON file that keeps the last outcomes across processes."""
        self.runner = runner
        self.update_timeout = update_timeout
        self.embed_timeout = embed_timeout
        self.failure_backoff = failure_backoff
        self.can_embed = can_embed
        self.prepare = prepare
        self.record = record
        self.last_update, self.last_embed = _load(record)
        self._changes = dict.fromkeys(_CHANGES, 0)
        self._failures = {"update": 0, "embed": 0}
        self._retry_at = {"update": 0.0, "embed": 0.0}
        self._lock = threading.Lock()
        self._lock_changes = threading.Lock()
        self._generation = 0  # cycles finished
        self._failure: str | None = None  # why the last cycle of this process failed
        self._stop = threading.Event()
        self._idle = threading.Event()  # cleared while a `qmd update` runs
        self._idle.set()
        self._thread: threading.Thread | None = None

    def start(self, *, interval: float, on_boot: bool) -> None:
        """Run cycles in a daemon thread: now (if ``on_boot``) and every ``interval`` s."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._loop, args=(interval, on_boot), name="qmd-update", daemon=True
        )
        self._thread.start()

    def _loop(self, interval: float, on_boot: bool) -> None:
        wait = self.due_in(interval) if on_boot else interval
        while (on_boot or interval > 0) and not self._stop.wait(wait):
            wait = self.due_in(interval)  # another process may have updated meanwhile
            if wait > 0:
                continue
            self._quietly()
            on_boot = False
            wait = interval

    def due_in(self, interval: float) -> float:
        """Seconds until a timer cycle is due: ``interval`` after the last update of any
        process (``failure_backoff`` after a failed one), ``0`` when none is known."""
        self.refresh()
        last = self.last_update
        if last is None:
            return 0.0
        age = (datetime.now(UTC) - last.at).total_seconds()
        wait = self.failure_backoff if last.status == "failed" else interval
        return max(0.0, wait - age) if interval > 0 else 0.0

    def refresh(self) -> None:
        """Take the outcomes another process recorded since, when they are newer."""
        update, embed = _load(self.record)
        if update is not None and (self.last_update is None or update.at > self.last_update.at):
            self.last_update = update
        if embed is not None and (self.last_embed is None or embed.at > self.last_embed.at):
            self.last_embed = embed

    def indexed(self, files: str, *, embeds: bool) -> bool:
        """Whether the last update (of any process) indexed exactly ``files`` and nothing
        is left to embed: a sync may then skip QMD. ``embeds``: whether embed would run."""
        self.refresh()
        update, embed = self.last_update, self.last_embed
        if update is None or update.status != "ok" or update.files != files:
            return False
        if not embeds:
            return True
        return embed is not None and embed.status in ("done", "nothing-to-do")

    def _quietly(self) -> None:
        # Failures are recorded in last_update / last_embed for status; nothing may end
        # the background loop, or the index would silently stop following the files.
        try:
            self._run(force=False, embed_force=False, files=None, timer=True)
        except MemoryRouterError:
            pass
        except Exception as error:
            self.last_update = Outcome(
                step="update", status="failed", at=datetime.now(UTC), error=repr(error)
            )

    def run(
        self, *, force: bool, embed_force: bool = False, files: str | None = None
    ) -> tuple[Outcome, Outcome]:
        """One cycle; ``force`` ignores failure backoff. Raises when ``update`` fails.

        A call that finds a cycle running waits for it; if that cycle failed (its
        ``update``, or any call of it hung: a hung ``embed`` too), the call fails with it at
        once instead of giving a sick QMD a second full timeout. So does a call made less
        than ``failure_backoff`` seconds after a QMD call hung (``force`` or not): one hung
        call is enough to know. ``files``: the fingerprint of the memory files a sync's
        update indexes (see :meth:`indexed`).
        """
        outcomes = self._run(force=force, embed_force=embed_force, files=files, timer=False)
        assert outcomes is not None  # only a timer's cycle is skipped
        return outcomes

    def _run(
        self, *, force: bool, embed_force: bool, files: str | None, timer: bool
    ) -> tuple[Outcome, Outcome] | None:
        """:meth:`run`; a ``timer`` cycle that waited for another one does not run
        (``None``): that one has just brought the index up to date."""
        self._refuse_after_hang()
        if not self._lock.acquire(blocking=False):
            generation = self._generation
            acquire_lock(self._lock)
            try:
                if generation != self._generation:
                    self._refuse_after_hang()
                    if self._failure is not None:
                        raise BackendError(self._failure, backend=self.runner.backend)
                    if timer:
                        self._lock.release()
                        return None
            except BaseException:
                self._lock.release()
                raise
        try:
            return self._cycle(force=force, embed_force=embed_force, files=files)
        finally:
            self._generation += 1
            self._lock.release()

    def _refuse_after_hang(self) -> None:
        hung = self.runner.recent_hang(self.failure_backoff)
        if hung is not None:
            raise BackendError(f"qmd update not started: {hung}", backend=self.runner.backend)

    def _cycle(
        self, *, force: bool, embed_force: bool, files: str | None
    ) -> tuple[Outcome, Outcome]:
        self._failure = None
        if self._stop.is_set():
            raise BackendError("backend is closed", backend=self.runner.backend)
        try:
            self.prepare()
        except OSError as error:
            raise BackendError(
                f"cannot write QMD's index configuration: {error}", backend=self.runner.backend
            ) from error
        self._idle.clear()
        try:
            update = self._step("update", ["update"], self.update_timeout, force=force, files=files)
        finally:
            self._idle.set()
        if update.status == "cancelled":
            raise BackendError(
                "qmd update stopped: the backend closed", backend=self.runner.backend
            )
        if update.status == "failed":
            self._failure = f"qmd update failed: {update.error}"
            raise BackendError(self._failure, backend=self.runner.backend)
        embed = self._embed(force=force, embed_force=embed_force)
        return update, embed

    def cleanup(self) -> None:
        """``qmd cleanup``: drop the content of replaced documents and ``VACUUM``."""
        with self._lock:
            self.runner.run(["cleanup"], timeout=self.update_timeout)

    def _embed(self, *, force: bool, embed_force: bool) -> Outcome:
        if self._stop.is_set():  # closing after a finished update: no embed to throw away
            return Outcome(step="embed", status="cancelled", at=datetime.now(UTC))
        if not self.can_embed():
            outcome = Outcome(
                step="embed", status="skipped", at=datetime.now(UTC), error="no embedding model"
            )
            self.last_embed = outcome
            return outcome
        # QMD's own limit (whole minutes) ends about a minute before the hard one, so QMD
        # can stop cleanly (and release its embed lock) before it is killed.
        minutes = max(1, int((self.embed_timeout - 30) // 60))
        args = ["embed", "--timeout", str(minutes), *(["-f"] if embed_force else [])]
        return self._step("embed", args, self.embed_timeout, force=force)

    def _step(
        self, step: str, args: list[str], timeout: float, *, force: bool, files: str | None = None
    ) -> Outcome:
        now = time.monotonic()
        if not force and now < self._retry_at[step]:
            previous = self.last_update if step == "update" else self.last_embed
            error = f"in failure backoff for {self._retry_at[step] - now:.0f} s"
            if previous is not None and previous.error:
                error += f" (last: {previous.error})"
            return self._record(
                Outcome(step=step, status="failed", at=datetime.now(UTC), error=error)
            )
        started = time.monotonic()
        try:
            result = self.runner.run(args, timeout=timeout)
        except MemoryRouterError as error:
            if self._stop.is_set():  # ended by close(): not QMD's failure, nothing recorded
                return Outcome(
                    step=step, status="cancelled", at=datetime.now(UTC), error=error.message
                )
            self._failures[step] += 1
            delay = self.failure_backoff * 2 ** (self._failures[step] - 1)
            self._retry_at[step] = time.monotonic() + min(_MAX_BACKOFF, delay)
            outcome = Outcome(
                step=step,
                status="failed",
                at=datetime.now(UTC),
                duration_s=time.monotonic() - started,
                error=error.message,
            )
            return self._record(outcome)
        self._failures[step] = 0
        self._retry_at[step] = 0.0
        text = result.stdout + "\n" + result.stderr
        status, counts = ("ok", parse_indexed(text)) if step == "update" else parse_embed(text)
        if step == "update" and files is None:
            files = self._files_kept(counts)
        return self._record(
            Outcome(
                step=step,
                status=status,
                at=datetime.now(UTC),
                duration_s=result.elapsed,
                counts=counts,
                files=files if step == "update" else None,
            )
        )

    def _files_kept(self, counts: dict[str, int]) -> str | None:
        """A timer's update that changed nothing leaves the index as the last sync's update
        made it: that update's file fingerprint still holds."""
        last = self.last_update
        if last is None or last.status != "ok" or any(counts.get(k, 0) for k in _CHANGES):
            return None
        return last.files

    def take_changes(self) -> dict[str, int]:
        """Files ``update`` added, updated and removed since the last call (any cycle's)."""
        with self._lock_changes:
            changes, self._changes = self._changes, dict.fromkeys(_CHANGES, 0)
        return changes

    def _record(self, outcome: Outcome) -> Outcome:
        if outcome.step == "update":
            self.last_update = outcome
            with self._lock_changes:
                for key in _CHANGES:
                    self._changes[key] += outcome.counts.get(key, 0)
        else:
            self.last_embed = outcome
        if self.record is not None:
            _save(self.record, self.last_update, self.last_embed)
        return outcome

    def close(self) -> None:
        """Stop the timer; a running ``update`` gets :data:`CLOSE_GRACE_S` to finish, then
        every running step is killed by the runner's ``kill_all``."""
        self._stop.set()
        try:
            wait_event(self._idle, CLOSE_GRACE_S)
        finally:
            self.runner.kill_all()
        if self._thread is not None:
            self._thread.join(timeout=10)


def _load(record: Path | None) -> tuple[Outcome | None, Outcome | None]:
    """The outcomes another process recorded (``None`` each when there are none)."""
    try:
        data = json.loads(record.read_text(encoding="utf-8")) if record else None
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    update = Outcome.from_dict("update", data.get("update"))
    return update, Outcome.from_dict("embed", data.get("embed"))


def _save(record: Path, update: Outcome | None, embed: Outcome | None) -> None:
    """Write the last outcomes (atomically; a failure to write only loses the record)."""
    data = {"update": update and update.to_dict(), "embed": embed and embed.to_dict()}
    temporary = record.with_name(f"{record.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, record)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def reported_counts(update: Outcome, changes: dict[str, int]) -> dict[str, int]:
    """A sync's counts: ``changes`` (:meth:`UpdateCycle.take_changes`, this sync's own
    ``update`` included) and the files its ``update`` found unchanged, less those an
    earlier cycle had just added or updated (they are counted as such)."""
    earlier = sum(changes[k] - update.counts.get(k, 0) for k in ("added", "updated"))
    return {**changes, "unchanged": max(0, update.counts.get("unchanged", 0) - earlier)}
