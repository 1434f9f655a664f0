"""Concurrency: one team's agents working at once on one SQLite store, in threads, processes and over MCP.

Every agent loops for a fixed time (``TOOLCARDS_BENCH_SECONDS``, 10 s by default) over its
own share of the team's state, calling the tools as a model would (``Tool.call_sync`` on
the tool-call channel), first a **write** phase, then a **read** phase:

* writes, in turn: ``update_planning`` (its own task's status and output),
  ``update_graph`` (its own entity's description; the graph has no embedding, so this is the
  store and the actor) and ``workspace_edit`` (an exact edit of its own 60-line file);
* reads, in turn: ``get_planning_task`` (its own task) and ``workspace_read`` (its own file).

The board (500 tasks), the graph (500 entities) and the tree are built once and shared by
every configuration; each agent is a :class:`~toolcards.testing.FakeObserver` of the team.
Configurations, each in freshly spawned processes (``multiprocessing`` spawn) released
together by a barrier:

* **1 agent** alone: the baseline;
* **8 agents in 1 process**, one thread each;
* **8 agents in 4 processes**, two threads each, every process with its own actors on the
  one store file;
* **over MCP**: ``toolcards serve --transport http`` as a subprocess on the same store, and
  1, then 8 MCP clients (``mcp.Client`` over streamable HTTP, each its own agent by
  ``X-Agent-Name``) in this process's event loop, doing the same calls.

A row's value is the acknowledged calls per second of all agents together (an answer that
is an error is not acknowledged: it fails the group); a ``latency`` row gives the median and
p95 of one call, with p99 in its note. Targets (the issue's goals): 8 agents in one process
get at least one agent's throughput (no collapse under contention), reads and writes alike;
8 agents in 4 processes get >= 1.6x the reads and >= 1x the writes of 8 agents in one process
(the cores are really used); 8 MCP clients get at least one client's throughput. Everything
shares this machine's cores: agents, servers, clients, and anything else running.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.serve_process import ServeProcess
from bench.timing import Case, Stats, percentile

__all__ = ["run"]

REPO = Path(__file__).resolve().parents[1]
AGENTS = 8
PROCESSES = 4
BOARD = 500
GRAPH = 500
FILE_LINES = 60
TIMEOUT_S = 180.0
"""Longest a process may take to start, or to answer after its phase ended."""
WORKSPACE = "shared"
CONFIG = (
    "team_id: {team}\ncards:\n  - kind: planning\n  - kind: knowledge_graph\n"
    f"  - kind: workspace\n    workspace_id: {WORKSPACE}\n"
)

_SPAWN = multiprocessing.get_context("spawn")


def seconds() -> float:
    """How long each phase runs: ``TOOLCARDS_BENCH_SECONDS``, else 10."""
    try:
        value = float(os.environ.get("TOOLCARDS_BENCH_SECONDS", "10"))
    except ValueError:
        return 10.0
    return value if value > 0 else 10.0


# -- one agent's work -----------------------------------------------------------------------


def _agent_name(number: int) -> str:
    return f"Worker{number}"


def _file_of(number: int) -> str:
    return f"agents/worker{number}.txt"


def _entity_of(number: int) -> str:
    return f"entity of worker {number}"


def _task_of(number: int) -> int:
    return number + 1


def _write(number: int, i: int, flipped: bool = False) -> tuple[str, dict[str, Any]]:
    """The ``i``-th write of agent ``number``: (tool, arguments).

    ``flipped``: the agent's file had line 30 in capitals when the agent started.
    """
    kind = i % 3
    if kind == 0:
        change = {"id": _task_of(number), "status": "in_progress" if i % 2 else "pending", "output": f"step {i}"}
        return "update_planning", {"update_tasks": [change]}
    if kind == 1:
        entity = {"name": _entity_of(number), "description": f"worked on at step {i}"}
        return "update_graph", {"update_entities": [entity]}
    # Every third write is an edit: it flips one line of the agent's file back and forth.
    old, new = ("number 30 ", "NUMBER 30 ") if ((i // 3) % 2 == 0) != flipped else ("NUMBER 30 ", "number 30 ")
    return "workspace_edit", {"path": _file_of(number), "old_string": old, "new_string": new}


def _read(number: int, i: int, flipped: bool = False) -> tuple[str, dict[str, Any]]:
    """The ``i``-th read of agent ``number``: (tool, arguments)."""
    if i % 2 == 0:
        return "get_planning_task", {"task_id": _task_of(number)}
    return "workspace_read", {"path": _file_of(number)}


PHASES: dict[str, Callable[[int, int, bool], tuple[str, dict[str, Any]]]] = {"writes": _write, "reads": _read}


def _flipped(text: str) -> bool:
    """Whether an agent's file, as ``workspace_read`` shows it, has line 30 in capitals."""
    return "NUMBER 30 " in text


@dataclass
class _Tally:
    """What the agents of one process did in one phase."""

    calls: int = 0
    latencies: list[float] = field(default_factory=list)
    """Milliseconds per call."""
    errors: list[str] = field(default_factory=list)
    finished: float = 0.0
    """``time.monotonic()`` when the last agent stopped."""


def _loop(
    call: Callable[[str, dict[str, Any]], str], number: int, phase: str, deadline: float, tally: _Tally, lock: Any
) -> None:
    """Agent ``number`` calls its tools until ``deadline`` (``time.monotonic()``)."""
    make = PHASES[phase]
    flipped = _flipped(call("workspace_read", {"path": _file_of(number)}))
    latencies = []
    errors = []
    i = 0
    while time.monotonic() < deadline:
        tool, arguments = make(number, i, flipped)
        started = time.perf_counter()
        answer = call(tool, arguments)
        latencies.append((time.perf_counter() - started) * 1000)
        if answer.startswith("Error"):
            errors.append(f"{tool}: {answer[:200]}")
        i += 1
    with lock:
        tally.calls += len(latencies)
        tally.latencies.extend(latencies)
        tally.errors.extend(errors[:3])
        tally.finished = max(tally.finished, time.monotonic())


# -- a process of agents --------------------------------------------------------------------


def _process_main(conn: Connection, environment: dict[str, str], team: str, numbers: list[int], barrier: Any) -> None:
    """A spawned process: ``numbers``' agents as threads; for each phase, waits at ``barrier`` then runs.

    Sends ``("ok", {phase: (calls, latencies, errors, finished)})`` or ``("error", text)``.
    """
    os.environ.update(environment)
    try:
        from toolcards import ToolFactory
        from toolcards.actors import ActorSystem
        from toolcards.core._channels import Channels
        from toolcards.knowledge_graph import KnowledgeGraphTool
        from toolcards.planning import PlanningTool
        from toolcards.store import close_default_stores
        from toolcards.testing import FakeObserver
        from toolcards.workspace import WorkspaceTool

        results: dict[str, tuple[int, list[float], list[str], float]] = {}
        with ActorSystem() as system:
            callers = []
            for number in numbers:
                observer = FakeObserver(_agent_name(number), team, system=system)
                cards = [PlanningTool(), KnowledgeGraphTool(), WorkspaceTool(workspace_id=WORKSPACE)]
                tools = {tool.name: tool for tool in ToolFactory(cards, observer=observer).tools(Channels.TOOL_CALL)}

                def call(tool: str, arguments: dict[str, Any], tools: dict[str, Any] = tools) -> str:
                    try:
                        return str(tools[tool].call_sync(arguments, channel=Channels.TOOL_CALL))
                    except Exception as exc:  # a refused call is counted as an error, not acknowledged
                        return f"Error: {type(exc).__name__}: {exc}"

                # The read-before-write gate; then each tool once or twice, as a warm-up.
                flipped = _flipped(call("workspace_read", {"path": _file_of(number)}))
                for i in range(6):
                    call(*_write(number, i, flipped))
                    call(*_read(number, i, flipped))
                callers.append((number, call))
            for phase in PHASES:
                barrier.wait(TIMEOUT_S + seconds())
                deadline = time.monotonic() + seconds()
                tally, lock = _Tally(), threading.Lock()
                threads = [
                    threading.Thread(target=_loop, args=(call, number, phase, deadline, tally, lock))
                    for number, call in callers
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                results[phase] = (tally.calls, tally.latencies, tally.errors, tally.finished)
        close_default_stores()
        conn.send(("ok", results))
    except Exception as exc:
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


@dataclass
class _Phase:
    """All agents of one configuration in one phase."""

    calls: int
    wall: float
    """Seconds from the release to the last agent's stop."""
    latencies: list[float]
    errors: list[str]

    @property
    def throughput(self) -> float:
        return self.calls / self.wall if self.wall > 0 else math.nan


def _run_processes(environment: dict[str, str], team: str, groups: list[list[int]]) -> dict[str, _Phase]:
    """``groups[k]`` are the agents of process ``k``; every process runs both phases."""
    barrier = _SPAWN.Barrier(len(groups) + 1)
    children = []
    try:
        for numbers in groups:
            conn, child_end = _SPAWN.Pipe()
            process = _SPAWN.Process(
                target=_process_main, args=(child_end, environment, team, numbers, barrier), daemon=True
            )
            process.start()
            child_end.close()
            children.append((process, conn))
        released = {}
        for phase in PHASES:
            try:
                barrier.wait(TIMEOUT_S + seconds())
            except threading.BrokenBarrierError:
                _raise_child_error(children)
                raise RuntimeError("the agent processes did not reach the start") from None
            released[phase] = time.monotonic()
        answers = []
        for process, conn in children:
            if not conn.poll(TIMEOUT_S + seconds() * len(PHASES)):
                raise RuntimeError(f"agent process {process.pid} did not answer")
            status, payload = conn.recv()
            if status != "ok":
                raise RuntimeError(f"agent process {process.pid}: {payload}")
            answers.append(payload)
    finally:
        for process, conn in children:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join(30)
            conn.close()
    phases = {}
    for phase in PHASES:
        calls = sum(answer[phase][0] for answer in answers)
        wall = max(answer[phase][3] for answer in answers) - released[phase]
        latencies = [sample for answer in answers for sample in answer[phase][1]]
        errors = [error for answer in answers for error in answer[phase][2]]
        phases[phase] = _Phase(calls, wall, latencies, errors)
    return phases


def _raise_child_error(children: list[tuple[Any, Connection]]) -> None:
    for process, conn in children:
        if conn.poll(0):
            status, payload = conn.recv()
            if status != "ok":
                raise RuntimeError(f"agent process {process.pid}: {payload}")
        if not process.is_alive():
            raise RuntimeError(f"agent process {process.pid} exited ({process.exitcode})")


# -- over MCP -------------------------------------------------------------------------------


async def _mcp_phases(url: str, clients: int) -> dict[str, _Phase]:
    """``clients`` MCP clients, agents ``Worker0..``, each looping over both phases."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tallies = {phase: _Tally() for phase in PHASES}
    released: dict[str, float] = {}
    ready = 0
    all_ready = anyio.Event()
    go = {phase: anyio.Event() for phase in PHASES}
    stopped = dict.fromkeys(PHASES, 0)
    all_stopped = {phase: anyio.Event() for phase in PHASES}

    async def one(number: int) -> None:
        nonlocal ready
        http = httpx2.AsyncClient(headers={"X-Agent-Name": _agent_name(number)}, timeout=TIMEOUT_S)
        async with Client(streamable_http_client(url, http_client=http)) as session:

            async def call(tool: str, arguments: dict[str, Any]) -> str:
                result = await session.call_tool(tool, arguments)
                text = " ".join(getattr(part, "text", "") for part in result.content)
                return f"Error: {text}" if result.is_error else text

            flipped = _flipped(await call("workspace_read", {"path": _file_of(number)}))
            for i in range(6):
                await call(*_write(number, i, flipped))
                await call(*_read(number, i, flipped))
            ready += 1
            if ready == clients:
                all_ready.set()
            for phase, make in PHASES.items():
                await go[phase].wait()
                deadline = released[phase] + seconds()
                tally = tallies[phase]
                flipped = _flipped(await call("workspace_read", {"path": _file_of(number)}))
                i = 0
                while time.monotonic() < deadline:
                    tool, arguments = make(number, i, flipped)
                    started = time.perf_counter()
                    answer = await call(tool, arguments)
                    tally.latencies.append((time.perf_counter() - started) * 1000)
                    tally.calls += 1
                    if answer.startswith("Error") and len(tally.errors) < 3:
                        tally.errors.append(f"{tool}: {answer[:200]}")
                    i += 1
                tally.finished = max(tally.finished, time.monotonic())
                stopped[phase] += 1
                if stopped[phase] == clients:
                    all_stopped[phase].set()

    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one, number)
        with anyio.fail_after(TIMEOUT_S):
            await all_ready.wait()
        for phase in PHASES:
            released[phase] = time.monotonic()
            go[phase].set()
            with anyio.fail_after(TIMEOUT_S + seconds()):
                await all_stopped[phase].wait()
    phases = {}
    for phase, tally in tallies.items():
        phases[phase] = _Phase(tally.calls, tally.finished - released[phase], tally.latencies, tally.errors)
    return phases


# -- the team's state -----------------------------------------------------------------------


def _build(team: str, root: Path) -> None:
    """The board, the graph and every agent's file, through the actors (one batch each)."""
    from toolcards.actors import ActorSystem
    from toolcards.knowledge_graph import EntityCreate, KnowledgeGraphTool
    from toolcards.planning import PlanningTool, TaskCreate
    from toolcards.testing import FakeObserver

    with ActorSystem() as system:
        observer = FakeObserver("Setup", team, system=system)
        board, graph = PlanningTool(), KnowledgeGraphTool()
        from toolcards import ToolFactory

        ToolFactory([board, graph], observer=observer)
        tasks = [
            TaskCreate(description=f"Task {i} of the team", owner=f"@{_agent_name(i % AGENTS)}") for i in range(BOARD)
        ]
        board.board.update("@Setup", create=tasks).get()
        entities = [EntityCreate(name=_entity_of(n), entity_type="worker") for n in range(AGENTS)]
        entities += [
            EntityCreate(name=f"entity {i}", entity_type=f"type{i % 10}", description=f"Entity number {i}")
            for i in range(GRAPH - AGENTS)
        ]
        report = graph.graph.update("@Setup", create_entities=entities).get()
        if report.errors:
            raise RuntimeError(f"building the graph failed: {report.errors[:3]}")
    tree = root / WORKSPACE / "agents"
    tree.mkdir(parents=True)
    for number in range(AGENTS):
        (tree / f"worker{number}.txt").write_text("".join(f"line number {n} of the file\n" for n in range(FILE_LINES)))


# -- rows -----------------------------------------------------------------------------------


def _rows(label: str, phases: dict[str, _Phase], targets: dict[str, tuple[float, str]]) -> list[Case]:
    rows = []
    for phase, result in phases.items():
        if result.errors:
            raise RuntimeError(f"{label}, {phase}: {result.calls} calls, errors such as {result.errors[0]}")
        target, why = targets.get(phase, (math.nan, ""))
        rows.append(
            Case(
                f"{label}, {phase}",
                result.throughput,
                f"{result.calls:,} calls in {result.wall:.1f} s{'; target: ' + why if why else ''}",
                unit="calls/s",
                target=None if math.isnan(target) else target,
                better="higher",
            )
        )
        stats = Stats.of(result.latencies)
        rows.append(
            Case.timed(
                f"{label}, {phase}: latency",
                stats,
                f"one call; p99 {percentile(result.latencies, 0.99):.2f} ms; median of {stats.count:,}",
            )
        )
    return rows


def run() -> list[Case]:
    """Every configuration, 2 phases each; about ``10 x TOOLCARDS_BENCH_SECONDS`` plus start-ups."""
    rows: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-concurrency-") as temp:
        directory = Path(temp)
        root = directory / "workspaces"
        root.mkdir()
        environment = {"TOOLCARDS_WORKSPACES_ROOT": str(root), "TOOLCARDS_STORE": str(directory / "state.db")}
        team = "concurrency"
        saved = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            _build(team, root)
        finally:
            from toolcards.store import close_default_stores

            close_default_stores()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        alone = _run_processes(environment, team, [[0]])
        threads = _run_processes(environment, team, [list(range(AGENTS))])
        split = [list(range(AGENTS))[k::PROCESSES] for k in range(PROCESSES)]
        processes = _run_processes(environment, team, split)
        one = {phase: result.throughput for phase, result in alone.items()}
        one_process = {phase: result.throughput for phase, result in threads.items()}
        rows += _rows("1 agent", alone, {})
        rows += _rows(
            f"{AGENTS} agents in 1 process (threads)",
            threads,
            {phase: (one[phase], "1 agent's") for phase in PHASES},
        )
        rows += _rows(
            f"{AGENTS} agents in {PROCESSES} processes",
            processes,
            {
                "reads": (1.6 * one_process["reads"], f"1.6x {AGENTS} agents in 1 process"),
                "writes": (one_process["writes"], f"{AGENTS} agents in 1 process"),
            },
        )
        rows += _mcp_rows(directory, environment, team)
    return rows


def _mcp_rows(directory: Path, environment: dict[str, str], team: str) -> list[Case]:
    import importlib.util

    label = f"MCP HTTP server, {AGENTS} clients"
    if importlib.util.find_spec("mcp") is None:
        return [Case.skipped(label, "the mcp extra is not installed")]
    config = directory / "team.yaml"
    config.write_text(CONFIG.format(team=team))
    # Without TOOLCARDS_TOKEN the server generates a token and prints it in its URL.
    env = {**os.environ, **environment}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    server = ServeProcess(config, env)
    try:
        url = server.url()
        single = asyncio.run(_mcp_phases(url, 1))
        many = asyncio.run(_mcp_phases(url, AGENTS))
    finally:
        server.stop()
    one = {phase: result.throughput for phase, result in single.items()}
    rows = _rows("MCP HTTP server, 1 client", single, {})
    rows += _rows(label, many, {phase: (one[phase], "1 client's") for phase in PHASES})
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("concurrency", case) for case in run()), end="")
