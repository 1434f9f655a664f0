"""One MCP client connection served without the SDK: the handshake, the methods, the agent.

:class:`McpConnection` speaks MCP's handshake protocol (versions 2024-11-05 to 2025-11-25,
which share one set of message shapes) over a :class:`~toolcards.server.jsonrpc.Dispatcher`,
and answers every method from the protocol-independent
:class:`~toolcards.server.app.TeamServer`, so its results are the SDK server's:

* ``initialize``: the client's version if this server speaks it, else the newest it speaks
  (the client then decides whether to go on); the connection's agent is the fixed
  ``--agent``, else the client's ``clientInfo.name``. Until then only ``ping`` is served
  (anything else: ``-32602``, as the SDK answers);
* ``tools/list``, ``tools/call``, ``resources/list``, ``resources/read``,
  ``resources/subscribe``, ``resources/unsubscribe``, ``prompts/list``, ``prompts/get``,
  ``ping``; any other method is ``-32601``;
* ``server/discover`` (the 2026-07-28 stateless protocol's probe) is ``-32601`` too: the
  SDK client then falls back to ``initialize``, one round trip later. A request carrying
  that protocol's ``_meta`` envelope is refused with ``-32600``, as the SDK refuses it on a
  handshake connection (a client that opens with one is handed to the SDK's server by the
  transport: :mod:`toolcards.server.stateless_stdio`);
* ``notifications/resources/updated`` for the subscribed resources when the team changes
  them;
* a ``tools/call <tool>`` server span around each call when something traces
  (:mod:`toolcards.server.call_span`), as the SDK's server makes.

The agent's session is leased for the connection: it closes when the connection does
(:meth:`McpConnection.aclose`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolcards.server.call_span import call_span, mark_tool_error
from toolcards.server.idempotency import idempotency_key
from toolcards.server.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Dispatcher,
    RequestError,
    RequestId,
)

if TYPE_CHECKING:
    from toolcards.server.app import TeamServer
    from toolcards.server.session import AgentSession

__all__ = [
    "DISCOVER",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "MODERN_VERSION_KEY",
    "McpConnection",
    "has_modern_envelope",
]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions reached through ``initialize`` (the SDK's
``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``; a test keeps the two equal)."""
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
DISCOVER = "server/discover"
MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
"""The ``_meta`` key only the stateless protocol's per-request envelope carries."""

Params = Mapping[str, Any]
Answer = dict[str, Any] | Awaitable[dict[str, Any]]


class McpConnection:
    """One client of ``team_server`` on the handshake protocol; frames out through ``write``.

    :meth:`feed` it each frame the client sends, and :meth:`aclose` it when the client is
    gone (this releases its agent). Use it from one event loop.
    """

    def __init__(self, team_server: TeamServer, write: Callable[[bytes], None]) -> None:
        self.team_server = team_server
        self.dispatcher = Dispatcher(write, self._request, self._notification)
        self.protocol_version: str | None = None
        """The negotiated version; ``None`` until ``initialize``."""
        self.client_name: str | None = None
        """``clientInfo.name`` from ``initialize``."""
        self._session: AgentSession | None = None
        self._methods: dict[str, Callable[[Params, RequestId], Answer]] = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
        }

    def feed(self, frame: bytes | str) -> None:
        """Handle one frame from the client."""
        self.dispatcher.feed(frame)

    async def aclose(self) -> None:
        """The client is gone: stop its running requests and release its agent."""
        await self.dispatcher.aclose()
        await self.team_server.release(self)

    async def send_resource_updated(self, uri: str) -> None:
        """Tell the client that resource ``uri`` changed (it subscribed to it)."""
        self.dispatcher.notify("notifications/resources/updated", {"uri": uri})

    # -- dispatch -------------------------------------------------------------------------

    def _request(self, method: str, params: Params | None, request_id: RequestId) -> Answer:
        if method == "ping":
            return {}
        if method == "initialize":
            return self._initialize(params or {})
        if method == DISCOVER:  # the stateless protocol's probe: not served, so the client falls back
            raise RequestError(METHOD_NOT_FOUND, "Method not found", method)
        if params and has_modern_envelope(params):
            raise RequestError(
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; "
                "requests carrying the 2026-07-28 envelope are not accepted on it",
            )
        handler = self._methods.get(method)
        if handler is None:
            raise RequestError(METHOD_NOT_FOUND, "Method not found", method)
        if self.protocol_version is None:
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "send initialize first")
        return handler(params or {}, request_id)

    def _notification(self, method: str, params: Params | None) -> None:
        # notifications/initialized needs nothing: requests are served once initialize is answered.
        return None

    def _initialize(self, params: Params) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        client = params.get("clientInfo")
        if (
            not isinstance(requested, str)
            or not isinstance(params.get("capabilities"), dict)
            or not isinstance(client, dict)
            or not isinstance(client.get("name"), str)
            or not isinstance(client.get("version"), str)
        ):
            raise _invalid("initialize needs protocolVersion, capabilities and clientInfo {name, version}")
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        if client["name"] != self.client_name:
            self._session = None  # a new name is a new agent
        self.protocol_version, self.client_name = version, client["name"]
        team = self.team_server
        return {
            "protocolVersion": version,
            "capabilities": team.capabilities(),
            "serverInfo": team.server_info,
            "instructions": team.instructions,
        }

    # -- the agent ------------------------------------------------------------------------

    def _open_session(self) -> AgentSession | None:
        session = self._session
        return session if session is not None and not session.closed else None

    async def _lease(self) -> AgentSession:
        session = self._open_session()
        if session is None:
            key = self.team_server.agent_key(self.client_name)
            session = self._session = await self.team_server.lease(self, key)
        return session

    def _with_session(self, render: Callable[[AgentSession], dict[str, Any]]) -> Answer:
        session = self._open_session()
        if session is not None:
            return render(session)  # answered at once: no task, no thread

        async def leased() -> dict[str, Any]:
            return render(await self._lease())

        return leased()

    # -- methods --------------------------------------------------------------------------

    def _list_tools(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.tools_page)

    def _call_tool(self, params: Params, request_id: RequestId) -> Answer:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
            raise _invalid("tools/call needs name (a string) and arguments (an object)")
        return self._call(name, arguments, str(request_id), params.get("_meta"))

    async def _call(self, name: str, arguments: dict[str, Any] | None, call_id: str, meta: Any) -> dict[str, Any]:
        assert self.protocol_version is not None
        with call_span(name, call_id, self.protocol_version, meta) as span:
            session = await self._lease()
            key = idempotency_key(meta, None, call_id)
            result = await self.team_server.call(session, name, arguments, call_id=call_id, idempotency_key=key)
            mark_tool_error(span, result)
            return result

    def _list_resources(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.resources_page)

    def _list_prompts(self, params: Params, request_id: RequestId) -> Answer:
        _cursor(params)
        return self._with_session(self.team_server.prompts_page)

    def _read_resource(self, params: Params, request_id: RequestId) -> Answer:
        return self._read(_uri(params, "resources/read"))

    async def _read(self, uri: str) -> dict[str, Any]:
        return await self.team_server.read_resource(await self._lease(), uri)

    def _get_prompt(self, params: Params, request_id: RequestId) -> Answer:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
            raise _invalid("prompts/get needs name (a string)")
        return self._prompt(name)

    async def _prompt(self, name: str) -> dict[str, Any]:
        return await self.team_server.get_prompt(await self._lease(), name)

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


def has_modern_envelope(params: Params) -> bool:
    """Whether a request's ``params`` carry the stateless protocol's per-request envelope."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and MODERN_VERSION_KEY in meta


def _invalid(reason: str) -> RequestError:
    return RequestError(INVALID_PARAMS, "Invalid request parameters", reason)


def _cursor(params: Params) -> None:
    if not isinstance(params.get("cursor"), (str, type(None))):
        raise _invalid("cursor must be a string")


def _uri(params: Params, method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise _invalid(f"{method} needs uri (a string)")
    return uri
