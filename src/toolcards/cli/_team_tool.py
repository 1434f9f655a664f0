"""One tool of a team's cards, run as a member: what ``history`` and ``undo`` are made of.

The team is the one ``call`` would join (``--config``, ``--team``, ``--store``, ``--agent``):
its cards are bound in this process, against the team's store, as member ``--agent``
(``cli`` by default), and the tool runs through the COMMAND channel like an orchestrator's
command, with its arguments given as a dictionary rather than a command line. The command
line knows the tool by its name only; which card serves it is the team's config.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from toolcards.cli._agent_option import add_agent_option
from toolcards.cli._console import UsageError
from toolcards.cli._location_options import add_location_options, open_team_store
from toolcards.core._output import ENVELOPE_BEGIN, ENVELOPE_END

__all__ = ["add_team_options", "plain_text", "run_team_tool"]


def add_team_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--config``, ``--team``, ``--agent``, ``--store`` and ``--root`` (as ``call`` has them)."""
    parser.add_argument("--config", metavar="PATH", help="team config (YAML); default: the standard team")
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    add_agent_option(parser, default="cli", help="act as this member (default: cli)")
    add_location_options(parser)


def plain_text(result: str) -> str:
    """``result`` without the untrusted-output envelope lines (a person reads it in a terminal)."""
    lines = result.split("\n")
    return "\n".join(line for line in lines if not (ENVELOPE_BEGIN.match(line) or ENVELOPE_END.match(line)))


def run_team_tool(args: argparse.Namespace, tool_name: str, arguments: Mapping[str, Any]) -> int:
    """Join the team as ``args.agent``, run ``tool_name`` with ``arguments``, print its result.

    Returns 0, or 1 when the tool refused or failed (its message on stderr).

    Raises:
        UsageError: the config is missing, or no card of the team offers the tool.
    """
    from toolcards.actors._system import ActorSystem
    from toolcards.cli._call import join_as
    from toolcards.core._channels import Channels
    from toolcards.core._factory import ToolFactory
    from toolcards.errors import RetriableError, ToolFailed, WiringError
    from toolcards.server._config import default_config, load_config
    from toolcards.store._journal import store_journals
    from toolcards.store._presence import store_presence

    if args.config and not os.path.isfile(args.config):
        raise UsageError(f"--config {args.config}: no such file. Pass a team config (YAML), or leave --config out.")
    config = load_config(args.config) if args.config else default_config()
    if args.team is not None:
        try:
            config = config.with_options(team_id=args.team)
        except WiringError as exc:
            raise UsageError(f"--team {args.team!r}: {exc}") from exc
    # A tree that exists gets its journal started; a mistyped root is refused rather than
    # given a new store and an empty journal.
    open_team_store(args, create="where files are", command="undo" if tool_name == "workspace_undo" else "history")
    with ActorSystem(journal=store_journals(), presence=store_presence()) as system:
        team = system.team(config.team_id)
        agent = join_as(team, args.agent, user_id=config.user_id)
        factory = ToolFactory(config.build_cards(), observer=agent)
        tools = {tool.name: tool for tool in factory.tools(Channels.COMMAND)}
        tool = tools.get(tool_name)
        if tool is None:
            raise UsageError(
                f"team {config.team_id}'s cards offer no {tool_name} command: give it a workspace card "
                "(kind: workspace) with its journal on and that capability enabled."
            )
        try:
            result = tool.call_sync(dict(arguments), channel=Channels.COMMAND)
        except (RetriableError, ToolFailed) as exc:
            print(f"Error: {plain_text(str(exc))}", file=sys.stderr)
            return 1
        print(plain_text(str(result)))
        return 0
