"""``--store``: which store holds the team's state, for every command that runs a team.

The option sets ``TOOLCARDS_STORE`` for the process, so every actor (and anything it starts)
uses the same store, and opens it at once: a bad location, an unreachable server or a
``:memory:`` store another process already holds fails the command before it serves
anything, with one line.
"""

from __future__ import annotations

import argparse
import os

__all__ = ["add_store_option", "open_team_store"]


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--store LOCATION`` to ``parser``."""
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help="where the team's state lives: a SQLite file, postgresql://user@host/db, or :memory: "
        "(default: $TOOLCARDS_STORE, else <workspaces root>/.toolcards/state.db)",
    )


def open_team_store(args: argparse.Namespace) -> str:
    """Apply ``--store`` and open the store; returns its location, safe to print.

    Raises:
        toolcards.store.StoreError: the store cannot be opened.
    """
    from toolcards.store import default_store, describe_location

    if getattr(args, "store", None):
        os.environ["TOOLCARDS_STORE"] = args.store
    store = default_store()
    return describe_location(getattr(store, "url", None) or getattr(store, "path", None) or repr(store))
