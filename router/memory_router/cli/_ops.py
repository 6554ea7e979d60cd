"""``doctor``, ``reset`` and ``agents``: looking after an agent's memory as a person does."""

from __future__ import annotations

import dataclasses

import click

from memory_router._config.config import load_config
from memory_router._exceptions import NotFound
from memory_router._ops import doctor as _doctor
from memory_router._ops.agents import agent_line, list_agents

from ._app import EXIT_ERROR, echo_json, state


@click.command()
@click.option("--fix", is_flag=True, help="Repair what is safe to repair, then check again.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks (and repairs) as JSON.")
@click.pass_context
def doctor(ctx: click.Context, fix: bool, as_json: bool) -> None:
    """Check config, workspace, state dir, embeddings and every backend; say how to fix each ✗.

    Exits 1 while any check fails. Markdown is never changed.
    """
    cli = state(ctx)
    router = cli.router(require_workspace=False)
    found = _doctor.checks(router)
    repaired: list[str] = []
    if fix and not all(c.ok for c in found):
        repaired = _doctor.repair(router, found)
        found = _doctor.checks(router)
    found = [dataclasses.replace(c, fix=cli.paste(c.fix)) for c in found]  # backends' hints
    if as_json:
        echo_json(
            {
                "ok": all(c.ok for c in found),
                "checks": [c.to_dict() for c in found],
                "repaired": repaired,
            }
        )
    else:
        for line in repaired:
            click.echo(f"Fixed: {line}")
        for line in _doctor.lines(found):
            click.echo(line)
    if not all(c.ok for c in found):
        ctx.exit(EXIT_ERROR)


@click.command()
@click.option(
    "--backend",
    "backends",
    multiple=True,
    metavar="NAME",
    help="Reset only this backend, in the chain or not (repeatable; default: the chain's).",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def reset(ctx: click.Context, backends: tuple[str, ...], yes: bool) -> None:
    """Delete derived state (indexes) so the next `index` rebuilds it; never touches Markdown.

    The embedding cache is kept, so the rebuild re-embeds nothing that was embedded before.
    """
    router = state(ctx).router(require_workspace=False)
    # Any installed backend, not only the chain's: an index left by a backend taken out of
    # the chain (after a migration) is still derived state somebody wants gone.
    names = list(dict.fromkeys(backends)) or list(router.config.router.chain)
    try:
        router.check_backend_names(names)  # before asking: the answer would be wasted
    except NotFound as error:
        raise click.BadParameter(
            f"no backend named {error.key!r} is installed"
            f" (installed: {', '.join(sorted(router.backend_specs))})",
            param_hint="--backend",
        ) from None
    if not yes:
        click.confirm(
            f"Delete the index of {', '.join(names)} for agent {router.config.agent_id!r}"
            f" (the Markdown in {router.config.workspace_path} is kept)?",
            abort=True,
        )
    removed = _doctor.reset(router, names)
    for path in removed:
        click.echo(f"Removed {path}")
    rebuilt = [name for name in names if name in router.config.router.chain]
    if rebuilt:
        click.echo(f"Reset {', '.join(names)}; run `{state(ctx).command('index')}` to rebuild.")
    else:  # out of the chain: `index` would not build it again
        click.echo(f"Reset {', '.join(names)} (not in the chain: nothing will rebuild it).")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the agents as a JSON array.")
@click.pass_context
def agents(ctx: click.Context, as_json: bool) -> None:
    """List the agents found under the state dir with their index sizes and health."""
    show_agents(ctx, as_json=as_json)


def show_agents(ctx: click.Context, *, as_json: bool) -> None:
    """The ``agents`` listing (also ``status --all-agents``)."""
    cli = state(ctx)
    config = load_config(cli.config, overrides=cli.overrides())
    found = list_agents(config.state_path, cooldown_s=config.router.breaker.cooldown_s)
    if as_json:
        echo_json([{**a.to_dict(), "healthy": a.healthy} for a in found])
        return
    if not found:
        click.echo(f"No agents under {config.state_path / 'agents'}.")
    for agent in found:
        click.echo(agent_line(agent, config))
