"""The ``toolcards`` command line.

::

    toolcards serve [--config team.yaml] [--transport stdio|http] ...   serve a team over MCP
    toolcards cards [--json]                                            the card kinds available
    toolcards call [--config team.yaml] [--agent NAME] '/get_planning'  run one command
    toolcards dashboard [--config team.yaml] [--store ...]              watch a team live in a browser
    toolcards backup [--store ...] [--force] DEST                       copy the team's store while it runs
    toolcards history [--path P] [--member NAME] [--diff ID]            what changed in the team's workspace
    toolcards undo [ID] [--member NAME] [--since WHEN] [--dry-run]      undo workspace changes, all or nothing
    toolcards demo [--model openai:gpt-4o-mini]                         a team ships a task end to end

Each command is a module here with ``register(subparsers, parents)`` and is listed in
:data:`COMMANDS`. Results go to stdout; progress and errors go to stderr. An error is one
line, ``toolcards: error: ...``, naming the bad value and the fix; ``--debug`` shows the
traceback instead. Exit codes: 0 success, 1 failure, 2 usage error (an option value, an
unknown command or kind: see :mod:`toolcards.cli.console`), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from toolcards.cli.console import configure_logging, exit_code, one_line, root_error

__all__ = ["COMMANDS", "CommandLineParser", "build_parser", "main"]

COMMANDS: tuple[str, ...] = (
    "toolcards.cli.serve",
    "toolcards.cli.cards",
    "toolcards.cli.call",
    "toolcards.cli.dashboard",
    "toolcards.cli.backup",
    "toolcards.cli.history",
    "toolcards.cli.undo",
    "toolcards.cli.demo",
    "toolcards.cli.fetch_models",
)
"""The modules defining the subcommands, in the order ``--help`` lists them."""


class CommandLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr and exit code 2.

    The usage summary argparse prints first is left out: the line names the bad value and
    points to ``--help``. Subcommand parsers are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``toolcards: error: <message>. See '<prog> --help'.`` and exit with 2."""
        self.exit(2, f"toolcards: error: {message.rstrip('.')}. See '{self.prog} --help'.\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = CommandLineParser(
        prog="toolcards", description="Serve, inspect and drive toolcards teams.", allow_abbrev=False
    )
    parser.add_argument("--debug", action="store_true", default=False, help="log everything and show tracebacks")
    common = CommandLineParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite a --debug given before it.
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="log everything and show tracebacks"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(subparsers, [common])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    configure_logging(debug=args.debug)
    try:
        code: int = args.handler(args)
    except BaseException as exc:
        # A failure inside a task group arrives wrapped in an exception group: report the
        # error itself, not "unhandled errors in a TaskGroup".
        error = root_error(exc)
        if isinstance(error, BrokenPipeError):
            # The reader left (`toolcards cards | head`): not worth a message.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        if isinstance(error, KeyboardInterrupt):
            print("toolcards: interrupted", file=sys.stderr)
            return 130
        if args.debug or not isinstance(error, Exception):
            raise
        print(f"toolcards: error: {one_line(error)}", file=sys.stderr)
        return exit_code(error)
    return code
