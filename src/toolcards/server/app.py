"""``TeamServer``: one team's cards served over MCP with the SDK's low-level ``Server``.

What a client sees:

* ``tools/list``: every TOOL_CALL capability, with exactly the schema the pydantic-ai
  channel uses (``Tool.parameters_schema``); in facade mode, ``search_tools``,
  ``describe_tool`` and ``call_tool`` plus the config's ``hot_tools``
  (:mod:`toolcards.server.facade`). Every tool stays callable by name in both modes.
* ``tools/call``: the same pipeline as every other channel
  (``await tool.call(args, channel=TOOL_CALL, call_id=...)``), which validates the
  arguments. Every failure is a result with ``isError`` and a message the model can act
  on, never a JSON-RPC error (:mod:`toolcards.server.results`).
* SYSTEM_PROMPT capabilities as resources and prompts, with change notifications
  (:mod:`toolcards.server.resources`).

Who calls: each client is an agent of the team (:mod:`toolcards.server.session`), named,
in this order, by the ``X-Agent-Name`` HTTP header, the server's fixed ``agent_name``
(``toolcards serve --agent``), the name the client declares (``clientInfo.name``, sent in
``initialize`` on the handshake protocol and in every request's ``_meta`` on the
stateless 2026-07-28 protocol), or ``mcp-client``. Clients declaring the same name act as
the same agent.

Approval: MCP has no way to ask a human to approve one call, so a tool marked
``requires_approval`` is refused by the pipeline's approval step
(:mod:`toolcards.core.approval`), after its arguments were validated, with an ``isError``
result saying so, unless the config sets ``approve_all`` (``--approve-all``): then every call
is passed as approved, and the client's own confirmation (most MCP clients ask the user
before each tool call) is the only gate.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolcards.core.approval import ApprovalRequired
from toolcards.core.channels import Channels
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.server.config import ServeConfig
from toolcards.server.facade import CALL_TOOL, META_TOOLS, ToolCatalog, meta_tools, summary, unknown_tool_message
from toolcards.server.resources import (
    PROMPT_MIME_TYPE,
    ResourceNotifier,
    prompt_name,
    prompt_uri,
    render_prompt,
)
from toolcards.server.results import error_result, to_call_result
from toolcards.server.session import DEFAULT_IDLE_TIMEOUT_S, AgentSession, AgentSessions, agent_name

if TYPE_CHECKING:
    import mcp_types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext

    from toolcards.actors.system import ActorSystem
    from toolcards.core.card import ToolCard
    from toolcards.core.tool import Tool

__all__ = ["AGENT_HEADER", "TeamServer"]

logger = logging.getLogger("toolcards.server")

AGENT_HEADER = "x-agent-name"
"""The HTTP header naming the agent a request acts as."""

RESOURCE_NOT_FOUND = -32002
SWEEP_INTERVAL_S = 60.0

# A client sends its name with every request: clean each distinct name once, not per call.
_declared_agent_name = functools.lru_cache(maxsize=1024)(agent_name)


class TeamServer:
    """A team served over MCP: its actors, one agent per client, and the MCP ``Server``.

    Args:
        config: The team and how it is offered.
        system: The actor system to run the team in (default: a new one, stopped by
            :meth:`close`).
        agent_name: Name every client's agent this (unless a request carries ``X-Agent-Name``).
        idle_timeout_s: Close a connection-less client's agent after this long idle.
        cards: Where each agent's cards come from (default: ``config.build_cards``).

    Use :attr:`server` with a transport (:func:`~toolcards.server.stdio.serve_stdio`,
    :func:`~toolcards.server.http.serve_http`, or ``mcp.Client(team_server.server)`` in
    tests). The team starts on the first request (or :meth:`start`); :meth:`close` ends
    every session and, if this object created the actor system, stops it, which flushes
    every actor's state.

    Raises:
        WiringError: ``agent_name`` has no usable character (checked before any actor starts).
    """

    def __init__(
        self,
        config: ServeConfig,
        *,
        system: ActorSystem | None = None,
        agent_name: str | None = None,
        idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
        cards: Callable[[], Sequence[ToolCard]] | Sequence[ToolCard] | None = None,
    ) -> None:
        from toolcards.actors.system import ActorSystem
        from toolcards.store.journal import store_journals

        self.config = config
        # Checked before any actor starts: a refused name must not leave threads behind.
        self.agent_name = _checked_agent_name(agent_name)
        self._owns_system = system is None
        self.system = system or ActorSystem(journal=store_journals())
        try:
            self.team = self.system.team(config.team_id)
            self.sessions = AgentSessions(
                self.team,
                cards if cards is not None else config.build_cards,
                user_id=config.user_id,
                idle_timeout_s=idle_timeout_s,
            )
        except BaseException:
            if self._owns_system:
                self.system.stop()
            raise
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._started = False
        self._closed = False
        self._server: Server[Any] | None = None
        self._bus: Any = None
        self._listen_handler: Any = None
        self._notifier: ResourceNotifier | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._leases: weakref.WeakKeyDictionary[Any, dict[str, AgentSession]] = weakref.WeakKeyDictionary()
        self._facades: weakref.WeakKeyDictionary[AgentSession, tuple[ToolCatalog, dict[str, Tool]]] = (
            weakref.WeakKeyDictionary()
        )
        self._last_sweep = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop astart() attached to

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def server(self) -> Server[Any]:
        """The MCP low-level ``Server`` (built on first access)."""
        with self._lock:
            if self._server is None:
                self._server = self._build()
            return self._server

    def start(self) -> None:
        """Bind the cards once (checking the wiring), start the team's tool actors and
        watch the team's events. Idempotent; blocks on asks.

        Raises:
            WiringError: the cards cannot be bound, or ``hot_tools`` names unknown tools.
        """
        server = self.server  # the subscription bus exists from here on
        del server
        with self._start_lock:
            if self._started:
                return
            if self._closed:
                raise RuntimeError("this TeamServer is closed; create a new one")
            catalog = self.sessions.catalog()
            callable_tools = [tool.name for tool in catalog.tools(Channels.TOOL_CALL)]
            unknown = [name for name in self.config.hot_tools if name not in callable_tools]
            if unknown:
                raise WiringError(
                    f"hot_tools names unknown tools: {', '.join(unknown)}. "
                    f"The team's tools are: {', '.join(sorted(callable_tools)) or 'none'}."
                )
            prompts = {tool.name: tool.card for tool in catalog.tools(Channels.SYSTEM_PROMPT)}
            self._notifier = ResourceNotifier(self.config.team_id, prompts, self._bus)
            self._unsubscribe = self.team.subscribe(self._notifier.on_event)
            self._started = True
        logger.info("team %s ready: %d tools, %d prompts", self.config.team_id, len(callable_tools), len(prompts))

    async def astart(self) -> None:
        """:meth:`start` without blocking the event loop; notifications go to this loop."""
        if not self._started:
            import anyio

            await anyio.to_thread.run_sync(self.start)
        assert self._notifier is not None
        loop = asyncio.get_running_loop()
        self._notifier.attach(loop)
        self._loop = loop

    def close(self) -> None:
        """End every session (agents leave the roster) and stop the actor system if this
        server created it, flushing every actor's state. Idempotent; blocks."""
        with self._start_lock:
            if self._closed:
                return
            self._closed = True
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            try:
                unsubscribe()
            except Exception:
                logger.debug("unsubscribing from team events failed", exc_info=True)
        self.sessions.close_all()
        if self._owns_system:
            self.system.stop()

    async def aclose(self) -> None:
        """:meth:`close` from the event loop: ends listen streams, then closes in a thread."""
        import anyio

        if self._listen_handler is not None:
            self._listen_handler.close()
        await anyio.to_thread.run_sync(self.close)

    # -- identity ---------------------------------------------------------------------------

    def identify(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The agent name a request acts as (see the module docstring for the order)."""
        headers = getattr(ctx.request, "headers", None)
        if headers is not None:
            declared = headers.get(AGENT_HEADER)
            if declared:
                return _declared_agent_name(declared)
        if self.agent_name:
            return self.agent_name
        params = ctx.session.client_params
        return _declared_agent_name(params.client_info.name if params is not None else None)

    async def session_for(self, ctx: ServerRequestContext[Any, Any]) -> AgentSession:
        """The calling client's session, opened on first use (without blocking the loop).

        On the handshake protocol the session is leased by the connection and released
        when the connection closes; on the stateless protocol it lives until idle.
        """
        import anyio

        if self._loop is not asyncio.get_running_loop():  # once per loop: the team is started there
            await self.astart()
        self._maybe_sweep()
        key = self.identify(ctx)
        # The SDK keeps the connection on the per-request session without a public accessor.
        connection = getattr(ctx.session, "_connection", None)
        if connection is None or ctx.protocol_version in _modern_versions():
            session = self.sessions.get(key)
            if session is None or session.closed:
                session = await anyio.to_thread.run_sync(self.sessions.open, key)
            return session
        held = self._leases.get(connection)
        if held is None:
            held = {}
            self._leases[connection] = held
            connection.exit_stack.push_async_callback(self._connection_closed, connection)
        session = held.get(key)
        if session is not None and not session.closed:
            return session
        session = await anyio.to_thread.run_sync(self.sessions.lease, key)
        current = held.get(key)
        if current is not None and not current.closed:
            # A concurrent request on this connection leased first: one lease per connection.
            await anyio.to_thread.run_sync(self.sessions.release, session)
            return current
        held[key] = session
        return session

    async def _connection_closed(self, connection: Any) -> None:
        import anyio

        held = self._leases.pop(connection, None) or {}
        if self._notifier is not None:
            self._notifier.forget(connection)
        for session in held.values():
            await anyio.to_thread.run_sync(self.sessions.release, session)

    def _maybe_sweep(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep < SWEEP_INTERVAL_S:
            return
        self._last_sweep = now
        asyncio.get_running_loop().run_in_executor(None, self.sessions.sweep)

    # -- the MCP server ---------------------------------------------------------------------

    def _build(self) -> Server[Any]:
        from mcp.server import Server
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self._bus = InMemorySubscriptionBus()
        self._listen_handler = ListenHandler(self._bus)
        return Server(
            self.config.name,
            version=_version(),
            instructions=self._instructions(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe_resource,
            on_subscriptions_listen=self._listen,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )

    def _instructions(self) -> str:
        team = self.config.team_id
        text = f"Tools of team {team}; you act as one of its agents. Shared context: resources toolcards://{team}/*."
        if self.config.facade:
            text += " Find tools with search_tools, see arguments with describe_tool, run them with call_tool."
        return text

    def _facade(self, session: AgentSession) -> tuple[ToolCatalog, dict[str, Tool]]:
        facade = self._facades.get(session)
        if facade is None:
            catalog = ToolCatalog(session.tools)
            facade = (catalog, meta_tools(catalog))
            self._facades[session] = facade
        return facade

    def listed_tools(self, session: AgentSession) -> list[Tool]:
        """The tools ``tools/list`` shows to ``session``."""
        if not self.config.facade:
            return list(session.tools.values())
        _, metas = self._facade(session)
        hot = [session.tools[name] for name in self.config.hot_tools if name in session.tools]
        return [*metas.values(), *hot]

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        import mcp_types

        session = await self.session_for(ctx)
        return mcp_types.ListToolsResult(
            tools=[
                mcp_types.Tool(name=tool.name, description=tool.description, input_schema=tool.parameters_schema)
                for tool in self.listed_tools(session)
            ]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        call_id = None if ctx.request_id is None else str(ctx.request_id)
        try:
            session = await self.session_for(ctx)
            return await self.call(session, params.name, params.arguments, call_id=call_id)
        except Exception as exc:
            # Whatever happens, the model gets a result it can read, not "Internal server error".
            logger.exception("tools/call %s failed", params.name)
            return error_result(f"{params.name} failed: {type(exc).__name__}: {exc}")

    async def call(
        self, session: AgentSession, name: str, arguments: Any, *, call_id: str | None = None
    ) -> mcp_types.CallToolResult:
        """Run tool ``name`` (or a facade meta tool) for ``session``; failures are results."""
        if self.config.facade and name in META_TOOLS:
            catalog, metas = self._facade(session)
            if name != CALL_TOOL:
                return await self._run(metas[name], arguments, call_id)
            try:
                request = metas[CALL_TOOL].args.validate(CALL_TOOL, arguments or {})
                target = catalog.resolve(request["name"])
            except RetriableError as exc:
                return error_result(str(exc))
            return await self._run(target, request["arguments"] or {}, call_id)
        tool = session.tools.get(name)
        if tool is None:
            return error_result(unknown_tool_message(name, session.tools, facade=self.config.facade))
        return await self._run(tool, arguments, call_id)

    async def _run(self, tool: Tool, arguments: Any, call_id: str | None) -> mcp_types.CallToolResult:
        try:
            value = await tool.call(
                arguments, channel=Channels.TOOL_CALL, call_id=call_id, approved=self.config.approve_all
            )
        except ApprovalRequired as exc:
            if not exc.deferrable:  # an approver of the session's factory refused it
                return error_result(str(exc))
            return error_result(
                f"{tool.name} needs a human's approval, which this MCP server cannot ask for, so it did not run. "
                "Tell the user what you wanted to do; the operator can allow such tools with --approve-all."
            )
        except (RetriableError, ToolFailed) as exc:
            return error_result(str(exc))
        return to_call_result(value, uri_prefix=f"toolcards://{self.config.team_id}/{tool.name}")

    # -- resources and prompts --------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListResourcesResult:
        import mcp_types

        session = await self.session_for(ctx)
        return mcp_types.ListResourcesResult(
            resources=[
                mcp_types.Resource(
                    uri=prompt_uri(self.config.team_id, name),
                    name=name,
                    description=summary(tool.description),
                    mime_type=PROMPT_MIME_TYPE,
                )
                for name, tool in session.prompts.items()
            ]
        )

    def _prompt_tool(self, session: AgentSession, name: str | None, what: str) -> Tool:
        from mcp.shared.exceptions import MCPError

        tool = session.prompts.get(name) if name else None
        if tool is None:
            known = ", ".join(sorted(session.prompts)) or "none"
            code = RESOURCE_NOT_FOUND if what == "resource" else -32602
            raise MCPError(code=code, message=f"Unknown {what} {name!r}. Known: {known}.")
        return tool

    def _as_served(self, session: AgentSession, text: str) -> str:
        """``text`` as this server's clients read it: in facade mode, a context that names tools
        ``tools/list`` does not show says how to reach them."""
        if not self.config.facade:
            return text
        listed = {*META_TOOLS, *self.config.hot_tools}
        named = [name for name in session.tools if name not in listed and re.search(rf"\b{re.escape(name)}\b", text)]
        if not named:
            return text
        return f"{text}\nThe tools named above are reached through {CALL_TOOL}(name, arguments)."

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.ReadResourceRequestParams
    ) -> mcp_types.ReadResourceResult:
        import mcp_types

        session = await self.session_for(ctx)
        uri = str(params.uri)
        tool = self._prompt_tool(session, prompt_name(self.config.team_id, uri) or uri, "resource")
        text = self._as_served(session, await render_prompt(tool))
        return mcp_types.ReadResourceResult(
            contents=[mcp_types.TextResourceContents(uri=uri, text=text, mime_type=PROMPT_MIME_TYPE)]
        )

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListPromptsResult:
        import mcp_types

        session = await self.session_for(ctx)
        return mcp_types.ListPromptsResult(
            prompts=[
                mcp_types.Prompt(name=name, description=summary(tool.description), arguments=[])
                for name, tool in session.prompts.items()
            ]
        )

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.GetPromptRequestParams
    ) -> mcp_types.GetPromptResult:
        import mcp_types

        session = await self.session_for(ctx)
        tool = self._prompt_tool(session, params.name, "prompt")
        text = self._as_served(session, await render_prompt(tool))
        return mcp_types.GetPromptResult(
            description=summary(tool.description),
            messages=[mcp_types.PromptMessage(role="user", content=mcp_types.TextContent(text=text))],
        )

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SubscribeRequestParams
    ) -> mcp_types.EmptyResult:
        import mcp_types

        await self.session_for(ctx)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and self._notifier is not None:
            self._notifier.subscribe(connection, str(params.uri))
        return mcp_types.EmptyResult()

    async def _unsubscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.UnsubscribeRequestParams
    ) -> mcp_types.EmptyResult:
        import mcp_types

        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and self._notifier is not None:
            self._notifier.unsubscribe(connection, str(params.uri))
        return mcp_types.EmptyResult()

    async def _listen(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SubscriptionsListenRequestParams
    ) -> mcp_types.SubscriptionsListenResult:
        await self.session_for(ctx)
        result: mcp_types.SubscriptionsListenResult = await self._listen_handler(ctx, params)
        return result


@functools.cache
def _modern_versions() -> frozenset[str]:
    """The stateless protocol versions (no connection to lease a session to)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


def _checked_agent_name(name: str | None) -> str | None:
    if name is None:
        return None
    cleaned = agent_name(name, default="")
    if not cleaned:
        raise WiringError(f"Agent name {name!r} has no usable characters; use letters, digits, '_', '.' or '-'.")
    return cleaned


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolcards")
    except PackageNotFoundError:
        return "0"
