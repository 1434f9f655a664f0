"""One MCP client connection served without the SDK: both protocol eras, the methods, the agent.

:class:`McpConnection` speaks MCP over a :class:`~toolcards.server._jsonrpc.Dispatcher` and
answers every method from the protocol-independent
:class:`~toolcards.server._app.TeamServer`, so its results are the SDK server's. The
client's first request decides the era, once:

* **the handshake protocol** (2024-11-05 to 2025-11-25): ``initialize`` with the client's
  version if this server speaks it, else the newest it speaks; the connection's agent is
  the fixed ``--agent``, else ``clientInfo.name``. Until then only ``ping`` is served
  (anything else: ``-32602``, as the SDK answers). A request carrying the stateless
  envelope is then refused with ``-32600``, and ``server/discover`` is ``-32601``;
* **the stateless 2026-07-28 protocol** (:mod:`toolcards.server._modern`): ``server/discover``
  and requests carrying their own envelope, each naming its client; ``initialize`` is then
  refused with ``-32022``.

Methods: ``tools/list``, ``tools/call``, ``resources/list``, ``resources/templates/list``,
``resources/read``, ``prompts/list``, ``prompts/get``, ``completion/complete``; on the
handshake protocol also ``resources/subscribe``, ``resources/unsubscribe``,
``logging/setLevel``, ``ping`` and, on 2025-11-25, ``tasks/get``, ``tasks/result``,
``tasks/cancel``, ``tasks/list`` (:mod:`toolcards.server._tasks`); on the stateless one
``subscriptions/listen``. Anything else is ``-32601``.

A request whose parameters hold a string that is not text (a lone UTF-16 surrogate, JSON's
``"\\ud800"``: :mod:`toolcards.core._surrogates`) is refused with ``-32602`` naming where
it is, before anything uses them; except a ``tools/call``'s ``arguments``, which the tool
refuses itself (an ``isError`` result naming the argument, as for any invalid argument).

A ``tools/call``:

* with ``_meta.progressToken`` sends ``notifications/progress`` while it runs;
* cancelled (``notifications/cancelled``, ``tasks/cancel``) stops its work and is never
  answered;
* of a tool that ``requires_approval`` asks the user where the client declared
  ``elicitation`` (:mod:`toolcards.server._approval`);
* on 2025-11-25 with ``task`` runs as a task, for a tool whose card marks it long running;
* has a ``tools/call <tool>`` server span when something traces
  (:mod:`toolcards.server._call_span`), as the SDK's server makes;
* runs in the connection's conversation (:mod:`toolcards.core._conversation`): two clients
  acting as one member are told apart by what each has seen of the workspace.

Resources updated by the team are notified to ``resources/subscribe``-rs and to
``subscriptions/listen`` streams. With ``roots`` configured, the client's first root is its
agent's workspace (:mod:`toolcards.server._roots`), asked once it is initialized and again
when it says its roots changed.

On the handshake protocol the agent's session is leased for the connection: it closes when
the connection does (:meth:`McpConnection.aclose`); a stateless client's closes when idle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolcards.core._conversation import begin_conversation
from toolcards.core._surrogates import find_surrogate
from toolcards.server._call_span import call_span, mark_tool_error
from toolcards.server._idempotency import idempotency_key
from toolcards.server._jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Dispatcher,
    RequestError,
    RequestId,
)
from toolcards.server._modern import (
    MODERN_METHODS,
    MODERN_VERSION,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    Envelope,
    envelope,
    modern_result,
)

if TYPE_CHECKING:
    from toolcards.core._approval import Approver
    from toolcards.core._progress import ProgressSink
    from toolcards.server._app import TeamServer
    from toolcards.server._session import AgentSession

__all__ = [
    "DISCOVER",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "MODERN_VERSION_KEY",
    "McpConnection",
    "has_modern_envelope",
]

logger = logging.getLogger("toolcards.server")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions reached through ``initialize`` (the SDK's
``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``; a test keeps the two equal)."""
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
DISCOVER = "server/discover"
MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
"""The ``_meta`` key only the stateless protocol's per-request envelope carries."""
LOGGING_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
ROOTS_WAIT_S = 5.0
"""How long the first request waits for the client's roots before using the configured tree."""

Params = Mapping[str, Any]
Answer = dict[str, Any] | Awaitable[dict[str, Any]]


class McpConnection:
    """One client of ``team_server``; frames out through ``write``.

    :meth:`feed` it each frame the client sends, and :meth:`aclose` it when the client is
    gone (this releases its agent). Use it from one event loop.
    """

    def __init__(self, team_server: TeamServer, write: Callable[[bytes], None]) -> None:
        self.team_server = team_server
        self.dispatcher = Dispatcher(write, self._request, self._notification)
        self.protocol_version: str | None = None
        """The negotiated handshake version; ``None`` until ``initialize``."""
        self.modern = False
        """Whether the connection serves the stateless 2026-07-28 protocol."""
        self.client_name: str | None = None
        """``clientInfo.name`` from ``initialize``."""
        self.client_capabilities: Mapping[str, Any] = {}
        """The capabilities the client declared in ``initialize``."""
        self.log_level: str | None = None
        """The level the client set with ``logging/setLevel``."""
        self.conversation = begin_conversation()
        """The conversation every call of this client belongs to, begun when it connected."""
        self._session: AgentSession | None = None
        self._workspace: str | None = None
        self._roots_ready: asyncio.Event | None = None
        self._roots_task: asyncio.Task[None] | None = None
        self._ending: asyncio.Event | None = None  # set when the client's input ended
        self._handshake: dict[str, Callable[[Params, RequestId], Answer]] = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
        }
        self._tasks: dict[str, Callable[[Params, RequestId], Answer]] = {
            "tasks/get": self._get_task,
            "tasks/result": self._task_result,
            "tasks/cancel": self._cancel_task,
            "tasks/list": self._list_tasks,
        }

    def feed(self, frame: bytes | str) -> None:
        """Handle one frame from the client."""
        self.dispatcher.feed(frame)

    async def finish(self) -> None:
        """The client sent its last frame: end its listen streams (each gets its final result)
        and wait until every other request it sent was answered."""
        self._end_streams().set()
        await self.dispatcher.drain()

    def _end_streams(self) -> asyncio.Event:
        if self._ending is None:
            self._ending = asyncio.Event()
        return self._ending

    async def aclose(self, reason: str | None = None) -> None:
        """The client is gone, or the server stops: stop its running requests and release its
        agent. With ``reason`` (the server stops; the client still listens), each request
        stopped is answered with an error saying so."""
        if self._roots_task is not None:
            self._roots_task.cancel()
        await self.dispatcher.aclose(reason)
        await self.team_server.release(self)

    async def send_resource_updated(self, uri: str) -> None:
        """Tell the client that resource ``uri`` changed (it subscribed to it)."""
        self.dispatcher.notify("notifications/resources/updated", {"uri": uri})

    def notify_task_status(self, task: dict[str, Any]) -> None:
        """Tell the client that one of its tasks changed status."""
        self.dispatcher.notify("notifications/tasks/status", task)

    # -- dispatch -------------------------------------------------------------------------

    def _request(self, method: str, params: Params | None, request_id: RequestId) -> Answer:
        if params:
            _refuse_non_text(method, params)
        if method == DISCOVER or (params and has_modern_envelope(params) and method != "initialize"):
            return self._modern_request(method, params, request_id)
        if self.modern:
            if method == "initialize":
                raise RequestError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
                    {"supported": [MODERN_VERSION], "requested": (params or {}).get("protocolVersion")},
                )
            envelope(params)  # raises: a request of this connection must carry its envelope
            raise RequestError(INVALID_PARAMS, "Invalid request parameters")
        if method == "ping":
            return {}
        if method == "initialize":
            return self._initialize(params or {})
        handler = self._handshake.get(method)
        if handler is None and self.protocol_version == "2025-11-25":
            handler = self._tasks.get(method)
        if handler is None:
            raise RequestError(METHOD_NOT_FOUND, "Method not found", method)
        if self.protocol_version is None:
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "send initialize first")
        return handler(params or {}, request_id)

    def _notification(self, method: str, params: Params | None) -> None:
        # The roots are asked once the client is initialized, and again when they change.
        if method in ("notifications/initialized", "notifications/roots/list_changed") and self._roots_ready:
            self._fetch_roots()

    def _initialize(self, params: Params) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        client = params.get("clientInfo")
        capabilities = params.get("capabilities")
        if (
            not isinstance(requested, str)
            or not isinstance(capabilities, dict)
            or not isinstance(client, dict)
            or not isinstance(client.get("name"), str)
            or not isinstance(client.get("version"), str)
        ):
            raise _invalid("initialize needs protocolVersion, capabilities and clientInfo {name, version}")
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        if client["name"] != self.client_name:
            self._session = None  # a new name is a new agent
        self.protocol_version, self.client_name = version, client["name"]
        self.client_capabilities = capabilities
        team = self.team_server
        if team.config.roots != "off" and isinstance(capabilities.get("roots"), dict) and self._roots_ready is None:
            self._roots_ready = asyncio.Event()
        return {
            "protocolVersion": version,
            "capabilities": team.capabilities(version),
            "serverInfo": team.server_info,
            "instructions": team.instructions,
        }

    # -- the stateless protocol -----------------------------------------------------------

    def _modern_request(self, method: str, params: Params | None, request_id: RequestId) -> Answer:
        if self.protocol_version is not None:
            if method == DISCOVER:
                raise RequestError(METHOD_NOT_FOUND, "Method not found", method)
            raise RequestError(
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; "
                "requests carrying the 2026-07-28 envelope are not accepted on it",
            )
        client = envelope(params)
        self.modern = True
        if method not in MODERN_METHODS:
            raise RequestError(METHOD_NOT_FOUND, "Method not found", method)
        team = self.team_server
        if method == DISCOVER:
            return self._modern(
                method,
                {
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": team.capabilities(MODERN_VERSION),
                    "instructions": team.instructions,
                },
            )
        return self._modern(method, self._modern_method(method, params or {}, request_id, client))

    def _modern(self, method: str, answer: Answer) -> Answer:
        server_info = self.team_server.server_info
        if isinstance(answer, dict):
            return modern_result(method, answer, server_info)

        async def wrapped() -> dict[str, Any]:
            return modern_result(method, await answer, server_info)

        return wrapped()

    async def _modern_method(
        self, method: str, params: Params, request_id: RequestId, client: Envelope
    ) -> dict[str, Any]:
        team = self.team_server
        session = await team.open_session(team.agent_key(client.client_name))
        if method == "tools/list":
            _cursor(params)
            return team.tools_page(session, MODERN_VERSION)
        if method == "tools/call":
            name, arguments = _call_params(params)
            meta = params.get("_meta")
            approver: Approver | None = None
            if "inputResponses" in params or "requestState" in params:
                responses = params.get("inputResponses")
                answer = responses.get("approval") if isinstance(responses, Mapping) else None
                approver = team.approvals.answered(session.key, params.get("requestState"), answer)
            elif _can_elicit(client.capabilities):
                approver = team.approvals.asker(session.key)
            call_id = str(request_id)
            return await self._run_call(session, name, arguments, call_id, meta, MODERN_VERSION, approver)
        if method == "resources/list":
            _cursor(params)
            return team.resources_page(session)
        if method == "resources/templates/list":
            _cursor(params)
            return team.templates_page(session)
        if method == "resources/read":
            return await team.read_resource(session, _uri(params, method), missing=INVALID_PARAMS)
        if method == "prompts/list":
            _cursor(params)
            return team.prompts_page(session)
        if method == "prompts/get":
            name, _ = _prompt_params(params)
            return await team.get_prompt(session, name)
        if method == "completion/complete":
            return await team.complete(session, params)
        assert method == "subscriptions/listen"
        return await self._listen(params, request_id)

    async def _listen(self, params: Params, request_id: RequestId) -> dict[str, Any]:
        notifications = params.get("notifications")
        wanted = notifications if isinstance(notifications, Mapping) else {}
        uris = [uri for uri in wanted.get("resourceSubscriptions") or () if isinstance(uri, str)]
        honored: dict[str, Any] = {
            key: True
            for key in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
            if wanted.get(key) is True
        }
        if uris:
            honored["resourceSubscriptions"] = uris
        meta = {SUBSCRIPTION_ID_KEY: request_id}
        stream = _ListenStream(self.dispatcher, meta)
        for uri in uris:
            self.team_server.subscribe(stream, uri)
        self.dispatcher.notify("notifications/subscriptions/acknowledged", {"notifications": honored, "_meta": meta})
        try:
            await self._end_streams().wait()  # until the client cancels it or its input ends
        finally:
            for uri in uris:
                self.team_server.unsubscribe(stream, uri)
        return {"_meta": meta}

    # -- the agent ------------------------------------------------------------------------

    def _open_session(self) -> AgentSession | None:
        session = self._session
        return session if session is not None and not session.closed else None

    async def _lease(self) -> AgentSession:
        session = self._open_session()
        if session is None:
            if self._roots_ready is not None and not self._roots_ready.is_set():
                try:
                    await asyncio.wait_for(self._roots_ready.wait(), ROOTS_WAIT_S)
                except TimeoutError:
                    logger.warning(
                        "the client did not list its roots within %g s; using the configured tree", ROOTS_WAIT_S
                    )
            key = self.team_server.agent_key(self.client_name)
            session = self._session = await self.team_server.lease(self, key, workspace=self._workspace)
        return session

    def _with_session(self, render: Callable[[AgentSession], dict[str, Any]]) -> Answer:
        session = self._open_session()
        if session is not None:
            return render(session)  # answered at once: no task, no thread

        async def leased() -> dict[str, Any]:
            return render(await self._lease())

        return leased()

    def _fetch_roots(self) -> None:
        if self._roots_task is not None and not self._roots_task.done():
            self._roots_task.cancel()
        self._roots_task = asyncio.ensure_future(self._roots())

    async def _roots(self) -> None:
        from toolcards.errors import RetriableError
        from toolcards.fs._locations import mount_workspace
        from toolcards.server._roots import first_local_root

        assert self._roots_ready is not None
        workspace = None
        try:
            root = first_local_root(await self.dispatcher.request("roots/list"))
            if root is not None:
                workspace = mount_workspace(root[0], label=root[1])
        except (RequestError, RetriableError) as exc:
            logger.warning("could not use the client's roots (%s); using the configured tree", exc)
        finally:
            changed = workspace != self._workspace
            self._workspace = workspace
            self._roots_ready.set()
        old = self._open_session()
        if changed and old is not None:
            self._session = None  # the next request opens the agent's session on the new tree
            await self.team_server.release(self, old)

    # -- methods --------------------------------------------------------------------------

    def _list_tools(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        version = self.protocol_version or LATEST_HANDSHAKE_VERSION
        return self._with_session(lambda session: self.team_server.tools_page(session, version))

    def _call_tool(self, params: Params, request_id: RequestId) -> Answer:
        name, arguments = _call_params(params)
        task = params.get("task")
        if task is not None and self.protocol_version == "2025-11-25":
            if not isinstance(task, Mapping):
                raise _invalid("task must be an object")
            return self._call_as_task(name, arguments, str(request_id), params.get("_meta"), task)
        return self._call(name, arguments, str(request_id), params.get("_meta"))

    async def _call(self, name: str, arguments: dict[str, Any] | None, call_id: str, meta: Any) -> dict[str, Any]:
        session = await self._lease()
        approver = self._asking_approver() if _can_elicit(self.client_capabilities) else None
        assert self.protocol_version is not None
        return await self._run_call(session, name, arguments, call_id, meta, self.protocol_version, approver)

    async def _call_as_task(
        self, name: str, arguments: dict[str, Any] | None, call_id: str, meta: Any, task: Mapping[str, Any]
    ) -> dict[str, Any]:
        team = self.team_server
        session = await self._lease()
        tool = team.find_tool(session, name)
        if tool is None or not tool.hints.long_running:
            raise _invalid(f"{name} does not run as a task; call it without task")

        def run() -> Awaitable[dict[str, Any]]:
            return self._call(name, arguments, call_id, meta)

        if team.tasks.on_status is None:
            team.tasks.on_status = _notify_task_status
        return team.tasks.start(self, run, task.get("ttl"))

    async def _run_call(
        self,
        session: AgentSession,
        name: str,
        arguments: dict[str, Any] | None,
        call_id: str,
        meta: Any,
        version: str,
        approver: Approver | None,
    ) -> dict[str, Any]:
        with call_span(name, call_id, version, meta) as span:
            key = idempotency_key(meta, None, call_id)
            result = await self.team_server.call(
                session,
                name,
                arguments,
                call_id=call_id,
                idempotency_key=key,
                progress=self._progress(meta),
                approver=approver,
                conversation=self.conversation,
            )
            mark_tool_error(span, result)
            return result

    def _progress(self, meta: Any) -> ProgressSink | None:
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        if not isinstance(token, (str, int)) or isinstance(token, bool):
            return None
        loop = asyncio.get_running_loop()
        notify = self.dispatcher.notify

        def send(progress: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            loop.call_soon_threadsafe(notify, "notifications/progress", params)

        return send

    def _asking_approver(self) -> Approver:
        from toolcards.server._approval import AskingApprover

        async def ask(params: dict[str, Any]) -> dict[str, Any]:
            return await self.dispatcher.request("elicitation/create", params)

        timeout_s = self.team_server.config.approval_timeout_s
        return AskingApprover(ask, asyncio.get_running_loop(), timeout_s=timeout_s)

    def _list_resources(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.resources_page)

    def _list_templates(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.templates_page)

    def _list_prompts(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.prompts_page)

    def _read_resource(self, params: Params, request_id: RequestId) -> Answer:
        return self._read(_uri(params, "resources/read"))

    async def _read(self, uri: str) -> dict[str, Any]:
        return await self.team_server.read_resource(await self._lease(), uri)

    def _get_prompt(self, params: Params, request_id: RequestId) -> Answer:
        name, _ = _prompt_params(params)
        return self._prompt(name)

    async def _prompt(self, name: str) -> dict[str, Any]:
        return await self.team_server.get_prompt(await self._lease(), name)

    def _complete(self, params: Params, request_id: RequestId) -> Answer:
        async def completed() -> dict[str, Any]:
            return await self.team_server.complete(await self._lease(), params)

        return completed()

    def _set_level(self, params: Params, request_id: RequestId) -> Answer:
        level = params.get("level")
        if level not in LOGGING_LEVELS:
            raise _invalid(f"level must be one of {', '.join(LOGGING_LEVELS)}")
        self.log_level = level
        return {}

    def _subscribe(self, params: Params, request_id: RequestId) -> Answer:
        uri = _uri(params, "resources/subscribe")

        async def subscribed() -> dict[str, Any]:
            await self._lease()
            self.team_server.subscribe(self, uri)
            return {}

        return subscribed()

    def _unsubscribe(self, params: Params, request_id: RequestId) -> Answer:
        self.team_server.unsubscribe(self, _uri(params, "resources/unsubscribe"))
        return {}

    # -- tasks (2025-11-25) ----------------------------------------------------------------

    def _get_task(self, params: Params, request_id: RequestId) -> Answer:
        return self.team_server.tasks.get(self, params.get("taskId"))

    def _task_result(self, params: Params, request_id: RequestId) -> Answer:
        return self.team_server.tasks.result(self, params.get("taskId"))

    def _cancel_task(self, params: Params, request_id: RequestId) -> Answer:
        return self.team_server.tasks.cancel(self, params.get("taskId"))

    def _list_tasks(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self.team_server.tasks.list(self)


class _ListenStream:
    """A ``subscriptions/listen`` stream, as the resource notifier's subscriber."""

    def __init__(self, dispatcher: Dispatcher, meta: dict[str, Any]) -> None:
        self.dispatcher = dispatcher
        self.meta = meta

    async def send_resource_updated(self, uri: str) -> None:
        self.dispatcher.notify("notifications/resources/updated", {"uri": uri, "_meta": self.meta})


def _notify_task_status(owner: Any, task: dict[str, Any]) -> None:
    notify = getattr(owner, "notify_task_status", None)
    if notify is not None:
        notify(task)


def _can_elicit(capabilities: Mapping[str, Any]) -> bool:
    """Whether a client's capabilities let the server ask its user in a form."""
    elicitation = capabilities.get("elicitation")
    return isinstance(elicitation, Mapping) and ("form" in elicitation or not elicitation)


def has_modern_envelope(params: Params) -> bool:
    """Whether a request's ``params`` carry the stateless protocol's per-request envelope."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and MODERN_VERSION_KEY in meta


def _refuse_non_text(method: str, params: Params) -> None:
    """Refuse ``params`` holding a string that is not text (-32602), but for a tool call's
    arguments: the pipeline refuses those, naming the argument, as a result the model reads."""
    if method == "tools/call" and "arguments" in params:
        params = {key: value for key, value in params.items() if key != "arguments"}
    found = find_surrogate(params)
    if found is not None:
        raise _invalid(f"{found.describe('params')}: send the text as UTF-8")


def _invalid(reason: str) -> RequestError:
    return RequestError(INVALID_PARAMS, "Invalid request parameters", reason)


def _cursor(params: Params) -> None:
    cursor = params.get("cursor")
    if cursor is not None:
        # Every list this server gives is one page, so no cursor was ever handed out.
        if not isinstance(cursor, str):
            raise _invalid("cursor must be a string")
        raise _invalid(f"cursor {cursor[:100]!r} was not given by this server: its lists come in one page")


def _uri(params: Params, method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise _invalid(f"{method} needs uri (a string)")
    return uri


def _call_params(params: Params) -> tuple[str, dict[str, Any] | None]:
    name = params.get("name")
    arguments = params.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
        raise _invalid("tools/call needs name (a string) and arguments (an object)")
    return name, arguments


def _prompt_params(params: Params) -> tuple[str, dict[str, Any] | None]:
    name = params.get("name")
    arguments = params.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
        raise _invalid("prompts/get needs name (a string)")
    return name, arguments
