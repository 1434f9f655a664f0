"""Scaling out: several ``toolcards serve`` processes on one PostgreSQL store serve one team.

Real processes, a real PostgreSQL server (started by the ``postgres_server`` fixture) and
real MCP clients over streamable HTTP, as a load balancer in front of replicas would see it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from bench.serve_process import ServeProcess

from tests.server.test_http import http_client

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def replicas(postgres_url: str, tmp_path: Path) -> Iterator[list[ServeProcess]]:
    config = tmp_path / "team.yaml"
    config.write_text("team_id: scale\ncards:\n  - kind: planning\n")
    env = {
        # ServeProcess drops TOOLCARDS_TOKEN: each replica generates a token and prints it in its URL.
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": postgres_url,
    }
    started: list[ServeProcess] = []
    try:
        for _ in range(3):
            started.append(ServeProcess(config, env))
        yield started
    finally:
        for replica in started:
            replica.stop()


def test_twenty_clients_on_three_servers_get_distinct_ids_visible_everywhere(replicas: list[ServeProcess]) -> None:
    acknowledged: list[int] = []

    async def client(number: int) -> None:
        url = replicas[number % len(replicas)].url()
        async with http_client(url, **{"X-Agent-Name": f"Client{number}"}) as session:
            for i in range(10):
                result = await session.call_tool(
                    "update_planning", {"create_tasks": [{"description": f"client {number} task {i}"}]}
                )
                text = result.content[0].text  # type: ignore[union-attr]
                assert not result.is_error, text
                found = re.fullmatch(r"Created task (\d+)\.", text)
                assert found is not None, text
                acknowledged.append(int(found[1]))

    async def everyone() -> None:
        async with anyio.create_task_group() as clients:
            for number in range(20):
                clients.start_soon(client, number)

    anyio.run(everyone)

    assert sorted(acknowledged) == list(range(1, 201))

    async def visible_from(url: str) -> list[str]:
        missing = []
        async with http_client(url, **{"X-Agent-Name": "Auditor"}) as session:
            for task_id in acknowledged:
                result = await session.call_tool("get_planning_task", {"task_id": task_id})
                if result.is_error:
                    missing.append(str(task_id))
        return missing

    for replica in replicas:
        assert anyio.run(visible_from, replica.url()) == []
