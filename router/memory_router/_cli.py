"""The ``memory-router`` entry point (also ``python -m memory_router``).

The commands live in :mod:`memory_router.cli`; this module only starts them, and reports
errors that happen before click runs (a plugin that fails to load).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ._exceptions import MemoryRouterError
from .cli import build_cli, report_error
from .cli._app import EXIT_BROKEN_PIPE, silence_stdout, tolerant_streams


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); exits the process."""
    args = list(sys.argv[1:] if argv is None else argv)
    tolerant_streams()
    try:
        cli = build_cli()
    except MemoryRouterError as error:
        if "--traceback" in args:
            raise
        report_error(error)
        sys.exit(1)
    try:
        cli.main(args=args, prog_name="memory-router")
    finally:
        # Output still buffered for a reader that went away fails here, not in a command.
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()
            sys.exit(EXIT_BROKEN_PIPE)
