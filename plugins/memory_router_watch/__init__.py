"""The ``memory-router watch`` command: keep the index fresh as memory files change.

Registered through the ``register_commands`` hook like any third-party command.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING, Any

import click

from memory_router import hookimpl
from memory_router.kit import lazy_exports

if TYPE_CHECKING:
    from ._watcher import Watcher, WatchStats

__all__ = ["WatchStats", "Watcher", "register_commands"]
__getattr__ = lazy_exports(__name__, {"Watcher": "._watcher", "WatchStats": "._watcher"})


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.command()
    @click.option("--poll", is_flag=True, help="Poll the file system instead of using inotify.")
    @click.option(
        "--for",
        "duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Stop after this many seconds (default: until interrupted).",
    )
    @click.pass_context
    def watch(ctx: click.Context, poll: bool, duration: float | None) -> None:
        """Index the workspace, then re-sync whenever memory files change."""
        from ._watcher import Watcher  # watchdog loads when the command runs

        router = ctx.find_root().obj.router()
        watcher = Watcher(router, poll=poll)
        stop = threading.Event()

        def interrupt(*_: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, interrupt)
        watcher.start()
        click.echo(
            f"Watching {router.config.workspace_path} ({watcher.stats.observer}, "
            f"debounce {watcher.debounce * 1000:.0f} ms). Ctrl-C to stop.",
            err=True,
        )
        seen = 0
        deadline = None if duration is None else time.monotonic() + duration
        try:
            while not stop.wait(0.2):
                if watcher.stats.syncs != seen:
                    seen = watcher.stats.syncs
                    for report in watcher.stats.reports:
                        click.echo(
                            f"synced {report.backend}: +{report.added} ~{report.updated} "
                            f"-{report.removed} ({report.chunks} chunks)"
                            + (f" errors: {'; '.join(report.errors)}" if report.errors else ""),
                            err=True,
                        )
                if deadline is not None and time.monotonic() >= deadline:
                    break
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()
