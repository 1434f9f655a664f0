"""The standard cards served over MCP: per-client stamping, read-before-write, prompt updates."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from mcp import Client

from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer, default_config

pytest.importorskip("toolcards.planning._tool")
pytest.importorskip("toolcards.workspace._tool")


def text_of(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


def client(server: TeamServer, name: str) -> Client:
    return Client(server.server, client_info=types.Implementation(name=name, version="1"))


@pytest.fixture
def served(system: ActorSystem) -> Iterator[TeamServer]:
    server = TeamServer(ServeConfig(team_id="std", cards=[{"kind": "workspace"}, {"kind": "planning"}]), system=system)
    yield server
    server.close()


def test_the_default_team_binds(system: ActorSystem) -> None:
    server = TeamServer(default_config(), system=system)
    try:
        server.start()
        tools = {tool.name for tool in server.sessions.catalog().tools()}
    finally:
        server.close()
    assert {"workspace_read", "update_planning", "exec_command"} <= tools


def test_a_task_made_by_one_client_is_the_others_and_updates_their_board(served: TeamServer) -> None:
    uri = "toolcards://std/get_planning"

    async def main() -> tuple[str, str]:
        async with client(served, "Alice") as alice, client(served, "Bob") as bob:
            async with alice.listen(resource_subscriptions=[uri]) as updates:
                created = await bob.call_tool(
                    "update_planning", {"create_tasks": [{"description": "Write docs", "owner": "@Alice"}]}
                )
                assert not created.is_error, text_of(created)
                with anyio.fail_after(20):
                    await updates.__aiter__().__anext__()
            board = (await alice.read_resource(uri)).contents[0]
            assert isinstance(board, types.TextResourceContents)
            return board.text, text_of(await alice.call_tool("get_planning_task", {"task_id": 1}))

    board, task = asyncio.run(main())
    assert "Your tasks" in board and "Write docs" in board
    assert "@Bob" in task and "@Alice" in task


def test_clients_get_read_before_write_protection_from_each_other(served: TeamServer) -> None:
    async def main() -> list[types.CallToolResult]:
        async with client(served, "Alice") as alice, client(served, "Bob") as bob:
            return [
                await alice.call_tool("workspace_write", {"path": "notes.md", "content": "hello\n"}),
                await bob.call_tool("workspace_edit", {"path": "notes.md", "old_string": "hello", "new_string": "bye"}),
                await bob.call_tool("workspace_read", {"path": "notes.md"}),
                await bob.call_tool("workspace_edit", {"path": "notes.md", "old_string": "hello", "new_string": "bye"}),
                await alice.call_tool("workspace_edit", {"path": "notes.md", "old_string": "bye", "new_string": "hi"}),
            ]

    wrote, blind_edit, read, edit, stale_edit = asyncio.run(main())
    assert not wrote.is_error and not read.is_error and not edit.is_error
    assert blind_edit.is_error and "workspace_read" in text_of(blind_edit) and "@Alice" in text_of(blind_edit)
    assert stale_edit.is_error and "@Bob" in text_of(stale_edit)


def test_an_ended_session_leaves_nothing_of_it_in_memory(system: ActorSystem) -> None:
    # A server up for days serves thousands of sessions: each one's agent, cards and tools
    # (including those made for it alone, such as get_team_context) must go when it ends.
    from toolcards.server._session import SessionAgent

    server = TeamServer(default_config(), system=system)

    def session_agents() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, SessionAgent) and o.address.name.startswith("Visitor"))

    async def visit(index: int) -> None:
        # A handshake-era session ends with its connection (a 2026-07-28 one at the idle sweep).
        info = types.Implementation(name=f"Visitor{index}", version="1")
        async with Client(server.server, mode="legacy", client_info=info) as visitor:
            listed = await visitor.call_tool("workspace_list", {"path": ""})
            context = await visitor.call_tool("get_team_context", {})
            assert not listed.is_error and not context.is_error, (text_of(listed), text_of(context))

    try:
        for index in range(3):
            asyncio.run(visit(index))
        assert server.sessions.sessions() == []
        assert session_agents() == 0
    finally:
        server.close()
