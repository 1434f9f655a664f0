"""Build pydantic-ai toolsets that consume external MCP servers.

:func:`build_toolset` turns a connection config or an in-process server into a
``pydantic_ai.mcp.MCPToolset``, ``.prefixed(tool_prefix)`` when the config asks;
:func:`build_mcp_toolset` returns it unwrapped. Sources: a subprocess
(:class:`~toolcards.mcp._config.MCPStdioConnectionConfig`, through fastmcp's
``StdioTransport``), a URL with headers and a bearer token or OAuth
(:class:`~toolcards.mcp._config.MCPHTTPConnectionConfig`, :mod:`toolcards.mcp._oauth`), or a
server object in this process (:class:`InProcessMCPServer`, ``mcp.server.Server``,
``MCPServer``) over memory streams.

Building connects to nothing: the connection opens when the toolset is entered. ``${VAR}``
references are expanded here, so a missing variable, like a source of the wrong type, is a
:class:`~toolcards.errors.WiringError` at build time. Tool errors reach the model as failed
results by default (:data:`~toolcards.mcp._config.ToolErrorBehavior`).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcards.errors import WiringError
from toolcards.mcp._config import (
    MCPHTTPConnectionConfig,
    MCPStdioConnectionConfig,
    ToolErrorBehavior,
    expand_env,
)

if TYPE_CHECKING:
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.toolsets import AbstractToolset

_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,32}")

__all__ = [
    "InProcessMCPServer",
    "MCPSource",
    "build_mcp_toolset",
    "build_toolset",
    "resolve_source",
    "source_label",
]


@dataclass(frozen=True, kw_only=True)
class InProcessMCPServer:
    """An MCP server object living in this process, with the settings a config would carry.

    A runtime value, not configuration: it holds the server object and is not serialisable.
    """

    server: Any
    """An ``mcp.server.Server`` (low level) or ``mcp.server.mcpserver.MCPServer``."""
    name: str | None = None
    """Name for messages (default: the server's own name) and, when set, the toolset id."""
    tool_prefix: str | None = None
    """When set, tools are offered as ``<prefix>_<tool>``."""
    tool_error_behavior: ToolErrorBehavior = "failed"
    """See :data:`~toolcards.mcp._config.ToolErrorBehavior`."""
    untrusted_output: bool = True
    """Wrap the server's text results in the untrusted-output envelope."""
    timeout_s: float = 30.0
    """Longest wait for one response, in seconds."""

    def __post_init__(self) -> None:
        if self.tool_prefix is not None and not _PREFIX.fullmatch(self.tool_prefix):
            raise WiringError(
                f"InProcessMCPServer {self.label}: tool_prefix {self.tool_prefix!r} must be 1-32 letters, "
                "digits, '_' or '-'."
            )

    @property
    def label(self) -> str:
        """How messages name this server."""
        return self.name or str(getattr(self.server, "name", None) or type(self.server).__name__)


MCPSource = MCPHTTPConnectionConfig | MCPStdioConnectionConfig | InProcessMCPServer
"""Anything :func:`build_toolset` and :func:`~toolcards.mcp._probe.probe` connect to."""


def resolve_source(source: MCPSource | Any) -> MCPSource:
    """``source`` as an :data:`MCPSource`: a bare server object is wrapped in :class:`InProcessMCPServer`.

    Raises :class:`~toolcards.errors.WiringError` for anything else.
    """
    if isinstance(source, MCPHTTPConnectionConfig | MCPStdioConnectionConfig | InProcessMCPServer):
        return source
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(source, Server | MCPServer):
        return InProcessMCPServer(server=source)
    raise WiringError(
        f"Cannot connect to {type(source).__name__}: pass an MCPHTTPConnectionConfig, an "
        "MCPStdioConnectionConfig, an InProcessMCPServer, or an mcp Server/MCPServer object."
    )


def source_label(source: MCPSource | Any) -> str:
    """How messages name the server behind ``source``."""
    return resolve_source(source).label


def build_toolset(source: MCPSource | Any) -> AbstractToolset[Any]:
    """The toolset an agent uses for ``source``: prefixed when ``tool_prefix`` is set.

    Text results arrive inside the untrusted-output envelope unless the source sets
    ``untrusted_output=False``: another server's output is outside data.

    Failures are translated (:func:`toolcards.mcp._failures.translated`): a server that cannot
    be reached makes the agent run raise :class:`~toolcards.errors.ToolFailed` naming it; one
    that fails during a call gives the model a failed tool result. Connects to nothing
    (see the module docstring). Raises
    :class:`~toolcards.errors.WiringError` for an unset ``${VAR}``, an unset OAuth client
    secret variable, or a source of the wrong type.
    """
    from toolcards.mcp._envelope import enveloped
    from toolcards.mcp._failures import translated

    resolved = resolve_source(source)
    toolset = translated(build_mcp_toolset(resolved), resolved.label)
    if resolved.untrusted_output:
        toolset = enveloped(toolset, resolved.label)
    return toolset.prefixed(resolved.tool_prefix) if resolved.tool_prefix else toolset


def build_mcp_toolset(source: MCPSource | Any, *, stderr_log: Path | None = None) -> MCPToolset:
    """The unprefixed ``MCPToolset`` for ``source`` (tool names as the server gives them).

    ``stderr_log`` (stdio only) appends the subprocess's stderr to that file instead of
    this process's stderr. Raises as :func:`build_toolset` does.
    """
    from pydantic_ai.mcp import MCPToolset

    resolved = resolve_source(source)
    if isinstance(resolved, InProcessMCPServer):
        return MCPToolset(
            _inprocess_transport(resolved.server),
            id=resolved.name,
            tool_error_behavior=resolved.tool_error_behavior,
            read_timeout=resolved.timeout_s,
        )
    common: dict[str, Any] = {
        "id": resolved.name,
        "tool_error_behavior": resolved.tool_error_behavior,
        "init_timeout": resolved.connect_timeout_s,
        "read_timeout": resolved.timeout_s,
    }
    if isinstance(resolved, MCPStdioConnectionConfig):
        return MCPToolset(_stdio_transport(resolved, stderr_log), **common)
    return _http_toolset(resolved, common)


def _stdio_transport(config: MCPStdioConnectionConfig, stderr_log: Path | None) -> Any:
    from fastmcp.client.transports import StdioTransport

    label = config.label

    def expand(value: str, field: str) -> str:
        return expand_env(value, server=label, field=field)

    return StdioTransport(
        command=expand(config.command, "command"),
        args=[expand(arg, f"args[{i}]") for i, arg in enumerate(config.args)],
        env={key: expand(value, f"env[{key}]") for key, value in config.env.items()} or None,
        cwd=expand(config.cwd, "cwd") if config.cwd else None,
        keep_alive=config.keep_alive,
        log_file=stderr_log,
    )


def _http_toolset(config: MCPHTTPConnectionConfig, common: dict[str, Any]) -> MCPToolset:
    from pydantic_ai.mcp import MCPToolset

    label = config.label
    url = expand_env(config.url, server=label, field="url")
    headers = {key: expand_env(value, server=label, field=f"headers[{key}]") for key, value in config.headers.items()}
    auth: Any = None
    if config.bearer_token is not None:
        auth = expand_env(config.bearer_token, server=label, field="bearer_token")
    elif config.oauth is not None:
        from toolcards.mcp._oauth import build_oauth_auth

        auth = build_oauth_auth(config.oauth, url, server_label=label)
    return MCPToolset(url, headers=headers or None, auth=auth, **common)


def _inprocess_transport(server: Any) -> Any:
    from mcp.server import Server

    if isinstance(server, Server):
        return _low_level_transport_class()(server)
    return server  # an MCPServer: pydantic-ai connects it in memory itself


@functools.cache
def _low_level_transport_class() -> type[Any]:
    """fastmcp only connects high-level servers in memory; this does the same for a low-level one."""
    import anyio
    from fastmcp.client.transports import ClientTransport
    from fastmcp.client.transports.base import TransportOptions
    from mcp.shared.memory import create_client_server_memory_streams

    class LowLevelServerTransport(ClientTransport):
        def __init__(self, server: Any) -> None:
            self.server = server

        @contextlib.asynccontextmanager
        async def connect_session(
            self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
        ) -> AsyncGenerator[Any, None]:
            options = transport_options or TransportOptions()
            # Raised after the task group is drained: cancelling the group on the way out
            # would otherwise swallow it.
            failure: BaseException | None = None
            async with create_client_server_memory_streams() as (client_streams, server_streams):
                client_read, client_write = client_streams
                server_read, server_write = server_streams
                async with anyio.create_task_group() as group:
                    group.start_soon(
                        lambda: self.server.run(server_read, server_write, self.server.create_initialization_options())
                    )
                    try:
                        async with options.session_class(
                            read_stream=client_read, write_stream=client_write, **session_kwargs
                        ) as session:
                            yield session
                    except BaseException as exc:
                        failure = exc
                    finally:
                        group.cancel_scope.cancel()
            if failure is not None:
                raise failure

        def __repr__(self) -> str:
            return f"<LowLevelServerTransport({getattr(self.server, 'name', '?')!r})>"

    return LowLevelServerTransport
