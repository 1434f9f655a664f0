"""``toolcards demo``: a team of three ships a small task through shared cards.

Scripted models drive it offline; ``--model`` (or ``OPENAI_API_KEY``) puts an LLM behind
every member. The team, ``demo``, lives where the lookup every command follows lands
(``--store``/``--root``, ``TOOLCARDS_STORE``/``TOOLCARDS_WORKSPACES_ROOT``, a
``toolcards.toml`` here or in a parent, a legacy ``./workspaces``, the per-user data
directory), and its store is created there if there is none, so a second run shows the board
of the first. See :mod:`toolcards._demo`.
"""

from __future__ import annotations

import argparse
from typing import Any

from toolcards.cli._console import progress, summary
from toolcards.cli._location_options import LOOKUP_HELP, add_location_options, open_team_store

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        parents=parents,
        help="run a three-member team end to end (offline unless --model or OPENAI_API_KEY)",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--model", default=None, help="a pydantic-ai model string, e.g. openai:gpt-4o-mini")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the team (default 180)")
    add_location_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; the exit code is 0 when the team finished."""
    # The demo is an application of the domain cards; load it only for this command.
    from toolcards._demo import run_demo

    progress(f"team demo on {open_team_store(args, create=True, command='demo')}")
    return run_demo(args.model, timeout_s=args.timeout)
