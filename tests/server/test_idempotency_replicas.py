"""Exactly-once writes across ``toolcards serve`` replicas: a retry that reaches another
process, where the client's name is taken by its first, still open, connection.

The servers are OS processes on one SQLite store, as behind a load balancer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from bench.serve_process import ServeProcess
from mcp import Client

from tests.server.test_presence import handshake_client
from toolcards.store import SQLiteStore

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TEAM = "replicas"
KEY = "io.toolcards/idempotency-key"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = f"team_id: {TEAM}\ncards:\n  - kind: planning\n  - kind: messaging\n"
    (tmp_path / "team.yaml").write_text(config)
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": str(tmp_path / "state.db"),
    }


@pytest.fixture
def servers(tmp_path: Path, env: dict[str, str]) -> Iterator[list[ServeProcess]]:
    started = [ServeProcess(tmp_path / "team.yaml", env), ServeProcess(tmp_path / "team.yaml", env)]
    try:
        yield started
    finally:
        for server in started:
            server.stop()


async def text(session: Client, tool: str, arguments: dict[str, object], key: str) -> str:
    result = await session.call_tool(tool, arguments, meta={KEY: key})  # type: ignore[arg-type]
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


def test_a_retry_on_another_replica_under_a_suffixed_name_is_answered_not_applied_again(
    servers: list[ServeProcess], env: dict[str, str]
) -> None:
    first, second = servers
    answers: dict[str, tuple[str, str]] = {}
    board = {"create_tasks": [{"description": "Ship it"}]}
    message = {"to": "Bob", "text": "hello"}

    async def visit() -> None:
        async with handshake_client(first.url(), "Bob") as bob, handshake_client(first.url(), "Alice") as alice:
            await text(bob, "read_messages", {}, "bob-1")
            for tool, arguments in (("update_planning", board), ("send_message", message)):
                applied = await text(alice, tool, arguments, f"k-{tool}")
                # The answer was lost; the retry reaches the other replica while the first
                # connection still holds @Alice, so it joins as @Alice-2.
                async with handshake_client(second.url(), "Alice") as again:
                    answers[tool] = (applied, await text(again, tool, arguments, f"k-{tool}"))

    anyio.run(visit)

    assert answers["update_planning"] == (
        "Created task 1.",
        "This call was already applied (board change 1); nothing was written again. Created task 1.",
    )
    assert answers["send_message"] == (
        "Sent to @Bob.",
        "This call was already applied; nothing was sent again. Sent to @Bob.",
    )
    store = SQLiteStore(env["TOOLCARDS_STORE"])
    try:
        tasks = [row for row in store.load(f"{TEAM}/#PlanningTool").rows.get("tasks", {}).values() if row]
        messages = [row for row in store.load(f"{TEAM}/#Mailbox").rows.get("messages", {}).values() if row]
    finally:
        store.close()
    assert len(tasks) == 1
    assert len(messages) == 1
