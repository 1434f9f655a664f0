"""Paths and fixtures shared by the MCP client tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolcards.mcp import MCPStdioConnectionConfig

SERVER_SCRIPT = Path(__file__).with_name("servers.py")


@pytest.fixture
def stdio_config(tmp_path: Path) -> MCPStdioConnectionConfig:
    """The test server as a stdio subprocess; never kept alive, so no process outlives a test."""
    return MCPStdioConnectionConfig(
        command=sys.executable,
        args=[str(SERVER_SCRIPT)],
        cwd=str(tmp_path),
        keep_alive=False,
        connect_timeout_s=30,
    )
