"""``toolcards serve``: serve a team's cards over MCP, on stdio (default) or streamable HTTP.

::

    toolcards serve                                   # the default team, stdio
    toolcards serve --config team.yaml --transport http --port 8765
    toolcards serve --transport http --host 0.0.0.0 --token "$TOKEN"

Without ``--config`` the team is ``default``: workspace, planning, knowledge graph, exec and
messaging cards with their defaults. Its files are under the workspaces root and its state is in the
store, both found by the lookup every command follows (``--store``/``--root``,
``TOOLCARDS_STORE``/``TOOLCARDS_WORKSPACES_ROOT``, a ``toolcards.toml`` here or in a parent,
a legacy ``./workspaces``, the per-user data directory: :mod:`toolcards.core._lookup`); the
store is created there if there is none, which is how a team starts. It is a SQLite file
shared by every process of the host by default, or a ``postgresql://`` URL shared across
hosts. Any number of ``serve`` and ``call`` processes may hold one team at once.

Over HTTP every request must carry a token: ``--token`` (or ``TOOLCARDS_TOKEN``), else one
generated at start and printed once, in the endpoint's URL (``.../mcp?token=...``).
``--no-token`` serves without one, on loopback only. The live dashboard
(``toolcards dashboard``) is served at ``/`` beside the MCP endpoint, behind the same token,
unless ``--no-dashboard``.

Everything that can be checked before serving is, in this order, so a mistake ends the
command with one line and no actor left running: the options (exit code 2: a bad value, or
options that contradict each other, such as an HTTP option with ``--transport stdio`` or
``--hot-tool`` without facade mode), the ``mcp`` extra, the config and its cards, the port,
the store, then the cards are bound (an unknown ``--hot-tool`` is exit code 2, and so is
``--approve-all`` when no tool of the team needs an approval). SIGINT/SIGTERM end the
sessions and stop the actors, which flushes their state, before the process exits.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcards.cli._agent_option import add_agent_option
from toolcards.cli._console import (
    UsageError,
    configure_logging,
    install_hint,
    one_line,
    progress,
    start_up_over,
    summary,
)
from toolcards.cli._http_options import HTTP_OPTIONS, add_http_options, check_access, client_limits
from toolcards.cli._location_options import LOOKUP_HELP, add_location_options, open_team_store

if TYPE_CHECKING:
    from toolcards.server._app import TeamServer
    from toolcards.server._config import ServeConfig

__all__ = ["build_config", "check_contradictions", "endpoint_path", "register", "run"]

SERVE_HTTP_OPTIONS = (*HTTP_OPTIONS, "--path", "--allow-host", "--no-dashboard")
"""The options that only HTTP serving reads: refused with ``--transport stdio``."""


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to the command line."""
    from toolcards.server._http import DEFAULT_PATH, DEFAULT_PORT

    parser = subparsers.add_parser(
        "serve",
        parents=parents,
        help="serve a team's cards over MCP",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--config", metavar="PATH", help="team config (YAML); default: the standard team")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    add_http_options(parser, default_port=DEFAULT_PORT, no_token_means="call the team's tools")
    parser.add_argument(
        "--path", type=endpoint_path, default=DEFAULT_PATH, help=f"HTTP endpoint path (default {DEFAULT_PATH})"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="also accept this Host header (DNS-rebinding protection); repeatable",
    )
    parser.add_argument(
        "--facade", action="store_true", default=None, help="list search_tools/describe_tool/call_tool meta tools"
    )
    parser.add_argument(
        "--hot-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="in facade mode (--facade, or facade: true in the config), also list this tool; repeatable",
    )
    parser.add_argument(
        "--approve-all",
        action="store_true",
        default=None,
        help="run tools that need a human's approval without asking the client's user",
    )
    parser.add_argument(
        "--roots",
        nargs="?",
        const="read-only",
        choices=("read-only", "writable"),
        default=None,
        help="make the client's first root directory its agent's workspace (read-only unless 'writable')",
    )
    parser.add_argument(
        "--no-dashboard", action="store_true", help="serve only the MCP endpoint, no dashboard at / (HTTP)"
    )
    parser.add_argument("--team", metavar="ID", help="override the config's team id")
    add_agent_option(parser, default=None, help="name every client's agent NAME (X-Agent-Name still wins)")
    add_location_options(parser)
    parser.set_defaults(handler=run, ends_start_up=True)


# -- option values (argparse types: a bad value is a usage error, exit code 2) -------------


def endpoint_path(text: str) -> str:
    """A URL path for the MCP endpoint: starts with ``/``, no query, fragment or space."""
    if not text.startswith("/") or any(ch in text for ch in "?#") or any(ch.isspace() for ch in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an endpoint path: use one like /mcp")
    return text


# -- checks before anything starts ----------------------------------------------------------


def _require_mcp_extra(http: bool) -> None:
    # Over HTTP the SDK serves, so it must import. The stdio server does not use it (its
    # import is most of a second): there, finding the extra's packages is enough.
    modules = ["mcp.server", "mcp_types", "uvicorn", "starlette"] if http else ["mcp", "mcp_types"]
    for module in modules:
        try:
            if http:
                importlib.import_module(module)
            elif importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(f"No module named {module!r}", name=module)
        except ImportError as exc:
            raise ImportError(
                f"toolcards serve needs the mcp extra, which is missing or broken ({one_line(exc)}): "
                f"{install_hint('mcp')}"
            ) from exc


def build_config(args: argparse.Namespace) -> ServeConfig:
    """The config file (or the default team) with the command-line overrides applied.

    Raises:
        UsageError: ``--config`` names no file, or ``--team`` is not a valid team id.
        WiringError: the config file does not describe a team.
    """
    from toolcards.errors import WiringError
    from toolcards.server._config import default_config, load_config

    if args.config:
        path = Path(args.config)
        if not path.exists():
            raise UsageError(
                f"--config {args.config}: no such file. Pass a team config (YAML), or leave --config out "
                "to serve the default team."
            )
        if path.is_dir():
            raise UsageError(f"--config {args.config} is a directory: pass the team config file (YAML).")
        config = load_config(path)
    else:
        config = default_config()
    changes: dict[str, Any] = {}
    if args.team is not None:
        changes["team_id"] = args.team
    if args.facade:
        changes["facade"] = True
    if args.hot_tool:
        changes["hot_tools"] = [*config.hot_tools, *args.hot_tool]
    if args.approve_all:
        changes["approve_all"] = True
    if getattr(args, "roots", None):
        changes["roots"] = args.roots
    if not changes:
        return config
    try:
        return config.with_options(**changes)
    except WiringError as exc:
        raise UsageError(f"--team {args.team!r}: {exc}") from exc


def check_contradictions(args: argparse.Namespace, config: ServeConfig | None = None) -> None:
    """Refuse options that would be accepted and do nothing.

    Raises:
        UsageError: an HTTP option (``--port``, ``--token``, ``--no-dashboard``...) with
            ``--transport stdio``; or ``--hot-tool`` when the team is not served in facade
            mode (neither ``--facade`` nor ``facade: true`` in ``config``), where every tool
            is listed already.
    """
    from toolcards.cli import given

    if args.transport != "http":
        http_only = given(args, *SERVE_HTTP_OPTIONS)
        if http_only:
            raise UsageError(
                f"{', '.join(http_only)} {'applies' if len(http_only) == 1 else 'apply'} to HTTP serving, and this "
                f"command serves over stdio: add --transport http, or drop {', '.join(http_only)}."
            )
    if args.hot_tool and config is not None and not config.facade:
        raise UsageError(
            f"--hot-tool {', '.join(args.hot_tool)} lists tools beside the facade's meta tools, and this team is not "
            "served in facade mode, so every tool is listed already: add --facade (or facade: true in the config), "
            "or drop --hot-tool."
        )


def _check_approvals(team_server: TeamServer, args: argparse.Namespace) -> None:
    # --approve-all on a team whose tools never ask for approval would silently do nothing.
    if not args.approve_all:
        return
    from toolcards.core._channels import Channels

    tools = team_server.sessions.catalog().tools(Channels.TOOL_CALL)
    if not any(tool.requires_approval for tool in tools):
        raise UsageError(
            f"--approve-all approves tools that need a human's approval, and no tool of team "
            f"{team_server.config.team_id} needs one: drop --approve-all (set requires_approval on a "
            "card's param in the config to make a tool ask)."
        )


def _check_cards(config: ServeConfig, args: argparse.Namespace) -> None:
    from toolcards.errors import WiringError

    try:
        config.build_cards()
    except WiringError as exc:
        where = f"Config {args.config}" if args.config else "The default team"
        raise WiringError(f"{where}: {one_line(exc)} ('toolcards cards' lists every kind and its fields.)") from exc


def _check_hot_tools(team_server: TeamServer, names: list[str]) -> None:
    # Tools named on the command line are a usage error; the config's are checked by start().
    if not names:
        return
    from toolcards.core._channels import Channels

    tools = sorted(tool.name for tool in team_server.sessions.catalog().tools(Channels.TOOL_CALL))
    unknown = [name for name in names if name not in tools]
    if unknown:
        raise UsageError(
            f"--hot-tool {', '.join(unknown)}: no such tool in team {team_server.config.team_id}. "
            f"Its tools are: {', '.join(tools) or 'none'}."
        )


# -- serving --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Serve until stdin closes (stdio) or a signal arrives; returns the exit code."""
    configure_logging(debug=getattr(args, "debug", False), info=True)
    http = args.transport == "http"
    check_contradictions(args)
    if http:
        check_access(args, reach="act as an agent of the team")
    _require_mcp_extra(http)
    config = build_config(args)
    check_contradictions(args, config)
    _check_cards(config, args)

    from toolcards.server._app import TeamServer

    sockets = _listen(args) if http else []
    try:
        location = open_team_store(args, create=True, command="serve")
        kinds = ", ".join(str(card["kind"]) for card in config.cards) or "no cards"
        progress(f"starting team {config.team_id} ({kinds}) on {location}")
        team_server = TeamServer(config, agent_name=args.agent)
        try:
            # Bind the cards before serving, so a wiring mistake (an unknown tool, a workspaces
            # root whose file locks do not work) ends the command with one line.
            _check_hot_tools(team_server, args.hot_tool)
            _check_approvals(team_server, args)
            team_server.start()
            hub = _dashboard(team_server) if http and not args.no_dashboard else None
        except BaseException:
            team_server.close()
            raise
        start_up_over()
        if http:
            import anyio

            anyio.run(_serve, team_server, args, sockets, hub)
        else:
            asyncio.run(_serve_stdio(team_server))
    finally:
        for sock in sockets:
            sock.close()
    return 0


def _listen(args: argparse.Namespace) -> list[socket.socket]:
    from toolcards.server._http import listen

    return listen(args.host, args.port)


def _serving_message(team_id: str, url: str, args: argparse.Namespace) -> str:
    if args.no_token:
        return f"serving team {team_id} at {url} without a token (--no-token): every local user can use its tools"
    if args.token:
        return f"serving team {team_id} at {url} (clients send the token you set: 'Authorization: Bearer <token>')"
    # A generated token: this line is the only place it is shown.
    return f"serving team {team_id} at {url}"


def _announce(team_id: str, url: str, args: argparse.Namespace, dashboard: bool) -> None:
    progress(_serving_message(team_id, url, args))
    if dashboard:
        endpoint, _, query = url.partition("?")
        root = endpoint.removesuffix(args.path) + "/"
        if args.no_token:
            progress(f"dashboard at {root}")
        elif query:
            # A generated token is shown once, in the line above: scrollback and logs hold
            # one copy of it, and the endpoint's URL is the one clients must be given.
            progress(f"dashboard at {root} (open it once with the token above: {root}?token=...; a cookie keeps it)")
        else:
            progress(f"dashboard at {root} (open it once with ?token=<your token>; a cookie keeps it)")


def _dashboard(team_server: TeamServer) -> Any:
    """The team's dashboard hub, or ``None`` (with a note) when its extra is missing."""
    try:
        import numpy  # noqa: F401  (the graph's layout)

        from toolcards.dashboard._serve import dashboard_for
    except ImportError as exc:
        progress(f"no dashboard at / ({one_line(exc)}): {install_hint('dashboard')}")
        return None
    return dashboard_for(team_server.team, team_server.config.build_cards())


async def _serve_stdio(team_server: TeamServer) -> None:
    from toolcards.server._stdio import serve_stdio

    loop = asyncio.get_running_loop()
    serving = asyncio.current_task()
    assert serving is not None
    stopping: list[int] = []

    def on_signal(signum: int) -> None:
        if not stopping:  # once stopping (or closing after stdin ended), the flush must finish
            stopping.append(signum)
            progress(f"{signal.Signals(signum).name}: stopping")
            serving.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        progress(f"serving team {team_server.config.team_id} over stdio")
        await serve_stdio(team_server)
    except asyncio.CancelledError:
        if not stopping:
            raise
    finally:
        # A signal from here on (say stdin closed and SIGTERM came at once) must not cancel the flush.
        stopping.append(0)
        progress("ending sessions and flushing state")
        await team_server.aclose()
        progress("stopped")


async def _serve(
    team_server: TeamServer, args: argparse.Namespace, sockets: list[socket.socket], hub: Any = None
) -> None:
    """Serve over HTTP until a signal; uvicorn finishes its requests, then the team closes."""
    import anyio

    from toolcards.server._http import serve_http

    stop = anyio.Event()

    try:
        async with anyio.create_task_group() as tasks:

            async def on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    task_status.started()
                    async for signum in signals:
                        progress(f"{signal.Signals(signum).name}: stopping")
                        stop.set()  # uvicorn finishes its requests; the finally below closes
                        return

            # Handlers first: a signal after "serving" is announced must stop us cleanly.
            await tasks.start(on_signal)
            fallback = cookie_routes = None
            if hub is not None:
                from toolcards.dashboard._app import dashboard_app, is_dashboard_read

                fallback, cookie_routes = dashboard_app(hub, loopback_only=args.no_token), is_dashboard_read
            await serve_http(
                team_server,
                host=args.host,
                port=args.port,
                token=args.token,
                no_token=args.no_token,
                path=args.path,
                allowed_hosts=args.allow_host,
                sockets=sockets,
                stop=stop,
                on_ready=lambda url: _announce(team_server.config.team_id, url, args, hub is not None),
                fallback=fallback,
                cookie_routes=cookie_routes,
                on_stop=hub.close if hub is not None else None,
                limits=client_limits(args),
            )
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            progress("ending sessions and flushing state")
            await team_server.aclose()
            progress("stopped")
