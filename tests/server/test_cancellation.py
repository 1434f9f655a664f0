"""Cancelling a ``tools/call`` stops its work, over both servers, with real ``toolcards serve``
processes and the SDK's client: a running ``exec_command``'s process group is gone after the
cancel, the marker the command would have written never is, no answer comes,
and a workspace write waiting for its approval is never made. Long calls report progress to
a client that gave a ``progressToken``."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from bench._process_groups import cancel_until_gone
from bench.serve_process import ServeProcess
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.server.test_http import http_client
from tests.server.test_stdio import REPO, stdio_params

pytestmark = pytest.mark.slow

GONE_TIMEOUT_S = 20.0
"""Longest a cancelled command's process group may outlive the cancel: generous for a loaded
machine (``python -m bench cancel`` measures the real figure), and shorter than the command's
``sleep``, so a group that ends by itself still fails."""

CONFIG = """\
team_id: cancel-team
imports: [tests.server.cards]
cards:
  - kind: exec
    mode: local
    allowed_commands: []
    timeout_s: 3600
  - kind: workspace
    workspace_write: {requires_approval: true}
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The team's config; the server subprocesses keep their files and state under ``tmp_path``."""
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "workspaces"))
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), str(REPO)]))  # the code under test first
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    return config


def workspace(tmp_path: Path) -> Path:
    return tmp_path / "workspaces" / "cancel-team"


@pytest.fixture
def http_server(team: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(team, dict(os.environ))
    try:
        server.url()
        yield server
    finally:
        server.stop()


def connect(kind: str, team: Path, http: ServeProcess | None, **options: Any) -> AbstractAsyncContextManager[Client]:
    info = types.Implementation(name="Canceller", version="1")
    if kind == "stdio":
        return Client(stdio_client(stdio_params(team)), mode="legacy", client_info=info, **options)
    assert http is not None
    client = http_client(http.url())
    for name, value in {"mode": "legacy", "client_info": info, **options}.items():
        setattr(client, name, value)
    return client


@asynccontextmanager
async def server_for(kind: str, team: Path, request: pytest.FixtureRequest, **options: Any) -> AsyncIterator[Client]:
    http = request.getfixturevalue("http_server") if kind == "http" else None
    async with connect(kind, team, http, **options) as client:
        yield client


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_cancelled_command_is_killed_at_once_and_never_answered(
    kind: str, team: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    seconds = f"{40 + uuid.uuid4().int % 10_000 / 10_000:.4f}"
    command = f"sleep {seconds} && touch cancelled-marker"

    async def main() -> None:
        async with server_for(kind, team, request) as client:
            call = client.call_tool("exec_command", {"cmd": command})
            # Ends once the process group is gone (the benchmark times it); raises if it outlives the bound.
            await cancel_until_gone(call, f"sleep {seconds}", timeout_s=GONE_TIMEOUT_S)
            # The connection goes on; the cancelled call's answer never comes.
            echoed = await client.call_tool("exec_command", {"cmd": "echo still here"})
            assert "still here" in echoed.content[0].text  # type: ignore[union-attr]

    asyncio.run(main())
    time.sleep(0.3)
    assert not (workspace(tmp_path) / "cancelled-marker").exists()


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_write_cancelled_while_its_approval_is_asked_is_never_made(
    kind: str, team: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    asked = asyncio.Event()

    async def slow_user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await asyncio.sleep(3)  # the user is still reading when the call is cancelled...
        return types.ElicitResult(action="accept")  # ...and accepts after it was

    async def main() -> None:
        async with server_for(kind, team, request, elicitation_callback=slow_user) as client:
            call = asyncio.ensure_future(
                client.call_tool("workspace_write", {"path": "approved-late.txt", "content": "x"})
            )
            await asyncio.wait_for(asked.wait(), 30)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await asyncio.sleep(3.5)  # past the late acceptance
            listed = await client.call_tool("exec_command", {"cmd": "ls"})
            assert "approved-late" not in listed.content[0].text  # type: ignore[union-attr]

    asyncio.run(main())
    assert not (workspace(tmp_path) / "approved-late.txt").exists()


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_long_command_reports_progress_to_a_client_that_asked(
    kind: str, team: Path, request: pytest.FixtureRequest
) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def main() -> str:
        async with server_for(kind, team, request) as client:
            result = await client.call_tool(
                "exec_command", {"cmd": "sh -c 'sleep 2.6; echo done'"}, progress_callback=on_progress
            )
            quiet = await client.call_tool("exec_command", {"cmd": "sh -c 'sleep 1.2; echo quiet'"})
            assert "quiet" in quiet.content[0].text  # type: ignore[union-attr]
            return result.content[0].text  # type: ignore[union-attr]

    before = len(heard)
    assert "done" in asyncio.run(main())
    assert len(heard) - before >= 2, heard  # about one a second while it ran, none without a token
    progress = [value for value, _, _ in heard]
    assert progress == sorted(progress)
    assert all(message and "running for" in message for _, _, message in heard)
