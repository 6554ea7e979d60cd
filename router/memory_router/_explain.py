"""Answers that explain themselves: a workspace that is not there, hits under min_score."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._backend import BackendSpec
from ._config import Config
from ._exceptions import ConfigError, InvalidInput
from ._files import split_citation
from ._ranking import apply_decay, reaches
from ._types import BackendResult, BelowMinScore, SearchRequest, SearchResponse

MEMORY_FILES = "MEMORY.md, memory.md or memory/**/*.md"


def check_workspace(config: Config) -> Path:
    """The workspace folder, or a :class:`ConfigError` when it is missing or unreadable.

    Syncing a workspace that is not there (a typo, an unmounted volume) would look like
    every memory file was deleted and empty the index; this refuses first.
    """
    path = config.workspace_path
    where = config.file or "<defaults>"
    fix = (
        f"fix `workspace` in {where} or pass --workspace PATH"
        if config.file
        else "pass --workspace PATH or set `workspace` in the config file"
    )
    if not path.exists():
        raise ConfigError(
            f"the workspace {path} does not exist; nothing was indexed or removed",
            path=config.file,
            key="workspace",
            hint=f"create it (mkdir -p {path}), mount it, or {fix}",
        )
    if not path.is_dir():
        raise ConfigError(
            f"the workspace {path} is not a folder", path=config.file, key="workspace", hint=fix
        )
    try:
        os.listdir(path)
    except OSError as error:
        raise ConfigError(
            f"the workspace {path} cannot be read ({error.strerror or error});"
            " nothing was indexed or removed",
            path=config.file,
            key="workspace",
            hint=f"make it readable (chmod u+rx {path}) or {fix}",
        ) from error
    return path


def check_mode(mode: str | None, spec: BackendSpec | None) -> None:
    """Refuse a search ``mode`` the backend that answers (the chain's first) does not know."""
    if mode is None or spec is None or not spec.modes or mode in spec.modes:
        return
    raise InvalidInput(
        f"{spec.name} has no search mode {mode!r}",
        key="mode",
        hint=f"use one of {', '.join(spec.modes)}, or leave --mode out",
    )


def with_below_min_score(
    response: SearchResponse, result: BackendResult, request: SearchRequest, config: Config
) -> SearchResponse:
    """``response``, saying how many hits (score > 0) were found under ``min_score`` when
    it is empty."""
    if response.results or not result.hits or request.min_score <= 0:
        return response
    # A hit that scored 0 matched nothing (a vector candidate under the calibrated
    # floor): it is not "found under the threshold", and would only make noise look close.
    hits = [h for h in result.hits if h.score > 0]
    if not hits:
        return response
    if config.query.temporal_decay.enabled:
        hits = apply_decay(hits, config)
    best = max(h.score for h in hits)
    if reaches(best, request.min_score):
        return response
    below = BelowMinScore(count=len(hits), best_score=best, min_score=request.min_score)
    return dataclasses.replace(response, below_min_score=below)


def below_min_score_line(below: Mapping[str, Any]) -> str:
    """The sentence the CLI prints for an empty answer that had hits under the threshold.

    ``below`` is :class:`BelowMinScore` as a dict (as JSON carries it).
    """
    best = float(below["best_score"])
    floor = int(best * 100) / 100
    return (
        f"{below['count']} hit(s) scored below min_score {float(below['min_score']):g}"
        f" (best {best:.3f}); see them with --min-score {floor:g}"
    )


def memory_file_exists(config: Config, path: str) -> bool:
    """Whether ``path`` (as :meth:`Router.get` took it, a citation too) names a file that is
    there."""
    bare = str(split_citation(path)[0])
    target = Path(os.path.normpath(config.workspace_path / bare.strip().replace("\\", "/")))
    return target.is_file()
