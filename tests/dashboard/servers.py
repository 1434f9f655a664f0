"""Real ``toolcards serve`` and ``toolcards dashboard`` processes for the dashboard's tests."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from bench.serve_process import ServeProcess

REPO = Path(__file__).resolve().parents[2]
TEAM_CONFIG = "team_id: lookout\ncards:\n  - kind: planning\n  - kind: knowledge_graph\n  - kind: workspace\n"


def team_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose workspaces and store are under ``tmp_path``, with no fixed token."""
    return {
        **{name: value for name, value in os.environ.items() if name != "TOOLCARDS_TOKEN"},
        # This checkout's sources first: an installed toolcards may be another checkout's.
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": str(tmp_path / "state.db"),
    }


class Process:
    """A ``toolcards`` command serving HTTP on a free port; :attr:`url` is the URL it printed."""

    def __init__(self, served: ServeProcess, env: dict[str, str]) -> None:
        self.served = served
        self.workspaces = Path(env["TOOLCARDS_WORKSPACES_ROOT"])
        try:
            self.url = served.url()
        except RuntimeError:
            served.stop()
            raise

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.url).query)["token"][0]

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    def stop(self) -> None:
        self.served.stop()


def serve(config: Path, env: dict[str, str]) -> Process:
    """``toolcards serve --transport http`` of ``config``; its URL is the MCP endpoint's."""
    return Process(ServeProcess(config, env), env)


def dashboard(config: Path, env: dict[str, str]) -> Process:
    """``toolcards dashboard`` of ``config``; its URL is the page's, with the token."""
    announces = r"dashboard of team \S+ at (http://\S+)"
    return Process(ServeProcess.command(["dashboard", "--config", str(config)], env, announces), env)


def call_tool(mcp_url: str, tool: str, arguments: dict[str, Any], agent: str = "Alice") -> str:
    """Call ``tool`` over MCP as ``agent``; returns the text of the result (raises if it failed)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> str:
        client = Client(
            streamable_http_client(mcp_url, http_client=httpx2.AsyncClient(headers={"X-Agent-Name": agent}))
        )
        async with client:
            result = await client.call_tool(tool, arguments)
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            raise AssertionError(f"{tool} failed: {text}")
        return text

    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, run).result(timeout=60)


@contextlib.contextmanager
def connected(mcp_url: str, agent: str, *calls: tuple[str, dict[str, Any]]) -> Iterator[None]:
    """An MCP client of the handshake protocol connected as ``agent`` while the block runs,
    after making ``calls``; it disconnects (its session ends) when the block ends."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    ready, done = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    async def run() -> None:
        transport = streamable_http_client(mcp_url, http_client=httpx2.AsyncClient(headers={"X-Agent-Name": agent}))
        try:
            async with Client(transport, mode="legacy") as client:
                await client.call_tool("get_planning", {})  # joins the roster
                for tool, arguments in calls:
                    await client.call_tool(tool, arguments)
                ready.set()
                await anyio.to_thread.run_sync(done.wait)
        except BaseException as exc:
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=anyio.run, args=(run,), daemon=True)
    thread.start()
    assert ready.wait(60), f"{agent} did not connect"
    if failure:
        raise failure[0]
    try:
        yield
    finally:
        done.set()
        thread.join(60)
        if failure:
            raise failure[0]


def get(
    url: str, headers: dict[str, str] | None = None, timeout: float = 10, *, stream: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """A GET: status, headers (lower-case names) and the body (of a stream, its first chunk)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read1(65536) if stream else response.read()
            return response.status, {k.lower(): v for k, v in response.headers.items()}, body
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def view(origin: str, token: str, name: str) -> Any:
    """The JSON of view ``name``, asked with the token as a bearer header."""
    status, _, body = get(f"{origin}/api/views/{name}", {"Authorization": f"Bearer {token}"})
    assert status == 200, body
    return json.loads(body)
