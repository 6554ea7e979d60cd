"""``flush``, ``context`` and ``capture``: the helpers an agent host calls around a turn."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memory_router._agent.capture import capture as capture_messages
from memory_router._agent.capture import recall_block
from memory_router._agent.flush import check_memory_flush

from ._app import echo_json, read_argument, redacted_line, state


@click.command()
@click.option("--session", "session_key", required=True, help="The session's key.")
@click.option(
    "--tokens", "total_tokens", type=click.IntRange(min=0), required=True, help="Tokens used now."
)
@click.option(
    "--window", "context_window", type=click.IntRange(min=1), required=True, help="Context size."
)
@click.option(
    "--compactions",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="How many times the session was compacted so far.",
)
@click.option("--dry-run", is_flag=True, help="Do not record the flush as done.")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
def flush(
    ctx: click.Context,
    session_key: str,
    total_tokens: int,
    context_window: int,
    compactions: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Say whether the pre-compaction memory flush is due, and print its prompts."""
    decision = check_memory_flush(
        state(ctx).router().config,  # its workspace checked: the flush writes notes there
        session_key=session_key,
        total_tokens=total_tokens,
        context_window=context_window,
        compaction_count=compactions,
        record=not dry_run,
    )
    if as_json:
        echo_json(decision.to_dict())
    elif decision.flush:
        click.echo(f"Flush now ({decision.total_tokens} ≥ {decision.threshold} tokens).")
        click.echo(f"System prompt: {decision.system_prompt}")
        click.echo(f"Prompt: {decision.prompt}")
    else:
        click.echo(f"No flush: {decision.reason}.")


@click.command()
@click.argument("prompt")
@click.option("--max-chars", type=click.IntRange(min=0), help="Budget for the memories' text.")
@click.option("--json", "as_json", is_flag=True, help="Print {text, hits} as JSON.")
@click.pass_context
def context(ctx: click.Context, prompt: str, max_chars: int | None, as_json: bool) -> None:
    """Print the <relevant-memories> block for PROMPT ('-' reads it from stdin)."""
    router = state(ctx).router(require_workspace=False)  # a search: the index answers, noted
    block = recall_block(router, read_argument(prompt), max_chars=max_chars)
    for note in block.notes:  # stale or degraded memories say so, as search does
        click.echo(f"Note: {' '.join(note.split())}", err=True)
    if as_json:
        echo_json(block.to_dict())
    elif block.text:
        click.echo(block.text)


@click.command()
@click.argument("messages", nargs=-1, required=True)
@click.option("--conversation", required=True, help="The conversation's id (3 captures each).")
@click.option("--json", "as_json", is_flag=True, help="Print {stored, skipped, redacted} as JSON.")
@click.pass_context
def capture(
    ctx: click.Context, messages: tuple[str, ...], conversation: str, as_json: bool
) -> None:
    """Store the user MESSAGES worth keeping as entries ('-': a JSON array or text on stdin)."""
    texts: list[Any] = []
    for message in messages:
        texts.extend(_stdin_messages() if message == "-" else [message])
    result = capture_messages(state(ctx).router(), texts, conversation_id=conversation)
    if as_json:
        echo_json(result.to_dict())
        return
    for entry in result.stored:
        click.echo(f"Stored {entry.id} ({entry.category}): {entry.text}")
    for reason in result.skipped:
        click.echo(f"Skipped: {reason}")
    if result.redacted:
        click.echo(redacted_line(result.redacted))


def _stdin_messages() -> list[Any]:
    text = sys.stdin.read()
    try:
        data = json.loads(text)
    except ValueError:
        return [text.removesuffix("\n")]
    return data if isinstance(data, list) else [text.removesuffix("\n")]
