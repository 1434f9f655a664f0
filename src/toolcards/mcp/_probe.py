"""List an MCP server's tools without an agent: a connection check, a catalogue, a sign-in.

:func:`probe_async` connects to a source (config or in-process server), lists its tools
and disconnects; :func:`probe` is the blocking form for scripts and the command line.
:func:`login` is a probe that may wait for a person: it signs in to an OAuth-protected
server once, from a terminal, so that headless runs find the tokens cached. A
probed stdio server is never kept alive, and its stderr is captured so a failure can
quote it.

Failures are translated once, here: whatever the transport raised (a missing command, a
refused connection, an HTTP error, a protocol error, a timeout) becomes
:class:`~toolcards.errors.ToolFailed` naming the server and the cause, chained with
``from``. Errors toolcards raised itself (an OAuth sign-in that cannot happen, an unset
``${VAR}`` as :class:`~toolcards.errors.WiringError`) pass through unchanged.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcards.errors import ToolFailed, WiringError
from toolcards.mcp._config import MCPHTTPConnectionConfig, MCPStdioConnectionConfig
from toolcards.mcp._connect import InProcessMCPServer, MCPSource, build_mcp_toolset, resolve_source
from toolcards.mcp._failures import describe_failure, timed_out, toolcards_error_in

__all__ = ["ToolInfo", "login", "login_async", "probe", "probe_async"]

_STDERR_TAIL_CHARS = 600


@dataclass(frozen=True, kw_only=True)
class ToolInfo:
    """One tool a server offers, as an agent connected through the same source sees it."""

    name: str
    """The name the model sees: the server's name behind the source's ``tool_prefix``."""
    server_name: str
    """The name the server itself uses."""
    description: str | None
    """The server's description of the tool."""
    input_schema: dict[str, Any]
    """The JSON schema of the tool's arguments."""


async def probe_async(source: MCPSource | Any) -> list[ToolInfo]:
    """Connect to ``source``, list its tools, disconnect; return them in server order.

    Waits at most ``connect_timeout_s + timeout_s`` (in-process: ``timeout_s``; with OAuth,
    plus ``oauth.callback_timeout_s`` for a person signing in). Raises
    :class:`~toolcards.errors.ToolFailed` when the server cannot be reached or answers
    wrongly, and passes toolcards' own errors through (see the module docstring).
    """
    import anyio

    resolved = resolve_source(source)
    if isinstance(resolved, MCPStdioConnectionConfig):
        resolved = resolved.model_copy(update={"keep_alive": False})
    limit = resolved.timeout_s
    if isinstance(resolved, MCPHTTPConnectionConfig | MCPStdioConnectionConfig):
        limit += resolved.connect_timeout_s
        if isinstance(resolved, MCPHTTPConnectionConfig) and resolved.oauth is not None:
            limit += resolved.oauth.callback_timeout_s  # a person may be signing in

    with tempfile.TemporaryDirectory(prefix="toolcards-probe-") as scratch:
        stderr_log = Path(scratch) / "stderr.log"
        toolset = build_mcp_toolset(
            resolved, stderr_log=stderr_log if isinstance(resolved, MCPStdioConnectionConfig) else None
        )
        try:
            with anyio.fail_after(limit):
                async with toolset:
                    tools = await toolset.list_tools()
        except Exception as exc:
            own = toolcards_error_in(exc)
            if own is not None:
                # Raised bare: it already carries its own traceback and message, and chaining
                # it to the wrappers that carried it here would make a cycle.
                raise own from None
            raise ToolFailed(_failure_message(resolved, exc, limit, stderr_log)) from exc

    prefix = resolved.tool_prefix
    return [
        ToolInfo(
            name=f"{prefix}_{tool.name}" if prefix else tool.name,
            server_name=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema),
        )
        for tool in tools
    ]


def probe(source: MCPSource | Any) -> list[ToolInfo]:
    """Blocking :func:`probe_async`; runs its own event loop, so call it from sync code only."""
    import anyio

    result: list[ToolInfo] = anyio.run(probe_async, source)
    return result


async def login_async(config: MCPHTTPConnectionConfig) -> list[str]:
    """Sign in to an OAuth-protected HTTP MCP server now, interactively, and cache the tokens.

    A probe with ``oauth.interactive`` forced on: the URL is printed (and opened when a
    display is available) and the call waits up to ``oauth.callback_timeout_s`` for the
    redirect. Returns the server's tool names. Raises :class:`~toolcards.errors.ToolFailed`
    (or its subclass :class:`~toolcards.mcp._oauth.OAuthAuthorizationRequired`) when sign-in or connection fails,
    and :class:`~toolcards.errors.WiringError` when the config has no ``oauth`` section.
    """
    if config.oauth is None:
        raise WiringError(f"MCP server {config.label}: login needs an 'oauth' section in its config.")
    forced = config.model_copy(update={"oauth": config.oauth.model_copy(update={"interactive": True})})
    return [tool.name for tool in await probe_async(forced)]


def login(config: MCPHTTPConnectionConfig) -> list[str]:
    """Blocking :func:`login_async` for scripts and the command line (runs its own event loop)."""
    import anyio

    result: list[str] = anyio.run(login_async, config)
    return result


def _failure_message(
    source: MCPHTTPConnectionConfig | MCPStdioConnectionConfig | InProcessMCPServer,
    exc: Exception,
    limit: float,
    stderr_log: Path,
) -> str:
    if isinstance(exc, TimeoutError):
        cause = f"no answer within {limit:g} s"
    elif timed_out(exc):
        limits = f"timeout_s={source.timeout_s:g}"
        if not isinstance(source, InProcessMCPServer):
            limits = f"connect_timeout_s={source.connect_timeout_s:g}, {limits}"
        cause = f"timed out ({limits}; {describe_failure(exc)})"
    else:
        cause = describe_failure(exc)
    message = f"Could not list the tools of MCP server {source.label}: {cause}."
    try:
        stderr = stderr_log.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        stderr = ""
    if stderr:
        message += f" Server stderr (last lines): {stderr[-_STDERR_TAIL_CHARS:]}"
    return message
