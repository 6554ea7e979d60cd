"""The agents found under a state dir, with their index sizes and what they last recorded."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .._config.commandline import command
from .._config.config import Config
from .._routing.health import HealthFile
from .._routing.indexlock import holder
from .._types import Fallback, _ToDict


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInfo(_ToDict):
    """One agent's folder: ``index_bytes`` is everything but session transcripts;
    ``open_breakers`` and ``last_fallback`` come from its ``health.json``; ``syncing_pid``
    is the process syncing it now; ``damaged`` counts index files flagged as damaged."""

    id: str
    path: str
    index_bytes: int
    recorded_at: datetime | None
    open_breakers: tuple[str, ...]
    last_fallback: Fallback | None
    syncing_pid: int | None
    damaged: int

    @property
    def healthy(self) -> bool:
        return not self.open_breakers and not self.damaged


def list_agents(state_path: Path, *, cooldown_s: float) -> list[AgentInfo]:
    """Every ``<state_path>/agents/<id>`` folder, sorted by id."""
    root = state_path / "agents"
    if not root.is_dir():
        return []
    return [_agent(folder, cooldown_s) for folder in sorted(root.iterdir()) if folder.is_dir()]


def _agent(folder: Path, cooldown_s: float) -> AgentInfo:
    health = HealthFile(folder)
    breakers, recorded_at = health.breakers(cooldown_s)
    return AgentInfo(
        id=folder.name,
        path=str(folder),
        index_bytes=_size(folder),
        recorded_at=recorded_at,
        open_breakers=tuple(n for n, b in sorted(breakers.items()) if b.state != "closed"),
        last_fallback=health.last_fallback(),
        syncing_pid=next(
            (pid for sub in sorted(folder.iterdir()) if sub.is_dir() and (pid := holder(sub))),
            None,
        ),
        damaged=sum(1 for _ in folder.rglob("*.damaged")),
    )


def _size(folder: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(folder):
        if Path(root) == folder and "sessions" in dirs:
            dirs.remove("sessions")
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def agent_line(agent: AgentInfo, config: Config | None = None) -> str:
    """``<id>  <size>  <health>`` for ``memory-router agents``; a fix names ``config``'s
    file (:func:`command`) when given."""
    size = f"{agent.index_bytes / 2**20:.1f} MiB"
    notes = []
    if agent.open_breakers:
        notes.append(f"circuit open: {', '.join(agent.open_breakers)}")
    if agent.damaged:
        fix = (
            command(config.replace(agent_id=agent.id), "doctor", "--fix")
            if config is not None
            else f"memory-router --agent {agent.id} doctor --fix"
        )
        notes.append(f"damaged index (run {fix})")
    if agent.syncing_pid:
        notes.append(f"syncing (process {agent.syncing_pid})")
    if agent.last_fallback:
        at = agent.last_fallback.at.isoformat(timespec="seconds")
        notes.append(f"last fallback {agent.last_fallback.from_} at {at}")
    health = "ok" if agent.healthy else "unhealthy"
    return f"{agent.id}  {size}  {health}" + (f"  ({'; '.join(notes)})" if notes else "")
