"""``toolcards undo``: put a team's workspace back as it was before some changes, all or nothing.

::

    toolcards undo 42                                  # change 42
    toolcards undo --member Bob --since 2h --dry-run   # what undoing Bob's last two hours would do
    toolcards undo --member Bob --since 2h             # ... and do it
    toolcards undo --task 7 --since 40                 # everything done for task 7 from change 40 on
    toolcards undo --path src/app.py                   # the last change of src/app.py

Changes are undone newest first, in memory, then written in one go holding the tree's lock:
if any step fails, what was written is put back. A file changed since by a change not being
undone keeps that later change when it touched other lines; when it touched the same lines
(or the file was since deleted, or is binary), nothing is undone and the message names the
later change. The undo is itself a change of the journal (its id is printed), so it can be
undone in turn. ``--since`` takes a change id, a time (``2026-05-01T14:30``, UTC unless it
says otherwise) or an age (``30m``, ``2h``, ``1d``). It runs the team's ``workspace_undo``
command as member ``cli``.
"""

from __future__ import annotations

import argparse
from typing import Any

from toolcards.cli._console import summary
from toolcards.cli._number_options import positive_integer
from toolcards.cli._team_tool import add_team_options, run_team_tool

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``undo`` to the command line."""
    parser = subparsers.add_parser(
        "undo",
        parents=parents,
        help="undo changes to the team's workspace from its journal, all or nothing",
        description=summary(__doc__),
    )
    add_team_options(parser)
    parser.add_argument("change_id", nargs="?", type=positive_integer, metavar="ID", help="the change to undo")
    parser.add_argument("--path", metavar="PATH", help="only this file or directory")
    parser.add_argument(
        "--member", metavar="NAME", help="every change by this member ('outside': made without the tools)"
    )
    parser.add_argument("--task", metavar="ID", type=positive_integer, help="every change made for this task")
    parser.add_argument("--since", metavar="WHEN", help="from this change id, time or age on (30m, 2h, 1d)")
    parser.add_argument("--dry-run", action="store_true", help="show what would change, with the diff; write nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Undo the changes selected (or show what that would do); returns the exit code."""
    arguments: dict[str, Any] = {"dry_run": args.dry_run}
    for name, value in (
        ("change_id", args.change_id),
        ("path", args.path),
        ("agent", args.member),
        ("task_id", args.task),
        ("since", args.since),
    ):
        if value is not None:
            arguments[name] = value
    return run_team_tool(args, "workspace_undo", arguments)
