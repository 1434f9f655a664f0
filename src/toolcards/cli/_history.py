"""``toolcards history``: what changed in a team's workspace, newest first, from its journal.

::

    toolcards history --path src/ --member Bob --limit 50
    toolcards history --diff 42                        # the diff of change 42
    toolcards history --export-git ../journal.git      # every change as a git commit

It runs the team's ``workspace_history`` (``workspace_diff``, ``workspace_export_git``)
command as member ``cli`` on the journal in the team's store, scanning the tree first so
outside changes are listed too; the line format and the export are described in
``docs/cards/workspace.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from toolcards.cli._console import summary
from toolcards.cli._number_options import positive_integer
from toolcards.cli._team_tool import add_team_options, run_team_tool

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``history`` to the command line."""
    parser = subparsers.add_parser(
        "history",
        parents=parents,
        help="list what changed in the team's workspace, newest first (or one change's diff)",
        description=summary(__doc__),
    )
    add_team_options(parser)
    parser.add_argument("--path", metavar="PATH", help="only changes of this file or directory")
    parser.add_argument(
        "--member", metavar="NAME", help="only changes by this member ('outside': made without the tools)"
    )
    parser.add_argument("--task", metavar="ID", type=positive_integer, help="only changes made for this task")
    parser.add_argument(
        "--limit", metavar="N", type=positive_integer, default=20, help="changes to list at most (default: 20)"
    )
    parser.add_argument("--diff", metavar="ID", type=positive_integer, help="show the diff of change ID instead")
    parser.add_argument(
        "--export-git", metavar="DIR", help="write every change as a commit of a git repository at DIR instead"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """List the changes (or show one change's diff); returns the exit code."""
    if args.diff is not None:
        return run_team_tool(args, "workspace_diff", {"change_id": args.diff})
    if args.export_git:
        return run_team_tool(args, "workspace_export_git", {"dest": str(Path(args.export_git).absolute())})
    arguments: dict[str, Any] = {"limit": args.limit}
    if args.path:
        arguments["path"] = args.path
    if args.member:
        arguments["agent"] = args.member
    if args.task is not None:
        arguments["task_id"] = args.task
    return run_team_tool(args, "workspace_history", arguments)
