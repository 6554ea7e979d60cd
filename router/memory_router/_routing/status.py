"""Pieces of :meth:`Router.status` that need no router state of their own."""

from __future__ import annotations

from .._config.config import Config
from .._exceptions import ConfigError
from .._workspace.checks import check_workspace
from .._workspace.snapshot import FTS_ONLY, take_snapshot


def source_counts(config: Config) -> dict[str, int]:
    """How many memory files (and transcripts) are on disk now, by source."""
    return on_disk(config)[0]


def on_disk(config: Config) -> tuple[dict[str, int], tuple[str, ...]]:
    """:func:`source_counts`, and ``<path>: <warning>`` per file that is not plain UTF-8
    (files that look binary are not counted: they are not indexed)."""
    snapshot = take_snapshot(config, fingerprint={}, model=FTS_ONLY)
    counts: dict[str, int] = {}
    for doc in snapshot.documents:
        counts[doc.source] = counts.get(doc.source, 0) + 1
    return counts, snapshot.warning_lines()


def workspace_problem(config: Config) -> tuple[str | None, str | None]:
    """Why the workspace cannot be read, and what to do, or ``(None, None)`` when it can."""
    try:
        check_workspace(config)
    except ConfigError as error:
        return error.message, error.hint
    return None, None
