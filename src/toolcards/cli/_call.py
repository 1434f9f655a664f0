"""``toolcards call``: run one slash command against a team's persisted state.

::

    toolcards call /update_planning create_tasks='[{"description": "Ship the release"}]'
    toolcards call --config team.yaml --agent Alice /add_note "ship it"
    toolcards call --approve /wipe               # a tool that requires approval

Every tool of the team's cards is a command here; list and JSON arguments are JSON text. The
state comes from the store the lookup finds (:mod:`toolcards.core._lookup`), and a SQLite store
that does not exist is an error naming every step: the command never starts an empty team. It
runs through the COMMAND channel; a command the team cannot take exits 2 without running, one
that ran and failed exits 1 (``docs/cli.md``). A tool that ``requires_approval`` runs only with
``--approve``. The store being the team's truth, this is safe beside live servers of the team.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any

from toolcards.cli._agent_option import add_agent_option
from toolcards.cli._console import UsageError, summary
from toolcards.cli._location_options import LOOKUP_HELP, add_location_options, open_team_store

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle
    from toolcards.server._session import SessionAgent

__all__ = ["command_text", "join_as", "register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``call`` to the command line."""
    parser = subparsers.add_parser(
        "call",
        parents=parents,
        help="run a slash command against a team",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--config", metavar="PATH", help="team config (YAML); default: the standard team")
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    add_agent_option(parser, default="cli", help="act as this agent (default: cli)")
    parser.add_argument(
        "--approve", action="store_true", help="approve the command if its tool requires a human's approval"
    )
    add_location_options(parser)
    parser.add_argument("command", nargs="*", metavar="COMMAND", help="e.g. '/get_planning' (omit to list commands)")
    parser.set_defaults(handler=run)


def command_text(words: list[str]) -> str:
    """The slash command for ``words``: one word is taken as written; more are quoted so
    each stays one argument, a ``name=value`` word quoted after its ``=`` so it still sets
    ``name`` (a word quoted from its start is a value). A missing leading ``/`` is added."""
    text = words[0] if len(words) == 1 else " ".join([words[0], *map(_quoted, words[1:])])
    text = text.strip()
    return text if text.startswith("/") else f"/{text}"


def _quoted(word: str) -> str:
    name, equals, value = word.partition("=")
    if equals and name.isidentifier():
        return f"{name}={shlex.quote(value)}"
    return shlex.quote(word)


def join_as(team: TeamHandle, name: str, *, user_id: str | None) -> SessionAgent:
    """Join ``team`` as agent ``name``, or as ``name-2``, ``name-3``... when a live member of
    the team (in another process: a server's MCP client, another ``toolcards call``) holds it,
    as ``toolcards serve`` names its clients; a changed name is said on stderr."""
    from toolcards.server._session import SessionAgent

    refusal = ""
    for attempt in range(1, 100):
        agent = SessionAgent(name if attempt == 1 else f"{name}-{attempt}", team, role="cli", user_id=user_id)
        try:
            team.register_member(agent.address)
        except ValueError as exc:
            refusal = refusal or str(exc)
            continue
        if refusal:
            print(f"{refusal} Acting as {agent.address.handle}.", file=sys.stderr)
        return agent
    raise UsageError(f"--agent {name}: every name from {name} to {name}-99 is taken in team {team.team_id}.")


def run(args: argparse.Namespace) -> int:
    """Run the command (or list the commands); returns the exit code."""
    from toolcards.actors._system import ActorSystem
    from toolcards.core._approval import ApprovalRequest, ApprovalRequired
    from toolcards.core._arguments import decode_arguments
    from toolcards.core._channels import Channels
    from toolcards.core._commands import CommandRegistry
    from toolcards.core._factory import ToolFactory
    from toolcards.errors import CommandNotRecognized, RetriableError, WiringError
    from toolcards.server._config import default_config, load_config
    from toolcards.store._journal import store_journals
    from toolcards.store._ledger import store_ledgers
    from toolcards.store._presence import store_presence

    if args.config and not os.path.isfile(args.config):
        raise UsageError(f"--config {args.config}: no such file. Pass a team config (YAML), or leave --config out.")
    config = load_config(args.config) if args.config else default_config()
    if args.team is not None:
        try:
            config = config.with_options(team_id=args.team)
        except WiringError as exc:
            raise UsageError(f"--team {args.team!r}: {exc}") from exc
    open_team_store(args, create=False, command="call")
    with ActorSystem(journal=store_journals(), presence=store_presence(), ledger=store_ledgers()) as system:
        team = system.team(config.team_id)
        agent = join_as(team, args.agent, user_id=config.user_id)

        def approve(request: ApprovalRequest) -> bool:
            if args.approve:
                return True
            raise ApprovalRequired(
                f"/{request.tool.name} requires a human's approval, so it did not run. "
                "Run the command again with --approve to approve it."
            )

        factory = ToolFactory(config.build_cards(), observer=agent, approve=approve)
        # A script is trusted code, as an orchestrator is: it may run the tools a model
        # calls too, such as update_planning, not only the COMMAND channel.
        tools = {tool.name: tool for tool in factory.tools() if tool.channels & {Channels.COMMAND, Channels.TOOL_CALL}}
        registry = CommandRegistry(tools.values())
        if not args.command:
            for descriptor in registry.descriptors():
                print(f"{descriptor.usage}\n    {descriptor.description}")
            return 0
        text = command_text(args.command)
        try:
            # A command the tool cannot take is a usage error: found before anything runs.
            name, arguments = registry.parse(text)
            tool = tools[name]
            tool.args.validate(name, decode_arguments(name, arguments, tool.max_argument_chars))
        except (CommandNotRecognized, RetriableError) as exc:
            print(f"Error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
        result = registry.dispatch(text)
        if result.startswith("Error: "):
            print(result, file=sys.stderr)
            return 1
        print(result)
        return 0
