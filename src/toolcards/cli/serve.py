"""``toolcards serve``: serve a team's cards over MCP, on stdio (default) or streamable HTTP.

::

    toolcards serve                                   # the default team, stdio
    toolcards serve --config team.yaml --transport http --port 8765
    toolcards serve --transport http --host 0.0.0.0 --token "$TOKEN"

Without ``--config`` the team is ``default``: workspace, planning, knowledge graph and exec
cards with their defaults, files under ``./workspaces`` (``TOOLCARDS_WORKSPACES_ROOT``) and
state in the store (``--store``: a SQLite file shared by every process of the host by
default, or a ``postgresql://`` URL shared across hosts). Any number of ``serve`` and
``call`` processes may hold one team at once.
SIGINT/SIGTERM end the sessions and stop the actors, which flushes their state, before
the process exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from typing import TYPE_CHECKING, Any

from toolcards.cli.console import configure_logging, progress
from toolcards.cli.store_option import add_store_option, open_team_store

if TYPE_CHECKING:
    from toolcards.server.app import TeamServer
    from toolcards.server.config import ServeConfig

__all__ = ["register", "run"]

# When stdin stays open after a signal, the SDK's stdin reader thread cannot be interrupted:
# once the state is flushed, give the transport this long to end before exiting anyway.
STUCK_TRANSPORT_GRACE_S = 3.0


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to the command line."""
    from toolcards.server.http import DEFAULT_HOST, DEFAULT_PATH, DEFAULT_PORT

    parser = subparsers.add_parser(
        "serve",
        parents=parents,
        help="serve a team's cards over MCP",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("--config", metavar="PATH", help="team config (YAML); default: the standard team")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP bind address (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    parser.add_argument("--path", default=DEFAULT_PATH, help=f"HTTP endpoint path (default {DEFAULT_PATH})")
    parser.add_argument(
        "--token",
        default=os.environ.get("TOOLCARDS_TOKEN") or None,
        help="bearer token every HTTP request must carry (default: $TOOLCARDS_TOKEN); required off loopback",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="also accept this Host header (DNS-rebinding protection); repeatable",
    )
    parser.add_argument("--facade", action="store_true", default=None, help="list search/describe/call meta tools")
    parser.add_argument(
        "--hot-tool", action="append", default=[], metavar="NAME", help="in facade mode, also list this tool"
    )
    parser.add_argument(
        "--approve-all",
        action="store_true",
        default=None,
        help="run tools that need a human's approval without asking (MCP cannot ask)",
    )
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    parser.add_argument("--agent", metavar="NAME", help="name every client's agent NAME (X-Agent-Name still wins)")
    add_store_option(parser)
    parser.set_defaults(handler=run)


def build_config(args: argparse.Namespace) -> ServeConfig:
    """The config file (or the default team) with the command-line overrides applied."""
    from toolcards.server.config import default_config, load_config

    config = load_config(args.config) if args.config else default_config()
    changes: dict[str, Any] = {}
    if args.team:
        changes["team_id"] = args.team
    if args.facade:
        changes["facade"] = True
    if args.hot_tool:
        changes["hot_tools"] = [*config.hot_tools, *args.hot_tool]
    if args.approve_all:
        changes["approve_all"] = True
    return config.with_options(**changes) if changes else config


def run(args: argparse.Namespace) -> int:
    """Serve until stdin closes (stdio) or a signal arrives; returns the exit code."""
    import anyio

    from toolcards.server.app import TeamServer
    from toolcards.server.http import check_bind

    configure_logging(debug=getattr(args, "debug", False), info=True)
    if args.transport == "http":
        check_bind(args.host, args.token)  # before anything starts
    config = build_config(args)
    location = open_team_store(args)
    kinds = ", ".join(str(card["kind"]) for card in config.cards) or "no cards"
    progress(f"starting team {config.team_id} ({kinds}) on {location}")
    team_server = TeamServer(config, agent_name=args.agent)
    try:
        # Bind the cards before serving, so a wiring mistake (an unknown tool, a workspaces
        # root whose file locks do not work) ends the command with one line.
        team_server.start()
    except BaseException:
        team_server.close()
        raise
    anyio.run(_serve, team_server, args)
    return 0


async def _serve(team_server: TeamServer, args: argparse.Namespace) -> None:
    import anyio

    from toolcards.server.http import serve_http
    from toolcards.server.stdio import serve_stdio

    stop = anyio.Event()
    closed = anyio.Event()

    async def close() -> None:
        if closed.is_set():
            return
        closed.set()
        progress("ending sessions and flushing state")
        await team_server.aclose()
        progress("stopped")

    try:
        async with anyio.create_task_group() as tasks:

            async def on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    task_status.started()
                    async for signum in signals:
                        progress(f"{signal.Signals(signum).name}: stopping")
                        if args.transport == "http":
                            stop.set()  # uvicorn finishes its requests; the finally below closes
                            return
                        await close()
                        _exit_if_stuck(STUCK_TRANSPORT_GRACE_S)
                        tasks.cancel_scope.cancel()
                        return

            # Handlers first: a signal after "serving" is announced must stop us cleanly.
            await tasks.start(on_signal)
            if args.transport == "stdio":
                await team_server.astart()
                progress(f"serving team {team_server.config.team_id} over stdio")
                await serve_stdio(team_server)
            else:
                await serve_http(
                    team_server,
                    host=args.host,
                    port=args.port,
                    token=args.token,
                    path=args.path,
                    allowed_hosts=args.allow_host,
                    stop=stop,
                    on_ready=lambda url: progress(f"serving team {team_server.config.team_id} at {url}"),
                )
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await close()


def _exit_if_stuck(grace_s: float) -> None:
    # State is flushed by now; exiting without unwinding loses nothing.
    timer = threading.Timer(grace_s, os._exit, args=(0,))
    timer.daemon = True
    timer.start()
