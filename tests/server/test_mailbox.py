"""Two MCP clients of real ``toolcards serve`` processes (stdio, the SDK client) on one team:
messages between them, announced in their context, read once; a stop request from a third
process answers the stopped session's next call."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import toolcards
from toolcards.store import close_default_stores
from toolcards.team import MessagingTool

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TEAM = "mail"


@pytest.fixture
def params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StdioServerParameters]:
    config = tmp_path / "team.yaml"
    config.write_text(f"team_id: {TEAM}\ncards:\n  - kind: messaging\n")
    store = str(tmp_path / "state.db")
    monkeypatch.setenv("TOOLCARDS_STORE", store)  # this process reaches the same team
    close_default_stores()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": store,
    }
    args = ["-m", "toolcards.cli", "serve", "--config", str(config)]
    yield StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO), env=env)
    close_default_stores()


def client(params: StdioServerParameters, name: str) -> Client:
    return Client(stdio_client(params), mode="legacy", client_info=types.Implementation(name=name, version="1"))


async def text_of(client: Client, tool: str, arguments: dict[str, object] | None = None) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments or {})
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return result.is_error, part.text


def stop(name: str, reason: str) -> str:
    with toolcards.Team(TEAM) as team:
        return str(team.member("Ops").commands(MessagingTool()).dispatch(f"/stop_member {name} {reason}"))


def test_two_mcp_clients_of_two_servers_exchange_messages(params: StdioServerParameters) -> None:
    async def main() -> None:
        async with client(params, "Ann") as ann, client(params, "Ben") as ben:
            # Each session joins the team's roster with its first request.
            assert await text_of(ann, "list_reminders") == (False, "You have no pending reminders.")
            assert await text_of(ben, "list_reminders") == (False, "You have no pending reminders.")
            assert await text_of(ann, "send_message", {"to": "Ben", "text": "hello Ben"}) == (False, "Sent to @Ben.")
            error, context = await text_of(ben, "get_team_context")
            assert not error and "1 unread message from @Ann — read_messages" in context
            resource = (await ben.read_resource(f"toolcards://{TEAM}/unread_messages")).contents[0]
            assert isinstance(resource, types.TextResourceContents)
            assert resource.text == "1 unread message from @Ann — read_messages"
            assert await text_of(ben, "read_messages") == (False, "Message from @Ann:\nhello Ben")
            assert await text_of(ben, "read_messages") == (False, "No unread messages.")
            assert await text_of(ben, "send_message", {"to": "ann", "text": "hi Ann"}) == (False, "Sent to @Ann.")
            assert await text_of(ann, "read_messages") == (False, "Message from @Ben:\nhi Ann")

            answer = await anyio.to_thread.run_sync(stop, "Ben", "wrap up")
            assert answer.startswith("Asked @Ben to stop")
            error, text = await text_of(ben, "list_reminders")
            assert error and text.startswith("You were stopped by @Ops: wrap up. Stop working")
            assert await text_of(ben, "list_reminders") == (False, "You have no pending reminders.")  # once

    anyio.run(main)
