"""One indexer per agent and backend: a cross-process lock around every sync.

``<state_dir>/agents/<id>/<backend>/index.lock`` is held with ``flock`` (released by the kernel when
the holder dies, so it is never stale) and carries the holder's pid for messages. A second
process waits a bounded time for it, or, when a search wants a sync, does not wait at all
and answers from the existing index.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .._exceptions import ConfigError
from .._exceptions import IndexBusy as IndexBusy  # its home until now; re-exported
from .._types import Progress, no_progress

LOCK_FILE = "index.lock"
INDEX_WAIT_S = 600.0
BUSY_HINT = (
    "let it finish (`memory-router status` shows the index when it is done), then run the"
    " command again"
)
"""How long :meth:`Router.sync` waits for another process's sync by default."""


def holder(folder: Path) -> int | None:
    """The pid of the process syncing the agent in ``folder`` now, or ``None``."""
    return lock_holder(folder / LOCK_FILE)


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding the lock file ``path`` now, or ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def index_lock(
    folder: Path, *, agent: str, backend: str, wait_s: float, progress: Progress = no_progress
) -> Iterator[None]:
    """Hold the agent's index lock; :class:`IndexBusy` if not free within ``wait_s``."""
    with lock_file(
        folder / LOCK_FILE,
        doing=f"building the {backend} index of agent {agent!r}",
        hint=BUSY_HINT,
        wait_s=wait_s,
        progress=progress,
    ):
        yield


@contextlib.contextmanager
def lock_file(
    path: Path, *, doing: str, hint: str, wait_s: float, progress: Progress = no_progress
) -> Iterator[None]:
    """Hold the ``flock`` of ``path`` (which names the holder's pid); :class:`IndexBusy`
    saying ``process N is already <doing>`` with ``hint`` if not free within ``wait_s``."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise unusable_folder(folder, error) from error
    try:
        _acquire(fd, path, doing=doing, hint=hint, wait_s=wait_s, progress=progress)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def unusable_folder(folder: Path, error: OSError) -> ConfigError:
    """A state folder that cannot be created or written, with what to do about it."""
    return ConfigError(
        f"cannot write the state folder {folder}: {error.strerror or error}",
        key="state_dir",
        hint=f"make {folder} a folder you can write (mkdir -p / chmod u+w), or set state_dir"
        " in the config to another folder",
    )


def _acquire(
    fd: int, path: Path, *, doing: str, hint: str, wait_s: float, progress: Progress
) -> None:
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pid = _pid(path)
            if time.monotonic() >= deadline:
                raise _busy(doing, hint, pid, wait_s) from None
            if not told:
                progress(done=0, total=0, label=f"waiting for the sync in process {pid}")
                told = True
            time.sleep(0.1)


def _busy(doing: str, hint: str, pid: int | None, wait_s: float) -> IndexBusy:
    who = f"process {pid}" if pid else "another process"
    waited = f" (waited {wait_s:.0f} s)" if wait_s else ""
    return IndexBusy(f"{who} is already {doing}{waited}", pid=pid, hint=hint)


def _pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None
