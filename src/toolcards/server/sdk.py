"""The SDK's low-level ``Server`` over a :class:`~toolcards.server.app.TeamServer`.

Streamable HTTP (:mod:`toolcards.server.http`) and in-process ``mcp.Client(server)`` use
it; stdio does not (:mod:`toolcards.server.stdio`). Each handler finds the caller's session
and turns the team server's wire dict into the SDK's result model (``model_validate``, which
fills in what the stateless protocol adds to every result).

Sessions: a request on a connection (the handshake protocol, stateful HTTP) leases its
agent for that connection, released when the connection closes; a request of the
stateless 2026-07-28 protocol opens its agent's session, which closes when idle.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from toolcards.server.app import AGENT_HEADER
from toolcards.server.idempotency import idempotency_key
from toolcards.server.jsonrpc import RequestError
from toolcards.server.results import call_failure

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext

    from toolcards.server.app import TeamServer
    from toolcards.server.session import AgentSession

__all__ = ["sdk_server"]

SESSION_HEADER = "mcp-session-id"


def sdk_server(team_server: TeamServer) -> Server[Any]:
    """A ``Server`` answering for ``team_server`` (whose ``listen_handler`` must exist)."""
    from mcp.server import Server

    handlers = _Handlers(team_server)
    return Server(
        team_server.config.name,
        version=team_server.server_info["version"],
        instructions=team_server.instructions,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_subscriptions_listen=handlers.listen,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
    )


@functools.cache
def _modern_versions() -> frozenset[str]:
    """The stateless protocol versions (no connection to lease a session to)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


def _model(name: str, wire: dict[str, Any]) -> Any:
    """``wire`` as the ``mcp_types`` result model ``name``: validating fills the fields the
    stateless protocol requires (``resultType``, cache hints) from the model's defaults."""
    import mcp_types

    return getattr(mcp_types, name).model_validate(wire, by_name=False)


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK keeps the connection on the per-request session without a public accessor.
    return getattr(ctx.session, "_connection", None)


class _Handlers:
    """The ``on_*`` callbacks: the team server's wire dicts as the SDK's result models."""

    def __init__(self, team_server: TeamServer) -> None:
        self.team = team_server
        self._watched: weakref.WeakSet[Any] = weakref.WeakSet()

    def identify(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The agent name a request acts as (see :mod:`toolcards.server.app` for the order)."""
        headers = getattr(ctx.request, "headers", None)
        header = headers.get(AGENT_HEADER) if headers is not None else None
        params = ctx.session.client_params
        return self.team.agent_key(params.client_info.name if params is not None else None, header=header)

    async def session_for(self, ctx: ServerRequestContext[Any, Any]) -> AgentSession:
        key = self.identify(ctx)
        connection = _connection(ctx)
        if connection is None or ctx.protocol_version in _modern_versions():
            return await self.team.open_session(key)
        if connection not in self._watched:
            self._watched.add(connection)
            connection.exit_stack.push_async_callback(self.team.release, connection)
        return await self.team.lease(connection, key)

    async def list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListToolsResult", self.team.tools_page(await self.session_for(ctx)))

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        call_id = None if ctx.request_id is None else str(ctx.request_id)
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get(SESSION_HEADER) if headers is not None else None
        key = idempotency_key(params.meta, session_id, ctx.request_id)
        try:
            session = await self.session_for(ctx)
            wire = await self.team.call(session, params.name, params.arguments, call_id=call_id, idempotency_key=key)
        except Exception as exc:
            wire = call_failure(params.name, exc)
        return _model("CallToolResult", wire)

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListResourcesResult", self.team.resources_page(await self.session_for(ctx)))

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        session = await self.session_for(ctx)
        with _as_mcp_error():
            return _model("ReadResourceResult", await self.team.read_resource(session, str(params.uri)))

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListPromptsResult", self.team.prompts_page(await self.session_for(ctx)))

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        session = await self.session_for(ctx)
        with _as_mcp_error():
            return _model("GetPromptResult", await self.team.get_prompt(session, params.name))

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        await self.session_for(ctx)
        connection = _connection(ctx)
        if connection is not None:
            self.team.subscribe(connection, str(params.uri))
        return {}

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        connection = _connection(ctx)
        if connection is not None:
            self.team.unsubscribe(connection, str(params.uri))
        return {}

    async def listen(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        await self.session_for(ctx)
        return await self.team.listen_handler(ctx, params)


@contextlib.contextmanager
def _as_mcp_error() -> Iterator[None]:
    """A :class:`RequestError` as the SDK's ``MCPError`` (the same code, message and data)."""
    try:
        yield
    except RequestError as exc:
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=exc.code, message=exc.message, data=exc.data) from exc
