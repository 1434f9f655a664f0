"""``toolcards usage``: what each member, task, card and tool of a team cost, from its ledger.

::

    toolcards usage                               # the whole team: calls, tokens, tool time
    toolcards usage --member @Alice --since 2h    # one member, the last two hours
    toolcards usage --task 12 --json              # one task, as JSON for scripts

Reads the ledger every process of the team writes into the team's store (found by the same
lookup as ``serve`` and ``call``; a SQLite store that does not exist is an error naming every
step). ``--since`` takes an ISO time in UTC (``2026-11-28T09:00``) or a duration ago (``30m``,
``2h``, ``7d``) and counts from the start of the hour it falls in. Also prints the team's
budgets. Never writes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from toolcards.cli._console import UsageError, summary
from toolcards.cli._location_options import LOOKUP_HELP, add_location_options, open_team_store

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``usage`` to the command line."""
    parser = subparsers.add_parser(
        "usage",
        parents=parents,
        help="what each member, task, card and tool cost the team (calls, tokens, time)",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument(
        "--config", metavar="PATH", help="team config (YAML) naming the team; default: the standard team"
    )
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    parser.add_argument("--member", metavar="@NAME", help="only this member's calls")
    parser.add_argument("--task", metavar="ID", type=int, help="only calls made for this task")
    parser.add_argument("--since", metavar="WHEN", help="from this UTC time, or this long ago (30m, 2h, 7d)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_location_options(parser)
    parser.set_defaults(handler=run, facade=None, hot_tool=[], approve_all=None)


def run(args: argparse.Namespace) -> int:
    """Print the usage report; returns 0.

    Raises:
        UsageError: an unreadable ``--since``, a ``--task`` below 1, an empty ``--member``, or
            a bad ``--config``.
        toolcards.store.StoreError: the store is missing or cannot be read.
    """
    from toolcards.cli._serve import build_config
    from toolcards.core._usage import parse_since, render_usage
    from toolcards.errors import RetriableError
    from toolcards.store import StoreLedger, default_store

    config = build_config(args)
    try:
        since = parse_since(args.since) if args.since else None
    except RetriableError as exc:
        raise UsageError(f"--since: {exc}") from None
    if args.task is not None and args.task < 1:
        raise UsageError(f"--task {args.task}: a task id is 1 or more.")
    member = None
    if args.member is not None:
        if not args.member.strip("@ "):
            raise UsageError(f"--member {args.member!r}: name a member, e.g. @Alice (leave it out for the whole team).")
        member = args.member if args.member.startswith("@") else f"@{args.member}"
    open_team_store(args, create=False, command="usage")
    ledger = StoreLedger(default_store(), config.team_id)
    report = ledger.usage(member=member, task_id=args.task, since=since)
    budgets = ledger.budgets()
    if args.json:
        data = report.model_dump(mode="json")
        data["team"] = config.team_id
        data["budgets"] = [budget.model_dump(mode="json") for budget in budgets]
        print(json.dumps(data, indent=1))
        return 0
    print(f"Team {config.team_id}. " + render_usage(report))
    for budget in budgets:
        limits = ", ".join(f"{key}={value:g}" for key, value in budget.limits().items())
        used = ledger.used(budget.scope, budget.name)
        print(
            f"Budget of {budget.label}: {limits} (used: {used.calls:,} calls, {used.result_tokens:,} result tokens, "
            f"{used.tool_time_s:,.1f} s; set by {budget.set_by})"
        )
    return 0
