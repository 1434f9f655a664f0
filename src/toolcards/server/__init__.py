"""Serving a team's cards over MCP (stdio or streamable HTTP).

::

    from toolcards.server import TeamServer, load_config, serve_stdio

    team = TeamServer(load_config("team.yaml"))
    await serve_stdio(team)          # or serve_http(team, port=8765): a token is generated
    await team.aclose()              # agents leave, actors flush their state

* :mod:`~toolcards.server._config` — the team config file (``team_id``, ``cards``, facade options);
* :mod:`~toolcards.server._app` — :class:`TeamServer`: the team, its sessions, tools through
  the one pipeline, errors as ``isError`` results, every answer as a wire dict;
* :mod:`~toolcards.server._sdk` — the SDK's low-level ``Server`` over a ``TeamServer`` (HTTP,
  in-process clients);
* :mod:`~toolcards.server._jsonrpc`, :mod:`~toolcards.server._connection` — JSON-RPC framing and
  both MCP protocol eras without the SDK (stdio; :mod:`~toolcards.server._modern` the
  stateless 2026-07-28 rules), :mod:`~toolcards.server._call_span` its tracing span;
* :mod:`~toolcards.server._session` — one agent of the team per client;
* :mod:`~toolcards.server._facade` — ``search_tools`` / ``describe_tool`` / ``call_tool``;
* :mod:`~toolcards.server._resources` — system prompts as resources and prompts, with
  change notifications;
* :mod:`~toolcards.server._results` — return values as MCP content;
* :mod:`~toolcards.server._definitions` — tools as MCP tool definitions (title, annotations,
  output schema), :mod:`~toolcards.server._templates` resource templates and completion,
  :mod:`~toolcards.server._approval` approval by asking the client's user,
  :mod:`~toolcards.server._tasks` long calls as tasks, :mod:`~toolcards.server._roots` the
  client's roots as its workspace;
* :mod:`~toolcards.server._stdio`, :mod:`~toolcards.server._http` — transports; over HTTP a
  token on every request (generated unless given), host checks;
* :mod:`~toolcards.server._client_limits`, :mod:`~toolcards.server._limited_protocol` — how
  slowly and how much an HTTP client may send, and the uvicorn protocol that holds it to that.

This package is an adapter: it imports the core and the actor runtime, never a domain
package (cards come from the config). ``mcp`` and ``uvicorn`` load when the SDK server is
built (HTTP, in-process clients); serving stdio never loads them.
"""

from __future__ import annotations

from toolcards.server._app import AGENT_HEADER, TeamServer
from toolcards.server._client_limits import ClientLimits
from toolcards.server._config import DEFAULT_TEAM_CARDS, ServeConfig, default_config, load_config
from toolcards.server._facade import BM25Index, ToolCatalog
from toolcards.server._http import TokenAuth, endpoint_url, http_app, listen, serve_http
from toolcards.server._session import AgentSession, AgentSessions, SessionAgent
from toolcards.server._stdio import serve_stdio

__all__ = [
    "AGENT_HEADER",
    "DEFAULT_TEAM_CARDS",
    "AgentSession",
    "AgentSessions",
    "BM25Index",
    "ClientLimits",
    "ServeConfig",
    "SessionAgent",
    "TeamServer",
    "TokenAuth",
    "ToolCatalog",
    "default_config",
    "endpoint_url",
    "http_app",
    "listen",
    "load_config",
    "serve_http",
    "serve_stdio",
]
