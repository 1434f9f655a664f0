"""The SDK's low-level ``Server`` over a :class:`~toolcards.server._app.TeamServer`.

Streamable HTTP (:mod:`toolcards.server._http`) and in-process ``mcp.Client(server)`` use
it; stdio does not (:mod:`toolcards.server._stdio`). Each handler finds the caller's session
and turns the team server's wire dict into the SDK's result model (``model_validate``, which
fills in what the stateless protocol adds to every result). What the stdio server does
beyond the SDK's defaults is done here the SDK's way:

* ``notifications/cancelled`` cancels the handler (the SDK's doing), which cancels the call
  and its work (:mod:`toolcards.core._cancel`);
* a ``progressToken`` gets ``notifications/progress`` on the request's stream;
* approval by elicitation: ``elicitation/create`` on a connection, an ``input_required``
  result on the stateless protocol (:mod:`toolcards.server._approval`);
* task-augmented ``tools/call`` (2025-11-25) and ``tasks/*``: the SDK refuses tasks at that
  version, so a middleware answers them from the team's :class:`TaskRegistry` and the
  ``initialize`` result adds the ``tasks`` capability;
* ``resources/templates/list``, ``completion/complete``, ``logging/setLevel``;
* the client's roots (``--roots``) on a connection, asked with ``roots/list`` on the
  request's stream.

Sessions: a request on a connection (the handshake protocol, stateful HTTP) leases its
agent for that connection, released when the connection closes; a request of the
stateless 2026-07-28 protocol opens its agent's session, which closes when idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from toolcards.core._conversation import Conversation, begin_conversation
from toolcards.core._surrogates import escape_surrogates
from toolcards.server._app import AGENT_HEADER, MODERN_RESOURCE_NOT_FOUND, RESOURCE_NOT_FOUND
from toolcards.server._idempotency import idempotency_key
from toolcards.server._jsonrpc import INVALID_PARAMS, RequestError
from toolcards.server._results import call_failure
from toolcards.server._tasks import TASKS_CAPABILITY, TASKS_VERSION

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from toolcards.core._approval import Approver
    from toolcards.core._progress import ProgressSink
    from toolcards.server._app import TeamServer
    from toolcards.server._session import AgentSession

__all__ = ["sdk_server"]

logger = logging.getLogger("toolcards.server")

SESSION_HEADER = "mcp-session-id"
ROOTS_WAIT_S = 5.0


def sdk_server(team_server: TeamServer) -> Server[Any]:
    """A ``Server`` answering for ``team_server`` (whose ``listen_handler`` must exist)."""
    import mcp_types
    from mcp.server import Server

    class TeamSdkServer(Server[Any]):
        def get_capabilities(self, *args: Any, **kwargs: Any) -> Any:
            capabilities = super().get_capabilities(*args, **kwargs)
            if kwargs.get("protocol_version") not in _modern_versions():
                # Dropped again by the SDK for versions before 2025-11-25 (not in their schema).
                capabilities.tasks = mcp_types.ServerTasksCapability.model_validate(TASKS_CAPABILITY, by_name=False)
            return capabilities

    handlers = _Handlers(team_server)
    server = TeamSdkServer(
        team_server.config.name,
        version=team_server.server_info["version"],
        instructions=team_server.instructions,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_subscriptions_listen=handlers.listen,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_completion=handlers.complete,
    )
    # Registered here rather than through the constructor, which warns that the 2026-07-28
    # protocol dropped them: handshake clients still use them.
    server.add_request_handler("logging/setLevel", mcp_types.SetLevelRequestParams, handlers.set_level)
    server.add_notification_handler(
        "notifications/roots/list_changed", mcp_types.NotificationParams, handlers.roots_changed
    )
    for method, call in (
        ("tasks/get", handlers.get_task),
        ("tasks/result", handlers.task_result),
        ("tasks/cancel", handlers.cancel_task),
    ):
        server.add_request_handler(method, mcp_types.GetTaskRequestParams, call)
    server.add_request_handler("tasks/list", mcp_types.PaginatedRequestParams, handlers.list_tasks)
    server.middleware.append(handlers.tasks_middleware)
    return server


@functools.cache
def _modern_versions() -> frozenset[str]:
    """The stateless protocol versions (no connection to lease a session to)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


def _model(name: str, wire: dict[str, Any]) -> Any:
    """``wire`` as the ``mcp_types`` result model ``name``: validating fills the fields the
    stateless protocol requires (``resultType``, cache hints) from the model's defaults.

    A lone surrogate in its strings (a file name that is not UTF-8, in a tool's answer) is
    written as its escape (``\\ud800``) first: the SDK encodes the result later, where a string
    UTF-8 cannot carry would fail it with nothing sent, leaving the client waiting.
    """
    import mcp_types

    wire = escape_surrogates(wire)
    if wire.get("resultType") == "input_required":
        return mcp_types.InputRequiredResult.model_validate(wire, by_name=False)
    return getattr(mcp_types, name).model_validate(wire, by_name=False)


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK keeps the connection on the per-request session without a public accessor.
    return getattr(ctx.session, "_connection", None)


def _capabilities(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    capabilities = ctx.session.client_capabilities
    return {} if capabilities is None else capabilities.model_dump(by_alias=True, exclude_none=True)


def _can_elicit(capabilities: Mapping[str, Any]) -> bool:
    elicitation = capabilities.get("elicitation")
    return isinstance(elicitation, Mapping) and ("form" in elicitation or not elicitation)


class _Handlers:
    """The ``on_*`` callbacks: the team server's wire dicts as the SDK's result models."""

    def __init__(self, team_server: TeamServer) -> None:
        self.team = team_server
        self._watched: weakref.WeakSet[Any] = weakref.WeakSet()
        self._roots: weakref.WeakKeyDictionary[Any, asyncio.Future[str | None]] = weakref.WeakKeyDictionary()
        self._sessions: weakref.WeakKeyDictionary[Any, AgentSession] = weakref.WeakKeyDictionary()
        self._conversations: weakref.WeakKeyDictionary[Any, Conversation] = weakref.WeakKeyDictionary()

    def identify(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The agent name a request acts as (see :mod:`toolcards.server._app` for the order)."""
        headers = getattr(ctx.request, "headers", None)
        header = headers.get(AGENT_HEADER) if headers is not None else None
        params = ctx.session.client_params
        return self.team.agent_key(params.client_info.name if params is not None else None, header=header)

    def modern(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        return _connection(ctx) is None or ctx.protocol_version in _modern_versions()

    async def session_for(self, ctx: ServerRequestContext[Any, Any]) -> AgentSession:
        key = self.identify(ctx)
        connection = _connection(ctx)
        if self.modern(ctx):
            return await self.team.open_session(key)
        if connection not in self._watched:
            self._watched.add(connection)
            connection.exit_stack.push_async_callback(self.team.release, connection)
        workspace = await self._workspace(ctx, connection)
        session = await self.team.lease(connection, key, workspace=workspace)
        previous = self._sessions.get(connection)
        self._sessions[connection] = session
        if previous is not None and previous is not session and previous.key.split("\x00")[0] == key:
            await self.team.release(connection, previous)  # its roots changed: the old tree's session goes
        return session

    # -- roots ------------------------------------------------------------------------------

    async def _workspace(self, ctx: ServerRequestContext[Any, Any], connection: Any) -> str | None:
        if self.team.config.roots == "off" or "roots" not in _capabilities(ctx):
            return None
        asked = self._roots.get(connection)
        if asked is None:
            asked = self._roots[connection] = asyncio.ensure_future(self._ask_roots(ctx))
        try:
            return await asyncio.wait_for(asyncio.shield(asked), ROOTS_WAIT_S)
        except TimeoutError:
            logger.warning("the client did not list its roots within %g s; using the configured tree", ROOTS_WAIT_S)
            return None

    async def _ask_roots(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        import mcp_types
        from mcp.shared.message import ServerMessageMetadata

        from toolcards.errors import RetriableError
        from toolcards.fs._locations import mount_workspace
        from toolcards.server._roots import first_local_root

        try:
            result = await ctx.session.send_request(
                mcp_types.ListRootsRequest(),
                mcp_types.ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            root = first_local_root(result.model_dump(by_alias=True, mode="json"))
            return None if root is None else mount_workspace(root[0], label=root[1])
        except (RetriableError, Exception) as exc:
            logger.warning("could not use the client's roots (%s); using the configured tree", exc)
            return None

    async def roots_changed(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        """The client's roots changed: its next request asks for them again."""
        self._roots.pop(_connection(ctx), None)

    # -- tools ------------------------------------------------------------------------------

    async def list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListToolsResult", self.team.tools_page(await self.session_for(ctx), ctx.protocol_version))

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        call_id = None if ctx.request_id is None else str(ctx.request_id)
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get(SESSION_HEADER) if headers is not None else None
        key = idempotency_key(params.meta, session_id, ctx.request_id)
        try:
            session = await self.session_for(ctx)
            wire = await self.team.call(
                session,
                params.name,
                params.arguments,
                call_id=call_id,
                idempotency_key=key,
                progress=self._progress(ctx, params),
                approver=self._approver(ctx, session, params),
                conversation=self._conversation(ctx),
            )
        except Exception as exc:
            wire = call_failure(params.name, exc)
        return _model("CallToolResult", wire)

    def _conversation(self, ctx: ServerRequestContext[Any, Any]) -> Conversation | None:
        """The conversation of a handshake connection, one for all its calls (what one client
        read is not what another client of the same name has seen); ``None`` on the stateless
        protocol, where each request is one of its own."""
        if self.modern(ctx):
            return None
        connection = _connection(ctx)
        conversation = self._conversations.get(connection)
        if conversation is None:
            conversation = self._conversations[connection] = begin_conversation()
        return conversation

    def _progress(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ProgressSink | None:
        if not params.meta or params.meta.get("progress_token") is None:
            return None
        loop = asyncio.get_running_loop()
        session = ctx.session

        def send(progress: float, total: float | None, message: str | None) -> None:
            loop.call_soon_threadsafe(_spawn, session.report_progress(progress, total, message))

        return send

    def _approver(self, ctx: ServerRequestContext[Any, Any], session: AgentSession, params: Any) -> Approver | None:
        if self.modern(ctx):
            if params.input_responses is not None or params.request_state is not None:
                answer = (params.input_responses or {}).get("approval")
                dumped = answer.model_dump(by_alias=True) if answer is not None else None
                return self.team.approvals.answered(session.key, params.request_state, dumped)
            return self.team.approvals.asker(session.key) if _can_elicit(_capabilities(ctx)) else None
        if not _can_elicit(_capabilities(ctx)):
            return None
        from toolcards.server._approval import AskingApprover

        async def ask(request: dict[str, Any]) -> dict[str, Any]:
            import mcp_types
            from mcp.shared.message import ServerMessageMetadata

            form = mcp_types.ElicitRequestFormParams.model_validate(request, by_name=False)
            result = await ctx.session.send_request(
                mcp_types.ElicitRequest(params=form),
                mcp_types.ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json")
            return dumped

        return AskingApprover(ask, asyncio.get_running_loop(), timeout_s=self.team.config.approval_timeout_s)

    # -- tasks (2025-11-25) -----------------------------------------------------------------

    async def tasks_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A ``tools/call`` asking for a task on 2025-11-25 starts one (the SDK refuses tasks)."""
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping) or params.get("task") is None:
            return await call_next(ctx)
        if ctx.protocol_version != TASKS_VERSION:
            return await call_next(ctx)  # an older client: the SDK ignores the field
        import mcp_types
        from mcp.shared.exceptions import MCPError

        task = params["task"]
        request = mcp_types.CallToolRequestParams.model_validate(dict(params), by_name=False)
        session = await self.session_for(ctx)
        tool = self.team.find_tool(session, request.name)
        if tool is None or not tool.hints.long_running or not isinstance(task, Mapping):
            raise MCPError(
                code=INVALID_PARAMS, message="Invalid request parameters", data=f"{request.name} does not run as a task"
            )
        plain = request.model_copy(update={"task": None})
        try:
            return self.team.tasks.start(
                _connection(ctx), functools.partial(self._task_call, ctx, plain), task.get("ttl")
            )
        except RequestError as exc:
            raise MCPError(code=exc.code, message=exc.message, data=exc.data) from exc

    async def _task_call(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        result = await self.call_tool(ctx, params)
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    async def get_task(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        with _as_mcp_error():
            return self.team.tasks.get(_connection(ctx), params.task_id)

    async def task_result(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        with _as_mcp_error():
            return await self.team.tasks.result(_connection(ctx), params.task_id)

    async def cancel_task(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        with _as_mcp_error():
            return self.team.tasks.cancel(_connection(ctx), params.task_id)

    async def list_tasks(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return self.team.tasks.list(_connection(ctx))

    # -- resources, prompts, completion, logging --------------------------------------------

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListResourcesResult", self.team.resources_page(await self.session_for(ctx)))

    async def list_templates(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListResourceTemplatesResult", self.team.templates_page(await self.session_for(ctx)))

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        session = await self.session_for(ctx)
        missing = MODERN_RESOURCE_NOT_FOUND if self.modern(ctx) else RESOURCE_NOT_FOUND
        with _as_mcp_error():
            return _model(
                "ReadResourceResult", await self.team.read_resource(session, str(params.uri), missing=missing)
            )

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return _model("ListPromptsResult", self.team.prompts_page(await self.session_for(ctx)))

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        session = await self.session_for(ctx)
        with _as_mcp_error():
            return _model("GetPromptResult", await self.team.get_prompt(session, params.name))

    async def complete(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        session = await self.session_for(ctx)
        with _as_mcp_error():
            wire = await self.team.complete(session, params.model_dump(by_alias=True, mode="json", exclude_none=True))
            return _model("CompleteResult", wire)

    async def set_level(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        return {}

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


_background: set[asyncio.Task[Any]] = set()


def _spawn(coroutine: Any) -> None:
    """Run a notification's send on the loop, kept alive until it is sent."""
    task = asyncio.ensure_future(coroutine)
    _background.add(task)
    task.add_done_callback(_background.discard)


@contextlib.contextmanager
def _as_mcp_error() -> Iterator[None]:
    """A :class:`RequestError` as the SDK's ``MCPError`` (the same code, message and data)."""
    try:
        yield
    except RequestError as exc:
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=exc.code, message=exc.message, data=exc.data) from exc
