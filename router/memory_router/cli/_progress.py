"""The ``index`` progress bar: step, done/total, items per second and time left (rich)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from memory_router import _types

UNITS = {"embedding": "chunks", "indexing": "files"}


class RateColumn(ProgressColumn):
    """``12.3 chunks/s``: the task's recent speed in its unit (blank until known)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("")
        unit = task.fields.get("unit", "items")
        return Text(f"{speed:.1f} {unit}/s", style="progress.data.speed")


@contextmanager
def rich_progress(*, enabled: bool) -> Iterator[_types.Progress]:
    """See :func:`memory_router.cli._memory.progress_bar`."""
    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield _types.no_progress
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def report(*, done: int, total: int, label: str) -> None:
            if label not in tasks:  # one task per step, so each keeps its own rate
                for other in tasks.values():
                    bar.update(other, visible=False)
                unit = UNITS.get(label, "items")
                tasks[label] = bar.add_task(label, total=total or None, unit=unit)
            bar.update(tasks[label], completed=done, total=total or None)

        yield report
