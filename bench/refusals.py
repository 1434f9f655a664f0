"""Refusals under contention: what a served team's log holds while its agents are refused.

A real ``toolcards serve --transport http`` process serves a team with a planning board and a
workspace; several MCP clients, each its own agent, call it at once for a while, and nearly
every call is one the team refuses as it should:

* **stale edits**: every agent reads one shared file and edits it, so most edits find that
  another agent changed it since their read (the refusal quotes what changed);
* **unmatched edits**: an edit whose ``old_string`` is not in the file (the refusal quotes
  the file's closest lines);
* **unknown task ids**: ``get_planning_task`` of a task that does not exist.

The file, and the old text of the unmatched edits, hold :data:`SECRET`. What the server
printed on stderr is then counted: its bytes, its tracebacks, and how often the secret shows.
``python -m bench refusals`` runs it for 60 s; ``tests/server/test_refusal_logging.py`` for
a few seconds. Nothing is asserted here.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.serve_process import ServeProcess
from bench.timing import Case

__all__ = ["SECRET", "TEAM_CONFIG", "Contention", "contend", "run", "serve_and_contend"]

REPO = Path(__file__).resolve().parents[1]
SECRET = "S3CR3T-canary-5f1d9c0b"
"""A string that must never reach the server's log: it is in the shared file and in the old
text of the unmatched edits."""
TEAM_CONFIG = "team_id: refusals\ncards:\n  - kind: planning\n  - kind: workspace\n"
SHARED_FILE = "shared/settings.txt"
CLIENTS = 6
"""Concurrent MCP clients, each its own agent."""
RUN_S = 60.0


@dataclass
class Contention:
    """What a run of :func:`contend` did, and what the server printed meanwhile."""

    calls: int = 0
    refused: int = 0
    """Calls answered with an error (MCP ``isError``)."""
    stale: int = 0
    """Edits refused because the file changed since the agent's read."""
    unmatched: int = 0
    """Edits refused because their old text is not in the file."""
    unknown: int = 0
    """Reads of a task that does not exist."""
    stderr_bytes: int = 0
    tracebacks: int = 0
    """Lines of the server's stderr starting a traceback."""
    secret_lines: int = 0
    """Lines of the server's stderr holding :data:`SECRET`."""
    stderr: str = ""


def _line(state: str) -> str:
    return f"mode = {state}  # api key {SECRET}\n"


async def _agent(url: str, name: str, until: float, counts: Contention) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    client = Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"X-Agent-Name": name})))

    async def call(tool: str, arguments: dict[str, Any]) -> str:
        result = await client.call_tool(tool, arguments)
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        counts.calls += 1
        if result.is_error:
            counts.refused += 1
            counts.stale += "changed since you read it" in text
            counts.unmatched += "was not found" in text
            counts.unknown += "does not exist" in text
        return text

    async with client:
        turn = 0
        while time.monotonic() < until:
            turn += 1
            text = await call("workspace_read", {"path": SHARED_FILE})
            current, wanted = ("a", "b") if "mode = a" in text else ("b", "a")
            # Others edit the same line between this read and this edit: most are refused as stale.
            await call(
                "workspace_edit", {"path": SHARED_FILE, "old_string": _line(current), "new_string": _line(wanted)}
            )
            await call("workspace_read", {"path": SHARED_FILE})
            await call(
                "workspace_edit", {"path": SHARED_FILE, "old_string": f"password = {SECRET}-{turn}", "new_string": "x"}
            )
            await call("get_planning_task", {"task_id": 424_242 + turn})


async def contend(url: str, seconds: float, clients: int = CLIENTS) -> Contention:
    """Drive the team served at ``url`` (its MCP endpoint, with ``?token=``) with ``clients``
    concurrent agents for ``seconds``; returns the calls made (stderr is the caller's)."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    counts = Contention()
    setup = Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"X-Agent-Name": "Setup"})))
    async with setup:
        await setup.call_tool("workspace_write", {"path": SHARED_FILE, "content": "# settings\n" + _line("a")})
    until = time.monotonic() + seconds
    async with anyio.create_task_group() as tasks:
        for index in range(clients):
            tasks.start_soon(_agent, url, f"Agent{index}", until, counts)
    return counts


def serve_and_contend(directory: Path, seconds: float, clients: int = CLIENTS) -> Contention:
    """Serve :data:`TEAM_CONFIG` from ``directory`` in a real process, :func:`contend` for
    ``seconds``, stop it, and count what it printed on stderr."""
    import anyio

    (directory / "team.yaml").write_text(TEAM_CONFIG)
    env = {
        **{name: value for name, value in os.environ.items() if name != "TOOLCARDS_TOKEN"},
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(directory / "workspaces"),
        "TOOLCARDS_STORE": str(directory / "state.db"),
    }
    served = ServeProcess(directory / "team.yaml", env)
    try:
        counts = anyio.run(contend, served.url(), seconds, clients)
    finally:
        served.stop()
    counts.stderr = "\n".join(served.lines) + "\n"
    counts.stderr_bytes = len(counts.stderr.encode())
    counts.tracebacks = sum(line.startswith("Traceback") for line in served.lines)
    counts.secret_lines = sum(SECRET in line for line in served.lines)
    return counts


def run() -> list[Case]:
    """Serve and contend for :data:`RUN_S` seconds (about 70 s in all)."""
    with tempfile.TemporaryDirectory(prefix="toolcards-refusals-") as temp:
        counts = serve_and_contend(Path(temp), RUN_S)
    note = (
        f"{counts.calls:,} calls in {RUN_S:.0f} s by {CLIENTS} agents, {counts.refused:,} refused "
        f"({counts.stale:,} stale, {counts.unmatched:,} unmatched, {counts.unknown:,} unknown ids)"
    )
    return [
        Case("server stderr during refusals", float(counts.stderr_bytes), note, unit="bytes", target=16_384),
        Case("tracebacks on stderr", float(counts.tracebacks), note, unit="tracebacks", target=0),
        Case("stderr lines holding the secret", float(counts.secret_lines), note, unit="lines", target=0),
    ]
