"""MCP server benchmark: tool calls through ``toolcards serve`` over stdio and streamable HTTP.

The team has one trivial card (``echo(text) -> text``, defined here), so the numbers are
the cost of the transport, the MCP SDK, identity lookup and the call pipeline. The server
runs as a real subprocess (``python -m toolcards.cli serve``) on the same 2-core machine
as the clients, so both compete for the CPU.

Beside it runs a bare server on the official SDK (:mod:`bench._bare_mcp_server`: the
low-level ``Server``, the same ``echo`` tool, nothing of ours), measured in the same rounds,
turn about. Over stdio ``toolcards serve`` no longer runs on the SDK
(:mod:`toolcards.server._stdio`), so there "ours minus bare" is what our server costs next to
the SDK's, negative when ours is cheaper; in-process and over HTTP both still run on the SDK.

Rows (median milliseconds per call; the note gives the aggregate calls per second):

* in-process ``mcp.Client(server)`` — no transport: toolcards, the bare server, and our
  overhead (the difference of the medians; target <= 0.1 ms);
* stdio, 1 caller: toolcards, the bare server and our overhead, in interleaved rounds;
  8 callers sharing the one stdio session (a stdio server has one client; 8 concurrent
  requests are pipelined on it);
* stdio with raw frames (no client library: the SDK client's own work per call is larger
  than a server's): ``ping`` (the protocol floor; the Node reference servers answer in
  ~0.29 ms) and the ``echo`` call, toolcards and the bare server, interleaved;
* HTTP, 1 client, and 8 clients, each its own ``mcp.Client`` and agent (``X-Agent-Name``);
* start-up: from launching the server (stdio) to the answer of its first tool call,
  toolcards and the bare server launched turn about; target <= 250 ms. The client is the
  SDK's in its default mode, so toolcards' figure includes the refused ``server/discover``
  probe and the handshake that follows it.

``run()`` returns :class:`~bench.timing.Case` rows; nothing is asserted. Without the ``mcp``
extra the group is skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from bench.timing import Case, Skip, Stats
from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, ToolCard, capability

__all__ = ["run"]

REPO = Path(__file__).resolve().parents[1]
CALLS_ONE = 400
CALLS_EACH = 100
CONCURRENT = 8
WARMUP = 20
ROUNDS = 4
"""Interleaved rounds when toolcards and the bare server are compared."""
OVERHEAD_TARGET_MS = 0.1


class EchoParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ServerBenchCard(ToolCard):
    """One trivial tool for the server benchmark."""

    kind: ClassVar[str] = "bench_server_echo"
    echo: EchoParam | bool = True

    @capability("echo", name="echo")
    def echo_text(self, text: str) -> str:
        """Return the text.

        Args:
            text: Any text.
        """
        return text


CONFIG = "team_id: bench\nimports: [bench.server]\ncards:\n  - kind: bench_server_echo\n"


async def _timed_calls(client: Any, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        result = await client.call_tool("echo", {"text": "ping"})
        samples.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            raise RuntimeError(f"echo failed: {result.content}")
    return samples


STARTS = 6
BARE_COMMAND = [sys.executable, "-m", "bench._bare_mcp_server"]


async def _measure(clients: list[Any], callers: int, count: int) -> tuple[Stats, float]:
    """(per-call statistics in ms, calls per second) with ``callers`` concurrent loops over ``clients``."""
    for client in clients:
        await _timed_calls(client, WARMUP)
    started = time.perf_counter()
    batches = await asyncio.gather(*(_timed_calls(clients[i % len(clients)], count) for i in range(callers)))
    wall = time.perf_counter() - started
    samples = [sample for batch in batches for sample in batch]
    return Stats.of(samples), len(samples) / wall


async def _interleaved(clients: dict[str, Any], count: int) -> dict[str, tuple[Stats, float]]:
    """Each client's (statistics, calls per second) over ``ROUNDS`` rounds taken turn about."""
    for client in clients.values():
        await _timed_calls(client, WARMUP)
    samples: dict[str, list[float]] = {name: [] for name in clients}
    walls = dict.fromkeys(clients, 0.0)
    for _ in range(ROUNDS):
        for name, client in clients.items():
            started = time.perf_counter()
            samples[name] += await _timed_calls(client, count // ROUNDS)
            walls[name] += time.perf_counter() - started
    return {name: (Stats.of(samples[name]), len(samples[name]) / walls[name]) for name in clients}


def _overhead(label: str, ours: Stats, bare: Stats) -> Case:
    return Case(
        label,
        ours.median - bare.median,
        f"median of toolcards minus median of the bare SDK server ({ours.median:.3f} - {bare.median:.3f} ms)",
        target=OVERHEAD_TARGET_MS,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@asynccontextmanager
async def _http_server(config: Path, env: dict[str, str]) -> AsyncIterator[str]:
    port = _free_port()
    command = [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config), "--transport", "http"]
    # Without TOOLCARDS_TOKEN the server generates a token and prints it in its URL.
    env = {name: value for name, value in env.items() if name != "TOOLCARDS_TOKEN"}
    process = subprocess.Popen(
        [*command, "--port", str(port)], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    # Once it serves, its stderr is not read any more: a full pipe would block it.
    # `toolcards serve` writes a few lines per agent, far below the pipe's buffer.
    try:
        assert process.stderr is not None
        while True:
            line = await asyncio.to_thread(process.stderr.readline)
            if not line:
                raise RuntimeError("the HTTP server exited before serving")
            if b"serving team" in line:
                break
        # The URL the server printed carries the token it generated (`.../mcp?token=...`).
        yield line.decode().split(" at ", 1)[1].split()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)


def _http_client(url: str, name: str) -> AbstractAsyncContextManager[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"X-Agent-Name": name})
    return Client(streamable_http_client(url, http_client=http))


async def _bench(root: Path) -> list[Case]:
    from mcp import Client

    from bench._bare_mcp_server import build_server
    from toolcards.server import TeamServer, load_config

    config = root / "team.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(root / "workspaces")}
    # Servers start as on a user's machine: Python keeps the bytecode it compiles, so only
    # the first launch (a warm-up here) compiles sources. With PYTHONDONTWRITEBYTECODE set in
    # this shell every launch would compile toolcards and whatever lacks a cached .pyc again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rows: list[Case] = []

    def row(label: str, result: tuple[Stats, float]) -> None:
        rows.append(Case.timed(label, result[0], f"{result[1]:,.0f} calls/s"))

    team_server = TeamServer(load_config(config))
    try:
        async with Client(team_server.server) as ours, Client(build_server()) as bare:
            inproc = await _interleaved({"toolcards": ours, "bare": bare}, CALLS_ONE)
    finally:
        await team_server.aclose()
    row("in-process mcp.Client, 1 caller", inproc["toolcards"])
    row("in-process mcp.Client, 1 caller, bare SDK server", inproc["bare"])
    rows.append(_overhead("in-process: our overhead per call", inproc["toolcards"][0], inproc["bare"][0]))

    serve = [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config)]
    async with _stdio_client(serve, env) as ours, _stdio_client(BARE_COMMAND, env) as bare:
        stdio = await _interleaved({"toolcards": ours, "bare": bare}, CALLS_ONE)
        row("stdio, 1 caller", stdio["toolcards"])
        row("stdio, 1 caller, bare SDK server", stdio["bare"])
        rows.append(_overhead("stdio: our overhead per call", stdio["toolcards"][0], stdio["bare"][0]))
        row(f"stdio, {CONCURRENT} callers on one session", await _measure([ours], CONCURRENT, CALLS_EACH))

    raw = await _raw_interleaved({"toolcards": serve, "bare": BARE_COMMAND}, env)
    for kind in ("ping", "echo"):
        rows.append(
            Case.timed(f"stdio raw frames, {kind}", raw["toolcards", kind], "JSON-RPC frames, no client library")
        )
        rows.append(Case.timed(f"stdio raw frames, {kind}, bare SDK server", raw["bare", kind], "the same frames"))

    starts: dict[str, list[float]] = {"toolcards": [], "bare": []}
    for command in (serve, BARE_COMMAND):  # warm-up: bytecode written, files in the page cache
        async with _stdio_client(command, env) as client:
            await client.call_tool("echo", {"text": "warm-up"})
    for _ in range(STARTS):
        for name, command in (("toolcards", serve), ("bare", BARE_COMMAND)):
            started = time.perf_counter()
            async with _stdio_client(command, env) as client:
                await client.call_tool("echo", {"text": "first"})
                starts[name].append((time.perf_counter() - started) * 1000)
    ours_start, bare_start = Stats.of(starts["toolcards"]), Stats.of(starts["bare"])
    rows.append(
        Case.timed(
            "stdio start-up to first answer",
            ours_start,
            f"launch toolcards serve, connect, first tool call; median of {STARTS}; Node reference servers: ~190 ms",
            target=250.0,
        )
    )
    rows.append(
        Case.timed(
            "stdio start-up to first answer, bare SDK server",
            bare_start,
            f"importing mcp is most of it; launched turn about with toolcards; median of {STARTS}",
        )
    )
    rows.append(
        Case(
            "stdio start-up: ours over the bare SDK server",
            ours_start.median - bare_start.median,
            "median of toolcards minus median of the bare server",
        )
    )

    async with _http_server(config, env) as url:
        async with _http_client(url, "bench-0") as client:
            row("HTTP, 1 client", await _measure([client], 1, CALLS_ONE))
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(_http_client(url, f"bench-{i}")) for i in range(CONCURRENT)]
            row(f"HTTP, {CONCURRENT} clients", await _measure(clients, CONCURRENT, CALLS_EACH))
    return rows


class _RawStdio:
    """A stdio server spoken to with raw JSON-RPC frames, after the handshake."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        while True:
            answer: dict[str, Any] = json.loads(await self.process.stdout.readline())
            if answer.get("id") == self.next_id:
                if "result" not in answer:
                    raise RuntimeError(f"{method} failed: {answer}")
                return answer


async def _raw_interleaved(commands: dict[str, list[str]], env: dict[str, str]) -> dict[tuple[str, str], Stats]:
    """Per server and kind (``ping``, ``echo``), the statistics of raw-frame round trips."""
    calls = {"ping": ("ping", None), "echo": ("tools/call", {"name": "echo", "arguments": {"text": "ping"}})}
    servers: dict[str, _RawStdio] = {}
    try:
        for name, command in commands.items():
            process = await asyncio.create_subprocess_exec(
                *command,
                cwd=REPO,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                limit=1 << 24,
            )
            server = servers[name] = _RawStdio(process)
            info = {"name": "bench", "version": "1"}
            await server.request(
                "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
            )
            assert process.stdin is not None
            process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            for method, params in calls.values():
                for _ in range(WARMUP):
                    await server.request(method, params)
        samples: dict[tuple[str, str], list[float]] = {(name, kind): [] for name in servers for kind in calls}
        for _ in range(ROUNDS):
            for name, server in servers.items():
                for kind, (method, params) in calls.items():
                    for _ in range(CALLS_ONE // ROUNDS):
                        started = time.perf_counter()
                        await server.request(method, params)
                        samples[name, kind].append((time.perf_counter() - started) * 1000)
        return {key: Stats.of(values) for key, values in samples.items()}
    finally:
        for server in servers.values():
            if server.process.stdin is not None:
                server.process.stdin.close()
            await server.process.wait()


@asynccontextmanager
async def _stdio_client(command: list[str], env: dict[str, str]) -> AsyncIterator[Any]:
    """A connected SDK client of the stdio server ``command`` (its stderr discarded)."""
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=env)
    info = mcp_types.Implementation(name="bench", version="1")
    with open(os.devnull, "w") as quiet:  # the server's progress lines
        async with Client(stdio_client(params, errlog=quiet), client_info=info) as client:
            yield client


def run() -> list[Case]:
    """Measure tool calls per transport; returns :class:`~bench.timing.Case` rows."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise Skip("the mcp extra is not installed (pip install 'toolcards[mcp]')")
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_bench(Path(tmp)))


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("server", case) for case in run()), end="")
