"""``store``, ``recall``, ``forget`` and ``entries``: the entries an agent chose to keep."""

from __future__ import annotations

import click

from memory_router._types import CATEGORIES, Category, Entry, EntryMatch

from ._app import echo_json, read_argument, redacted_line, state


@click.command()
@click.argument("text")
@click.option(
    "--importance",
    type=click.FloatRange(0.0, 1.0),
    default=0.7,
    show_default=True,
    help="How much the entry matters (0–1).",
)
@click.option(
    "--category",
    type=click.Choice(CATEGORIES),
    default="other",
    show_default=True,
    help="What kind of entry it is.",
)
@click.option("--force", is_flag=True, help="Store even when a near-identical entry exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the entry and the action as JSON.")
@click.pass_context
def store(
    ctx: click.Context, text: str, importance: float, category: str, force: bool, as_json: bool
) -> None:
    """Journal TEXT as a new entry ('-' reads it from stdin); indexed on the next sync.

    An existing entry with similarity >= entries.duplicate_threshold is reported instead.
    """
    chosen: Category = next(c for c in CATEGORIES if c == category)
    result = (
        state(ctx)
        .router()
        .remember(read_argument(text), importance=importance, category=chosen, force=force)
    )
    entry = result.entry
    if as_json:
        echo_json(
            {
                **entry.to_dict(),
                "action": result.action,
                "similarity": result.similarity,
                "redacted": list(result.redacted),
            }
        )
        return
    if result.redacted:
        click.echo(redacted_line(result.redacted))
    if result.action == "duplicate":
        click.echo(
            f"Not stored: duplicate of {entry.id} (similarity {result.similarity:.2f}):"
            f" {_preview(entry.text)}"
        )
    else:
        click.echo(f"Stored {entry.id} ({entry.category}, importance {entry.importance:.2f}).")


@click.command()
@click.argument("query")
@click.option("--category", type=click.Choice(CATEGORIES), help="Only entries of this category.")
@click.option(
    "--limit", type=click.IntRange(1), default=5, show_default=True, help="At most this many."
)
@click.option("--json", "as_json", is_flag=True, help="Print the matches as JSON.")
@click.pass_context
def recall(ctx: click.Context, query: str, category: str | None, limit: int, as_json: bool) -> None:
    """Entries (only) most similar to QUERY, weighted by importance and recency."""
    chosen = next((c for c in CATEGORIES if c == category), None)
    result = state(ctx).router().recall(read_argument(query), category=chosen, limit=limit)
    if as_json:
        echo_json(result.to_dict())
        return
    if not result.results:
        click.echo("No matching entries.")
    for n, match in enumerate(result.results, 1):
        click.echo(f"{n}. {match_line(match)}")


@click.command()
@click.argument("entry_id", metavar="[ID]", required=False)
@click.option("--query", metavar="TEXT", help="Forget the one entry matching TEXT instead.")
@click.option("--json", "as_json", is_flag=True, help="Print what happened as JSON.")
@click.pass_context
def forget(ctx: click.Context, entry_id: str | None, query: str | None, as_json: bool) -> None:
    """Remove the entry called ID (or the one entry matching --query) from the journal."""
    router = state(ctx).router()
    if query is None:
        if entry_id is None:
            raise click.UsageError("give an entry ID or --query TEXT")
        entry = router.forget(entry_id)
        if as_json:
            echo_json(entry.to_dict())
        else:
            click.echo(f"Forgot {entry.id}: {_preview(entry.text)}")
        return
    if entry_id is not None:
        raise click.UsageError("give an entry ID or --query TEXT, not both")
    result = router.forget_entry(query=read_argument(query))
    if as_json:
        echo_json(result.to_dict())
    elif result.deleted is not None:
        click.echo(f"Forgot {result.deleted.id}: {_preview(result.deleted.text)}")
    elif not result.candidates:
        click.echo("No entry matches; nothing forgotten.")
    else:
        click.echo("No single entry matches closely enough; nothing forgotten. Candidates:")
        for match in result.candidates:
            click.echo(f"  {match_line(match)}")
        click.echo(
            "Hint: forget one by its id: "
            + state(ctx).command("forget", result.candidates[0].entry.id)
        )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON array.")
@click.pass_context
def entries(ctx: click.Context, as_json: bool) -> None:
    """List the journaled entries, oldest first."""
    found = state(ctx).router().entries()
    if as_json:
        echo_json([e.to_dict() for e in found])
        return
    if not found:
        click.echo("No entries.")
    for entry in found:
        click.echo(entry_line(entry))


def entry_line(entry: Entry) -> str:
    """``<id>  <date>  <category>  <importance>  <text preview>``."""
    day = entry.created_at.strftime("%Y-%m-%d %H:%M")
    return (
        f"{entry.id}  {day}  {entry.category:<10}  {entry.importance:.2f}  {_preview(entry.text)}"
    )


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def match_line(match: EntryMatch) -> str:
    """``[category] text (score) id`` for a recalled or candidate entry."""
    entry = match.entry
    return f"[{entry.category}] {_preview(entry.text)} ({match.score:.2f}) {entry.id}"
