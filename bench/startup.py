"""Start-up benchmark: ``toolcards serve`` over stdio against the Node reference MCP servers.

From launching the server to the answer of its first tool call, reading a 2 KB file, with
the official Python SDK client in its default mode: ``toolcards serve`` with a workspace
and a knowledge-graph card (its defaults, state in SQLite) against
``@modelcontextprotocol/server-filesystem`` (the version :mod:`bench.mcp_reference`
installs with npm, once, under ``~/.cache/toolcards-bench``). Both are launched turn about,
:data:`LAUNCHES` times each after one warm-up launch (Python keeps the bytecode it compiled,
as on a user's machine; the files are then in the page cache).

Rows: each side's median, and ``reference / toolcards`` (above 1: toolcards answers first;
target >= 1). Without node or npm, or when the install fails (no registry), the group is
skipped.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.timing import Case, Skip, Stats

__all__ = ["run"]

LAUNCHES = 9


def run() -> list[Case]:
    from bench.mcp_reference.__main__ import Side, _client, _install, _warm_up

    try:
        filesystem, memory = _install()
    except RuntimeError as exc:
        raise Skip(str(exc)) from exc

    async def measure(root: Path) -> dict[str, list[float]]:
        sides = [Side(name, root / name, filesystem, memory) for name in ("reference", "toolcards")]
        samples: dict[str, list[float]] = {side.name: [] for side in sides}
        for side in sides:
            await _warm_up(side)
        for launch in range(LAUNCHES):
            for side in sides if launch % 2 == 0 else sides[::-1]:
                started = time.perf_counter()
                async with _client(side.files_command, side.env) as client:
                    await side.read(client, 0)
                    samples[side.name].append((time.perf_counter() - started) * 1000)
        return samples

    with tempfile.TemporaryDirectory(prefix="toolcards-startup-") as temp:
        samples = asyncio.run(measure(Path(temp)))
    ours, reference = Stats.of(samples["toolcards"]), Stats.of(samples["reference"])
    ratio = statistics.median(samples["reference"]) / statistics.median(samples["toolcards"])
    note = f"launch, connect, read a 2 KB file; median of {LAUNCHES}, launched turn about with the other"
    return [
        Case.timed("stdio start-up to first answer, toolcards serve", ours, f"workspace and knowledge graph; {note}"),
        Case.timed("stdio start-up to first answer, Node server-filesystem", reference, note),
        Case(
            "stdio start-up: reference / toolcards",
            ratio,
            "median of the Node reference over toolcards' (above 1: toolcards answers first)",
            unit="x",
            target=1.0,
            better="higher",
        ),
    ]
