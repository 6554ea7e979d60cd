"""Model preflight: which modes can run now, without ever waiting on a download.

QMD fetches a missing ``hf:`` model forever when Hugging Face is unreachable, and deletes
a local file that is not GGUF. So a mode is only used when the GGUF files it needs are
configured as absolute paths, exist, and start with the magic bytes ``GGUF``. The
mode ladder (strongest first) and what each needs, as this backend drives QMD:

- ``query``: lex sub-queries plus a ``vec`` one, reranked — embed + rerank models; with
  the generate model too, QMD's own query expansion is used instead of sub-queries.
- ``vsearch``: one typed ``vec`` sub-query without reranking — the embed model.
- ``search``: lex sub-queries, rerank off — no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._settings import QmdModels

MAGIC = b"GGUF"
NEEDS = {"query": ("embed", "rerank"), "vsearch": ("embed",), "search": ()}
LADDER = ("query", "vsearch", "search")


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
                return candidate, tuple(notes)
            detail = "; ".join(f"{r} model {self.problems[r]}" for r in missing)
            notes.append(f"qmd: {candidate} mode unavailable ({detail})")
        return "search", tuple(notes)
