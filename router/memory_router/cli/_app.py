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
        for commands that diagnose it or never touch memory (``status``, ``doctor``,
        ``reset``)."""
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
    """The ``memory-router`` group: runs a command inside the error boundary."""

    def __init__(self, *args: Any, pm: pluggy.PluginManager, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pm = pm

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
            raise CommandError(error.message, hint=error.hint) from None
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
