"""The root command group: global options, the router they configure, the error boundary.

Errors surface here once: a :class:`MemoryRouterError` becomes ``Error: <message>`` (and
``Hint: <hint>``) on stderr with exit code 1; ``--traceback`` re-raises it instead. Usage
errors keep click's exit code 2, and Ctrl-C exits with 130.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click
import pluggy

from memory_router._exceptions import MemoryRouterError

if TYPE_CHECKING:  # imported when used, so `--help` does not load them
    from memory_router._router import Router

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what shells report for `… | head`


@dataclass
class CliState:
    """What the root group's options chose. The router is built on first use and closed once."""

    pm: pluggy.PluginManager
    config: str | None = None
    workspace: str | None = None
    agent: str | None = None
    traceback: bool = False
    commands: tuple[str, ...] = ()
    _router: Router | None = field(default=None, repr=False)

    def overrides(self) -> dict[str, Any]:
        """Config overrides from ``--workspace`` and ``--agent``."""
        values: dict[str, Any] = {}
        if self.workspace is not None:
            # Relative to where the user typed it, not to the config file's folder.
            values["workspace"] = str(Path(self.workspace).expanduser().resolve())
        if self.agent is not None:
            values["agent_id"] = self.agent
        return values

    def router(self, *, require_workspace: bool = True) -> Router:
        """The router of the global options, built once. Its workspace is checked (a
        :class:`ConfigError` when missing) unless ``require_workspace`` is false: only
        for commands that diagnose it (``status``, ``doctor``), delete only derived state
        (``reset``), or search, where the index as it was answers with a note saying
        why (``search``, ``context``)."""
        if self._router is None:
            from memory_router._router import Router

            self._router = Router.from_config(
                self.config,
                plugin_manager=self.pm,
                require_workspace=False,
                **self.overrides(),
            )
        if require_workspace:
            self._router.check_workspace()
        return self._router

    def paste(self, text: str | None) -> str | None:
        """``text`` (a hint) with the global options in use added to each command it
        names, so a pasted fix runs against this config (see :func:`pasteable`)."""
        if not text or self._router is None:
            return text
        from memory_router._config.commandline import pasteable

        return pasteable(text, self._router.config, self.commands)

    def command(self, *args: str) -> str:
        """``memory-router <global options in use> <args>``, to print as a hint."""
        from memory_router._config.commandline import command
        from memory_router._config.config import load_config

        config = self._router.config if self._router is not None else None
        if config is None:
            config = load_config(self.config, overrides=self.overrides())
        return command(config, *args)

    def close(self) -> None:
        if self._router is not None:
            router, self._router = self._router, None
            router.close()


class CommandError(click.ClickException):
    """A :class:`MemoryRouterError` as the CLI shows it: one ``Error:`` line, maybe a hint."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.hint = hint

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)
        if self.hint:
            click.echo(f"Hint: {' '.join(self.hint.split())}", file=file, err=file is None)


def report_error(error: MemoryRouterError) -> None:
    """Print ``error`` the way the CLI does (for failures before click is running)."""
    CommandError(error.message, hint=error.hint).show()


class RootGroup(click.Group):
    """The ``memory-router`` group: runs a command inside the error boundary, and lets
    every command take the global options after its name too (:func:`with_global_options`)."""

    def __init__(self, *args: Any, pm: pluggy.PluginManager, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pm = pm

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        return with_global_options(command) if command is not None else None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, as other command-line tools do.
            silence_stdout()
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None
        except KeyboardInterrupt:
            if _wants_traceback(ctx):
                raise
            click.echo("Interrupted.", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except MemoryRouterError as error:
            if _wants_traceback(ctx):
                raise
            hint = ctx.obj.paste(error.hint) if isinstance(ctx.obj, CliState) else error.hint
            raise CommandError(error.message, hint=hint) from None
        except Exception as error:  # a bug: still one line unless --traceback
            if _wants_traceback(ctx):
                raise
            raise CommandError(
                f"unexpected {type(error).__name__}: {error}",
                hint="run again with --traceback and report it",
            ) from None
        finally:
            if isinstance(ctx.obj, CliState):
                ctx.obj.close()


GLOBAL_OPTIONS = {
    "config": ("--config", "PATH", "Config file (as before the command)."),
    "workspace": ("--workspace", "PATH", "Workspace folder (as before the command)."),
    "agent": ("--agent", "ID", "Agent id (as before the command)."),
}
"""The root group's options a command also takes after its name: ``CliState`` field ->
(option, metavar, help). ``--traceback`` is taken too."""


def with_global_options(command: click.Command) -> click.Command:
    """``command`` (and a group's subcommands) also taking the global options after its
    name, so ``memory-router search --config x.toml tea`` works as typed; a value given
    there wins over one before the command. Hidden from the command's ``--help``. A
    command that has an option of the same name keeps its own."""
    if getattr(command, "_global_options", False):
        return command
    taken = {opt for param in command.params for opt in getattr(param, "opts", ())}
    for name, (flag, metavar, text) in GLOBAL_OPTIONS.items():
        if flag not in taken:
            command.params.append(
                click.Option(
                    [flag, name],
                    metavar=metavar,
                    help=text,
                    hidden=True,
                    expose_value=False,
                    callback=_global_value,
                )
            )
    if "--traceback" not in taken:
        command.params.append(
            click.Option(
                ["--traceback", "traceback"],
                is_flag=True,
                default=None,
                hidden=True,
                expose_value=False,
                callback=_global_value,
            )
        )
    for sub in getattr(command, "commands", {}).values():
        with_global_options(sub)
    command._global_options = True  # type: ignore[attr-defined]
    return command


def _global_value(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    cli = ctx.find_object(CliState)
    if cli is not None and param.name is not None and value not in (None, False):
        if cli._router is not None:  # pragma: no cover - options are parsed before commands run
            raise click.UsageError(f"{param.opts[0]} came too late", ctx=ctx)
        setattr(cli, param.name, value)


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (e.g. click's test runner)
        pass


def _wants_traceback(ctx: click.Context) -> bool:
    return isinstance(ctx.obj, CliState) and ctx.obj.traceback


def state(ctx: click.Context) -> CliState:
    """The :class:`CliState` of the running command."""
    obj = ctx.find_object(CliState)
    if obj is None:  # only when a command is invoked outside the root group
        raise click.UsageError("run this command through memory-router")
    return obj


def echo_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (always valid UTF-8)."""
    from memory_router._workspace.snapshot import scrub

    click.echo(scrub(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def redacted_line(kinds: tuple[str, ...]) -> str:
    """The line that says secrets were masked before anything was written."""
    return f"Redacted before storing: {', '.join(kinds)}."


def read_argument(value: str) -> str:
    """``value``, or all of stdin (without the final newline) when it is ``-``.

    Bytes that are not UTF-8 (on stdin, or in argv, where Python keeps them as lone
    surrogates) become replacement characters: user text is scrubbed here, once.
    """
    from memory_router._workspace.snapshot import scrub

    if value != "-":
        return scrub(value)
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "replace")
    return data.decode("utf-8", "replace").removesuffix("\n")


def tolerant_streams() -> None:
    """Let stdout and stderr print any text: a character the locale's encoding cannot
    show becomes ``?`` (stdout) or an escape (stderr), never an encoding error."""
    for stream, errors in ((sys.stdout, "replace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=errors)
