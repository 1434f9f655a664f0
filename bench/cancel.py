"""Cancellation benchmark: a running ``exec_command`` cancelled over MCP, until its process group is gone.

A real ``toolcards serve`` over stdio (an exec card, local backend, and a workspace card), driven
by the official Python SDK client: each sample starts ``sleep N && touch marker`` (a unique N, so
the command can be found in ``/proc``), waits until it runs, cancels the call (the client sends
``notifications/cancelled``) and times from the cancel to the moment no live process of the
command's process group is left, polling ``/proc`` about every millisecond from the client's
event loop. The marker must never be written and no answer may come (the call ends
cancelled). Target: <= 500 ms.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.timing import Case, Stats

__all__ = ["run"]

SAMPLES = 15
CONFIG = """\
team_id: cancel-bench
cards:
  - kind: exec
    mode: local
    allowed_commands: []
    timeout_s: 3600
  - kind: workspace
"""


def _live(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


async def _measure(root: Path) -> list[float]:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config = root / "team.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(root / "workspaces"), "TOOLCARDS_STORE": str(root / "s.db")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolcards.cli", "serve", "--config", str(config)], env=env
    )
    samples: list[float] = []
    with open(os.devnull, "w") as quiet:
        info = mcp_types.Implementation(name="bench", version="1")
        async with Client(stdio_client(params, errlog=quiet), mode="legacy", client_info=info) as client:
            for _ in range(SAMPLES):
                seconds = f"{40 + uuid.uuid4().int % 10_000 / 10_000:.4f}"
                call = asyncio.ensure_future(client.call_tool("exec_command", {"cmd": f"sleep {seconds} && touch m"}))
                while not (pids := _live(f"sleep {seconds}")):
                    await asyncio.sleep(0.005)
                pgids = {os.getpgid(pid) for pid in pids}
                started = time.perf_counter()
                call.cancel()
                while any(map(_group_alive, pgids)):
                    if time.perf_counter() - started > 10:
                        raise RuntimeError(f"process group {pgids} still alive 10 s after the cancel")
                    await asyncio.sleep(0.001)  # the loop must run: it sends the cancel
                samples.append((time.perf_counter() - started) * 1000)
                try:
                    await call
                except asyncio.CancelledError:
                    pass
                else:
                    raise RuntimeError("a cancelled call was answered")
    if (root / "workspaces" / "cancel-bench" / "m").exists():
        raise RuntimeError("a cancelled command wrote its marker")
    return samples


def run() -> list[Case]:
    with tempfile.TemporaryDirectory(prefix="toolcards-cancel-") as temp:
        samples = asyncio.run(_measure(Path(temp)))
    return [
        Case.timed(
            "cancel exec_command over stdio -> process group gone",
            Stats.of(samples),
            f"toolcards serve, local backend; SDK client's notifications/cancelled; {SAMPLES} cancels",
            target=500.0,
        )
    ]
