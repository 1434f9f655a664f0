"""``python -m bench.mcp_reference``: toolcards and the Node reference MCP servers over stdio.

Run by hand from the repository root with the project's venv. It:

1. installs ``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-memory``
   (:data:`VERSION`) with npm into ``$TOOLCARDS_MCP_REFERENCE_DIR`` (default
   ``~/.cache/toolcards-bench/mcp-reference-<version>``), once; without node or npm, or when the
   install fails (no network), it prints one ``skipped: why`` row and exits 0;
2. drives every server with the official Python SDK client over stdio, the same client for
   both sides, in ``--rounds`` rounds (3) taken turn about (which side goes first alternates),
   after one warm-up launch of each (toolcards' bytecode is cached, as in an installed package):
   start-up to the first answer, ``ping`` (on the handshake protocol: the 2026-07-28 protocol
   toolcards and the client otherwise agree on has none), reading a 2 KB file, reading a 2,000-line
   file, writing a new 2 KB file, listing directories of 400 and 1,000 entries, and searching a
   graph of 100 entities by name; toolcards serves a
   team with a workspace and a knowledge-graph card (its defaults; state in SQLite);
3. prints one table: the reference's median, ours, and ``ratio = reference / ours`` (above 1:
   toolcards is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
VERSION = "2026.8.31"
PACKAGES = ("@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-memory")
CALLS = 200
STARTS = 3
FILES = 400
MORE_FILES = 1_000
LINES = 2_000
ENTITIES = 100
TEXT = ("0123456789abcdef" * 8 + "\n") * 15 + "x" * 17  # 1,952 characters
SOURCE = "".join(f"    x{index} = f(x{index - 1}, {index % 7})\n" for index in range(LINES))
""":data:`LINES` lines of code-like text (about 22 characters each: the whole file fits in one
``workspace_read`` page, as it does in one ``read_text_file``)."""
CONFIG = "team_id: ref\ncards:\n  - kind: workspace\n  - kind: knowledge_graph\n"

Call = Callable[[Any, int], Awaitable[Any]]


def _cache_dir() -> Path:
    default = Path.home() / ".cache" / "toolcards-bench" / f"mcp-reference-{VERSION}"
    return Path(os.environ.get("TOOLCARDS_MCP_REFERENCE_DIR", default))


def _install() -> tuple[Path, Path]:
    """The two servers' entry points, installed if needed; raises ``RuntimeError`` saying why not."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise RuntimeError("node and npm are needed (not found on PATH)")
    prefix = _cache_dir()
    bins = prefix / "node_modules" / ".bin"
    filesystem, memory = bins / "mcp-server-filesystem", bins / "mcp-server-memory"
    if not (filesystem.exists() and memory.exists()):
        prefix.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
        done = subprocess.run(
            [*command, *(f"{package}@{VERSION}" for package in PACKAGES)],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not (filesystem.exists() and memory.exists()):
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"npm install failed (network?): {last}")
    return filesystem, memory


@asynccontextmanager
async def _client(command: list[str], env: dict[str, str], mode: str = "auto") -> AsyncIterator[Any]:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=env)
    with open(os.devnull, "w") as quiet:
        async with Client(
            stdio_client(params, errlog=quiet),
            client_info=mcp_types.Implementation(name="bench", version="1"),
            mode=mode,  # type: ignore[arg-type]
        ) as client:
            yield client


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def _timed(client: Any, call: Call, count: int) -> list[float]:
    for index in range(5):
        await call(client, -1 - index)
    samples = []
    for index in range(count):
        started = time.perf_counter()
        await call(client, index)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


class Side:
    """One side of the comparison: how to start its servers and make each call."""

    def __init__(self, name: str, root: Path, filesystem: Path, memory: Path) -> None:
        self.name = name
        self.root = root
        self.env = {**os.environ}
        self.round = 0
        root.mkdir(parents=True)
        if name == "toolcards":
            config = root / "team.yaml"
            config.write_text(CONFIG)
            self.env["TOOLCARDS_WORKSPACES_ROOT"] = str(root / "workspaces")
            self.files = root / "workspaces" / "ref"
            # Bytecode cached as in an installed package, whatever PYTHONDONTWRITEBYTECODE says:
            # otherwise every launch compiles toolcards from source first.
            self.env.pop("PYTHONDONTWRITEBYTECODE", None)
            self.env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
            serve = [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config)]
            self.files_command = self.graph_command = serve
        else:
            self.files = root / "files"
            self.env["MEMORY_FILE_PATH"] = str(root / "memory.jsonl")
            self.files_command = ["node", str(filesystem), str(self.files)]
            self.graph_command = ["node", str(memory)]
        (self.files / "many").mkdir(parents=True)
        (self.files / "new").mkdir()
        (self.files / "more").mkdir()
        (self.files / "data.txt").write_text(TEXT)
        (self.files / "source.py").write_text(SOURCE)
        for index in range(FILES):
            (self.files / "many" / f"file-{index:03}.txt").write_text("x\n")
        for index in range(MORE_FILES):
            (self.files / "more" / f"file-{index:04}.txt").write_text("x\n")

    def path(self, relative: str) -> str:
        return relative if self.name == "toolcards" else str(self.files / relative)

    async def read(self, client: Any, index: int) -> Any:
        tool = "workspace_read" if self.name == "toolcards" else "read_text_file"
        return await _call(client, tool, {"path": self.path("data.txt")})

    async def read_lines(self, client: Any, index: int) -> Any:
        tool = "workspace_read" if self.name == "toolcards" else "read_text_file"
        return await _call(client, tool, {"path": self.path("source.py")})

    async def list_more(self, client: Any, index: int) -> Any:
        tool = "workspace_list" if self.name == "toolcards" else "list_directory"
        return await _call(client, tool, {"path": self.path("more")})

    async def write(self, client: Any, index: int) -> Any:
        tool = "workspace_write" if self.name == "toolcards" else "write_file"
        path = self.path(f"new/r{self.round}-{index}.txt")
        return await _call(client, tool, {"path": path, "content": TEXT})

    async def list(self, client: Any, index: int) -> Any:
        tool = "workspace_list" if self.name == "toolcards" else "list_directory"
        return await _call(client, tool, {"path": self.path("many")})

    async def search(self, client: Any, index: int) -> Any:
        query = f"entity-{abs(index) % ENTITIES:03}"
        if self.name == "toolcards":
            return await _call(client, "search_graph", {"query": query, "mode": "keyword"})
        return await _call(client, "search_nodes", {"query": query})

    async def ping(self, client: Any, index: int) -> Any:
        with warnings.catch_warnings():  # the SDK warns that ping left the newest protocol
            warnings.simplefilter("ignore")
            return await client.send_ping()

    async def fill_graph(self, client: Any) -> None:
        entities = [{"name": f"entity-{index:03}", "observations": [f"fact {index}"]} for index in range(ENTITIES)]
        if self.name == "toolcards":
            typed = [{**entity, "entity_type": "thing"} for entity in entities]
            await _call(client, "update_graph", {"create_entities": typed})
        else:
            typed = [{**entity, "entityType": "thing"} for entity in entities]
            await _call(client, "create_entities", {"entities": typed})


async def _warm_up(side: Side) -> None:
    """One launch before the timed ones: bytecode written, files in the page cache."""
    async with _client(side.files_command, side.env) as client:
        await side.read(client, 0)


async def _round(side: Side, samples: dict[str, list[float]], first_round: bool) -> None:
    for _ in range(STARTS):
        started = time.perf_counter()
        async with _client(side.files_command, side.env) as client:
            await side.read(client, 0)
            samples["start-up to first answer (read 2 KB)"].append((time.perf_counter() - started) * 1000)
    # ping exists only on the handshake protocol (removed in 2026-07-28), which the reference speaks.
    async with _client(side.files_command, side.env, mode="legacy") as client:
        samples["ping (handshake protocol)"] += await _timed(client, side.ping, CALLS)
    async with _client(side.files_command, side.env) as client:
        samples["read 2 KB file"] += await _timed(client, side.read, CALLS)
        samples["write new 2 KB file"] += await _timed(client, side.write, CALLS)
        samples[f"list {FILES} entries"] += await _timed(client, side.list, CALLS)
        samples[f"list {MORE_FILES:,} entries"] += await _timed(client, side.list_more, CALLS)
        samples[f"read a {LINES:,}-line file"] += await _timed(client, side.read_lines, CALLS)
    async with _client(side.graph_command, side.env) as client:
        if first_round:
            await side.fill_graph(client)
        samples[f"graph search by name, {ENTITIES} entities"] += await _timed(client, side.search, CALLS)
    side.round += 1


async def _compare(rounds: int, filesystem: Path, memory: Path, tmp: Path) -> list[tuple[str, float, float]]:
    sides = [Side(name, tmp / name, filesystem, memory) for name in ("reference", "toolcards")]
    samples: dict[str, dict[str, list[float]]] = {side.name: {} for side in sides}
    for side in sides:
        await _warm_up(side)
    for number in range(rounds):
        order = sides if number % 2 == 0 else sides[::-1]
        for side in order:
            table = samples[side.name]
            collected: dict[str, list[float]] = _Samples()
            await _round(side, collected, number == 0)
            for label, values in collected.items():
                table.setdefault(label, []).extend(values)
    reference, ours = samples["reference"], samples["toolcards"]
    return [(label, statistics.median(reference[label]), statistics.median(ours[label])) for label in reference]


class _Samples(dict[str, list[float]]):
    def __missing__(self, key: str) -> list[float]:
        self[key] = []
        return self[key]


def _print(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("over MCP, stdio", f"reference {VERSION} (Node)", "toolcards", "ratio ref/ours")
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print(
            f"{row[0].ljust(widths[0])}  "
            + "  ".join(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args(argv)
    try:
        filesystem, memory = _install()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        _print([(f"skipped: {' '.join(str(exc).split())}", "", "", "")])
        return 0
    node = subprocess.run(["node", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    print(f"node {node}; toolcards on Python {sys.version.split()[0]}; {args.rounds} rounds of {CALLS} calls, medians")
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(_compare(args.rounds, filesystem, memory, Path(tmp)))
    _print([(label, f"{ref:.2f} ms", f"{ours:.2f} ms", f"{ref / ours:.2f}x") for label, ref, ours in results])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
