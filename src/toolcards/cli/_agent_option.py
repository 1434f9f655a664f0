"""``--agent NAME``: the team member a command acts as, for ``serve`` and ``call``.

The name is checked when the command line is read: one without a usable character is a
usage error (exit code 2) before anything starts, not a silently different name.
"""

from __future__ import annotations

import argparse

__all__ = ["add_agent_option", "agent_option"]


def agent_option(text: str) -> str:
    """``text`` as a roster name (see :func:`toolcards.server._session.agent_name`).

    Raises:
        argparse.ArgumentTypeError: no letter, digit, ``_``, ``.`` or ``-`` is left of it.
    """
    from toolcards.server._session import agent_name

    name = agent_name(text, default="")
    if not name:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no usable character for an agent name: use letters, digits, '_', '.' or '-'"
        )
    return name


def add_agent_option(parser: argparse.ArgumentParser, *, default: str | None, help: str) -> None:
    """Add ``--agent NAME`` to ``parser``."""
    parser.add_argument("--agent", default=default, type=agent_option, metavar="NAME", help=help)
