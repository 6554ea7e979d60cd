"""``[backends.qmd]``: how the QMD sidecar is found, isolated, timed and which mode it serves."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Mode = Literal["search", "vsearch", "query"]
MODES: tuple[Mode, ...] = ("search", "vsearch", "query")
Documents = Literal["chunks", "files"]
DOCUMENTS: tuple[Documents, ...] = ("chunks", "files")
_INDEX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class QmdModels:
    """``[backends.qmd.models]``: absolute paths of local GGUF files, ``""`` = not supplied.

    They are written into the index YAML's ``models:`` block. A role left empty keeps
    QMD's ``hf:`` default, which is never used: a mode that needs it degrades instead,
    because QMD would wait forever on a download. With ``offline`` (the default) an empty
    ``embed`` is the offline all-MiniLM-L6-v2, written as GGUF into the state folder when
    it is installed.
    """

    embed: str = ""
    generate: str = ""
    rerank: str = ""
    offline: bool = True

    def __post_init__(self) -> None:
        for role in ("embed", "generate", "rerank"):
            value = getattr(self, role)
            if value and not Path(value).expanduser().is_absolute():
                raise ValueError(f"models.{role} must be an absolute path to a .gguf file")


@dataclass(frozen=True, slots=True, kw_only=True)
class QmdSettings:
    """The QMD backend's settings; every timeout is in seconds and is a hard limit.

    ``command`` is a path to QMD's ``qmd.js`` (run with ``node``) or to an executable
    ``qmd``; empty means: the project prefix (``scripts/install-qmd.sh``), then ``PATH``.
    ``index`` is QMD's ``--index`` name. ``documents`` is what QMD indexes: ``"chunks"``
    (the router's own chunks, one file each, in one collection: :mod:`._mirror`) or
    ``"files"`` (the memory files themselves, one collection per folder, chunked by QMD).
    ``kill_grace_s`` is how long a timed-out child
    gets between SIGTERM and SIGKILL.
    """

    command: str = ""
    node: str = ""
    index: str = "memrouter"
    search_mode: Mode = "search"
    documents: Documents = "chunks"
    use_mcp: bool = True
    update_interval_s: float = 300.0
    update_on_boot: bool = True
    search_timeout_s: float = 10.0
    vsearch_timeout_s: float = 60.0
    query_timeout_s: float = 120.0
    update_timeout_s: float = 120.0
    embed_timeout_s: float = 300.0
    command_timeout_s: float = 30.0
    kill_grace_s: float = 5.0
    failure_backoff_s: float = 60.0
    models: QmdModels = field(default_factory=QmdModels)

    def __post_init__(self) -> None:
        if not _INDEX_NAME.fullmatch(self.index):
            raise ValueError("index must be letters, digits, '-' and '_' (it names QMD's files)")
        if self.documents not in DOCUMENTS:
            raise ValueError('documents must be "chunks" or "files"')
        for name in (
            "search_timeout_s",
            "vsearch_timeout_s",
            "query_timeout_s",
            "update_timeout_s",
            "embed_timeout_s",
            "command_timeout_s",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive (every QMD call needs a hard timeout)")
        if self.kill_grace_s < 0 or self.failure_backoff_s < 0:
            raise ValueError("kill_grace_s and failure_backoff_s must not be negative")

    def timeout_for(self, mode: str) -> float:
        """The hard timeout of one query in ``mode``."""
        return {
            "search": self.search_timeout_s,
            "vsearch": self.vsearch_timeout_s,
            "query": self.query_timeout_s,
        }.get(mode, self.search_timeout_s)
