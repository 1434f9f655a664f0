"""``toolcards demo``: a team of three ships a small task through shared cards.

Scripted models drive it offline; ``--model`` (or ``OPENAI_API_KEY``) puts an LLM behind
every member. See :mod:`toolcards.demo`.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        parents=parents,
        help="run a three-member team end to end (offline unless --model or OPENAI_API_KEY)",
        description=__doc__,
    )
    parser.add_argument("--model", default=None, help="a pydantic-ai model string, e.g. openai:gpt-4o-mini")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the team (default 180)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; the exit code is 0 when the team finished."""
    # The demo is an application of the domain cards; load it only for this command.
    from toolcards.demo import run_demo

    return run_demo(args.model, timeout_s=args.timeout)
