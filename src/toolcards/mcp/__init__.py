"""Consume external MCP servers: connection configs, toolsets, OAuth sign-in, probing.

* :mod:`toolcards.mcp._config` — serialisable connection configs (stdio, HTTP, OAuth);
* :mod:`toolcards.mcp._connect` — :func:`build_toolset`, the pydantic-ai toolset for a config
  or an in-process server;
* :mod:`toolcards.mcp._oauth` — authorization code + PKCE with tokens cached on disk;
* :mod:`toolcards.mcp._probe` — :func:`probe`, a server's tools without an agent, and
  :func:`login`, the one interactive OAuth sign-in;
* :mod:`toolcards.mcp._failures` — MCP client failures translated into toolcards errors.

Importing this package imports neither ``mcp``, ``fastmcp`` nor ``pydantic_ai``; they
load when a toolset is built or a server probed.
"""

from __future__ import annotations

from toolcards.mcp._config import (
    MCPConnectionConfig,
    MCPHTTPConnectionConfig,
    MCPOAuthConfig,
    MCPStdioConnectionConfig,
    ToolErrorBehavior,
)
from toolcards.mcp._connect import (
    InProcessMCPServer,
    MCPSource,
    build_mcp_toolset,
    build_toolset,
)
from toolcards.mcp._oauth import (
    OAuthAuthorizationRequired,
    OAuthTokenFile,
    forget_tokens,
)
from toolcards.mcp._probe import ToolInfo, login, login_async, probe, probe_async
from toolcards.mcp._tool import MCPTool

__all__ = [
    "InProcessMCPServer",
    "MCPConnectionConfig",
    "MCPHTTPConnectionConfig",
    "MCPOAuthConfig",
    "MCPSource",
    "MCPStdioConnectionConfig",
    "MCPTool",
    "OAuthAuthorizationRequired",
    "OAuthTokenFile",
    "ToolErrorBehavior",
    "ToolInfo",
    "build_mcp_toolset",
    "build_toolset",
    "forget_tokens",
    "login",
    "login_async",
    "probe",
    "probe_async",
]
