"""``toolcards dashboard``: watch a team live in a browser, read-only.

::

    toolcards dashboard                               # the default team, http://127.0.0.1:8766/?token=...
    toolcards dashboard --config team.yaml --store postgresql://.../toolcards
    toolcards dashboard --host 0.0.0.0 --token "$TOOLCARDS_TOKEN"

It reads the team's state from the store the lookup finds, the same one ``serve`` and
``call`` use (``--store``/``--root``, ``TOOLCARDS_STORE``/``TOOLCARDS_WORKSPACES_ROOT``, a
``toolcards.toml`` here or in a parent, a legacy ``./workspaces``, the per-user data
directory: :mod:`toolcards.core._lookup`), so it shows what every process of the team does:
the board, the knowledge graph, the tool calls, who is in the team and the workspace files,
each updated within a second of a change. A SQLite store that does not exist there is an
error naming every step of the lookup: the dashboard never starts an empty team.

Access is the MCP server's: loopback by default, a token on every request (``--token`` or
``TOOLCARDS_TOKEN``, else one generated and printed once, in the URL); ``--no-token`` on
loopback only. Nothing in the dashboard changes the team.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any

from toolcards.cli._console import configure_logging, install_hint, one_line, progress, summary
from toolcards.cli._http_options import add_http_options, check_access, client_limits
from toolcards.cli._location_options import (
    LOOKUP_HELP,
    add_location_options,
    apply_location_options,
    open_team_store,
    require_team_store,
)
from toolcards.cli._serve import build_config

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``dashboard`` to the command line."""
    from toolcards.dashboard._serve import DEFAULT_DASHBOARD_PORT

    parser = subparsers.add_parser(
        "dashboard",
        parents=parents,
        help="watch a team live in a browser (read-only)",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--config", metavar="PATH", help="team config (YAML); default: the standard team")
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    add_http_options(parser, default_port=DEFAULT_DASHBOARD_PORT, no_token_means="look at the team")
    add_location_options(parser)
    parser.set_defaults(handler=run, facade=None, hot_tool=[], approve_all=None)


def _require_extra() -> None:
    import importlib

    for module in ("starlette", "uvicorn", "numpy"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"toolcards dashboard needs the dashboard extra, which is missing ({one_line(exc)}): "
                f"{install_hint('dashboard')}"
            ) from exc


def run(args: argparse.Namespace) -> int:
    """Serve the dashboard until SIGINT/SIGTERM; returns the exit code."""
    configure_logging(debug=getattr(args, "debug", False), info=True)
    check_access(args, reach="read the team")
    _require_extra()
    config = build_config(args)
    # Before the port is bound: a team that is not there ends the command with nothing to stop.
    require_team_store(apply_location_options(args), command="dashboard")

    import anyio

    from toolcards.actors._system import ActorSystem
    from toolcards.dashboard._serve import dashboard_for
    from toolcards.server._http import listen
    from toolcards.store._journal import store_journals
    from toolcards.store._ledger import store_ledgers
    from toolcards.store._presence import store_presence

    sockets = listen(args.host, args.port)
    try:
        location = open_team_store(args, create=False, command="dashboard")
        progress(f"reading team {config.team_id} from {location}")
        with ActorSystem(journal=store_journals(), presence=store_presence(), ledger=store_ledgers()) as system:
            hub = dashboard_for(system.team(config.team_id), config.build_cards())
            anyio.run(_serve, hub, args, sockets)
    finally:
        for sock in sockets:
            sock.close()
    return 0


async def _serve(hub: Any, args: argparse.Namespace, sockets: list[Any]) -> None:
    import anyio

    from toolcards.dashboard._serve import serve_dashboard

    stop = anyio.Event()

    def ready(url: str) -> None:
        if args.no_token:
            progress(f"dashboard of team {hub.source.team_id} at {url} without a token (--no-token)")
        else:
            progress(f"dashboard of team {hub.source.team_id} at {url}")

    async with anyio.create_task_group() as tasks:

        async def on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                async for signum in signals:
                    progress(f"{signal.Signals(signum).name}: stopping")
                    stop.set()
                    return

        await tasks.start(on_signal)
        await serve_dashboard(
            hub,
            host=args.host,
            port=args.port,
            token=args.token,
            no_token=args.no_token,
            sockets=sockets,
            stop=stop,
            on_ready=ready,
            limits=client_limits(args),
        )
        tasks.cancel_scope.cancel()
