"""Running QMD as a child process with a fixed environment and hard timeouts.

Every child gets the same environment (per-agent ``XDG_CACHE_HOME``/``XDG_CONFIG_HOME``
under the backend's state directory, ``NO_COLOR=1``, ``QMD_FORCE_CPU=1``, no inherited
``CI`` — which would disable every model operation — and ``PWD`` equal to a neutral
working directory, because QMD resolves ``.`` from ``$PWD``). Each child starts under
:func:`memory_router.spawn_child`, in a process group of its own that dies with this
process however it ends; a timeout kills the whole group (SIGTERM, a grace period,
SIGKILL): killing only QMD's launcher would orphan its worker.
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

from memory_router import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    communicate,
    signal_child,
    spawn_child,
)

from ._locate import QmdCommand

STDERR_TAIL = 2048
# Exit codes that mean the process died rather than refused: a native crash (139 is a
# segfault seen by a shell) or a signal (negative in Python).
_CRASH_CODES = frozenset({134, 137, 139})


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

    def run(self, args: Sequence[str], *, timeout: float) -> CliResult:
        """Run one call to completion within ``timeout`` seconds; a non-zero exit raises.

        Raises :class:`BackendTimeout` (the group was killed), :class:`BackendUnavailable`
        (it crashed or could not start) or :class:`BackendError` (it refused), each
        quoting the last 2 KB of stderr.
        """
        started = time.monotonic()
        with self._lock:
            if self._closed:
                raise BackendUnavailable("backend is closed", backend=self.backend)
            process = self.spawn(args)
            self._active.add(process)
        try:
            stdout, stderr = self._communicate(process, args, timeout=timeout)
        except BaseException:
            # Ctrl-C or any other escape: the child is in its own session and would
            # outlive us (an orphaned embed keeps QMD's lock for minutes).
            self.kill(process)
            raise
        finally:
            with self._lock:
                self._active.discard(process)
        result = CliResult(
            returncode=process.returncode,
            stdout=stdout,
            stderr=stderr,
            elapsed=time.monotonic() - started,
        )
        if result.returncode != 0:
            raise self.failure(args, result.returncode, stderr)
        return result

    def _communicate(
        self, process: subprocess.Popen[str], args: Sequence[str], *, timeout: float
    ) -> tuple[str, str]:
        try:
            return communicate(process, timeout)
        except subprocess.TimeoutExpired:
            _, stderr = self.kill(process)
            raise BackendTimeout(
                f"qmd {args[0]} did not finish within {timeout:g} s (killed)"
                + (f"; stderr: {tail(stderr, 400)}" if stderr.strip() else ""),
                backend=self.backend,
            ) from None

    def kill(self, process: subprocess.Popen[str]) -> tuple[str, str]:
        """SIGTERM the process group, wait ``kill_grace_s``, then SIGKILL; reap it."""
        _signal_group(process, signal.SIGTERM)
        try:
            return process.communicate(timeout=self.kill_grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            try:
                return process.communicate(timeout=self.kill_grace_s)
            except subprocess.TimeoutExpired:
                # A descendant that left the group still holds the pipes: stop reading.
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        pipe.close()
                process.wait(timeout=self.kill_grace_s)
                return "", ""

    def kill_all(self) -> None:
        """Kill every one-shot call still running and refuse new ones (used by ``close``)."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for process in active:
            _signal_group(process, signal.SIGKILL)

    def failure(self, args: Sequence[str], returncode: int, stderr: str) -> BackendError:
        """The error for a call that exited with ``returncode``."""
        what = f"qmd {args[0] if args else ''}".strip()
        detail = f"; stderr: {tail(stderr)}" if stderr.strip() else ""
        if returncode < 0 or returncode in _CRASH_CODES:
            how = f"signal {-returncode}" if returncode < 0 else f"exit {returncode}"
            return BackendUnavailable(f"{what} crashed ({how}){detail}", backend=self.backend)
        return BackendError(f"{what} failed (exit {returncode}){detail}", backend=self.backend)


def terminate(process: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process group, wait ``grace`` seconds, then SIGKILL; reap the leader.

    For children whose pipes other threads read (no ``communicate`` here).
    """
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.wait()


def _signal_group(process: subprocess.Popen[str], sig: signal.Signals) -> None:
    signal_child(process, sig)
