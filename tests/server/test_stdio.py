"""``toolcards serve`` over stdio, as a real subprocess: real clients (the SDK's, in both
connect modes, and pydantic-ai's fastmcp-based ``MCPToolset``) and raw frames for each
JSON-RPC rule. The server must answer as the SDK server does, without importing it."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from toolcards.server import TeamServer, load_config
from toolcards.server._connection import HANDSHAKE_VERSIONS, MODERN_VERSION_KEY
from toolcards.server._stdio import MAX_FRAME_BYTES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0
CONFIG = (
    "team_id: stdio-team\nimports: [tests.server.cards, tests.server.stdio_cards]\n"
    "cards:\n  - kind: test_echo\n  - kind: test_notes\n  - kind: test_stdio_probe\n"
)
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-client", "version": "1"}}


@pytest.fixture
def team_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "team.yaml"
    path.write_text(CONFIG)
    return path


def serve_command(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config), *extra]


class RawServer:
    """``toolcards serve`` spoken to frame by frame; stdout and stderr read in threads."""

    def __init__(self, config: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            serve_command(config, *extra),
            cwd=REPO,
            env=dict(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.frames: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout.append(line)
            self.frames.put(line)

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def receive(self, timeout: float = TIMEOUT_S) -> dict[str, Any]:
        try:
            frame = self.frames.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer; stderr: {b''.join(self.stderr).decode()[-2000:]}") from None
        parsed: dict[str, Any] = json.loads(frame)
        return parsed

    def answer(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        self.request(request_id, method, params)
        return self.receive()

    def initialize(self, **changes: Any) -> dict[str, Any]:
        result = self.answer("init", "initialize", {**INIT, **changes})["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result  # type: ignore[no-any-return]

    def call(self, request_id: Any, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.answer(request_id, "tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=TIMEOUT_S)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT_S)


@pytest.fixture
def raw(team_yaml: Path) -> Iterator[RawServer]:
    server = RawServer(team_yaml)
    try:
        yield server
    finally:
        server.kill()


def text(result: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in result["result"]["content"])


# -- real clients --------------------------------------------------------------------------


def stdio_params(config: Path, *extra: str) -> StdioServerParameters:
    command = serve_command(config, *extra)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ))


WIRE: dict[str, Any] = {"mode": "json", "by_alias": True, "exclude_none": True}


async def exercise(c: Client) -> dict[str, Any]:
    """What a client sees of the team, in a form both servers can be compared by."""
    tools = await c.list_tools()
    seen: dict[str, Any] = {
        "tools": [tool.model_dump(**WIRE) for tool in tools.tools],
        "echo": (await c.call_tool("echo", {"text": "hi", "times": 2})).model_dump(**WIRE),
        "pixel": (await c.call_tool("pixel", {"caption": "red"})).model_dump(**WIRE),
        "stats": (await c.call_tool("stats", {})).structured_content,
        "crash": (await c.call_tool("crash", {})).model_dump(**WIRE),
        "fussy": (await c.call_tool("fussy", {"name": "Voldemort"})).model_dump(**WIRE),
        "invalid": (await c.call_tool("fussy", {"name": ""})).is_error,
        "unknown": (await c.call_tool("nope", {})).model_dump(**WIRE),
        "wipe": (await c.call_tool("wipe", {})).model_dump(**WIRE),
        "resources": [r.model_dump(**WIRE) for r in (await c.list_resources()).resources],
        "prompts": [p.model_dump(**WIRE) for p in (await c.list_prompts()).prompts],
        "motd": (await c.get_prompt("motd")).model_dump(**WIRE),
    }
    read = await c.read_resource("toolcards://stdio-team/motd")
    seen["read"] = read.model_dump(**WIRE)
    with pytest.raises(Exception, match="Unknown prompt 'nope'"):
        await c.get_prompt("nope")
    return seen


@pytest.mark.parametrize(
    ("mode", "expected"), [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")]
)
def test_the_sdk_client_sees_what_the_sdk_server_serves(team_yaml: Path, mode: str, expected: str) -> None:
    info = types.Implementation(name="parity", version="1")

    async def over_stdio() -> tuple[dict[str, Any], str]:
        async with Client(stdio_client(stdio_params(team_yaml)), mode=mode, client_info=info) as c:  # type: ignore[arg-type]
            return await exercise(c), c.protocol_version

    async def in_process() -> dict[str, Any]:
        team_server = TeamServer(load_config(team_yaml))
        try:
            async with Client(team_server.server, mode=mode, client_info=info) as c:  # type: ignore[arg-type]
                return await exercise(c)
        finally:
            await team_server.aclose()

    lean, version = asyncio.run(over_stdio())
    sdk = asyncio.run(in_process())
    assert version == expected  # auto mode's discover probe is answered: the stateless protocol
    assert lean == sdk
    assert lean["stats"]["agent"] == "@parity"
    assert lean["pixel"]["content"][1]["type"] == "image"
    assert lean["crash"]["isError"] and "ValueError" in lean["crash"]["content"][0]["text"]
    assert "Greet someone else" in lean["fussy"]["content"][0]["text"] and lean["invalid"]
    assert "needs a human's approval" in lean["wipe"]["content"][0]["text"]
    assert "You are @parity." in lean["motd"]["messages"][0]["content"]["text"]


def test_a_pydantic_ai_agent_calls_the_team_through_mcp_toolset(team_yaml: Path) -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
        if not returns:
            seen.append(sorted(tool.name for tool in info.function_tools))
            return ModelResponse(
                parts=[
                    ToolCallPart("echo", {"text": "over stdio", "times": 1}),
                    ToolCallPart("pixel", {}),
                    ToolCallPart("stats", {}),
                ]
            )
        seen.extend((part.tool_name, part.content) for part in returns)
        return ModelResponse(parts=[TextPart("done")])

    command = serve_command(team_yaml)
    transport = StdioTransport(command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ))
    toolset = MCPToolset(transport, init_timeout=TIMEOUT_S)
    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("go")
    assert result.output == "done"
    assert {"echo", "pixel", "stats", "add_note", "noisy"} <= set(seen[0])
    returned = dict(seen[1:])
    assert returned["echo"] == "over stdio"
    assert type(returned["pixel"]).__name__ == "BinaryImage"
    assert returned["stats"]["team"] == "stdio-team"


# -- the handshake ----------------------------------------------------------------------------


def test_every_handshake_version_is_accepted_and_others_get_the_newest(raw: RawServer) -> None:
    # The stdio server keeps its own copies of the SDK's constants: they must not drift.
    assert list(HANDSHAKE_VERSIONS) == list(HANDSHAKE_PROTOCOL_VERSIONS)
    assert MODERN_VERSION_KEY == types.PROTOCOL_VERSION_META_KEY
    for version in HANDSHAKE_VERSIONS:
        assert raw.initialize(protocolVersion=version)["protocolVersion"] == version
    result = raw.initialize(protocolVersion="1999-01-01")
    assert result["protocolVersion"] == HANDSHAKE_VERSIONS[-1]
    assert result["serverInfo"]["name"] == "toolcards" and "stdio-team" in result["instructions"]
    assert result["capabilities"]["resources"] == {"listChanged": False, "subscribe": True}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "modern-raw", "version": "1"},
}


def test_only_ping_is_served_before_initialize_and_a_handshake_refuses_the_stateless_protocol(
    raw: RawServer,
) -> None:
    assert raw.answer(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert raw.answer(2, "tools/list")["error"]["code"] == -32602
    raw.initialize()
    assert raw.answer(3, "server/discover", {"_meta": MODERN_META})["error"]["code"] == -32601
    assert raw.answer(4, "tools/list", {"_meta": MODERN_META})["error"]["code"] == -32600
    assert raw.answer(5, "tools/list")["result"]["tools"]


def test_the_stateless_protocol_is_served_after_discover_and_checks_every_envelope(raw: RawServer) -> None:
    discovered = raw.answer(1, "server/discover", {"_meta": MODERN_META})["result"]
    assert discovered["supportedVersions"] == ["2026-07-28"] and discovered["resultType"] == "complete"
    assert discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolcards"
    assert "completions" in discovered["capabilities"]
    listed = raw.answer(2, "tools/list", {"_meta": MODERN_META})["result"]
    assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private" and listed["tools"]
    called = raw.answer(3, "tools/call", {"_meta": MODERN_META, "name": "whoami", "arguments": {}})["result"]
    assert called["content"][0]["text"] == "@modern-raw" and called["resultType"] == "complete"
    missing = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    assert raw.answer(4, "tools/list", {"_meta": missing})["error"]["code"] == -32602
    future = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    unsupported = raw.answer(5, "tools/list", {"_meta": future})["error"]
    assert unsupported["code"] == -32022 and unsupported["data"]["supported"] == ["2026-07-28"]
    assert raw.answer(6, "initialize", INIT)["error"]["code"] == -32022
    assert raw.answer(7, "ping", {"_meta": MODERN_META})["error"]["code"] == -32601
    gone = raw.answer(8, "resources/read", {"_meta": MODERN_META, "uri": "toolcards://stdio-team/nope"})
    assert gone["error"]["code"] == -32602  # a missing resource on the stateless protocol


def test_the_agent_is_the_fixed_name_else_the_clients(team_yaml: Path) -> None:
    for extra, expected in (((), "@raw-client"), (("--agent", "Fixed One"), "@Fixed-One")):
        server = RawServer(team_yaml, *extra)
        try:
            server.initialize()
            assert text(server.call(1, "whoami")) == expected
        finally:
            server.kill()


# -- JSON-RPC rules ---------------------------------------------------------------------------


def test_malformed_frames_get_errors_and_the_connection_goes_on(raw: RawServer) -> None:
    raw.send(b"this is not json")
    assert raw.receive()["error"]["code"] == -32700
    raw.send(b"[" * 100_000)  # nesting deep enough to exhaust a recursive parser
    deep = raw.receive()
    assert deep["id"] is None and deep["error"]["code"] == -32700
    raw.send(b"\xff\xfe{}")
    assert raw.receive()["error"]["code"] == -32700
    for bad in ([], 3, {"id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 1}, {"jsonrpc": "2.0", "id": True}):
        raw.send(json.dumps(bad).encode())
        answer = raw.receive()
        assert answer["error"]["code"] == -32600, bad
    assert raw.answer(9, "ping", [1])["error"]["code"] == -32602
    raw.initialize()
    unknown = raw.answer(10, "no/such/method")["error"]
    assert unknown == {"code": -32601, "message": "Method not found", "data": "no/such/method"}
    assert raw.answer(11, "tools/call", {"arguments": {}})["error"]["code"] == -32602
    assert raw.answer(12, "resources/read", {"uri": 3})["error"]["code"] == -32602
    assert raw.answer(13, "resources/read", {"uri": "toolcards://other/x"})["error"]["code"] == -32002
    assert raw.answer(14, "ping") == {"jsonrpc": "2.0", "id": 14, "result": {}}


def test_responses_echo_the_ids_type_and_notifications_get_none(raw: RawServer) -> None:
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    raw.send({"jsonrpc": "2.0", "method": "tools/list"})  # a request without an id is a notification
    for request_id in ("7", 7, "", 0, -3, 2**60):
        assert raw.answer(request_id, "ping")["id"] == request_id
    assert raw.frames.empty()


def test_a_slow_call_blocks_nothing_and_a_cancelled_one_is_never_answered(raw: RawServer) -> None:
    raw.initialize()
    raw.request("slow", "tools/call", {"name": "nap", "arguments": {"seconds": 1.5}})
    raw.request("doomed", "tools/call", {"name": "nap", "arguments": {"seconds": 0.5}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "doomed"}})
    started = time.monotonic()
    assert raw.answer("quick", "ping")["id"] == "quick"
    assert time.monotonic() - started < 1.5  # answered while the naps run (not a timing target)
    assert raw.receive()["id"] == "slow"
    time.sleep(0.5)
    assert raw.answer("after", "ping")["id"] == "after"  # nothing for "doomed" came before it


def test_stdout_carries_frames_only(raw: RawServer) -> None:
    raw.initialize()
    assert text(raw.call(1, "noisy", text="hello")) == "hello"
    assert raw.answer(2, "ping")["result"] == {}
    assert raw.close() == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in raw.stdout)
    err = b"".join(raw.stderr).decode()
    assert "stray print: hello" in err and "child says hello" in err


def test_big_frames_pass_and_oversized_ones_are_refused(raw: RawServer) -> None:
    raw.initialize()
    echoed = raw.call(1, "echo", text="x" * 4_000_000)  # a 4 MB request (the answer is cut to the output budget)
    assert not echoed["result"]["isError"] and text(echoed).startswith("x" * 10_000)
    raw.send(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"' + b"a" * MAX_FRAME_BYTES + b'"}}')
    refused = raw.receive()
    assert refused["id"] is None and refused["error"]["code"] == -32600
    assert raw.answer(4, "ping")["id"] == 4


def test_end_of_stdin_ends_the_server_cleanly_and_closes_the_team(raw: RawServer) -> None:
    raw.initialize()
    assert text(raw.call(1, "add_note", text="kept")) == "Added note 1."
    assert raw.close() == 0
    err = b"".join(raw.stderr).decode()
    assert "ending sessions and flushing state" in err and "stopped" in err
    assert "Traceback" not in err


def test_subscribed_resources_are_notified_when_the_team_changes_them(raw: RawServer) -> None:
    raw.initialize()
    uri = "toolcards://stdio-team/notes_board"
    assert raw.answer(1, "resources/subscribe", {"uri": uri})["result"] == {}
    raw.request(2, "tools/call", {"name": "add_note", "arguments": {"text": "news"}})
    frames = [raw.receive(), raw.receive()]
    notices = [frame for frame in frames if frame.get("method") == "notifications/resources/updated"]
    assert notices and notices[0]["params"] == {"uri": uri}
    assert raw.answer(3, "resources/unsubscribe", {"uri": uri})["result"] == {}


def test_the_stdio_server_never_imports_the_sdk(raw: RawServer) -> None:
    raw.initialize()
    assert text(raw.call(1, "heavy")) == "[]"


def test_requests_from_a_file_are_all_answered_before_the_server_ends(team_yaml: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nap", "arguments": {"seconds": 0.3}}},
    ]
    requests.write_text("".join(json.dumps(frame) + "\n" for frame in frames))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            serve_command(team_yaml),
            check=False,
            cwd=REPO,
            env=dict(os.environ),
            stdin=stdin,
            capture_output=True,
            timeout=TIMEOUT_S,
        )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "slept 0.3"


def test_a_client_pinned_to_the_stateless_protocol_is_served_by_the_sdk(team_yaml: Path) -> None:
    info = types.Implementation(name="pinned", version="1")

    async def main() -> tuple[str, str, str]:
        async with Client(stdio_client(stdio_params(team_yaml)), mode="2026-07-28", client_info=info) as c:
            echoed = await c.call_tool("echo", {"text": "modern"})
            whoami = await c.call_tool("whoami", {})
            return c.protocol_version, echoed.content[0].text, whoami.content[0].text  # type: ignore[union-attr]

    assert asyncio.run(main()) == ("2026-07-28", "modern", "@pinned")


def test_facade_mode_lists_the_meta_tools_and_hot_tools_and_calls_through_them(team_yaml: Path) -> None:
    server = RawServer(team_yaml, "--facade", "--hot-tool", "echo")
    try:
        server.initialize()
        listed = [tool["name"] for tool in server.answer(1, "tools/list")["result"]["tools"]]
        assert listed == ["search_tools", "describe_tool", "call_tool", "echo"]
        found = server.call(2, "search_tools", query="repeat some text")["result"]["structuredContent"]["result"]
        assert found[0]["name"] == "echo"
        assert text(server.call(3, "call_tool", name="whoami")) == "@raw-client"
        assert text(server.call(4, "stats")).startswith("{")  # unlisted tools stay callable by name
        missing = server.call(5, "call_tool", name="ech")["result"]
        assert missing["isError"] and "Did you mean echo" in missing["content"][0]["text"]
        context = server.answer(6, "prompts/get", {"name": "motd"})["result"]["messages"][0]["content"]["text"]
        assert context.startswith("Be kind.")
    finally:
        server.kill()


@pytest.mark.parametrize("stdin_closed_first", [False, True])
def test_a_signal_answers_the_calls_still_running(team_yaml: Path, stdin_closed_first: bool) -> None:
    # The client still listens: a call the stop cuts short gets an error, not silence. With
    # stdin closed first, the server was waiting for the call's answer when the signal came.
    server = RawServer(team_yaml)
    try:
        server.initialize()
        server.request("long", "tools/call", {"name": "nap", "arguments": {"seconds": 60}})
        assert server.answer("quick", "ping")["id"] == "quick"  # "long" is running
        assert server.process.stdin is not None
        if stdin_closed_first:
            server.process.stdin.close()
            time.sleep(0.5)  # lets the server see the end of its input first (no assertion on it)
        server.process.send_signal(signal.SIGTERM)
        stopped = server.receive()
        assert server.process.wait(timeout=TIMEOUT_S) == 0, b"".join(server.stderr).decode()
    finally:
        server.kill()
    assert stopped["id"] == "long"
    assert stopped["error"]["code"] == -32603 and stopped["error"]["message"] == "Server stopping"
    assert "may already be committed" in stopped["error"]["data"]


def test_a_signal_as_stdin_closes_does_not_cut_the_flush_short(team_yaml: Path) -> None:
    # stdin's end and SIGTERM reach the server together (a client that closes its pipe and
    # then stops the server); whichever it sees first, it flushes and exits 0. A race, so
    # tried a few times.
    for _ in range(4):
        server = RawServer(team_yaml)
        try:
            server.initialize()
            assert server.process.stdin is not None
            server.process.stdin.close()
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=TIMEOUT_S) == 0, b"".join(server.stderr).decode()
        finally:
            server.kill()


def test_the_plan_reaches_a_pydantic_ai_model_that_reads_no_resources(tmp_path: Path) -> None:
    """pydantic-ai's MCPToolset reads no resources: the live context reaches its model as a
    tool result, and the stable part (what to call) through the server's instructions."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    import toolcards
    from toolcards.planning import PlanningTool
    from toolcards.store import close_default_stores

    env = {**os.environ, "TOOLCARDS_STORE": str(tmp_path / "state.db")}
    config = tmp_path / "team.yaml"
    config.write_text("team_id: ctx-team\ncards:\n  - kind: planning\n")
    # Another member of the team (this process, the same store) put a task on the board.
    os.environ["TOOLCARDS_STORE"] = env["TOOLCARDS_STORE"]
    try:
        with toolcards.Team("ctx-team") as team:
            tools = {t.name: t for t in team.member("Planner").factory(PlanningTool()).tools()}
            task = {"description": "Migrate the billing database", "owner": "@Ops"}
            tools["update_planning"].call_sync({"create_tasks": [task]})
    finally:
        del os.environ["TOOLCARDS_STORE"]
        close_default_stores()

    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.setdefault("instructions", info.instructions or "")
        returns = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("get_team_context", {})])
        seen["context"] = returns[0].content
        return ModelResponse(parts=[TextPart("done")])

    command = serve_command(config, "--agent", "Ops")
    transport = StdioTransport(command=command[0], args=command[1:], cwd=str(REPO), env=env)
    toolset = MCPToolset(transport, init_timeout=TIMEOUT_S, include_instructions=True)
    assert Agent(FunctionModel(model), toolsets=[toolset]).run_sync("go").output == "done"
    assert "Call get_team_context before starting work" in seen["instructions"]
    assert "Migrate the billing database (creator @Planner)" in seen["context"]
