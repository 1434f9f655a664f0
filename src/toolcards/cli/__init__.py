"""The ``toolcards`` command line.

::

    toolcards serve [--config team.yaml] [--transport stdio|http] ...   serve a team over MCP
    toolcards cards [--json]                                            the card kinds available
    toolcards call [--config team.yaml] [--agent NAME] '/get_planning'  run one command
    toolcards demo [--model openai:gpt-4o-mini]                         a team ships a task end to end

Each command is a module here with ``register(subparsers, parents)`` and is listed in
:data:`COMMANDS`. Results go to stdout; progress and errors go to stderr, errors as one
line (``--debug`` shows the traceback). Exit codes: 0 success, 1 failure, 2 usage error or
unknown command, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from toolcards.cli.console import configure_logging, one_line

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: tuple[str, ...] = ("toolcards.cli.serve", "toolcards.cli.cards", "toolcards.cli.call", "toolcards.cli.demo")
"""The modules defining the subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="toolcards", description="Serve, inspect and drive toolcards teams.", allow_abbrev=False
    )
    parser.add_argument("--debug", action="store_true", default=False, help="log everything and show tracebacks")
    common = argparse.ArgumentParser(add_help=False)
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
    except BrokenPipeError:
        # The reader left (`toolcards cards | head`): not worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("toolcards: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"toolcards: error: {one_line(exc)}", file=sys.stderr)
        return 1
    return code
