"""Two MCP connections acting as one member are conversations of their own for the workspace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer
from toolcards.server._connection import McpConnection

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "alice", "version": "1"}}


class Client:
    """One connection; :meth:`ask` sends a request and returns its answer."""

    def __init__(self, team_server: TeamServer) -> None:
        self.written: list[bytes] = []
        self.connection = McpConnection(team_server, self.written.append)
        self.ids = iter(range(1, 1000))

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        self.connection.feed(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        await self.connection.dispatcher.drain()
        [answer] = [json.loads(frame) for frame in self.written if json.loads(frame).get("id") == request_id]
        return dict(answer["result"])

    async def call(self, name: str, **arguments: Any) -> tuple[bool, str]:
        result = await self.ask("tools/call", {"name": name, "arguments": arguments})
        return bool(result.get("isError")), result["content"][0]["text"]


def test_a_write_unseen_by_another_connection_of_the_member_is_refused_there(system: ActorSystem) -> None:
    server = TeamServer(ServeConfig(team_id="team-1", cards=[{"kind": "workspace"}]), system=system)

    async def main() -> list[tuple[bool, str]]:
        one, two = Client(server), Client(server)
        for client in (one, two):
            await client.ask("initialize", INIT)
        answers = [await one.call("workspace_write", path="notes.txt", content="base\n")]
        for client in (one, two):
            answers.append(await client.call("workspace_read", path="notes.txt"))
        answers.append(await one.call("workspace_write", path="notes.txt", content="base\none\n"))
        answers.append(await two.call("workspace_write", path="notes.txt", content="base\ntwo\n"))
        answers.append(await two.call("workspace_read", path="notes.txt"))
        answers.append(await two.call("workspace_write", path="notes.txt", content="base\none\ntwo\n"))
        for client in (one, two):
            await client.connection.aclose()
        return answers

    try:
        answers = asyncio.run(main())
    finally:
        server.close()
    created, _, _, first, refused, _, second = answers
    assert created == (False, "Created notes.txt (1 line).")
    assert first == (False, "Wrote notes.txt (2 lines).")
    assert refused[0] and "changed by you, in another run or session working at the same time" in refused[1]
    assert second == (False, "Wrote notes.txt (3 lines).")


def test_two_sdk_clients_of_one_member_are_conversations_of_their_own(system: ActorSystem) -> None:
    # The SDK's server (HTTP, and in-process clients): one conversation per connection.
    import mcp_types as types
    from mcp import Client as SdkClient

    server = TeamServer(ServeConfig(team_id="team-1", cards=[{"kind": "workspace"}]), system=system)
    info = types.Implementation(name="alice", version="1")

    def text(result: Any) -> tuple[bool, str]:
        return bool(result.is_error), result.content[0].text

    async def main() -> list[tuple[bool, str]]:
        async with (
            SdkClient(server.server, client_info=info, mode="legacy") as one,
            SdkClient(server.server, client_info=info, mode="legacy") as two,
        ):
            answers = [text(await one.call_tool("workspace_write", {"path": "notes.txt", "content": "base\n"}))]
            for client in (one, two):
                await client.call_tool("workspace_read", {"path": "notes.txt"})
            answers.append(
                text(await one.call_tool("workspace_write", {"path": "notes.txt", "content": "base\none\n"}))
            )
            answers.append(
                text(await two.call_tool("workspace_write", {"path": "notes.txt", "content": "base\ntwo\n"}))
            )
        return answers

    try:
        created, first, refused = asyncio.run(main())
    finally:
        server.close()
    assert created == (False, "Created notes.txt (1 line).") and first == (False, "Wrote notes.txt (2 lines).")
    assert refused[0] and "in another run or session working at the same time" in refused[1]
