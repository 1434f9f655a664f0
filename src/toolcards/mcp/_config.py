"""Serialisable descriptions of external MCP servers to connect to.

Two connection kinds, told apart by ``transport`` so a list of them round-trips through
JSON or YAML (use :data:`MCPConnectionConfig` as the field or list item type):

* :class:`MCPStdioConnectionConfig` (``transport: "stdio"``) — a subprocess speaking MCP
  on stdin/stdout;
* :class:`MCPHTTPConnectionConfig` (``transport: "http"``) — a streamable-HTTP (or, for
  a URL ending in ``/sse``, SSE) endpoint, optionally with a bearer token or OAuth
  (:class:`MCPOAuthConfig`).

String values that may hold secrets or machine paths — the URL, header values, the
bearer token, the command, its arguments, environment values and working directory —
may reference ``${VAR}`` or ``${VAR:-default}``. They are stored as written and expanded
by :func:`expand_env` only when a connection is built, so a dumped config never contains
the expanded secret.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcards.errors import WiringError

__all__ = [
    "MCPConnectionConfig",
    "MCPHTTPConnectionConfig",
    "MCPOAuthConfig",
    "MCPStdioConnectionConfig",
    "ToolErrorBehavior",
    "expand_env",
]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

ToolErrorBehavior = Literal["failed", "retry"]
"""What the model gets when a server tool reports an error (``isError``).

``"failed"`` (the default) returns the server's error text to the model as a failed tool
result: the model reads it and may call again with other arguments, and the run never
dies because an external server keeps failing. ``"retry"`` sends it as a retry prompt
instead, which counts against the tool's retry budget and ends the run with an error once
that is spent. Protocol-level errors are retry prompts either way.
"""


def expand_env(value: str, *, server: str, field: str) -> str:
    """Replace each ``${VAR}`` / ``${VAR:-default}`` in ``value`` from the environment.

    An empty variable counts as set. Raises :class:`~toolcards.errors.WiringError` naming
    the server, the field and the variable when a variable without a default is unset.
    """

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise WiringError(
            f"MCP server {server}: {field} references ${{{name}}}, which is not set. "
            f"Set {name} in the environment or write ${{{name}:-default}}."
        )

    return _VAR.sub(substitute, value)


class MCPOAuthConfig(BaseModel):
    """OAuth 2.0 (authorization code + PKCE) sign-in for an HTTP MCP server.

    Tokens are cached per server URL and refreshed; see :mod:`toolcards.mcp._oauth`.
    """

    model_config = ConfigDict(extra="forbid")

    scopes: list[str] = Field(default_factory=list)
    """Scopes to request; empty lets the server choose."""
    client_name: str = "toolcards"
    """Client name sent at dynamic client registration (shown on consent screens)."""
    client_id: str | None = None
    """A pre-registered client id; without one the client registers dynamically."""
    client_secret_env: str | None = None
    """Environment variable holding the pre-registered client's secret, if it has one."""
    redirect_host: str = "127.0.0.1"
    """Loopback host of the redirect URI and its listener."""
    redirect_port: int | None = Field(default=None, ge=1, le=65535)
    """Fixed redirect port (some servers only allow registered ones); default: reuse the
    port of the cached registration, else any free port."""
    callback_timeout_s: float = Field(default=300.0, gt=0)
    """How long an interactive sign-in waits for the browser redirect."""
    interactive: bool | None = None
    """Force (``True``) or forbid (``False``) waiting for a person; ``None`` detects a
    display or a terminal."""


class _MCPConnectionBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    """Short name for messages and the toolset id (default: derived from the URL or command)."""
    tool_prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,32}$")
    """When set, the server's tools are offered as ``<prefix>_<tool>``."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Longest wait for one response from the server, in seconds."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Longest wait for the connection and handshake, in seconds."""
    tool_error_behavior: ToolErrorBehavior = "failed"
    """See :data:`ToolErrorBehavior`."""
    untrusted_output: bool = True
    """Wrap the server's text results in the untrusted-output envelope (outside data)."""


class MCPHTTPConnectionConfig(_MCPConnectionBase):
    """An MCP server reached over streamable HTTP (SSE when the URL ends in ``/sse``)."""

    transport: Literal["http"] = "http"
    """Selects this kind of connection in a config file."""
    url: str
    """The endpoint, e.g. ``https://mcp.example.com/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers."""
    bearer_token: str | None = Field(default=None, repr=False)
    """Sent as ``Authorization: Bearer ...``; write ``${VAR}`` to keep the token out of the
    config."""
    oauth: MCPOAuthConfig | None = None
    """Sign in with OAuth instead of a fixed token."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if "${" not in url and urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        return url

    @model_validator(mode="after")
    def _one_auth(self) -> MCPHTTPConnectionConfig:
        if self.bearer_token is not None and self.oauth is not None:
            raise ValueError("set bearer_token or oauth, not both")
        return self

    @property
    def label(self) -> str:
        """How messages name this server: its ``name``, else the URL without query or credentials."""
        if self.name:
            return self.name
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"


class MCPStdioConnectionConfig(_MCPConnectionBase):
    """An MCP server run as a subprocess that speaks MCP on stdin/stdout.

    The subprocess gets a small safe environment (``PATH``, ``HOME``, ``USER``, ...) plus
    ``env``; other variables of this process are not inherited.
    """

    transport: Literal["stdio"] = "stdio"
    """Selects this kind of connection in a config file."""
    command: str = Field(min_length=1)
    """The executable, e.g. ``npx`` or ``/usr/bin/python3``."""
    args: list[str] = Field(default_factory=list)
    """Arguments after ``command``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables added to the subprocess's small safe environment."""
    cwd: str | None = None
    """The subprocess's working directory (default: this process's)."""
    keep_alive: bool = True
    """Keep the subprocess running between connections (one agent run each, unless the
    agent is entered with ``async with``); ``False`` respawns it every time (~1 s)."""

    @property
    def label(self) -> str:
        """How messages name this server: its ``name``, else the command line (shortened)."""
        if self.name:
            return self.name
        line = " ".join([PurePath(self.command).name, *self.args])
        return line if len(line) <= 60 else line[:57] + "..."


MCPConnectionConfig = Annotated[
    MCPHTTPConnectionConfig | MCPStdioConnectionConfig,
    Field(discriminator="transport"),
]
"""Either connection kind, chosen by its ``transport`` field when validated."""
