"""``TeamServer``: one team's cards served over MCP, whichever server speaks the protocol.

:class:`TeamServer` holds everything that does not depend on how the protocol is spoken:
the team and its sessions, the calls, and every result as a plain wire dict (camelCase keys,
JSON-ready). Two servers speak MCP with it: the stdio server
(:mod:`toolcards.server._stdio`, which never imports the SDK) and the SDK's low-level
``Server`` (:attr:`TeamServer.server`, built by :mod:`toolcards.server._sdk`; streamable HTTP
and in-process ``mcp.Client`` use it). What a client sees is the same on both:

* ``tools/list``: every TOOL_CALL capability, with exactly the schema the pydantic-ai
  channel uses (``Tool.parameters_schema``); in facade mode, ``search_tools``,
  ``describe_tool`` and ``call_tool`` plus the config's ``hot_tools``
  (:mod:`toolcards.server._facade`). Every tool stays callable by name in both modes.
* ``tools/call``: the same pipeline as every other channel
  (``await tool.call(args, channel=TOOL_CALL, call_id=...)``), which validates the
  arguments. Every failure is a result with ``isError`` and a message the model can act
  on, never a JSON-RPC error (:mod:`toolcards.server._results`). A session whose agent was
  asked to stop (``stop_member``) gets that request as its next call's result instead.
* SYSTEM_PROMPT capabilities as resources and prompts, with change notifications
  (:mod:`toolcards.server._resources`).

Who calls: each client is an agent of the team (:mod:`toolcards.server._session`), named,
in this order, by the ``X-Agent-Name`` HTTP header, the server's fixed ``agent_name``
(``toolcards serve --agent``), the name the client declares (``clientInfo.name``, sent in
``initialize`` on the handshake protocol and in every request's ``_meta`` on the
stateless 2026-07-28 protocol), or ``mcp-client``. Clients declaring the same name act as
the same agent.

Approval: a tool marked ``requires_approval`` is approved by the client's user where the
client declared ``elicitation`` (:mod:`toolcards.server._approval`): the pipeline's approval
step, after the arguments were validated, asks, and ``accept`` runs the call once. Without
the capability it is refused with an ``isError`` result saying so, unless the config sets
``approve_all`` (``--approve-all``): then every call is passed as approved, and the client's
own confirmation (most MCP clients ask the user before each tool call) is the only gate.

Beyond calls: a call's ``progressToken`` gets ``notifications/progress`` while it runs
(:mod:`toolcards.core._progress`); a cancelled call stops its work
(:mod:`toolcards.core._cancel`); long calls may run as tasks (:mod:`toolcards.server._tasks`);
tool definitions carry their cards' hints (:mod:`toolcards.server._definitions`); read-only
lookups are resource templates with argument completion (:mod:`toolcards.server._templates`);
the client's roots may be the workspace (:mod:`toolcards.server._roots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolcards._version import __version__
from toolcards.core._approval import ApprovalRequired, Approver, approving
from toolcards.core._channels import Channels
from toolcards.core._conversation import Conversation, begin_conversation, conversing
from toolcards.core._progress import ProgressReporter, ProgressSink, reporting
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.server._config import ServeConfig
from toolcards.server._definitions import tool_definition
from toolcards.server._facade import CALL_TOOL, META_TOOLS, ToolCatalog, meta_tools, summary, unknown_tool_message
from toolcards.server._jsonrpc import INVALID_PARAMS, RequestError
from toolcards.server._resources import (
    CONTEXT_TOOL,
    PROMPT_MIME_TYPE,
    ResourceNotifier,
    context_tool,
    prompt_name,
    prompt_uri,
    render_prompt,
)
from toolcards.server._results import call_failure, call_result, error_wire
from toolcards.server._session import DEFAULT_IDLE_TIMEOUT_S, AgentSession, AgentSessions, agent_name

if TYPE_CHECKING:
    from mcp.server import Server

    from toolcards.actors._system import ActorSystem
    from toolcards.core._card import ToolCard
    from toolcards.core._tool import Tool
    from toolcards.server._approval import PendingApprovals
    from toolcards.server._tasks import TaskRegistry
    from toolcards.server._templates import Template

__all__ = ["AGENT_HEADER", "MODERN_RESOURCE_NOT_FOUND", "RESOURCE_NOT_FOUND", "TeamServer"]

logger = logging.getLogger("toolcards.server")

AGENT_HEADER = "x-agent-name"
"""The HTTP header naming the agent a request acts as."""

RESOURCE_NOT_FOUND = -32002
"""The MCP error code for a resource URI the server does not have (handshake protocol)."""
MODERN_RESOURCE_NOT_FOUND = INVALID_PARAMS
"""The same on the stateless 2026-07-28 protocol, which made it invalid params."""
LATEST_VERSION = "2025-11-25"
"""The newest handshake protocol version: what a tool definition is shaped for by default."""
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

    Serve it with :func:`~toolcards.server._stdio.serve_stdio`, or use :attr:`server` (the
    SDK's ``Server``) with :func:`~toolcards.server._http.serve_http` or
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
        from toolcards.actors._system import ActorSystem
        from toolcards.store._journal import store_journals
        from toolcards.store._ledger import store_ledgers
        from toolcards.store._presence import store_presence

        self.config = config
        self._make_cards: Callable[[], Sequence[ToolCard]] = (
            config.build_cards if cards is None else (cards if callable(cards) else _copies(cards))
        )
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
        self._templates: weakref.WeakKeyDictionary[AgentSession, list[Template]] = weakref.WeakKeyDictionary()
        self._last_sweep = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop astart() attached to

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def server(self) -> Server[Any]:
        """The SDK's low-level ``Server`` over this team (built on first access; imports ``mcp``)."""
        with self._lock:
            if self._server is None:
                from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

                from toolcards.server._sdk import sdk_server

                self._bus = InMemorySubscriptionBus()
                self.listen_handler = ListenHandler(self._bus)
                if self._notifier is not None:
                    self._notifier.bus = self._bus
                self._server = sdk_server(self)
            return self._server

    @functools.cached_property
    def tasks(self) -> TaskRegistry:
        """Long calls run as MCP tasks (:mod:`toolcards.server._tasks`)."""
        from toolcards.server._tasks import TaskRegistry

        return TaskRegistry()

    @functools.cached_property
    def approvals(self) -> PendingApprovals:
        """Approvals asked on the stateless protocol, waiting for their call to come back."""
        from toolcards.server._approval import PendingApprovals

        return PendingApprovals()

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
        ``agent_name``, else the name the client ``declared`` (``clientInfo.name``).

        A header with no usable character (``@@@``) is passed over like a missing one, so
        such clients do not all become one shared agent. HTTP hands header values over as
        Latin-1: UTF-8 sent there (``Jürgen``) is read back as UTF-8.
        """
        if header:
            with contextlib.suppress(UnicodeError):
                header = header.encode("latin-1").decode("utf-8")
            named = _declared_agent_name(header, "")
            if named:
                return named
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

    async def lease(self, holder: Any, key: str, *, workspace: str | None = None) -> AgentSession:
        """The session of agent ``key`` held by connection ``holder`` until :meth:`release`.

        One lease per agent per connection, also when concurrent requests race for it.
        ``holder`` is kept by a weak reference. ``workspace`` is a workspace id for the
        agent's cards (the client's root, :mod:`toolcards.server._roots`); sessions on
        different workspaces are different sessions of the same agent name.
        """
        await self._ready()
        held = self._leases.get(holder)
        if held is None:
            held = {}
            self._leases[holder] = held
        slot = key if workspace is None else f"{key}\x00{workspace}"
        session = held.get(slot)
        if session is not None and not session.closed:
            return session
        if workspace is None:
            session = await asyncio.to_thread(self.sessions.lease, key)
        else:
            from toolcards.server._roots import rooted_cards

            cards = rooted_cards(self._make_cards, workspace, self.config.roots)
            session = await asyncio.to_thread(functools.partial(self.sessions.lease, slot, name=key, cards=cards))
        current = held.get(slot)
        if current is not None and not current.closed:
            # A concurrent request on this connection leased first: one lease per connection.
            await asyncio.to_thread(self.sessions.release, session)
            return current
        held[slot] = session
        return session

    async def release(self, holder: Any, session: AgentSession | None = None) -> None:
        """Connection ``holder`` ended: drop its leases, resource subscriptions and tasks; or
        only its lease on ``session`` (its roots changed)."""
        held = self._leases.get(holder) or {}
        if session is not None:
            for slot, leased in list(held.items()):
                if leased is session:
                    del held[slot]
                    await asyncio.to_thread(self.sessions.release, session)
            return
        self._leases.pop(holder, None)
        if self._notifier is not None:
            self._notifier.forget(holder)
        if "tasks" in self.__dict__:  # only when a task was ever started
            self.tasks.forget(holder)
        for leased in held.values():
            await asyncio.to_thread(self.sessions.release, leased)

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
        return {"name": self.config.name, "version": __version__}

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

    def capabilities(self, version: str = LATEST_VERSION) -> dict[str, Any]:
        """The ``capabilities`` for a client speaking ``version``: tools, prompts, resources
        one can subscribe to, completions; on the handshake protocol also logging, and tasks
        on 2025-11-25. On the stateless protocol changes reach ``subscriptions/listen``.

        Changed in 0.3: ``version``; completions, logging and tasks.
        """
        if version >= "2026-07-28":
            return {
                "completions": {},
                "prompts": {"listChanged": True},
                "resources": {"listChanged": True, "subscribe": True},
                "tools": {"listChanged": True},
            }
        capabilities: dict[str, Any] = {
            "completions": {},
            "logging": {},
            "prompts": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": True},
            "tools": {"listChanged": False},
        }
        if version == "2025-11-25":  # the one version with tasks in its core
            from toolcards.server._tasks import TASKS_CAPABILITY

            capabilities["tasks"] = TASKS_CAPABILITY
        return capabilities

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
            team, handle = session.agent.team, session.agent.address.handle
            tool = self._context_tools[session] = context_tool(
                session.prompts, lambda text: self._as_served(tools, text), lambda: team.note_activity(handle)
            )
        return tool

    def tools_page(self, session: AgentSession, version: str = LATEST_VERSION) -> dict[str, Any]:
        """The ``tools/list`` result for ``session``, shaped for ``version``
        (:func:`~toolcards.server._definitions.tool_definition`)."""
        return {"tools": [tool_definition(tool, version, tasks=True) for tool in self.listed_tools(session)]}

    def find_tool(self, session: AgentSession, name: str) -> Tool | None:
        """The tool ``name`` as ``session`` calls it (the facade's meta tools included)."""
        if self.config.facade and name in META_TOOLS:
            return self._facade(session)[1][name]
        tool = session.tools.get(name)
        if tool is None and name == CONTEXT_TOOL:
            tool = self._context_tool(session)
        return tool

    async def call(
        self,
        session: AgentSession,
        name: str,
        arguments: Any,
        *,
        call_id: str | None = None,
        idempotency_key: str | None = None,
        progress: ProgressSink | None = None,
        approver: Approver | None = None,
        conversation: Conversation | None = None,
    ) -> dict[str, Any]:
        """The ``tools/call`` result of tool ``name`` (or a facade meta tool) for ``session``.

        ``idempotency_key`` is the client's key of the call
        (:func:`toolcards.server._idempotency.idempotency_key`): a
        mutating call sent again with it is applied at most once. ``progress`` receives the
        call's progress (a few reports a second at most), for a client that sent a
        ``progressToken``. ``approver`` decides a tool that ``requires_approval`` (asking the
        client's user, :mod:`toolcards.server._approval`) unless the config approves all.
        Cancelling the awaiting task cancels the call (:mod:`toolcards.core._cancel`).
        ``conversation`` is the client's connection's (:mod:`toolcards.core._conversation`);
        without one (a stateless request) the call is a conversation of its own.

        A stop request for the session's agent (``stop_member``) is checked first: the call
        does not run, and its result (``isError``) tells the client it was stopped and why.

        Never raises for the tool's sake: every failure is a result with ``isError`` and a
        message the model can act on, never "Internal server error". On the stateless
        protocol, a call waiting for its user's approval answers an ``input_required``
        result instead.

        Changed in 0.3: ``progress``, ``approver`` and ``conversation``.
        """
        reporter = ProgressReporter(progress) if progress is not None else None
        try:
            if session.factory.steers:
                stop = await asyncio.to_thread(session.factory.take_stop)
                if stop is not None:
                    return error_wire(stop.for_model())
            with reporting(reporter), approving(approver), conversing(conversation or begin_conversation()):
                return await self._call(session, name, arguments, call_id, idempotency_key)
        except Exception as exc:
            return call_failure(name, exc)
        finally:
            if reporter is not None:
                reporter.close()

    async def _call(
        self, session: AgentSession, name: str, arguments: Any, call_id: str | None, key: str | None
    ) -> dict[str, Any]:
        if self.config.facade and name in META_TOOLS:
            catalog, metas = self._facade(session)
            if name != CALL_TOOL:
                return await self._run(metas[name], arguments, call_id, key, session.asked)
            try:
                request = metas[CALL_TOOL].args.validate(CALL_TOOL, arguments or {})
                target = catalog.resolve(request["name"])
            except RetriableError as exc:
                return error_wire(str(exc))
            return await self._run(target, request["arguments"] or {}, call_id, key, session.asked)
        tool = session.tools.get(name)
        if tool is None and name == CONTEXT_TOOL:
            tool = self._context_tool(session)
        if tool is None:
            return error_wire(unknown_tool_message(name, session.tools, facade=self.config.facade))
        return await self._run(tool, arguments, call_id, key, session.asked)

    async def _run(
        self, tool: Tool, arguments: Any, call_id: str | None, key: str | None, asked_name: str
    ) -> dict[str, Any]:
        try:
            value = await tool.call(
                arguments,
                channel=Channels.TOOL_CALL,
                call_id=call_id,
                approved=self.config.approve_all,
                idempotency_key=key,
                # A client's keys are its own whatever name it got: one that joined again as
                # @Ann-2 (its first session still open, here or in another process) is @Ann.
                idempotency_scope=f"@{asked_name}" if asked_name else None,
            )
        except ApprovalRequired as exc:
            from toolcards.server._approval import ApprovalNeeded

            if isinstance(exc, ApprovalNeeded):  # the stateless protocol: the client asks, then calls again
                return exc.result()
            if not exc.deferrable:  # an approver refused it
                return error_wire(str(exc))
            return error_wire(
                f"{tool.name} needs a human's approval, and this client cannot be asked for it (it did not "
                "declare elicitation in form mode), so it did not run. Tell the user what you wanted to do; the "
                "operator can allow such tools with --approve-all."
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

    def _prompt_tool(self, session: AgentSession, name: Any, what: str, *, missing: int = RESOURCE_NOT_FOUND) -> Tool:
        tool = session.prompts.get(name) if isinstance(name, str) and name else None
        if tool is None:
            known = ", ".join(sorted(session.prompts)) or "none"
            code = missing if what == "resource" else INVALID_PARAMS
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

    async def read_resource(
        self, session: AgentSession, uri: str, *, missing: int = RESOURCE_NOT_FOUND
    ) -> dict[str, Any]:
        """The ``resources/read`` result for ``uri``, rendered for ``session``'s agent: a
        system prompt, or a resource template's instance (the tool's answer).

        Raises:
            RequestError: ``uri`` is not one of the team's resources, or the tool behind a
                template could not answer for it (code ``missing``: ``RESOURCE_NOT_FOUND``,
                ``MODERN_RESOURCE_NOT_FOUND`` on the stateless protocol).
        """
        name = prompt_name(self.config.team_id, uri) or uri
        if name not in session.prompts:
            from toolcards.server._templates import matching

            matched = matching(self.templates(session), uri)
            if matched is not None:
                return await self._read_template(matched[0], matched[1], uri, missing)
        tool = self._prompt_tool(session, name, "resource", missing=missing)
        text = self._as_served(session.tools, await render_prompt(tool))
        return {"contents": [{"uri": uri, "text": text, "mimeType": PROMPT_MIME_TYPE}]}

    async def _read_template(self, template: Template, value: str, uri: str, missing: int) -> dict[str, Any]:
        try:
            result = await template.tool.call({template.argument: value}, channel=Channels.TOOL_CALL)
        except (RetriableError, ToolFailed) as exc:
            raise RequestError(missing, f"Resource {uri} is not available: {exc}", {"uri": uri}) from exc
        return {"contents": [{"uri": uri, "text": str(result), "mimeType": "text/plain"}]}

    def templates(self, session: AgentSession) -> list[Template]:
        """``session``'s resource templates (:mod:`toolcards.server._templates`)."""
        found = self._templates.get(session)
        if found is None:
            from toolcards.server._templates import templates_for

            found = self._templates[session] = templates_for(self.config.team_id, list(session.tools.values()))
        return found

    def templates_page(self, session: AgentSession) -> dict[str, Any]:
        """The ``resources/templates/list`` result."""
        return {"resourceTemplates": [template.wire() for template in self.templates(session)]}

    async def complete(self, session: AgentSession, params: Mapping[str, Any]) -> dict[str, Any]:
        """The ``completion/complete`` result: values for a resource template's variable
        (a prompt has no arguments, so none for it).

        Raises:
            RequestError: the reference is neither one of the templates nor a prompt (``-32602``).
        """
        from toolcards.server._templates import completion_result, template_by_uri

        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, Mapping) or not isinstance(argument, Mapping):
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "completion needs ref and argument")
        name, typed = argument.get("name"), argument.get("value")
        if not isinstance(name, str) or not isinstance(typed, str):
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "argument needs name and value")
        if ref.get("type") == "ref/prompt":
            self._prompt_tool(session, ref.get("name"), "prompt")
            return completion_result([])
        if ref.get("type") != "ref/resource" or not isinstance(ref.get("uri"), str):
            raise RequestError(
                INVALID_PARAMS, "Invalid request parameters", "ref must be a ref/prompt or a ref/resource with a uri"
            )
        template = template_by_uri(self.templates(session), ref["uri"])
        if template is None:
            raise RequestError(
                INVALID_PARAMS, "Invalid request parameters", f"no resource template {ref['uri'][:200]!r}"
            )
        if name != template.argument:
            return completion_result([])
        return await asyncio.to_thread(template.complete, typed)

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


def _copies(cards: Sequence[ToolCard]) -> Callable[[], list[ToolCard]]:
    from toolcards.core._registry import dump_cards, load_cards

    data = dump_cards(list(cards))
    return lambda: load_cards(data)


def _checked_agent_name(name: str | None) -> str | None:
    if name is None:
        return None
    cleaned = agent_name(name, default="")
    if not cleaned:
        raise WiringError(f"Agent name {name!r} has no usable characters; use letters, digits, '_', '.' or '-'.")
    return cleaned
