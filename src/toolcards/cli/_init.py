"""``toolcards init``: keep this project's team here, for every command run in this directory or below.

::

    toolcards init                                  # ./workspaces, the state in it
    toolcards init --store postgresql://toolcards@db.internal/toolcards

Writes ``toolcards.toml`` (the project file of :mod:`toolcards.core._lookup`: ``root`` and
``store``, relative to the file's directory unless absolute or a URL), so every command and
``toolcards.Team`` run here or below finds the same team unless options or the environment
say otherwise (a note says so when they are set). Then it makes the root and opens the store,
creating it if missing: this is how a project's team starts. ``root`` defaults to
``workspaces``, where earlier versions kept every team. An existing ``toolcards.toml`` is kept
(its store still created if missing); ``--force`` replaces it, and ``--root`` or ``--store``
without ``--force`` beside one is a usage error (exit code 2).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from toolcards.cli._console import UsageError, progress, summary

__all__ = ["config_text", "register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``init`` to the command line."""
    parser = subparsers.add_parser(
        "init",
        parents=parents,
        help="write a toolcards.toml here, so this project's team is found from here and below",
        description=summary(__doc__),
    )
    parser.add_argument(
        "--root", metavar="DIR", help="the workspaces root to write (default: workspaces, beside the file)"
    )
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help="the store to write: a SQLite file or postgresql://user@host/db (default: <root>/.toolcards/state.db)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing toolcards.toml")
    parser.set_defaults(handler=run)


def config_text(*, root: str | None, store: str | None) -> str:
    """The ``toolcards.toml`` for ``root`` and ``store`` (``None``: the default, written as a comment)."""
    from toolcards.core._lookup import LEGACY_ROOT

    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [
        "# Where this project's toolcards team lives. Every toolcards command run in this directory or",
        "# below, and toolcards.Team in a program started here, use it, unless --store/--root or",
        "# TOOLCARDS_STORE/TOOLCARDS_WORKSPACES_ROOT say otherwise. Relative paths are relative to this file.",
        "",
        "# The workspaces root: the team's workspace files, and toolcards' own in .toolcards/.",
        f"root = {quoted(root or LEGACY_ROOT)}",
        "",
        "# The team's state: a SQLite file, or postgresql://user@host:port/database to share it across hosts.",
    ]
    lines.append(f"store = {quoted(store)}" if store else '# store = "<root>/.toolcards/state.db"  (the default)')
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Write the file (unless one is kept) and start the team's store; returns 0.

    Raises:
        UsageError: a ``toolcards.toml`` exists here and ``--root``/``--store`` were given
            without ``--force``.
        WiringError: an existing ``toolcards.toml`` is not valid.
        StoreError: the store cannot be created or opened.
    """
    from toolcards.core._lookup import CONFIG_FILE, ROOT_ENV, STORE_ENV, find_config, locate, use_locations
    from toolcards.fs._locations import workspaces_root
    from toolcards.store import default_store, describe_location

    path = Path.cwd() / CONFIG_FILE
    if path.exists() and not args.force:
        if args.root or args.store:
            raise UsageError(
                f"{path} exists already: add --force to replace it with --root/--store, "
                "or edit it (its keys are root and store)."
            )
        progress(f"keeping {path} (--force replaces it)")
    else:
        above = find_config(Path.cwd().parent)
        path.write_text(config_text(root=args.root, store=args.store), encoding="utf-8")
        progress(f"wrote {path}")
        if above is not None:
            progress(f"this directory and below now use it instead of {above}")
    use_locations()  # no explicit choice, and the file just written is read again
    overridden = [name for name in (STORE_ENV, ROOT_ENV) if os.environ.get(name)]
    if overridden:
        verb = "is set, and comes" if len(overridden) == 1 else "are set, and come"
        progress(f"{' and '.join(overridden)} {verb} before {CONFIG_FILE}: unset it to use the file")
    lookup = locate()
    store_file = lookup.store_file
    if store_file is not None and store_file.parent != lookup.root / ".toolcards":
        # A store named in the file: its directory is made here, once, on purpose.
        store_file.parent.mkdir(parents=True, exist_ok=True)
    root = workspaces_root()
    existed = store_file is None or store_file.is_file()
    store = default_store()
    location = describe_location(getattr(store, "url", None) or getattr(store, "path", None) or lookup.store)
    print(f"Team store: {location} ({'existing' if existed else 'new'})")
    print(f"Workspaces root: {root}")
    return 0
