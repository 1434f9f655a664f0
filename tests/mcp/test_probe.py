"""probe(): a server's tools without an agent, and failures as ToolFailed naming the server."""

from __future__ import annotations

import sys

import anyio
import pytest

from tests.mcp.http_servers import free_port, plain_mcp_server
from tests.mcp.servers import TOOLS, high_level_server, make_low_level_server
from toolcards.errors import ToolFailed, WiringError
from toolcards.mcp import (
    InProcessMCPServer,
    MCPHTTPConnectionConfig,
    MCPStdioConnectionConfig,
    ToolInfo,
    login,
    probe,
    probe_async,
)


def test_probe_lists_names_descriptions_and_schemas_with_the_prefix_applied() -> None:
    tools = probe(InProcessMCPServer(server=make_low_level_server(), tool_prefix="low"))
    assert [t.server_name for t in tools] == list(TOOLS)
    assert tools[0] == ToolInfo(
        name="low_echo", server_name="echo", description="Echo text back.", input_schema=TOOLS["echo"]["schema"]
    )


def test_probe_accepts_a_bare_high_level_server() -> None:
    tools = probe(high_level_server())
    assert [(t.name, t.description) for t in tools] == [("add", "Add two integers."), ("shout", "Upper-case the text.")]
    assert tools[0].input_schema["required"] == ["a"]


def test_probe_async_inside_a_running_loop() -> None:
    async def main() -> list[ToolInfo]:
        return await probe_async(make_low_level_server())

    assert len(anyio.run(main)) == len(TOOLS)


def test_probe_a_stdio_subprocess(stdio_config: MCPStdioConnectionConfig) -> None:
    tools = probe(stdio_config.model_copy(update={"keep_alive": True, "tool_prefix": "sub"}))
    assert [t.name for t in tools] == [f"sub_{name}" for name in TOOLS]


def test_probe_over_http() -> None:
    with plain_mcp_server() as (url, _):
        assert [t.name for t in probe(MCPHTTPConnectionConfig(url=url))] == list(TOOLS)


def test_a_missing_command_is_a_tool_failure_naming_server_and_cause() -> None:
    with pytest.raises(ToolFailed) as info:
        probe(MCPStdioConnectionConfig(command="/does/not/exist", name="ghost"))
    message = str(info.value)
    assert message.startswith("Could not list the tools of MCP server ghost: FileNotFoundError")
    assert "/does/not/exist" in message


def test_a_server_that_dies_at_start_is_reported_with_its_stderr() -> None:
    script = "import sys; print('config file missing: /etc/x.toml', file=sys.stderr); sys.exit(3)"
    with pytest.raises(ToolFailed) as info:
        probe(MCPStdioConnectionConfig(command=sys.executable, args=["-c", script]))
    message = str(info.value)
    assert message.startswith("Could not list the tools of MCP server python")
    assert "Connection closed" in message
    assert "config file missing: /etc/x.toml" in message


def test_a_refused_http_connection_is_a_tool_failure() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ToolFailed, match=rf"MCP server {url}: ConnectError: All connection attempts failed"):
        probe(MCPHTTPConnectionConfig(url=url))


def test_a_wrong_http_path_is_a_tool_failure() -> None:
    with plain_mcp_server() as (url, _), pytest.raises(ToolFailed, match="Not Found"):
        probe(MCPHTTPConnectionConfig(url=url.replace("/mcp", "/nope"), name="docs"))


def test_a_silent_server_times_out_as_a_tool_failure() -> None:
    # Reads stdin forever and never answers: the handshake times out.
    script = "import sys; sys.stdin.read()"
    config = MCPStdioConnectionConfig(command=sys.executable, args=["-c", script], connect_timeout_s=0.5, timeout_s=0.5)
    with pytest.raises(ToolFailed, match=r"MCP server python -c .*: timed out \(connect_timeout_s=0.5, timeout_s=0.5;"):
        probe(config)


def test_configuration_errors_pass_through_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TC_MISSING_CMD", raising=False)
    with pytest.raises(WiringError, match=r"command references \$\{TC_MISSING_CMD\}"):
        probe(MCPStdioConnectionConfig(command="${TC_MISSING_CMD}"))


def test_login_needs_an_oauth_section() -> None:
    with pytest.raises(WiringError, match="login needs an 'oauth' section"):
        login(MCPHTTPConnectionConfig(url="https://mcp.example.com/mcp"))
