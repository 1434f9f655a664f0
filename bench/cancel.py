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
import uuid
from pathlib import Path

from bench._process_groups import cancel_until_gone
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
                call = client.call_tool("exec_command", {"cmd": f"sleep {seconds} && touch m"})
                samples.append(await cancel_until_gone(call, f"sleep {seconds}", timeout_s=10) * 1000)
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
