"""``bench locomo``, ``bench beir`` and ``bench curated``: retrieval quality and speed on
judged data."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pluggy

from memory_router._config.config import Config, load_config
from memory_router._exceptions import InvalidInput
from memory_router._ops.bench import METRICS, Variant, VariantReport, run_variant
from memory_router._ops.bench_curated import CuratedReport, CuratedSet, load_curated, run_curated
from memory_router._ops.bench_data import BenchSet, load_beir, load_locomo
from memory_router._search.fusion import FUSION_METHODS

from ._app import CliState, echo_json, state

SHORT = {
    "recall@1": "R@1",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "recall@20": "R@20",
    "mrr": "MRR",
    "ndcg@10": "nDCG@10",
    "budget@500": "B500",
    "budget@1000": "B1000",
    "budget@2000": "B2000",
}


def _options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--backend",
            "backends",
            multiple=True,
            metavar="NAME",
            help="Backend to measure (repeatable; default: the chain's first).",
        ),
        click.option(
            "--mode",
            "modes",
            multiple=True,
            type=click.Choice(["keyword", "hybrid"]),
            help="keyword (no embeddings) and/or hybrid (repeatable; default: both).",
        ),
        click.option(
            "--fusion",
            "fusions",
            multiple=True,
            type=click.Choice(FUSION_METHODS),
            help="Hybrid fusion to measure (repeatable; default: the configured one).",
        ),
        click.option(
            "--provider", metavar="NAME", help="Embedding provider for hybrid (default: config)."
        ),
        click.option("--limit", type=int, default=0, help="Only the first N groups (0 = all)."),
        click.option(
            "--cache",
            metavar="PATH",
            help="Embedding cache kept between runs"
            " (default: <state_dir>/bench/embedding-cache.sqlite).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the results as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group()
def bench() -> None:
    """Measure retrieval quality and speed on a judged dataset (LoCoMo or BEIR layout)."""


@bench.command()
@click.option(
    "--data",
    metavar="FILE",
    default=lambda: os.environ.get("MEMORY_ROUTER_LOCOMO", ""),
    help="LoCoMo's locomo10.json (default: $MEMORY_ROUTER_LOCOMO).",
)
@click.option(
    "--redate",
    is_flag=True,
    help="Move each conversation's session files so its last session is today (their text"
    " keeps its dates): temporal decay then sees a live memory's ages.",
)
@_options
@click.pass_context
def locomo(ctx: click.Context, /, data: str, redate: bool, **options: Any) -> None:
    """LoCoMo conversations: turn recall per question category."""
    if not data:
        raise InvalidInput(
            "no LoCoMo data given", key="data", hint="pass --data path/to/locomo10.json"
        )
    today = datetime.now(UTC).date() if redate else None
    _run(ctx, load_locomo(Path(data).expanduser(), redate=today), **options)


@bench.command()
@click.option("--data", metavar="DIR", required=True, help="corpus.jsonl, queries.jsonl, qrels/.")
@click.option("--split", default="test", show_default=True, help="qrels/<split>.tsv to use.")
@_options
@click.pass_context
def beir(ctx: click.Context, /, data: str, split: str, **options: Any) -> None:
    """A dataset in BEIR layout: one Markdown file per document."""
    _run(ctx, load_beir(Path(data).expanduser(), split=split), **options)


def _variants(
    config: Config, backends: Sequence[str], modes: Sequence[str], fusions: Sequence[str]
) -> list[Variant]:
    out = []
    for backend in backends or [config.router.chain[0]]:
        for mode in modes or ["keyword", "hybrid"]:
            if mode == "keyword":
                out.append(Variant(backend=backend, mode="keyword"))
                continue
            for fusion in fusions or [config.query.hybrid.fusion]:
                out.append(Variant(backend=backend, mode="hybrid", fusion=fusion))
    return out


def _cache_path(config: Config, cache: str | None) -> Path:
    """The embedding cache to use (``--cache``, else one under the state folder); its
    folder is made."""
    path = (
        Path(cache).expanduser()
        if cache
        else config.state_path / "bench" / "embedding-cache.sqlite"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _run(
    ctx: click.Context,
    dataset: BenchSet,
    *,
    backends: Sequence[str],
    modes: Sequence[str],
    fusions: Sequence[str],
    provider: str | None,
    limit: int,
    cache: str | None,
    as_json: bool,
) -> None:
    cli = state(ctx)
    config = _bench_config(cli, provider=provider, modes=modes)
    if limit > 0:
        dataset = dataclasses.replace(dataset, groups=dataset.groups[:limit])
    cache_path = _cache_path(config, cache)
    variants = _variants(config, backends, modes, fusions)
    reports = _measure(dataset, variants, config, cache_path, cli.pm, quiet=as_json)
    if as_json:
        echo_json(_as_json(dataset, reports))
    else:
        click.echo(render(dataset, reports))


def _bench_config(cli: CliState, *, provider: str | None, modes: Sequence[str]) -> Config:
    """The configuration the variants start from: the CLI's, with ``--provider``; hybrid
    (asked for, or by default) needs a provider."""
    overrides = cli.overrides()
    if provider:
        overrides["embedding"] = {"provider": provider}
    config = load_config(cli.config, overrides=overrides)
    if "hybrid" in (modes or ["hybrid"]) and config.embedding.provider == "none":
        raise InvalidInput(
            "hybrid needs an embedding provider, and embedding.provider is 'none'",
            key="embedding.provider",
            hint="pass --provider minilm (or another provider), or --mode keyword",
        )
    return config


def _measure(
    dataset: BenchSet,
    variants: Sequence[Variant],
    config: Config,
    cache: Path,
    pm: pluggy.PluginManager,
    *,
    quiet: bool,
) -> list[VariantReport]:
    """Each variant's report, each indexed from scratch in a temporary folder."""
    reports = []
    with tempfile.TemporaryDirectory(prefix="memory-router-bench-") as tmp:
        for variant in variants:
            if not quiet:
                click.echo(f"running {variant.label} on {dataset.query_count} queries…", err=True)
            reports.append(
                run_variant(
                    dataset,
                    variant,
                    base=config,
                    work_dir=Path(tmp),
                    cache=cache,
                    plugin_manager=pm,
                )
            )
    return reports


def _as_json(dataset: BenchSet, reports: Sequence[VariantReport]) -> dict[str, Any]:
    return {
        "dataset": {
            "name": dataset.name,
            "source": dataset.source,
            "sha256": dataset.sha256,
            "queries": dataset.query_count,
        },
        "variants": [r.to_dict() for r in reports],
    }


def _row(label: str, metrics: Any, extra: Sequence[str]) -> str:
    return " | ".join([label, *(f"{metrics[m]:.3f}" for m in METRICS), *extra])


def render(dataset: BenchSet, reports: Sequence[VariantReport]) -> str:
    """The results as Markdown tables: overall, then per category when there are any."""
    lines = [
        f"dataset {dataset.name} ({dataset.source}) sha256 {dataset.sha256}",
        f"{dataset.query_count} queries",
        "",
        " | ".join(["variant", *(SHORT[m] for m in METRICS), "index s", "p50 ms", "p95 ms"]),
        " | ".join(["---"] * (len(METRICS) + 4)),
    ]
    for r in reports:
        timing = [f"{r.index_s:.1f}", f"{r.p50_ms:.1f}", f"{r.p95_ms:.1f}"]
        lines.append(_row(r.variant.label, r.metrics, timing))
    categories = sorted({c for r in reports for c in r.by_category})
    if categories:
        lines += ["", " | ".join(["variant", "category", "n", *(SHORT[m] for m in METRICS)])]
        lines.append(" | ".join(["---"] * (len(METRICS) + 3)))
        for r in reports:
            for c in categories:
                values = r.by_category.get(c)
                if values:
                    lines.append(_row(f"{r.variant.label} | {c} | {int(values['n'])}", values, ()))
    return "\n".join(lines)


def _curated_data() -> str:
    """``$MEMORY_ROUTER_CURATED``, else ``bench/curated`` of the current folder or of the
    source checkout this package runs from (when there is one)."""
    if os.environ.get("MEMORY_ROUTER_CURATED"):
        return os.environ["MEMORY_ROUTER_CURATED"]
    for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (root / "bench" / "curated").is_dir():
            return str(root / "bench" / "curated")
    return ""


@bench.command()
@click.option(
    "--data",
    metavar="DIR",
    default=_curated_data,
    help="The curated set (default: $MEMORY_ROUTER_CURATED, else bench/curated).",
)
@click.option("-v", "--verbose", is_flag=True, help="Also list every question missed.")
@_options
@click.pass_context
def curated(ctx: click.Context, /, data: str, verbose: bool, **options: Any) -> None:
    """Curated facts (MEMORY.md bullets): paraphrases found, off-topic questions not.

    Asks with the configured max_results and min_score (the defaults unless the
    configuration changes them), as an agent's memory_search does.
    """
    if not data:
        raise InvalidInput(
            "no curated set given", key="data", hint="pass --data path/to/bench/curated"
        )
    dataset = load_curated(Path(data).expanduser())
    cli = state(ctx)
    config = _bench_config(cli, provider=options["provider"], modes=options["modes"])
    cache_path = _cache_path(config, options["cache"])
    if options["limit"] > 0:
        dataset = dataclasses.replace(dataset, groups=dataset.groups[: options["limit"]])
    reports = []
    with tempfile.TemporaryDirectory(prefix="memory-router-bench-") as tmp:
        for variant in _variants(config, options["backends"], options["modes"], options["fusions"]):
            reports.append(
                run_curated(
                    dataset,
                    variant,
                    base=config,
                    work_dir=Path(tmp),
                    cache=cache_path,
                    plugin_manager=cli.pm,
                )
            )
    if options["as_json"]:
        about = {"source": dataset.source, "sha256": dataset.sha256}
        echo_json({"dataset": about, "variants": [r.to_dict() for r in reports]})
        return
    click.echo(render_curated(dataset, reports, verbose=verbose))


def render_curated(dataset: CuratedSet, reports: Sequence[CuratedReport], *, verbose: bool) -> str:
    """The figures as a Markdown table, then (``verbose``) each question missed."""
    lines = [
        f"dataset curated ({dataset.source}) sha256 {dataset.sha256}",
        f"{dataset.fact_questions} fact questions, {dataset.off_topic} off-topic",
        "",
        "variant | found@1 | found@3 | found | off-topic answered"
        " | found@3, hint followed | off-topic shown, hint followed | p50 ms",
        "--- | --- | --- | --- | --- | --- | --- | ---",
    ]
    for r in reports:
        m = r.metrics
        lines.append(
            f"{r.variant.label} | {m['found@1']:.3f} | {m['found@3']:.3f} | {m['found']:.3f}"
            f" | {m['off_topic_answered']:.3f} | {m['found@3_hinted']:.3f}"
            f" | {m['off_topic_hinted']:.3f} | {r.p50_ms:.1f}"
        )
    if verbose:
        for r in reports:
            lines += ["", f"{r.variant.label}: missed"]
            lines += [
                f"  {d['workspace']}: {d['question']!r} fact {d['fact']} rank {d['rank']}"
                f" hits {d['hits']} top {d['top']}"
                for d in r.to_dict()["misses"]
            ]
    return "\n".join(lines)
