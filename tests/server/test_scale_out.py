"""Scaling out: several ``toolcards serve`` processes on one PostgreSQL store serve one team.

Real processes, a real PostgreSQL server (started by the ``postgres_server`` fixture) and
real MCP clients over streamable HTTP, as a load balancer in front of replicas would see it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.server.test_http import http_client

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "toolcards.cli", "serve"]


class Replica:
    """One ``toolcards serve --transport http`` process and the URL it serves."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*SERVE, "--config", str(config), "--transport", "http", "--port", "0"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        assert self.process.stderr is not None
        seen = []
        for line in self.process.stderr:
            seen.append(line)
            found = re.search(r"serving team \S+ at (http://\S+)", line)
            if found:
                return found[1]
        raise AssertionError(f"the server exited ({self.process.wait()}): {''.join(seen)}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def replicas(postgres_url: str, tmp_path: Path) -> Iterator[list[Replica]]:
    config = tmp_path / "team.yaml"
    config.write_text("team_id: scale\ncards:\n  - kind: planning\n")
    env = {
        # Without TOOLCARDS_TOKEN each replica generates a token and prints it in its URL.
        **{name: value for name, value in os.environ.items() if name != "TOOLCARDS_TOKEN"},
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": postgres_url,
    }
    started: list[Replica] = []
    try:
        for _ in range(3):
            started.append(Replica(config, env))
        yield started
    finally:
        for replica in started:
            replica.stop()


def test_twenty_clients_on_three_servers_get_distinct_ids_visible_everywhere(replicas: list[Replica]) -> None:
    acknowledged: list[int] = []

    async def client(number: int) -> None:
        url = replicas[number % len(replicas)].url
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
        assert anyio.run(visible_from, replica.url) == []
