"""``--store`` and ``--root``: where the team lives, for every command that works on a team.

The options are the first step of the lookup every command and the library follow
(:mod:`toolcards.core._lookup`): ``--store``/``--root``, then ``TOOLCARDS_STORE``/
``TOOLCARDS_WORKSPACES_ROOT``, then a ``toolcards.toml`` in the working directory or a
parent, then a legacy ``./workspaces``, then the per-user data directory. Given options are
applied for the process (:func:`~toolcards.core._lookup.use_locations`) and the locations
found are exported as ``TOOLCARDS_STORE`` and ``TOOLCARDS_WORKSPACES_ROOT``, so anything the
command starts finds the same team.

Commands that start a team (``serve``, ``demo``) create its store where the lookup lands;
commands that read one (``call``, ``dashboard``, ``backup``, ``info``) refuse a SQLite store
that does not exist, naming every step of the lookup, rather than start an empty team
somewhere nobody meant (:func:`require_team_store`). A PostgreSQL database is taken as
given: its tables are made on first use. Opening a store connects at once, so a bad
location, an unreachable server or a ``:memory:`` store another process already holds fails
the command before it serves anything, with one line.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from toolcards.core._lookup import Lookup

__all__ = ["add_location_options", "apply_location_options", "open_team_store", "require_team_store"]

LOOKUP_HELP = (
    "Where the team lives, first match wins: --store/--root; TOOLCARDS_STORE/TOOLCARDS_WORKSPACES_ROOT; "
    "a toolcards.toml in this directory or a parent (toolcards init writes one); ./workspaces if an earlier "
    "version made it here; else $XDG_DATA_HOME/toolcards/workspaces (~/.local/share/toolcards/workspaces). "
    "toolcards info shows which one is used."
)
"""The lookup in one paragraph, for the help of every command that works on a team."""


def add_location_options(parser: argparse.ArgumentParser, *, root: bool = True) -> None:
    """Add ``--store LOCATION`` (and ``--root DIR`` unless ``root`` is false) to ``parser``."""
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help="the team's state: a SQLite file, postgresql://user@host/db, or :memory: "
        "(default: found by the lookup below; <root>/.toolcards/state.db when only a root is named)",
    )
    if root:
        parser.add_argument(
            "--root",
            metavar="DIR",
            help="the workspaces root: the team's workspace files, and its store unless --store names "
            "one (default: found by the lookup below)",
        )


def apply_location_options(args: argparse.Namespace) -> Lookup:
    """Apply ``--store``/``--root`` for this process and return where the team lives.

    The locations found are exported (``TOOLCARDS_STORE``, ``TOOLCARDS_WORKSPACES_ROOT``) when
    an option was given, so a process the command starts agrees even if the environment
    said otherwise.

    Raises:
        WiringError: the lookup failed (an unreadable ``toolcards.toml``, no home directory).
    """
    from toolcards.core._lookup import ROOT_ENV, STORE_ENV, locate, use_locations

    store, root = getattr(args, "store", None), getattr(args, "root", None)
    # Always set: a choice made by an earlier main() in this process must not carry over.
    use_locations(store=store or None, root=root or None)
    lookup = locate()
    if store or root:
        os.environ[STORE_ENV] = lookup.store
        os.environ[ROOT_ENV] = str(lookup.root)
    return lookup


def require_team_store(lookup: Lookup, *, command: str) -> None:
    """Refuse to go on when the team's SQLite store does not exist.

    Raises:
        StoreError: ``lookup`` lands on a SQLite file that does not exist (or is not a
            file); the message names it, every step of the lookup and how to point at the
            right team or start one.
    """
    from toolcards.core._lookup import CONFIG_FILE
    from toolcards.errors import StoreError

    path = lookup.store_file
    if path is None or path.is_file():
        return
    what = "is a directory, not a store" if path.is_dir() else "does not exist"
    raise StoreError(
        f"toolcards {command} found no team: its store {path} {what}, and it does not start an empty team. "
        f"Looked at: {lookup.trail_text()}. Point at the team you mean with --store or --root, TOOLCARDS_STORE or "
        f"TOOLCARDS_WORKSPACES_ROOT, or a {CONFIG_FILE} in the project; or start a team there first (toolcards "
        "init writes a toolcards.toml here and creates its store; toolcards serve creates the store it finds)."
    )


def open_team_store(args: argparse.Namespace, *, create: bool | Literal["where files are"], command: str) -> str:
    """Apply the options, check the store exists unless ``create``, and open it; returns its
    location and what chose it, safe to print: ``/p/workspaces/.toolcards/state.db (chosen by
    /p/toolcards.toml)``. ``create="where files are"`` creates it only when the workspaces root
    already exists (a tree someone works on; a mistyped root gets no new team).

    Raises:
        StoreError: the store cannot be opened, or (without ``create``) does not exist.
        WiringError: the lookup failed.
    """
    from toolcards.store import default_store, describe_location

    lookup = apply_location_options(args)
    if not create or (create == "where files are" and not lookup.root.is_dir()):
        require_team_store(lookup, command=command)
    store = default_store()
    location = describe_location(getattr(store, "url", None) or getattr(store, "path", None) or lookup.store)
    return f"{location} (chosen by {lookup.store_reason})"
