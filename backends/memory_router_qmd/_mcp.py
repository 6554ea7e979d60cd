"""The warm ``qmd mcp`` child: JSON-RPC over stdio, supervised.

One long-lived child answers ``tools/call`` requests; a reader thread matches answers to
callers by id, another keeps the last 2 KB of stderr. The supervisor restarts a dead
child on the next call, after a backoff that doubles with each crash (1 s … 60 s, never
longer than the router's breaker cooldown, so a half-open probe may always restart it)
and resets after a good answer. A call that times out kills the child's process group (a
hung child would block every later call); a child that prints something other than
JSON-RPC on stdout is killed too, and every waiting call fails at once with that line.

A call's ``timeout`` is its whole budget, a start of the child included: the start runs
on a thread of its own (its ``initialize`` handshake gets ``start_timeout``), a call
waits for it only until its own deadline, and the request gets the rest. A late start
goes on in the background, so a slow child still comes up for the next call. A child
given up on is killed and reaped on a thread of its own (bounded: SIGTERM,
``HUNG_GRACE_S``, SIGKILL), so the caller falls back at its deadline, not at its
deadline plus ``kill_grace_s``; ``close`` waits for those threads.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from memory_router import BackendError, BackendTimeout, BackendUnavailable
from memory_router.kit import join_thread, wait_event

from ._process import HUNG_GRACE_S, QmdRunner, tail, terminate

PROTOCOL_VERSION = "2025-06-18"
_BACKOFF_START, _BACKOFF_MAX = 1.0, 60.0


@dataclass(slots=True)
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    message: dict[str, Any] | None = None
    error: BackendError | None = None


@dataclass(slots=True)
class _Start:
    """A start of the child in progress; ``done`` is set once it answered or failed."""

    began: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    child: _Child | None = None
    error: BackendError | None = None


class _Child:
    """One running ``qmd mcp`` process and its two reader threads."""

    def __init__(self, runner: QmdRunner, on_exit: Any) -> None:
        self.runner = runner
        self.process = runner.spawn(["mcp"], stdin=True)
        self.pending: dict[int, _Pending] = {}
        self.lock = threading.Lock()
        self.stderr: deque[str] = deque(maxlen=64)
        self.broken: BackendError | None = None
        self.killed = False
        self.retired = False
        self._on_exit = on_exit
        self._threads = [
            threading.Thread(target=self._read_stdout, name="qmd-mcp-out", daemon=True),
            threading.Thread(target=self._read_stderr, name="qmd-mcp-err", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def stderr_tail(self) -> str:
        return tail("".join(self.stderr))

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if not line.endswith("\n"):
                break  # cut off by the child's death: reported as the exit below
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not an object")
            except ValueError:
                self._fail_all(
                    f"qmd mcp printed non-JSON-RPC on stdout: {line.strip()[:200]!r}",
                    unavailable=True,
                )
                self.terminate()
                return
            self._deliver(message)
        code = self.process.wait()
        self._fail_all(f"qmd mcp exited (code {code})", unavailable=True)
        self._on_exit(self, code)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def _deliver(self, message: dict[str, Any]) -> None:
        with self.lock:
            ident = message.get("id")
            slot = self.pending.pop(ident, None) if isinstance(ident, int) else None
        if slot is not None:
            slot.message = message
            slot.done.set()

    def _fail_all(self, reason: str, *, unavailable: bool = False) -> None:
        stderr = self.stderr_tail
        text = reason + (f"; stderr: {stderr}" if stderr else "")
        kind = BackendUnavailable if unavailable else BackendError
        with self.lock:
            if self.broken is None:
                self.broken = kind(text, backend=self.runner.backend)
            waiting, self.pending = list(self.pending.values()), {}
        for slot in waiting:
            slot.error = self.broken
            slot.done.set()

    def terminate(self) -> None:
        """Kill the process group (we gave up on it: not counted as a crash)."""
        self.killed = True
        terminate(self.process, self.runner.kill_grace_s)

    def send(self, message: dict[str, Any], slot: _Pending | None) -> None:
        with self.lock:
            if self.broken is not None:
                raise self.broken
            if slot is not None:
                self.pending[message["id"]] = slot
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps(message) + "\n")
                self.process.stdin.flush()
            except (OSError, ValueError):
                self.pending.pop(message.get("id", -1), None)
                raise BackendUnavailable(
                    "qmd mcp closed its input (it died)", backend=self.runner.backend
                ) from None

    def stop(self, grace: float = 2.0) -> None:
        """Close stdin (QMD shuts down on EOF), then kill the group if it lingers.

        A child that still owes an answer (a call the router gave up on at its deadline)
        is not waited for: its group is killed at once, so closing a router whose sidecar
        hangs costs at most ``HUNG_GRACE_S``, not the full grace and ``kill_grace_s``.
        """
        with self.lock:
            owes_answer = bool(self.pending)
        if owes_answer:
            self.killed = True
            terminate(self.process, min(self.runner.kill_grace_s, HUNG_GRACE_S))
            grace = HUNG_GRACE_S
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.terminate()
        for thread in self._threads:
            thread.join(timeout=grace)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class McpSidecar:
    """A supervised ``qmd mcp`` child; :meth:`call_tool` is thread-safe.

    ``status()`` reports pid, restarts, crashes and the last error for ``status --deep``.
    """

    def __init__(
        self, runner: QmdRunner, *, start_timeout: float, max_backoff: float = _BACKOFF_MAX
    ) -> None:
        self.runner = runner
        self.start_timeout = start_timeout
        self.max_backoff = max(0.0, min(_BACKOFF_MAX, max_backoff))
        self._child: _Child | None = None
        self._lock = threading.Lock()
        self._id_lock = threading.Lock()
        self._ids = 0
        self.starts = 0
        self.crashes = 0
        self.last_error: str | None = None
        self._backoff = 0.0
        self._retry_at = 0.0
        self._closed = False
        self._reapers: list[threading.Thread] = []
        self._starting: _Start | None = None

    def call_tool(self, name: str, arguments: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        """``tools/call`` → the result object; a tool error (``isError``) raises BackendError.

        ``timeout`` bounds the whole call, a start of the child included.
        """
        deadline = time.monotonic() + timeout
        child = self._ensure(deadline)
        result = self._request(
            child,
            "tools/call",
            {"name": name, "arguments": arguments},
            max(0.0, deadline - time.monotonic()),
            late=f"qmd mcp tools/call gave no answer within {timeout:g} s (sidecar killed)",
        )
        if result.get("isError"):
            text = " ".join(
                c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)
            )
            raise BackendError(
                f"qmd mcp {name} refused: {text.strip()}", backend=self.runner.backend
            )
        self._backoff = 0.0
        return result

    def _ensure(self, deadline: float) -> _Child:
        """The running child, or the one a start (begun now, or by another call) yields
        before ``deadline``; the start itself goes on in the background if it is late."""
        with self._lock:
            if self._closed:
                raise BackendUnavailable("backend is closed", backend=self.runner.backend)
            start = self._starting
            if start is None:
                child = self._child
                if child is not None and child.broken is None:
                    return child
                if child is not None:
                    self._retire(child)
                down = self.down_reason()
                if down is not None:
                    raise BackendUnavailable(down, backend=self.runner.backend)
                start = self._starting = _Start()
                threading.Thread(
                    target=self._start, args=(start,), name="qmd-mcp-start", daemon=True
                ).start()
        if not wait_event(start.done, max(0.0, deadline - time.monotonic())):
            raise BackendTimeout(
                "qmd mcp did not answer its start-up handshake within"
                f" {round(time.monotonic() - start.began, 1):g} s (it may go on starting in"
                f" the background for up to {self.start_timeout:g} s)",
                backend=self.runner.backend,
            )
        if start.error is not None:
            raise start.error
        assert start.child is not None
        return start.child

    def _start(self, start: _Start) -> None:
        """Start a child and shake hands (on a thread of its own, within ``start_timeout``)."""
        try:
            self.starts += 1
            child = start.child = _Child(self.runner, self._exited)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._child = child  # so that close() stops it
            if closed:
                child.stop(grace=0)
                raise BackendUnavailable("backend is closed", backend=self.runner.backend)
            late = (
                f"qmd mcp did not answer its start-up handshake within {self.start_timeout:g} s"
                " (sidecar killed)"
            )
            try:
                self._request(
                    child, "initialize", _initialize_params(), self.start_timeout, late=late
                )
                child.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
            except BackendError as error:
                self._record_failure(error.message)
                with self._lock:
                    self._retire(child)
                raise
        except BackendError as error:
            start.error = error
        finally:
            with self._lock:
                self._starting = None
            start.done.set()

    def _request(
        self, child: _Child, method: str, params: dict[str, Any], timeout: float, *, late: str
    ) -> dict[str, Any]:
        with self._id_lock:
            self._ids += 1
            ident = self._ids
        slot = _Pending()
        child.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}, slot)
        if not wait_event(slot.done, timeout):
            self._record_failure(late)
            child.broken = child.broken or BackendTimeout(late, backend=self.runner.backend)
            self._retire(child)  # killed in the background: the caller falls back now
            raise BackendTimeout(late, backend=self.runner.backend)
        if slot.error is not None:
            self._record_failure(slot.error.message)
            raise slot.error
        assert slot.message is not None
        return _result_of(slot.message, backend=self.runner.backend)

    def _record_failure(self, message: str) -> None:
        self.last_error = message
        self._backoff = min(self.max_backoff, max(_BACKOFF_START, self._backoff * 2))
        self._retry_at = time.monotonic() + self._backoff

    def _exited(self, child: _Child, code: int) -> None:
        if code != 0 and not self._closed and not child.killed:
            self.crashes += 1
            self.last_error = f"qmd mcp exited with code {code}" + (
                f"; stderr: {child.stderr_tail[-300:]}" if child.stderr_tail else ""
            )

    def _retire(self, child: _Child) -> None:
        """Stop ``child`` on a reaper thread (bounded; ``close`` joins it)."""
        if self._child is child:
            self._child = None
        if child.retired:
            return
        child.retired = True
        reaper = threading.Thread(
            target=child.stop, kwargs={"grace": HUNG_GRACE_S}, name="qmd-mcp-reaper", daemon=True
        )
        self._reapers = [r for r in self._reapers if r.is_alive()] + [reaper]
        reaper.start()

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.process.pid if child is not None and child.process.poll() is None else None

    def down_reason(self) -> str | None:
        """Why the sidecar cannot serve right now (restart backoff), or ``None``."""
        wait = self._retry_at - time.monotonic()
        if wait > 0 and (self._child is None or self._child.broken is not None):
            return f"qmd mcp sidecar is down ({self.last_error}); next restart in {wait:.1f} s"
        return None

    def status(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "starts": self.starts,
            "restarts": max(0, self.starts - 1),
            "crashes": self.crashes,
            "last_error": self.last_error,
        }

    def close(self) -> None:
        # A start in progress waits for its child's ``initialize`` (up to ``start_timeout``)
        # on its own thread, not under the lock: stopping the child ends that wait.
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
            start = self._starting
        if child is not None:
            child.stop()
        if start is not None:
            wait_event(start.done, HUNG_GRACE_S * 4)
        for reaper in list(self._reapers):
            join_thread(reaper)


def _initialize_params() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "memory-router", "version": "0.1.0"},
    }


def _result_of(message: dict[str, Any], *, backend: str) -> dict[str, Any]:
    if "error" in message:
        error = message["error"]
        detail = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"qmd mcp error: {detail}", backend=backend)
    result = message.get("result")
    if not isinstance(result, dict):
        raise BackendError(
            f"qmd mcp answered without a result: {str(message)[:200]}", backend=backend
        )
    return result
