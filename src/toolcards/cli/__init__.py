"""The ``toolcards`` command line.

Each command (``init``, ``info``, ``serve``, ``cards``, ``call``, ``dashboard``, ``backup``,
``history``, ``undo``, ``usage``, ``demo``; described in ``docs/cli.md``) is a module here with
``register(subparsers, parents)``, listed in :data:`COMMANDS`. Every command that works on a
team finds it through :mod:`toolcards.core._lookup`. Results go to stdout, progress and errors
to stderr; an error is one line, ``toolcards: error: ...``, naming the bad value and the fix
(``--debug`` shows the traceback). Exit codes: 0 success, 1 failure, 2 usage error
(:mod:`toolcards.cli._console`), 130 interrupted. Options are never abbreviated.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from toolcards.cli._console import configure_logging, exit_code, one_line, root_error

__all__ = ["CommandLineParser", "build_parser", "given", "main"]

COMMANDS: dict[str, str] = {
    "init": "toolcards.cli._init",
    "info": "toolcards.cli._info",
    "serve": "toolcards.cli._serve",
    "cards": "toolcards.cli._cards",
    "call": "toolcards.cli._call",
    "dashboard": "toolcards.cli._dashboard",
    "backup": "toolcards.cli._backup",
    "history": "toolcards.cli._history",
    "undo": "toolcards.cli._undo",
    "usage": "toolcards.cli._usage",
    "demo": "toolcards.cli._demo",
    "fetch-models": "toolcards.cli._fetch_models",
}
"""Each subcommand's name and the module defining it (its ``register``), in the order
``--help`` lists them."""


class CommandLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr and exit code 2, that
    never abbreviates options, and that records which options were given (:func:`given`).

    The usage summary argparse prints first is left out: the line names the bad value and
    points to ``--help``. Subcommand parsers are of this class too.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # An abbreviation would change meaning when an option is added, and would hide which
        # option was given from the checks of contradicting options.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse as argparse does, and add this parser's options found in ``args`` to the
        result's ``given_options`` (a set of option strings, such as ``"--port"``)."""
        words = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(words, namespace)
        words = words[: words.index("--")] if "--" in words else words
        options = {option for action in self._actions for option in action.option_strings}
        found: set[str] = {word.split("=", 1)[0] for word in words if word.split("=", 1)[0] in options}
        parsed.given_options = set(getattr(parsed, "given_options", ())) | found
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        """Print ``toolcards: error: <message>. See '<prog> --help'.`` and exit with 2."""
        self.exit(2, f"toolcards: error: {message.rstrip('.')}. See '{self.prog} --help'.\n")


def given(args: argparse.Namespace, *options: str) -> list[str]:
    """Those of ``options`` (option strings, ``"--port"``) given on the command line, in order."""
    found: set[str] = getattr(args, "given_options", set())
    return [option for option in options if option in found]


class _Version(argparse.Action):
    """``--version``: print ``toolcards <version>`` and exit; the version is read only then
    (package metadata is slow to read, which every other command would pay for)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        import toolcards

        print(f"toolcards {toolcards.__version__}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or only ``command`` when it
    names one (the parser a run of that command needs: it parses that command's arguments
    exactly as the full one does)."""
    from toolcards.cli._location_options import LOOKUP_HELP

    parser = CommandLineParser(
        prog="toolcards",
        description="Serve, inspect and drive toolcards teams.",
        epilog=f"{LOOKUP_HELP} 'toolcards COMMAND --help' describes a command.",
    )
    parser.add_argument("--version", action=_Version, help="print the version of toolcards and exit")
    parser.add_argument("--debug", action="store_true", default=False, help="log everything and show tracebacks")
    common = CommandLineParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite a --debug given before it.
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="log everything and show tracebacks"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else COMMANDS.values()
    for module in modules:
        importlib.import_module(module).register(subparsers, [common])
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` runs: its first word that is not an option (the options
    before a command, ``--debug`` and ``--version``, take no value). ``None`` when the
    top-level help comes first (``toolcards --help serve`` lists every command)."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    # Before the first pydantic model is built: pydantic otherwise reads the entry points of
    # every installed distribution to find its plugins, about a sixth of `serve`'s start-up.
    # A plugin is wanted in a command-line process only if asked for; set the variable
    # (empty: all plugins) to choose.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Start-up makes hundreds of thousands of objects that live as long as the process (modules,
    # classes, schemas): collecting cycles among them while they are made took about a tenth of
    # serve's start-up, and finds nothing. A command that runs long (serve) ends its start-up
    # with start_up_over(); any other gets the collector back before it runs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(argv, collecting)
    finally:
        if collecting:
            gc.enable()


def _run(argv: Sequence[str] | None, collecting: bool) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # Only the command run is imported and registered: parsing it needs no other command's
    # module, and every command pays for what it imports before its first output.
    parser = build_parser(_command_named(words))
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if collecting and not getattr(args, "ends_start_up", False):
        gc.enable()
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
