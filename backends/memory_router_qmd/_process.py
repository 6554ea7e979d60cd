"""Running QMD as a child process with a fixed environment and hard timeouts.

Every child gets the same environment (per-agent ``XDG_CACHE_HOME``/``XDG_CONFIG_HOME``
under the backend's state directory, ``NO_COLOR=1``, ``QMD_FORCE_CPU=1``, no inherited
``CI`` — which would disable every model operation — and ``PWD`` equal to a neutral
working directory, because QMD resolves ``.`` from ``$PWD``). Each child starts under
:func:`memory_router.kit.spawn_child`, in a process group of its own that dies with this
process however it ends; a timeout kills the whole group (SIGTERM, a grace period,
SIGKILL): killing only QMD's launcher would orphan its worker. A query that times out
is given up on at once and killed on a thread of its own (bounded: SIGTERM,
:data:`HUNG_GRACE_S`, SIGKILL), so the caller falls back at its deadline, not at its
deadline plus ``kill_grace_s``; :meth:`QmdRunner.close` waits for those threads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_router import BackendError, BackendTimeout, BackendUnavailable
from memory_router.kit import communicate, join_thread, signal_child, spawn_child

from ._locate import QmdCommand

STDERR_TAIL = 2048
# Exit codes that mean the process died rather than refused: a native crash (139 is a
# segfault seen by a shell) or a signal (negative in Python).
_CRASH_CODES = frozenset({134, 137, 139})
HUNG_GRACE_S = 0.5
"""The SIGTERM grace of a child given up on in the background: a query holds nothing to
release, and a stopped (``kill -STOP``) child ignores SIGTERM anyway."""


def tail(text: str, limit: int = STDERR_TAIL) -> str:
    """The last ``limit`` characters of ``text``, stripped; what errors quote from stderr."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


@dataclass(frozen=True, slots=True, kw_only=True)
class CliResult:
    """A finished one-shot call: exit code, both streams, wall time in seconds."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float


class QmdRunner:
    """Builds QMD command lines and runs one-shot calls; knows the per-agent state layout.

    ``state_dir`` holds ``cache/`` (QMD's index under ``cache/qmd/<index>.sqlite``),
    ``config/`` (``config/qmd/<index>.yml``) and ``run/``, the neutral working directory.
    """

    def __init__(
        self,
        command: QmdCommand,
        *,
        index: str,
        state_dir: Path,
        backend: str,
        kill_grace_s: float = 5.0,
    ) -> None:
        self.command = command
        self.index = index
        self.state_dir = state_dir
        self.backend = backend
        self.kill_grace_s = kill_grace_s
        self.cwd = state_dir / "run"
        for folder in (self.cwd, self.cache_home / "qmd", self.config_home / "qmd"):
            folder.mkdir(parents=True, exist_ok=True)
        self._active: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._reapers: list[threading.Thread] = []
        self._hang: tuple[float, str] | None = None  # when, and what timed out

    @property
    def cache_home(self) -> Path:
        return self.state_dir / "cache"

    @property
    def config_home(self) -> Path:
        return self.state_dir / "config"

    @property
    def index_path(self) -> Path:
        return self.cache_home / "qmd" / f"{self.index}.sqlite"

    @property
    def config_path(self) -> Path:
        return self.config_home / "qmd" / f"{self.index}.yml"

    def argv(self, *args: str) -> list[str]:
        """The full command line: program, ``--index <name>``, then ``args``."""
        return [*self.command.argv, "--index", self.index, *args]

    def env(self) -> dict[str, str]:
        """The fixed child environment; nothing else is inherited (``CI`` least of all)."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.state_dir),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "QMD_FORCE_CPU": "1",
            "PWD": str(self.cwd),
            "XDG_CACHE_HOME": str(self.cache_home),
            "XDG_CONFIG_HOME": str(self.config_home),
        }
        if os.environ.get("TMPDIR"):
            env["TMPDIR"] = os.environ["TMPDIR"]
        return env

    def spawn(self, args: Sequence[str], *, stdin: bool = False) -> subprocess.Popen[str]:
        """Start QMD in its own session with both output streams piped."""
        try:
            return spawn_child(
                self.argv(*args),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env(),
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        except OSError as error:
            raise BackendUnavailable(
                f"cannot start QMD ({self.command.argv[0]}): {error.strerror or error}",
                backend=self.backend,
            ) from None

    def run(self, args: Sequence[str], *, timeout: float, abandon: bool = False) -> CliResult:
        """Run one call to completion within ``timeout`` seconds; a non-zero exit raises.

        Raises :class:`BackendTimeout` (the group was killed), :class:`BackendUnavailable`
        (it crashed or could not start) or :class:`BackendError` (it refused), each
        quoting the last 2 KB of stderr. With ``abandon`` (a query: a caller waits to fall
        back) a timed-out call is killed in the background and the timeout raised at once.
        """
        started = time.monotonic()
        with self._lock:
            if self._closed:
                raise BackendUnavailable("backend is closed", backend=self.backend)
            process = self.spawn(args)
            self._active.add(process)
        try:
            stdout, stderr = communicate(process, timeout)
        except subprocess.TimeoutExpired:
            raise self._timed_out(process, args, timeout, abandon=abandon) from None
        except BaseException:
            # Ctrl-C or any other escape: the child is in its own session and would
            # outlive us (an orphaned embed keeps QMD's lock for minutes).
            self._reap(process, self.kill_grace_s)
            raise
        self._forget(process)
        self._hang = None  # it answered (even a refusal is an answer)
        result = CliResult(
            returncode=process.returncode,
            stdout=stdout,
            stderr=stderr,
            elapsed=time.monotonic() - started,
        )
        if result.returncode != 0:
            raise self.failure(args, result.returncode, stderr)
        return result

    def _timed_out(
        self, process: subprocess.Popen[str], args: Sequence[str], timeout: float, *, abandon: bool
    ) -> BackendTimeout:
        what = f"qmd {args[0]} did not finish within {timeout:g} s"
        if abandon:
            reaper = threading.Thread(
                target=self._reap, args=(process, HUNG_GRACE_S), name="qmd-reaper", daemon=True
            )
            with self._lock:
                self._reapers = [r for r in self._reapers if r.is_alive()] + [reaper]
            reaper.start()
            return BackendTimeout(f"{what} (killed in the background)", backend=self.backend)
        _, stderr = self._reap(process, self.kill_grace_s)
        detail = f"; stderr: {tail(stderr, 400)}" if stderr.strip() else ""
        self._hang = (time.monotonic(), f"{what} (killed)")
        return BackendTimeout(f"{what} (killed){detail}", backend=self.backend)

    def recent_hang(self, within: float) -> str | None:
        """``QMD hung N s ago: <the call>`` when a call other than a query ran out of time
        less than ``within`` seconds ago and none has answered since, else ``None``.

        Queries are left out: a slow query on a busy machine says little, while a hung
        ``--version`` or ``update`` means the next call would most likely hang as well.
        """
        hang = self._hang
        if hang is None or time.monotonic() - hang[0] >= within:
            return None
        return f"QMD hung {time.monotonic() - hang[0]:.0f} s ago: {hang[1]}"

    def _reap(self, process: subprocess.Popen[str], grace: float) -> tuple[str, str]:
        try:
            return self.kill(process, grace)
        finally:
            self._forget(process)

    def _forget(self, process: subprocess.Popen[str]) -> None:
        with self._lock:
            self._active.discard(process)

    def kill(self, process: subprocess.Popen[str], grace: float | None = None) -> tuple[str, str]:
        """SIGTERM the process group, wait ``grace`` (``kill_grace_s``), then SIGKILL;
        reap it and return what it printed."""
        grace = self.kill_grace_s if grace is None else grace
        _signal_group(process, signal.SIGTERM)
        try:
            return process.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            try:
                return process.communicate(timeout=max(grace, HUNG_GRACE_S))
            except subprocess.TimeoutExpired:
                # A descendant that left the group still holds the pipes: stop reading.
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        pipe.close()
                process.wait(timeout=max(grace, HUNG_GRACE_S))
                return "", ""

    def kill_all(self) -> None:
        """Kill every one-shot call still running and refuse new ones (used by ``close``)."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for process in active:
            _signal_group(process, signal.SIGKILL)

    def close(self) -> None:
        """:meth:`kill_all`, then wait for the children given up on to be reaped."""
        self.kill_all()
        with self._lock:
            reapers = list(self._reapers)
        for reaper in reapers:
            join_thread(reaper)

    def failure(self, args: Sequence[str], returncode: int, stderr: str) -> BackendError:
        """The error for a call that exited with ``returncode``."""
        what = f"qmd {args[0] if args else ''}".strip()
        detail = f"; stderr: {tail(stderr)}" if stderr.strip() else ""
        if returncode < 0 or returncode in _CRASH_CODES:
            how = f"signal {-returncode}" if returncode < 0 else f"exit {returncode}"
            return BackendUnavailable(f"{what} crashed ({how}){detail}", backend=self.backend)
        return BackendError(f"{what} failed (exit {returncode}){detail}", backend=self.backend)


_REAP_S = 5.0  # for a group already sent SIGKILL to be gone


def terminate(process: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process group, wait ``grace`` seconds, then SIGKILL; reap the leader.

    For children whose pipes other threads read (no ``communicate`` here).
    """
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        try:
            process.wait(timeout=max(grace, _REAP_S))
        except subprocess.TimeoutExpired:
            # The guardian did not answer: kill it, and the command dies with it
            # (PR_SET_PDEATHSIG), so this wait is bounded too.
            process.kill()
            process.wait(timeout=_REAP_S)


def _signal_group(process: subprocess.Popen[str], sig: signal.Signals) -> None:
    signal_child(process, sig)
