"""The progress callback type: a module of its own, so the plugin API loads without the
value types (``memory_router._types``, which re-exports it)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Called during long work: ``advance(n)`` after n units, ``total`` may grow."""

    def __call__(self, *, done: int, total: int, label: str) -> None: ...


def no_progress(*, done: int, total: int, label: str) -> None:
    """A :class:`Progress` that ignores every report."""
