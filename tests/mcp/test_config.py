"""Connection configs: JSON round trips, validation, ${VAR} expansion."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from toolcards.errors import WiringError
from toolcards.mcp import MCPConnectionConfig, MCPHTTPConnectionConfig, MCPOAuthConfig, MCPStdioConnectionConfig
from toolcards.mcp._config import expand_env

CONFIGS = TypeAdapter(list[MCPConnectionConfig])


def test_a_list_of_configs_round_trips_through_json_by_transport() -> None:
    configs: list[MCPHTTPConnectionConfig | MCPStdioConnectionConfig] = [
        MCPStdioConnectionConfig(command="npx", args=["-y", "server"], env={"TOKEN": "${GH_TOKEN}"}, tool_prefix="gh"),
        MCPHTTPConnectionConfig(
            url="https://mcp.example.com/mcp",
            headers={"X-Team": "${TEAM:-blue}"},
            oauth=MCPOAuthConfig(scopes=["read"], redirect_port=8765),
            timeout_s=12,
        ),
        MCPHTTPConnectionConfig(url="http://localhost:9000/mcp", bearer_token="${API_TOKEN}"),
    ]
    data = CONFIGS.dump_json(configs)
    assert CONFIGS.validate_json(data) == configs
    assert b'"transport":"stdio"' in data and b'"transport":"http"' in data
    # references are stored as written, never expanded
    assert b"${GH_TOKEN}" in data and b"${API_TOKEN}" in data


def test_a_plain_dict_picks_its_kind_from_transport() -> None:
    (stdio, http) = CONFIGS.validate_python(
        [{"transport": "stdio", "command": "uvx", "args": ["srv"]}, {"transport": "http", "url": "https://x/mcp"}]
    )
    assert isinstance(stdio, MCPStdioConnectionConfig)
    assert isinstance(http, MCPHTTPConnectionConfig)
    with pytest.raises(ValidationError):
        CONFIGS.validate_python([{"transport": "carrier-pigeon", "url": "https://x"}])


@pytest.mark.parametrize(
    "fields",
    [
        {"url": "ftp://example.com/mcp"},
        {"url": "example.com/mcp"},
        {"url": "https://x/mcp", "bearer_token": "t", "oauth": {}},
        {"url": "https://x/mcp", "tool_prefix": "has space"},
        {"url": "https://x/mcp", "timeout_s": 0},
        {"url": "https://x/mcp", "unknown": 1},
    ],
)
def test_invalid_http_configs_are_rejected(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MCPHTTPConnectionConfig.model_validate(fields)


def test_a_url_made_of_a_reference_is_accepted_until_expanded() -> None:
    assert MCPHTTPConnectionConfig(url="${MCP_URL}").url == "${MCP_URL}"


def test_labels_name_the_server_without_secrets() -> None:
    http = MCPHTTPConnectionConfig(url="https://user:pw@mcp.example.com:8443/mcp?key=secret", bearer_token="tok")
    assert http.label == "https://mcp.example.com:8443/mcp"
    assert "tok" not in repr(http)
    assert MCPHTTPConnectionConfig(url="https://x/mcp", name="github").label == "github"
    assert MCPStdioConnectionConfig(command="/usr/bin/python3", args=["server.py"]).label == "python3 server.py"
    assert MCPStdioConnectionConfig(command="npx", args=["x" * 100]).label.endswith("...")


def test_expand_env_substitutes_defaults_and_names_missing_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TC_SET", "value")
    monkeypatch.setenv("TC_EMPTY", "")
    monkeypatch.delenv("TC_UNSET", raising=False)
    assert (
        expand_env("a-${TC_SET}-${TC_EMPTY}-${TC_UNSET:-dflt}-$PLAIN", server="s", field="f") == "a-value--dflt-$PLAIN"
    )
    with pytest.raises(WiringError) as info:
        expand_env("Bearer ${TC_UNSET}", server="github", field="headers[Authorization]")
    assert str(info.value).startswith("MCP server github: headers[Authorization] references ${TC_UNSET}")
