"""What :meth:`Router.status` reports: the backends, breakers, embeddings and workspace."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .._config.config import Config
from .._exceptions import ConfigError
from .._types import RouterStatus, SearchResponse
from .._workspace.checks import check_workspace
from .._workspace.snapshot import FTS_ONLY, take_snapshot

if TYPE_CHECKING:
    from .backends import Backends
    from .chain import Breakers


def router_status(
    config: Config, backends: Backends, breakers: Breakers, *, deep: bool
) -> RouterStatus:
    """See :meth:`Router.status`; ``deep`` probes the backends and the embedding provider."""
    statuses = backends.statuses(deep=deep)
    seen, last, seen_at = breakers.seen()
    sources, file_warnings = on_disk(config)
    workspace_error, workspace_hint = workspace_problem(config)
    return RouterStatus(
        agent_id=config.agent_id,
        workspace=str(config.workspace_path),
        chain=config.router.chain,
        fallback_policy=config.router.fallback,
        backends=statuses,
        breakers=seen,
        last_fallback=last,
        embedding=backends.embedding_status(deep=deep),
        sources=sources,
        can_answer=any(s.available for s in statuses),
        breakers_seen_at=seen_at,
        workspace_error=workspace_error,
        workspace_hint=workspace_hint,
        file_warnings=file_warnings,
    )


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


def noting_workspace(config: Config, response: SearchResponse) -> SearchResponse:
    """``response``, with a note when the workspace cannot be read (the workspace check):
    the index as it was answered, and it may be stale."""
    error, hint = workspace_problem(config)
    if error is None or any(error in note for note in response.notes):
        return response
    note = f"answered from the index as it was: {error}" + (f" ({hint})" if hint else "")
    return dataclasses.replace(response, notes=(*response.notes, note))
