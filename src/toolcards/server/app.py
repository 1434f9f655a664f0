"""``TeamServer``: one team's cards served over MCP, whichever server speaks the protocol.

:class:`TeamServer` holds everything that does not depend on how the protocol is spoken:
the team and its sessions, the calls, and every result as a plain wire dict (camelCase keys,
JSON-ready). Two servers speak MCP with it: the stdio server
(:mod:`toolcards.server.stdio`, which never imports the SDK) and the SDK's low-level
``Server`` (:attr:`TeamServer.server`, built by :mod:`toolcards.server.sdk`; streamable HTTP
and in-process ``mcp.Client`` use it). What a client sees is the same on both:

* ``tools/list``: every TOOL_CALL capability, with exactly the schema the pydantic-ai
  channel uses (``Tool.parameters_schema``); in facade mode, ``search_tools``,
  ``describe_tool`` and ``call_tool`` plus the config's ``hot_tools``
  (:mod:`toolcards.server.facade`). Every tool stays callable by name in both modes.
* ``tools/call``: the same pipeline as every other channel
  (``await tool.call(args, channel=TOOL_CALL, call_id=...)``), which validates the
  arguments. Every failure is a result with ``isError`` and a message the model can act
  on, never a JSON-RPC error (:mod:`toolcards.server.results`). A session whose agent was
  asked to stop (``stop_member``) gets that request as its next call's result instead.
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
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolcards.core.approval import ApprovalRequired
from toolcards.core.channels import Channels
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.server.config import ServeConfig
from toolcards.server.facade import CALL_TOOL, META_TOOLS, ToolCatalog, meta_tools, summary, unknown_tool_message
from toolcards.server.jsonrpc import INVALID_PARAMS, RequestError
from toolcards.server.resources import (
    CONTEXT_TOOL,
    PROMPT_MIME_TYPE,
    ResourceNotifier,
    context_tool,
    prompt_name,
    prompt_uri,
    render_prompt,
)
from toolcards.server.results import call_failure, call_result, error_wire
from toolcards.server.session import DEFAULT_IDLE_TIMEOUT_S, AgentSession, AgentSessions, agent_name

if TYPE_CHECKING:
    from mcp.server import Server

    from toolcards.actors.system import ActorSystem
    from toolcards.core.card import ToolCard
    from toolcards.core.tool import Tool

__all__ = ["AGENT_HEADER", "RESOURCE_NOT_FOUND", "TeamServer"]

logger = logging.getLogger("toolcards.server")

AGENT_HEADER = "x-agent-name"
"""The HTTP header naming the agent a request acts as."""

RESOURCE_NOT_FOUND = -32002
"""The MCP error code for a resource URI the server does not have."""
SWEEP_INTERVAL_S = 60.0

# A client sends its name with every request: clean each distinct name once, not per call.
_declared_agent_name = functools.lru_cache(maxsize=1024)(agent_name)


class TeamServer:
    """A team served over MCP: its actors, one agent per client, and every answer in wire form.

    Args:
        config: The team and how it is offered.
        system: The actor system to run the team in (default: a new one, stopped by
            :meth:`close`).
        agent_name: Name every client's agent this (unless a request carries ``X-Agent-Name``).
        idle_timeout_s: Close a connection-less client's agent after this long idle.
        cards: Where each agent's cards come from (default: ``config.build_cards``).

    Serve it with :func:`~toolcards.server.stdio.serve_stdio`, or use :attr:`server` (the
    SDK's ``Server``) with :func:`~toolcards.server.http.serve_http` or
    ``mcp.Client(team_server.server)`` in tests. The team starts on the first request (or
    :meth:`start`); :meth:`close` ends every session and, if this object created the actor
    system, stops it, which flushes every actor's state.

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
        from toolcards.store.ledger import store_ledgers
        from toolcards.store.presence import store_presence

        self.config = config
        # Checked before any actor starts: a refused name must not leave threads behind.
        self.agent_name = _checked_agent_name(agent_name)
        self._owns_system = system is None
        self.system = system or ActorSystem(journal=store_journals(), presence=store_presence(), ledger=store_ledgers())
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
        self.listen_handler: Any = None
        """The SDK's ``subscriptions/listen`` handler, once :attr:`server` is built."""
        self._notifier: ResourceNotifier | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._leases: weakref.WeakKeyDictionary[Any, dict[str, AgentSession]] = weakref.WeakKeyDictionary()
        self._facades: weakref.WeakKeyDictionary[AgentSession, tuple[ToolCatalog[Tool], dict[str, Tool]]] = (
            weakref.WeakKeyDictionary()
        )
        self._context_tools: weakref.WeakKeyDictionary[AgentSession, Tool] = weakref.WeakKeyDictionary()
        self._last_sweep = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop astart() attached to

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def server(self) -> Server[Any]:
        """The SDK's low-level ``Server`` over this team (built on first access; imports ``mcp``)."""
        with self._lock:
            if self._server is None:
                from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

                from toolcards.server.sdk import sdk_server

                self._bus = InMemorySubscriptionBus()
                self.listen_handler = ListenHandler(self._bus)
                if self._notifier is not None:
                    self._notifier.bus = self._bus
                self._server = sdk_server(self)
            return self._server

    def start(self) -> None:
        """Bind the cards once (checking the wiring), start the team's tool actors and
        watch the team's events. Idempotent; blocks on asks.

        Raises:
            WiringError: the cards cannot be bound, or ``hot_tools`` names unknown tools.
        """
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
            with self._lock:  # the SDK server, built meanwhile, hands its bus over under this lock
                self._notifier = ResourceNotifier(self.config.team_id, prompts, self._bus)
            self._unsubscribe = self.team.subscribe(self._notifier.on_event)
            self._started = True
        logger.info("team %s ready: %d tools, %d prompts", self.config.team_id, len(callable_tools), len(prompts))

    async def astart(self) -> None:
        """:meth:`start` without blocking the event loop; notifications go to this loop."""
        if not self._started:
            await asyncio.to_thread(self.start)
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
        if self.listen_handler is not None:
            self.listen_handler.close()
        await asyncio.to_thread(self.close)

    # -- who calls ----------------------------------------------------------------------------

    def agent_key(self, declared: str | None, *, header: str | None = None) -> str:
        """The agent name a request acts as: ``header`` (``X-Agent-Name``), else the fixed
        ``agent_name``, else the name the client ``declared`` (``clientInfo.name``)."""
        if header:
            return _declared_agent_name(header)
        if self.agent_name:
            return self.agent_name
        return _declared_agent_name(declared)

    async def open_session(self, key: str) -> AgentSession:
        """The session of agent ``key`` for a connection-less client (the stateless protocol),
        opened on first use without blocking the loop; it closes when idle."""
        await self._ready()
        session = self.sessions.get(key)
        if session is None or session.closed:
            session = await asyncio.to_thread(self.sessions.open, key)
        return session

    async def lease(self, holder: Any, key: str) -> AgentSession:
        """The session of agent ``key`` held by connection ``holder`` until :meth:`release`.

        One lease per agent per connection, also when concurrent requests race for it.
        ``holder`` is kept by a weak reference.
        """
        await self._ready()
        held = self._leases.get(holder)
        if held is None:
            held = {}
            self._leases[holder] = held
        session = held.get(key)
        if session is not None and not session.closed:
            return session
        session = await asyncio.to_thread(self.sessions.lease, key)
        current = held.get(key)
        if current is not None and not current.closed:
            # A concurrent request on this connection leased first: one lease per connection.
            await asyncio.to_thread(self.sessions.release, session)
            return current
        held[key] = session
        return session

    async def release(self, holder: Any) -> None:
        """Connection ``holder`` ended: drop its leases and resource subscriptions."""
        held = self._leases.pop(holder, None) or {}
        if self._notifier is not None:
            self._notifier.forget(holder)
        for session in held.values():
            await asyncio.to_thread(self.sessions.release, session)

    async def _ready(self) -> None:
        if self._loop is not asyncio.get_running_loop():  # once per loop: the team is started there
            await self.astart()
        now = time.monotonic()
        if now - self._last_sweep >= SWEEP_INTERVAL_S:
            self._last_sweep = now
            asyncio.get_running_loop().run_in_executor(None, self.sessions.sweep)

    # -- what the server is -----------------------------------------------------------------

    @functools.cached_property
    def server_info(self) -> dict[str, str]:
        """``serverInfo``: the config's name and toolcards' version."""
        return {"name": self.config.name, "version": _version()}

    @functools.cached_property
    def instructions(self) -> str:
        """What the server tells the client about itself (``instructions``): the stable part
        of the context. The live part (the plan, the graph) changes between requests, so it is
        served by :data:`CONTEXT_TOOL` and by the resources, never frozen in here."""
        team = self.config.team_id
        text = f"Tools of team {team}; you act as one of its agents, sharing its board, knowledge and files."
        if self.config.context_tool:
            text += (
                f" Call {CONTEXT_TOOL} before starting work and after others may have changed things: it returns "
                "the team's live context (the plan, what the team knows)."
            )
        text += f" The same context: resources toolcards://{team}/*."
        if self.config.facade:
            text += " Find tools with search_tools, see arguments with describe_tool, run them with call_tool."
        return text

    def capabilities(self) -> dict[str, Any]:
        """The handshake protocol's ``capabilities``: tools, prompts, and resources one can
        subscribe to (no list changes: a team's tools and prompts are fixed)."""
        return {
            "prompts": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": True},
            "tools": {"listChanged": False},
        }

    # -- tools ------------------------------------------------------------------------------

    def _facade(self, session: AgentSession) -> tuple[ToolCatalog[Tool], dict[str, Tool]]:
        facade = self._facades.get(session)
        if facade is None:
            catalog = ToolCatalog(session.tools, session.factory.catalog_entries)
            facade = (catalog, meta_tools(catalog))
            self._facades[session] = facade
        return facade

    def listed_tools(self, session: AgentSession) -> list[Tool]:
        """The tools ``tools/list`` shows to ``session``."""
        context = self._context_tool(session)
        if not self.config.facade:
            return [*session.tools.values(), *([context] if context is not None else [])]
        # In facade mode the context tool is listed only as a hot tool; the server's
        # instructions name it, and every tool stays callable by name.
        _, metas = self._facade(session)
        hot = [session.tools[name] for name in self.config.hot_tools if name in session.tools]
        if context is not None and CONTEXT_TOOL in self.config.hot_tools:
            hot.append(context)
        return [*metas.values(), *hot]

    def _context_tool(self, session: AgentSession) -> Tool | None:
        """``session``'s :data:`CONTEXT_TOOL`, or ``None`` when it is off or there is no context."""
        if not self.config.context_tool or not session.prompts or CONTEXT_TOOL in session.tools:
            return None
        tool = self._context_tools.get(session)
        if tool is None:
            # The tool must not hold the session (the key of its weak cache): only its tools.
            tools = session.tools
            tool = self._context_tools[session] = context_tool(
                session.prompts, lambda text: self._as_served(tools, text)
            )
        return tool

    def tools_page(self, session: AgentSession) -> dict[str, Any]:
        """The ``tools/list`` result for ``session``."""
        return {
            "tools": [
                {"name": tool.name, "description": tool.description, "inputSchema": tool.parameters_schema}
                for tool in self.listed_tools(session)
            ]
        }

    async def call(
        self,
        session: AgentSession,
        name: str,
        arguments: Any,
        *,
        call_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """The ``tools/call`` result of tool ``name`` (or a facade meta tool) for ``session``.

        ``idempotency_key`` is the client's key of the call
        (:func:`toolcards.server.idempotency.idempotency_key`): a
        mutating call sent again with it is applied at most once.

        A stop request for the session's agent (``stop_member``) is checked first: the call
        does not run, and its result (``isError``) tells the client it was stopped and why.

        Never raises for the tool's sake: every failure is a result with ``isError`` and a
        message the model can act on, never "Internal server error".
        """
        try:
            if session.factory.steers:
                stop = await asyncio.to_thread(session.factory.take_stop)
                if stop is not None:
                    return error_wire(stop.for_model())
            return await self._call(session, name, arguments, call_id, idempotency_key)
        except Exception as exc:
            return call_failure(name, exc)

    async def _call(
        self, session: AgentSession, name: str, arguments: Any, call_id: str | None, key: str | None
    ) -> dict[str, Any]:
        if self.config.facade and name in META_TOOLS:
            catalog, metas = self._facade(session)
            if name != CALL_TOOL:
                return await self._run(metas[name], arguments, call_id, key)
            try:
                request = metas[CALL_TOOL].args.validate(CALL_TOOL, arguments or {})
                target = catalog.resolve(request["name"])
            except RetriableError as exc:
                return error_wire(str(exc))
            return await self._run(target, request["arguments"] or {}, call_id, key)
        tool = session.tools.get(name)
        if tool is None and name == CONTEXT_TOOL:
            tool = self._context_tool(session)
        if tool is None:
            return error_wire(unknown_tool_message(name, session.tools, facade=self.config.facade))
        return await self._run(tool, arguments, call_id, key)

    async def _run(self, tool: Tool, arguments: Any, call_id: str | None, key: str | None) -> dict[str, Any]:
        try:
            value = await tool.call(
                arguments,
                channel=Channels.TOOL_CALL,
                call_id=call_id,
                approved=self.config.approve_all,
                idempotency_key=key,
            )
        except ApprovalRequired as exc:
            if not exc.deferrable:  # an approver of the session's factory refused it
                return error_wire(str(exc))
            return error_wire(
                f"{tool.name} needs a human's approval, which this MCP server cannot ask for, so it did not run. "
                "Tell the user what you wanted to do; the operator can allow such tools with --approve-all."
            )
        except (RetriableError, ToolFailed) as exc:
            return error_wire(str(exc))
        return call_result(value, uri_prefix=f"toolcards://{self.config.team_id}/{tool.name}")

    # -- resources and prompts --------------------------------------------------------------

    def resources_page(self, session: AgentSession) -> dict[str, Any]:
        """The ``resources/list`` result: one resource per system prompt."""
        return {
            "resources": [
                {
                    "uri": prompt_uri(self.config.team_id, name),
                    "name": name,
                    "description": summary(tool.description),
                    "mimeType": PROMPT_MIME_TYPE,
                }
                for name, tool in session.prompts.items()
            ]
        }

    def prompts_page(self, session: AgentSession) -> dict[str, Any]:
        """The ``prompts/list`` result: one argument-less prompt per system prompt."""
        return {
            "prompts": [
                {"name": name, "description": summary(tool.description), "arguments": []}
                for name, tool in session.prompts.items()
            ]
        }

    def _prompt_tool(self, session: AgentSession, name: str | None, what: str) -> Tool:
        tool = session.prompts.get(name) if name else None
        if tool is None:
            known = ", ".join(sorted(session.prompts)) or "none"
            code = RESOURCE_NOT_FOUND if what == "resource" else INVALID_PARAMS
            raise RequestError(code, f"Unknown {what} {name!r}. Known: {known}.")
        return tool

    def _as_served(self, tools: Mapping[str, Tool], text: str) -> str:
        """``text`` as this server's clients read it: in facade mode, a context that names tools
        ``tools/list`` does not show says how to reach them."""
        if not self.config.facade:
            return text
        listed = {*META_TOOLS, *self.config.hot_tools}
        named = [name for name in tools if name not in listed and re.search(rf"\b{re.escape(name)}\b", text)]
        if not named:
            return text
        return f"{text}\nThe tools named above are reached through {CALL_TOOL}(name, arguments)."

    async def read_resource(self, session: AgentSession, uri: str) -> dict[str, Any]:
        """The ``resources/read`` result for ``uri``, rendered for ``session``'s agent.

        Raises:
            RequestError: ``uri`` is not one of the team's resources (``RESOURCE_NOT_FOUND``).
        """
        tool = self._prompt_tool(session, prompt_name(self.config.team_id, uri) or uri, "resource")
        text = self._as_served(session.tools, await render_prompt(tool))
        return {"contents": [{"uri": uri, "text": text, "mimeType": PROMPT_MIME_TYPE}]}

    async def get_prompt(self, session: AgentSession, name: str) -> dict[str, Any]:
        """The ``prompts/get`` result for prompt ``name``, rendered for ``session``'s agent.

        Raises:
            RequestError: no prompt is called ``name`` (invalid params).
        """
        tool = self._prompt_tool(session, name, "prompt")
        text = self._as_served(session.tools, await render_prompt(tool))
        return {
            "description": summary(tool.description),
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }

    def subscribe(self, holder: Any, uri: str) -> None:
        """Send ``notifications/resources/updated`` for ``uri`` to connection ``holder``
        (``async holder.send_resource_updated(uri)``) until it unsubscribes or ends."""
        if self._notifier is not None:
            self._notifier.subscribe(holder, uri)

    def unsubscribe(self, holder: Any, uri: str) -> None:
        """Stop :meth:`subscribe`."""
        if self._notifier is not None:
            self._notifier.unsubscribe(holder, uri)


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
