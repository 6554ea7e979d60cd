"""Child processes that never outlive the router's process, however it ends.

:func:`spawn_child` starts a command under a tiny guardian (``python -I -S``) in a new
session; the command runs as the guardian's child, in a process group of its own, and
the guardian waits for it and reaps it. The guardian holds the read end of a pipe whose
write end only this process holds: when this process ends in any way (normal exit,
SIGTERM, SIGINT or SIGKILL) the kernel closes the write end, the guardian reads
end-of-file and SIGKILLs the command's whole group, grandchildren included (a ``qmd``
launcher's worker, a shell's ``sleep``). Should the guardian itself be SIGKILLed, the
command dies with it (``PR_SET_PDEATHSIG`` on Linux). Signal a child with
:func:`signal_child`: the guardian forwards SIGTERM/SIGINT/SIGHUP to the group and turns
SIGKILL into a group kill. Only the guardian's main thread takes those signals (its
pipe-watching thread blocks them), so none can land where Python would not act on it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

_GUARDIAN = r"""
import os, signal, sys, threading
watch = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.close(watch)
    try:  # Linux: die with the guardian even if it is SIGKILLed itself
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        sys.stderr.write("cannot start %s: %s\n" % (sys.argv[2], error.strerror))
        os._exit(127)
try:
    os.setpgid(pid, pid)
except OSError:
    pass
def forward(sig, _frame):
    try:
        os.killpg(pid, signal.SIGKILL if sig == signal.SIGUSR1 else sig)
    except OSError:
        pass
forwarded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
for sig in forwarded:
    signal.signal(sig, forward)
def watch_parent():
    while os.read(watch, 1):
        pass
    forward(signal.SIGUSR1, None)
# The watch thread is started with the forwarded signals blocked (it keeps that mask): the
# kernel then always gives them to the main thread, the only one whose waitpid they end.
signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
threading.Thread(target=watch_parent, daemon=True).start()
signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    died = os.WTERMSIG(status)
    if died not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(died, signal.SIG_DFL)
    os.kill(os.getpid(), died)
sys.exit(os.waitstatus_to_exitcode(status))
"""

_lock = threading.Lock()
_watch: dict[int, int] = {}  # pid -> read end; the write end is never closed on purpose


def _watch_fd() -> int:
    """The pipe every guardian watches (one per process: a fork gets its own)."""
    with _lock:
        pid = os.getpid()
        if pid not in _watch:
            read, _write = os.pipe()
            _watch.clear()
            _watch[pid] = read
        return _watch[pid]


def signal_child(process: subprocess.Popen[Any], sig: int) -> None:
    """Send ``sig`` to a child started by :func:`spawn_child` and its whole group.

    SIGKILL is delivered by the guardian, which then reaps the command and exits, so no
    zombie is left behind. A child that has exited already is ignored.
    """
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(process.pid, signal.SIGUSR1 if sig == signal.SIGKILL else sig)


def spawn_child(argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **popen)`` under a guardian (see the module docstring).

    The command must be found on ``PATH`` or be a path; a command that cannot be started
    exits 127 with the reason on stderr. ``start_new_session`` and ``pass_fds`` are set
    here; every other ``Popen`` argument is passed through. Raises ``OSError`` when the
    guardian itself cannot start.
    """
    read = _watch_fd()
    command = [sys.executable, "-I", "-S", "-c", _GUARDIAN, str(read), *argv]
    return subprocess.Popen(command, start_new_session=True, pass_fds=(read,), **popen)
