"""``exec_command`` over MCP: a command that did not run, or was stopped, is an ``isError`` result.

A real MCP client (the SDK's, in-process) talks to a ``TeamServer`` whose team has a local
sandbox limited to ``echo`` and ``sh``, so clients can tell a refusal or a timeout from
a command that ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp import Client

from toolcards.actors._system import ActorSystem
from toolcards.sandbox._tool import ExecTool
from toolcards.server import ServeConfig, TeamServer


@pytest.fixture
def served(system: ActorSystem) -> Iterator[TeamServer]:
    card = ExecTool(mode="local", allowed_commands=["echo", "sh"], timeout_s=5)
    server = TeamServer(ServeConfig(team_id="exec-team"), system=system, cards=[card])
    yield server
    server.close()


def run_commands(server: TeamServer, *calls: dict[str, object]) -> list[types.CallToolResult]:
    async def main() -> list[types.CallToolResult]:
        async with Client(server.server, client_info=types.Implementation(name="Builder", version="1")) as client:
            return [await client.call_tool("exec_command", arguments) for arguments in calls]

    return asyncio.run(main())


def text_of(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


def test_a_refused_and_a_timed_out_command_are_errors_and_a_failing_one_is_not(served: TeamServer) -> None:
    ran, failed, refused, timed_out = run_commands(
        served,
        {"cmd": "echo hello"},
        {"cmd": "sh -c 'exit 3'"},
        {"cmd": "psql -l"},
        {"cmd": "sh -c 'echo begun; sleep 10'", "timeout_s": 0.5},
    )
    assert not ran.is_error and "hello" in text_of(ran)
    # A command that ran is a result whatever its exit code: the model reads the code.
    assert not failed.is_error and "exit code: 3" in text_of(failed)

    assert refused.is_error
    assert "Command 'psql' is not in the allowed" in text_of(refused)

    assert timed_out.is_error
    message = text_of(timed_out)
    assert "did not finish in time" in message and "begun" in message
