"""``search --explain``: every factor of every score, and why candidates were left out."""

from __future__ import annotations

import click

from memory_router._search.keywords import query_keywords
from memory_router._search.snippets import line_terms
from memory_router._types import Explain, Hit, SearchResponse


def _side(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _cosine(explain: Explain) -> str:
    """The raw cosine, and as the model's calibration maps it when it does."""
    raw = _side(explain.vector_score)
    if explain.vector_norm is None:
        return raw
    if explain.vector_score is None:  # not in the vector leg: its lowest, a bound
        return f"— (at most the leg's lowest, calibrated {explain.vector_norm:.3f})"
    return f"{raw} (calibrated {explain.vector_norm:.3f})"


def matched(explain: Explain, query: str) -> str:
    """``keywords coffee, milk of coffee, milk, drink`` (``none of …`` when it holds none)."""
    every = query_keywords(query)
    if not every:
        return "no keywords in the query"
    held = ", ".join(explain.keywords) or "none"
    return f"keywords {held} of {', '.join(every)}"


def factors(explain: Explain) -> str:
    """``relevance × decay × importance = score``, with the hybrid parts when there are any."""
    line = (
        f"relevance {explain.relevance:.3f} × decay {explain.decay:.3f}"
        f" × importance {explain.importance:.3f} = {explain.score:.3f}"
    )
    if explain.fusion:
        # The parts are already scaled by the support; it is named so they add up.
        support = f", support {explain.support:.3f}" if explain.support < 1.0 else ""
        line += (
            f"  [{explain.fusion}{support}: vector {_cosine(explain)}"
            f" → {_side(explain.vector_part)}, text {_side(explain.text_score)}"
            f" → {_side(explain.text_part)}]"
        )
    elif explain.text_score is not None or explain.vector_score is not None:
        line += f"  [vector {_side(explain.vector_score)}, text {_side(explain.text_score)}]"
    if explain.mmr_penalty:
        line += f"  MMR penalty {explain.mmr_penalty:.3f}"
    if explain.merged:
        line += f"  merged with lines {', '.join(explain.merged)}"
    return line


def best_line(snippet: str, query: str) -> str:
    """The snippet's line with the most query keywords (the first content line on a tie)."""
    lines = [ln.strip() for ln in snippet.split("\n") if ln.strip() and not ln.startswith("#")]
    if not lines:
        return ""
    terms = line_terms(lines, query)
    return lines[max(range(len(lines)), key=lambda i: (len(terms[i]), -i))]


def _hit_line(rank: str, hit: Hit) -> str:
    return f"{rank} {hit.score:.3f} {hit.path}:{hit.start_line}-{hit.end_line}"


def _details(hit: Hit, query: str) -> None:
    if hit.explain is None:
        return
    click.echo(f"   {factors(hit.explain)}")
    click.echo(f"   {matched(hit.explain, query)}")
    if hit.explain.relaxed:
        click.echo(f"   {hit.explain.relaxed}")


def print_explained(response: SearchResponse) -> None:
    """The hits with their factors and matched keywords, then each dropped candidate and
    the reason (those that scored 0, matching nothing, as a count)."""
    if not response.results:
        click.echo("No matches.")
    for rank, hit in enumerate(response.results, start=1):
        click.echo(_hit_line(f"#{rank}", hit))
        _details(hit, response.query)
        click.echo(f"   {best_line(hit.snippet, response.query)[:100]}")
    scored = [h for h in response.dropped if h.score > 0]
    zero = len(response.dropped) - len(scored)
    if response.dropped:
        click.echo()
        click.echo(f"Dropped ({len(response.dropped)}):")
    for hit in scored:
        reason = hit.explain.dropped if hit.explain else "dropped"
        click.echo(f"{_hit_line('-', hit)}  {reason}")
        _details(hit, response.query)
    if zero:
        click.echo(
            f"- and {zero} candidate(s) that scored 0: no query keyword, and a cosine under"
            " the model's noise floor"
        )
    click.echo(f"Answered by {response.backend} (mode {response.mode}).")
