"""Settings of the agent-facing parts: ``[serve]``, ``[compaction]``, ``[recall]``, ``[capture]``.

Defaults are OpenClaw's (``agents.defaults.compaction``) and memory-lancedb's
(auto-recall and auto-capture), see ``docs/agents.md``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

from .settings import Secret

_LOOPBACK_V4 = ipaddress.ip_network("127.0.0.0/8")
DEFAULT_FLUSH_SYSTEM_PROMPT = "Session nearing compaction. Store durable memories now."
DEFAULT_FLUSH_PROMPT = (
    "Write any lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeConfig:
    """``[serve]``: the long-running service (``memory-router serve``).

    Any ``host`` other than loopback (:func:`is_loopback`) needs ``token``. ``port = 0``
    picks a free port (the server file in the state directory says which).
    """

    host: str = "127.0.0.1"
    port: int = 8765
    token: Secret | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = 1_048_576
    watch: bool = True
    client_timeout_s: float = 30.0
    max_concurrent_searches: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be between 0 and 65535")
        object.__setattr__(self, "max_body_bytes", max(1024, self.max_body_bytes))
        object.__setattr__(self, "max_concurrent_searches", max(0, self.max_concurrent_searches))

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine: ``localhost``, or an IP
    literal in 127.0.0.0/8 or ``::1``. A name is never taken on its word
    (``127.attacker.example`` resolves wherever its owner likes)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    return (
        address in _LOOPBACK_V4 if address.version == 4 else address == ipaddress.IPv6Address("::1")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFlushConfig:
    """``[compaction.memory_flush]``: the silent turn before compaction (OpenClaw's)."""

    enabled: bool = True
    soft_threshold_tokens: int = 4000
    system_prompt: str = DEFAULT_FLUSH_SYSTEM_PROMPT
    prompt: str = DEFAULT_FLUSH_PROMPT


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionConfig:
    """``[compaction]``: tokens kept free for compaction, and the memory flush before it.

    ``workspace_access`` is what the agent's sandbox allows (OpenClaw's
    ``workspaceAccess``): the flush is skipped unless it is ``"rw"``.
    """

    reserve_tokens_floor: int = 20_000
    workspace_access: Literal["rw", "ro", "none"] = "rw"
    memory_flush: MemoryFlushConfig = field(default_factory=MemoryFlushConfig)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallConfig:
    """``[recall]``: the ``<relevant-memories>`` block put in front of a prompt."""

    max_results: int = 3
    min_score: float = 0.3
    max_chars: int = 600
    min_prompt_chars: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_results", max(1, self.max_results))
        object.__setattr__(self, "min_score", min(max(self.min_score, 0.0), 1.0))
        object.__setattr__(self, "max_chars", max(0, self.max_chars))


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureConfig:
    """``[capture]``: which user messages are stored as entries (memory-lancedb's rules)."""

    max_chars: int = 500
    max_per_conversation: int = 3
    importance: float = 0.7

    def __post_init__(self) -> None:
        if not 100 <= self.max_chars <= 10_000:
            raise ValueError("max_chars must be between 100 and 10000")
        object.__setattr__(self, "max_per_conversation", max(0, self.max_per_conversation))
        object.__setattr__(self, "importance", min(max(self.importance, 0.0), 1.0))
