"""MCP clients of real ``toolcards serve`` processes in the team's one roster.

The servers are OS processes on one SQLite store; this test process is the other process
that reads the roster (``StorePresence`` on the same file) and the team's log.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from bench.serve_process import ServeProcess
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from toolcards.actors import MemberJoined, MemberLeft
from toolcards.store import SQLiteStore, StoreJournal, StorePresence

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TEAM = "lobby"
WAIT = 60.0


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = f"team_id: {TEAM}\nimports: [tests.server.cards]\ncards:\n  - kind: test_echo\n"
    (tmp_path / "team.yaml").write_text(config)
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": str(tmp_path / "state.db"),
    }


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return tmp_path / "team.yaml"


@pytest.fixture
def store(env: dict[str, str]) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(env["TOOLCARDS_STORE"])
    yield opened
    opened.close()


@pytest.fixture
def servers(config: Path, env: dict[str, str]) -> Iterator[list[ServeProcess]]:
    started = [ServeProcess(config, env), ServeProcess(config, env)]
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def handshake_client(url: str, agent: str) -> Client:
    """A client of the handshake protocol over streamable HTTP: its session is its connection.

    (A client of the stateless protocol has no connection to end; its agent leaves the roster
    after the server's idle timeout.)
    """
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"X-Agent-Name": agent}))
    return Client(transport, mode="legacy")


def roster(store: SQLiteStore) -> dict[str, int]:
    return {member.handle: member.pid for member in StorePresence(store, TEAM).present()}


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def member_events(store: SQLiteStore) -> list[tuple[str, str, str | None]]:
    return [
        (event.kind, event.member.handle, getattr(event, "reason", None))
        for _, event in StoreJournal(store, TEAM).since(0)
        if isinstance(event, MemberJoined | MemberLeft)
    ]


def test_an_http_client_that_disconnects_drops_from_the_roster_other_processes_see(
    servers: list[ServeProcess], store: SQLiteStore
) -> None:
    first, second = servers
    seen: dict[str, dict[str, int]] = {}

    async def visit() -> None:
        async with handshake_client(first.url(), "Visitor") as one:
            assert (await one.call_tool("whoami", {})).content[0].text == "@Visitor"  # type: ignore[union-attr]
            async with handshake_client(second.url(), "Visitor") as two:
                # The name is held by a live member of another server: this one gets a suffix.
                assert (await two.call_tool("whoami", {})).content[0].text == "@Visitor-2"  # type: ignore[union-attr]
                seen["both"] = await anyio.to_thread.run_sync(roster, store)
            seen["first"] = await anyio.to_thread.run_sync(roster, store)

    anyio.run(visit)

    assert seen["both"] == {"@Visitor": first.process.pid, "@Visitor-2": second.process.pid}
    assert seen["first"]["@Visitor"] == first.process.pid  # still connected to the first server
    assert eventually(lambda: roster(store) == {})
    assert eventually(lambda: ("member_left", "@Visitor", "session ended") in member_events(store))
    assert ("member_joined", "@Visitor", None) in member_events(store)
    assert ("member_left", "@Visitor-2", "session ended") in member_events(store)


def test_a_stdio_client_that_closes_its_connection_drops_from_the_roster(
    config: Path, env: dict[str, str], store: SQLiteStore
) -> None:
    args = ["-m", "toolcards.cli", "serve", "--config", str(config)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO), env=env)
    seen: dict[str, dict[str, int]] = {}

    async def visit() -> None:
        info = types.Implementation(name="Stdio-Visitor", version="1")
        async with Client(stdio_client(params), mode="legacy", client_info=info) as client:
            assert (await client.call_tool("whoami", {})).content[0].text == "@Stdio-Visitor"  # type: ignore[union-attr]
            seen["open"] = await anyio.to_thread.run_sync(roster, store)

    anyio.run(visit)

    assert list(seen["open"]) == ["@Stdio-Visitor"]
    assert eventually(lambda: roster(store) == {})
    assert eventually(lambda: ("member_left", "@Stdio-Visitor", "session ended") in member_events(store))
