"""``memory-router bench curated``: are curated facts found, and off-topic questions not?

A curated set (``bench/curated``, see its README) is a folder of workspaces, each with a
``<name>.toml`` beside it that judges it: *facts* (one bullet of a curated file, its first
line, and the *answer* an agent must see) with paraphrased questions, and *off-topic*
questions the workspace does not answer. Every question is asked through
:meth:`Router.search` with the configured ``max_results`` and ``min_score`` — the defaults
unless the configuration says otherwise — as an agent's ``memory_search`` would:

* ``found@3`` — share of fact questions where one of the first three hits covers the fact's
  first line and its snippet shows the answer (case-insensitive); ``found@1`` the same for
  the first hit, ``found`` for any hit of the answer;
* ``off_topic_answered`` — share of off-topic questions answered with any hit at all;
* ``found@3_hinted`` / ``off_topic_hinted`` — the same two when an agent follows the hint
  of an empty answer (``below_min_score``): asks again with its ``show_with``. What the
  agent then has to judge is weak hits, which it can see are weak.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from .._config.config import Config, apply_overrides
from .._exceptions import InvalidInput, MemoryRouterError
from .._router import Router
from .._types import Hit
from .bench import Variant, variant_config, write_group
from .bench_data import Group, file_sha256

TOP = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """A judged fact: where its first line is, the answer, and the questions that ask it."""

    path: str
    line: int
    answer: str
    questions: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CuratedGroup:
    """One workspace: its files, facts and off-topic questions."""

    name: str
    files: Mapping[str, str]
    facts: tuple[Fact, ...]
    off_topic: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CuratedSet:
    """A curated set ready to run: its workspaces, where it came from, and its sha256."""

    source: str
    sha256: str
    groups: tuple[CuratedGroup, ...]

    @property
    def fact_questions(self) -> int:
        return sum(len(f.questions) for g in self.groups for f in g.facts)

    @property
    def off_topic(self) -> int:
        return sum(len(g.off_topic) for g in self.groups)


# -- loading ----------------------------------------------------------------------------


def _workspace_files(folder: Path) -> dict[str, str]:
    files = {}
    for path in sorted(folder.rglob("*.md")):
        files[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return files


def _locate(files: Mapping[str, str], raw: Mapping[str, Any], judged: Path) -> Fact:
    """The fact of one ``[[fact]]`` table; its ``line`` fragment must be in exactly one line."""
    path, fragment = str(raw.get("file", "")), str(raw.get("line", ""))
    if path not in files or not fragment:
        raise InvalidInput(f"{judged}: fact {fragment!r}: no file {path!r}", key="data")
    lines = [n for n, text in enumerate(files[path].split("\n"), 1) if fragment in text]
    if len(lines) != 1:
        raise InvalidInput(
            f"{judged}: fact {fragment!r} is on {len(lines)} lines of {path}, not 1", key="data"
        )
    questions = tuple(str(q) for q in raw.get("questions", ()))
    answer = str(raw.get("answer", ""))
    if not questions or not answer:
        raise InvalidInput(f"{judged}: fact {fragment!r} needs an answer and questions", key="data")
    return Fact(path=path, line=lines[0], answer=answer, questions=questions)


def load_curated(folder: Path) -> CuratedSet:
    """Every ``<name>.toml`` in ``folder`` with the workspace ``<name>/`` beside it."""
    folder = folder.resolve()
    judged = sorted(p for p in folder.glob("*.toml") if (folder / p.stem).is_dir())
    if not judged:
        raise InvalidInput(
            f"{folder}: no <name>.toml beside a <name>/ workspace",
            key="data",
            hint="pass --data path/to/bench/curated",
        )
    groups = []
    for path in judged:
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise InvalidInput(f"{path}: {error}", key="data") from error
        files = _workspace_files(folder / path.stem)
        facts = tuple(_locate(files, raw, path) for raw in table.get("fact", ()))
        off_topic = tuple(str(q) for q in table.get("off_topic", ()))
        groups.append(CuratedGroup(name=path.stem, files=files, facts=facts, off_topic=off_topic))
    everything = [p for g in judged for p in (g, *sorted((folder / g.stem).rglob("*.md")))]
    return CuratedSet(source=str(folder), sha256=file_sha256(*everything), groups=tuple(groups))


# -- measuring --------------------------------------------------------------------------


def shows(hit: Hit, fact: Fact) -> bool:
    """Whether ``hit`` covers the fact's first line and its snippet shows the answer."""
    return (
        hit.path == fact.path
        and hit.start_line <= fact.line <= hit.end_line
        and fact.answer.lower() in hit.snippet.lower()
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One question asked: the workspace, the question, the fact (``None``: off-topic), the
    rank of the first hit that shows the fact (0: none), the hit count and the first hit;
    ``hinted_rank`` / ``hinted_hits`` the same once the hint of an empty answer is followed
    (equal to ``rank`` / ``hits`` when the answer was not empty or had no hint)."""

    group: str
    question: str
    fact: Fact | None
    rank: int
    hits: int
    top: Hit | None
    hinted_rank: int = 0
    hinted_hits: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CuratedReport:
    """One variant's figures, and every question asked (for ``--verbose``)."""

    variant: Variant
    metrics: Mapping[str, float]
    p50_ms: float
    asked: tuple[Outcome, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.variant.backend,
            "mode": self.variant.mode,
            "fusion": self.variant.fusion,
            "metrics": dict(self.metrics),
            "p50_ms": self.p50_ms,
            "misses": [_asked_dict(a) for a in self.asked if _missed(a)],
        }


def _missed(asked: Outcome) -> bool:
    return not 0 < asked.rank <= TOP if asked.fact else asked.hits > 0


def _asked_dict(asked: Outcome) -> dict[str, Any]:
    top = asked.top
    return {
        "workspace": asked.group,
        "question": asked.question,
        "fact": f"{asked.fact.path}:{asked.fact.line}" if asked.fact else None,
        "rank": asked.rank,
        "hits": asked.hits,
        "top": f"{top.score:.3f} {top.path}:{top.start_line}-{top.end_line}" if top else None,
    }


def metrics(asked: Sequence[Outcome]) -> dict[str, float]:
    """The figures of the module docstring from every question asked."""
    facts = [a for a in asked if a.fact is not None]
    off = [a for a in asked if a.fact is None]

    def share(rows: Sequence[Outcome], test: Callable[[Outcome], bool]) -> float:
        return statistics.fmean(test(a) for a in rows) if rows else 0.0

    return {
        "found@1": share(facts, lambda a: a.rank == 1),
        "found@3": share(facts, lambda a: 0 < a.rank <= TOP),
        "found": share(facts, lambda a: a.rank > 0),
        "off_topic_answered": share(off, lambda a: a.hits > 0),
        "found@3_hinted": share(facts, lambda a: 0 < (a.rank or a.hinted_rank) <= TOP),
        "off_topic_hinted": share(off, lambda a: a.hits + a.hinted_hits > 0),
        "fact_questions": float(len(facts)),
        "off_topic_questions": float(len(off)),
    }


def curated_config(
    base: Config, variant: Variant, workspace: Path, state_dir: Path, agent: str, cache: Path | None
) -> Config:
    """:func:`variant_config` with the configured query shaping kept (the bench's other
    sets read every candidate; this one asks as an agent does)."""
    config = variant_config(base, variant, workspace, state_dir, agent, cache)
    return apply_overrides(config, {"query": {"max_injected_chars": base.query.max_injected_chars}})


def _rank(results: Sequence[Hit], fact: Fact | None) -> int:
    if fact is None:
        return 0
    return next((r for r, h in enumerate(results, 1) if shows(h, fact)), 0)


def _ask(router: Router, group: str, question: str, fact: Fact | None) -> Outcome:
    """One question as an agent asks it, and again as the hint of an empty answer says."""
    response = router.search(question)
    results = response.results
    below = response.below_min_score
    hinted = results
    if not results and below is not None:
        hinted = router.search(question, min_score=below.show_with).results
    top = results[0] if results else None
    return Outcome(
        group=group,
        question=question,
        fact=fact,
        rank=_rank(results, fact),
        hits=len(results),
        top=top,
        hinted_rank=_rank(hinted, fact),
        hinted_hits=len(hinted),
    )


def run_curated(
    dataset: CuratedSet,
    variant: Variant,
    *,
    base: Config,
    work_dir: Path,
    cache: Path | None = None,
    plugin_manager: pluggy.PluginManager | None = None,
) -> CuratedReport:
    """Index every workspace with one variant and ask all its questions."""
    asked: list[Outcome] = []
    latencies: list[float] = []
    state_dir = work_dir / "state" / f"{variant.backend}-{variant.mode}"
    for group in dataset.groups:
        workspace = work_dir / "workspaces" / group.name
        write_group(Group(name=group.name, files=group.files, units={}, queries=()), workspace)
        config = curated_config(base, variant, workspace, state_dir, group.name, cache)
        with Router.from_config(config, plugin_manager=plugin_manager) as router:
            for sync in router.sync():
                if sync.errors:
                    raise MemoryRouterError(f"{variant.label}: indexing failed: {sync.errors[0]}")
            questions = [(q, f) for f in group.facts for q in f.questions]
            for question, fact in [*questions, *((q, None) for q in group.off_topic)]:
                started = time.perf_counter()
                asked.append(_ask(router, group.name, question, fact))
                latencies.append((time.perf_counter() - started) * 1000)
    ordered = sorted(latencies)
    p50 = ordered[max(0, math.ceil(len(ordered) / 2) - 1)] if ordered else 0.0
    report = CuratedReport(variant=variant, metrics=metrics(asked), p50_ms=p50)
    return dataclasses.replace(report, asked=tuple(asked))
