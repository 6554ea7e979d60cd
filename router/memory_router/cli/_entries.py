"""``store``, ``forget`` and ``entries``: the journal of entries an agent chose to keep."""

from __future__ import annotations

import click

from memory_router._types import CATEGORIES, Category, Entry

from ._app import echo_json, read_argument, state


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
@click.option("--json", "as_json", is_flag=True, help="Print the stored entry as JSON.")
@click.pass_context
def store(ctx: click.Context, text: str, importance: float, category: str, as_json: bool) -> None:
    """Journal TEXT as a new entry ('-' reads it from stdin); indexed on the next sync."""
    chosen: Category = next(c for c in CATEGORIES if c == category)
    entry = state(ctx).router().store(read_argument(text), importance=importance, category=chosen)
    if as_json:
        echo_json(entry.to_dict())
    else:
        click.echo(f"Stored {entry.id} ({entry.category}, importance {entry.importance:.2f}).")


@click.command()
@click.argument("entry_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the removed entry as JSON.")
@click.pass_context
def forget(ctx: click.Context, entry_id: str, as_json: bool) -> None:
    """Remove the entry called ID from the journal."""
    entry = state(ctx).router().forget(entry_id)
    if as_json:
        echo_json(entry.to_dict())
    else:
        click.echo(f"Forgot {entry.id}: {_preview(entry.text)}")


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
