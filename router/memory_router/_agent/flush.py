"""The pre-compaction memory flush (OpenClaw's ``compaction.memoryFlush``).

When a session nears automatic compaction, the agent host runs one silent turn asking the
model to write durable memories before the context is compacted. :func:`check_memory_flush`
says whether that turn is due: ``total_tokens >= context_window - reserve_tokens_floor -
soft_threshold_tokens``, once per compaction cycle (the compaction count at which a session
flushed is recorded in the state directory), never when the workspace is read-only. A reply
that is exactly :data:`NO_REPLY` is meant to be dropped by the host (:func:`is_silent_reply`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from .._config.config import Config
from .._exceptions import InvalidInput, MemoryRouterError
from .._types import _ToDict
from .._workspace import journal as _journal

NO_REPLY = "NO_REPLY"
FLUSH_STATE = "memory-flush.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class FlushDecision(_ToDict):
    """Whether to run the memory flush turn now, and the prompts for it.

    ``reason`` says why not when ``flush`` is false (or ``"due"``). ``threshold`` is the
    token count at which the flush becomes due; the prompts carry :data:`NO_REPLY`.
    """

    flush: bool
    reason: str
    session_key: str
    total_tokens: int
    threshold: int
    compaction_count: int
    system_prompt: str
    prompt: str


def is_silent_reply(text: str) -> bool:
    """True when a flush turn's reply is exactly ``NO_REPLY`` (the host drops it)."""
    return text.strip() == NO_REPLY


def check_memory_flush(
    config: Config,
    *,
    session_key: str,
    total_tokens: int,
    context_window: int,
    compaction_count: int = 0,
    record: bool = True,
    today: date | None = None,
) -> FlushDecision:
    """Decide whether ``session_key`` should flush memories now.

    With ``record`` (the default) a positive decision is recorded, so asking again within
    the same compaction cycle says ``already flushed``. ``YYYY-MM-DD`` in the prompts
    becomes ``today``'s date.
    """
    _check_counts(session_key, total_tokens, context_window, compaction_count)
    settings = config.compaction
    flush = settings.memory_flush
    threshold = context_window - settings.reserve_tokens_floor - flush.soft_threshold_tokens
    day = (today or date.today()).isoformat()
    state_path = config.agent_state_path / FLUSH_STATE
    reason = _refusal(config, state_path, session_key, total_tokens, threshold, compaction_count)
    if reason is None and record:
        _record(state_path, session_key, compaction_count)
    return FlushDecision(
        flush=reason is None,
        reason=reason or "due",
        session_key=session_key,
        total_tokens=total_tokens,
        threshold=threshold,
        compaction_count=compaction_count,
        system_prompt=flush.system_prompt.replace("YYYY-MM-DD", day),
        prompt=flush.prompt.replace("YYYY-MM-DD", day),
    )


def _check_counts(session_key: str, total: int, window: int, compactions: int) -> None:
    if not isinstance(session_key, str) or not session_key.strip():
        raise InvalidInput("session_key must be a non-empty string", key="session_key")
    for key, value in (("total_tokens", total), ("compaction_count", compactions)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{key} must be a whole number ≥ 0", key=key)
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise InvalidInput("context_window must be a whole number > 0", key="context_window")


def _refusal(
    config: Config, state_path: Path, session_key: str, total: int, threshold: int, count: int
) -> str | None:
    """Why no flush is due, or ``None`` when it is."""
    if not config.compaction.memory_flush.enabled:
        return "memory flush is disabled ([compaction.memory_flush] enabled = false)"
    if total < threshold:
        return f"below the threshold ({total} < {threshold} tokens)"
    access = config.compaction.workspace_access
    if access != "rw":
        return f"the workspace is not writable (workspace_access = {access!r})"
    if not _writable(config.workspace_path):
        return f"workspace {config.workspace_path} is read-only"
    if _read_state(state_path).get(session_key) == count:
        return f"already flushed in this compaction cycle (compaction count {count})"
    return None


def _writable(workspace: Path) -> bool:
    memory = workspace / "memory"
    target = memory if memory.is_dir() else workspace
    return target.is_dir() and os.access(target, os.W_OK)


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: the worst case is one more flush turn
    return data if isinstance(data, dict) else {}


def _record(path: Path, session_key: str, count: int) -> None:
    update_state(path, lambda state: {**state, session_key: count})


def update_state(path: Path, change: Any) -> dict[str, Any]:
    """Apply ``change(state) -> state`` to a small JSON state file, locked and atomic."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _journal._locked(path):
            state = change(_read_state(path))
            _journal._write_atomic(path, json.dumps(state, ensure_ascii=False).encode("utf-8"))
    except OSError as error:
        raise MemoryRouterError(
            f"cannot write {path}: {error.strerror or error}",
            hint="check that the state directory is writable",
        ) from error
    return dict(state)
