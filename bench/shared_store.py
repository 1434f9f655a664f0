"""Shared-store benchmark: the team's board shared by actors in several processes and servers.

``run()`` returns :class:`~bench.timing.Case` rows; nothing is asserted (the machine is
noisy). Measured on the machine the bench runs on (2 cores here), where the writers, the
readers, the servers, the clients and PostgreSQL all compete for the CPU. SQLite: WAL,
``synchronous="normal"``, a file in a temporary directory. PostgreSQL: the throwaway
server of ``tests/postgres_server.py`` on 127.0.0.1 (``fsync=off``), one schema for the
whole run. Every board call goes through a ``PlanningActor`` proxy (``proxy.method(...).get()``),
the way a card calls it; boards are filled with one batch first.

Rows and targets (median of the stated number of calls):

* **update 1 task**, boards of 500 and 5,000, SQLite: target <= 0.3 ms, flat in board
  size. The same at 5,000 (and 500) on PostgreSQL: target <= 2 ms.
* **catch-up after one change by another process**: actor A holds the board; a writer in
  a second, real OS process (``multiprocessing`` spawn, driven over a pipe; its own store
  and its own ``PlanningActor``) updates one task; then A's next ``get_task`` of that task is
  timed, catch-up included (nothing subtracted). Each such read is paired with a read when
  nothing changed, timed right after it; the note gives the difference, the catch-up's own
  cost. Target: catch-up <= 0.5 ms, flat in board size (500 vs 5,000). SQLite and
  PostgreSQL.
* **4 processes writing at once, SQLite**: 4 spawned processes, each with its own store
  and ``PlanningActor`` on one file and one team, released together by a barrier, each doing
  500 single-task updates through its proxy (alternately a create and an update of the
  task it just created). Wall time from the barrier to the last finish; the row's value is
  the acknowledged updates per second, the note gives the per-update latency. Target
  >= 2,000 updates/s. Afterwards the board is checked to
  hold every created task with its last update (a ``WARNING`` row if not).
* **N servers on PostgreSQL, 20 clients**: ``python -m toolcards.cli serve --transport
  http`` subprocesses of one planning-only team on one PostgreSQL schema, 20 MCP clients
  (streamable HTTP, each its own ``X-Agent-Name``) spread over them in one asyncio process,
  each making 25 ``update_planning`` creates concurrently. The median column is the
  per-call latency, the note the aggregate calls per second; 3 servers, then 1 server for
  comparison. The acknowledged ids are checked to be distinct and contiguous.

Without PostgreSQL (no binaries, no psycopg) its rows say ``skipped: PostgreSQL
unavailable (<reason>)`` with a median of NaN. Every process, server and temporary
directory is cleaned up; the whole module takes about half a minute. The scale-out notes
also give the CPU the client process, the servers, PostgreSQL and the whole machine used
during the run (Linux ``/proc``), so a saturated or shared machine shows.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import os
import re
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple, cast

import pykka

from bench.serve_process import ServeProcess
from bench.timing import Case, Stats, percentile
from toolcards.planning import PlanningProxy, TaskCreate, TaskUpdate
from toolcards.planning._actor import PlanningActor
from toolcards.store import SQLiteStore, Store, open_store

__all__ = ["run"]

Row = Case

REPO = Path(__file__).resolve().parents[1]
SIZES = (500, 5_000)
REPEAT = 300
WARMUP = 30
WRITERS = 4
WRITES_EACH = 500
BURST_BOARD = 500
CLIENTS = 20
CALLS_EACH = 25
CLIENT_WARMUP = 3
SERVERS = 3
TIMEOUT_S = 120.0
"""Longest any one step (a child's answer, a barrier, a server start) may take."""

_AGENTS = [f"@Agent{n}" for n in range(10)]
_SPAWN = multiprocessing.get_context("spawn")
_CREATED = re.compile(r"Created task (\d+)\.")


def _cpus() -> str:
    return f"{os.cpu_count()} cores"


# -- helpers -------------------------------------------------------------------------------


def _board(store: Store, team: str, size: int) -> tuple[pykka.ActorRef[PlanningActor], PlanningProxy]:
    """Start a ``PlanningActor`` for ``team`` and fill its board with ``size`` tasks in one batch."""
    ref = PlanningActor.start(team, store)
    proxy = cast(PlanningProxy, ref.proxy())
    if size:
        tasks = [
            TaskCreate(description=f"Task {i} of the shared board", owner=_AGENTS[i % len(_AGENTS)])
            for i in range(size)
        ]
        proxy.update("@Setup", create=tasks).get()
    return ref, proxy


def _measure(call: Callable[[int], object], repeat: int = REPEAT, warmup: int = WARMUP) -> Stats:
    for i in range(warmup):
        call(-1 - i)
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    return Stats.of([sample * 1000 for sample in samples])


def _failed(label: str, exc: BaseException) -> Row:
    return Case(label, math.nan, f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")


class _Child:
    """A spawned process running ``target(conn, *args)``, asked over a pipe; each answer is ``("ok", ...)``."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        self.conn, child_end = _SPAWN.Pipe()
        self.process = _SPAWN.Process(target=target, args=(child_end, *args), daemon=True)
        self.process.start()
        child_end.close()

    def answer(self, timeout: float = TIMEOUT_S) -> tuple[Any, ...]:
        if not self.conn.poll(timeout):
            raise RuntimeError(f"child process {self.process.pid} did not answer within {timeout:g} s")
        try:
            message: tuple[Any, ...] = self.conn.recv()
        except EOFError:
            self.process.join(5)
            raise RuntimeError(f"child process {self.process.pid} exited ({self.process.exitcode})") from None
        if message[0] != "ok":
            raise RuntimeError(f"child process {self.process.pid}: {message[1]}")
        return message[1:]

    def ask(self, *message: Any) -> tuple[Any, ...]:
        self.conn.send(message)
        return self.answer()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("stop",))
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(30)
        self.conn.close()


# -- 1, 2: one update through the proxy ----------------------------------------------------


def _updates(store: Store, kind: str, target_ms: float, conditions: str) -> list[Row]:
    rows = []
    for size in SIZES:
        ref, proxy = _board(store, f"update-{size}", size)
        task_id = size // 2

        def update(i: int, proxy: PlanningProxy = proxy, task_id: int = task_id) -> object:
            change = TaskUpdate(id=task_id, status="in_progress" if i % 2 else "pending", output=f"run {i}")
            return proxy.update("@Agent1", update=[change]).get()

        try:
            median = _measure(update)
        finally:
            ref.stop()
        note = f"target <= {target_ms:g} ms; through the actor proxy, commit included; {conditions}; median of {REPEAT}"
        rows.append(Case.timed(f"update 1 task, board of {size:,}, {kind}", median, note, target=target_ms))
    return rows


# -- 3: catching up after another process's change ---------------------------------------


def _writer_main(conn: Connection, location: str) -> None:
    """Child: one store on ``location``; ``join team`` starts a board actor, ``update`` changes one task."""
    store: Store | None = None
    proxies: dict[str, PlanningProxy] = {}
    try:
        store = open_store(location)
        conn.send(("ok",))
        while True:
            message = conn.recv()
            try:
                if message[0] == "stop":
                    break
                if message[0] == "join":
                    proxies[message[1]] = cast(PlanningProxy, PlanningActor.start(message[1], store).proxy())
                elif message[0] == "update":
                    _, team, task_id, i = message
                    change = TaskUpdate(id=task_id, output=f"other {i}")
                    proxies[team].update("@Other", update=[change]).get()
                conn.send(("ok",))
            except Exception as exc:  # reported to the parent, which fails the measurement
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    except (EOFError, KeyboardInterrupt):
        pass
    except Exception as exc:
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        pykka.ActorRegistry.stop_all()
        if store is not None:
            store.close()


def _catch_ups(store: Store, location: str, kind: str, conditions: str) -> list[Row]:
    rows: list[Row] = []
    child = _Child(_writer_main, location)
    try:
        child.answer()
        for size in SIZES:
            team = f"catch-up-{size}"
            ref, proxy = _board(store, team, size)
            try:
                child.ask("join", team)
                changed, idle, stale = [], [], 0
                for i in range(WARMUP + REPEAT):
                    task_id = 1 + (i * 7_919) % size
                    child.ask("update", team, task_id, i)
                    started = time.perf_counter()
                    task = proxy.get_task(task_id).get()
                    middle = time.perf_counter()
                    proxy.get_task(task_id).get()
                    ended = time.perf_counter()
                    stale += task.output != f"other {i}"
                    if i >= WARMUP:
                        changed.append(middle - started)
                        idle.append(ended - middle)
            finally:
                ref.stop()
            with_change, without = Stats.of([c * 1000 for c in changed]), Stats.of([n * 1000 for n in idle])
            own = statistics.median(c - n for c, n in zip(changed, idle, strict=True)) * 1000
            seen = f"; WARNING: {stale} read(s) missed the change" if stale else ""
            note = (
                f"target: catch-up <= 0.5 ms, flat; get_task through the proxy, catch-up included; catch-up's own "
                f"cost (median of paired differences) {own:.3f} ms; writer in another process; {conditions}; "
                f"median of {REPEAT}{seen}"
            )
            label = f"catch-up after one change by another process, board of {size:,}, {kind}"
            rows.append(Case.timed(label, with_change, note, target=0.5))
            note = f"the same get_task right after, nothing to catch up; {conditions}; median of {REPEAT}"
            rows.append(Case.timed(f"read with nothing to catch up, board of {size:,}, {kind}", without, note))
    finally:
        child.close()
    return rows


# -- 4: four processes writing one board at once -----------------------------------------


def _burst_main(conn: Connection, location: str, team: str, number: int, count: int, barrier: Any) -> None:
    """Child: ``count`` updates on ``team`` after the barrier; sends (finish time, created ids, latencies)."""
    store: Store | None = None
    try:
        store = open_store(location)
        proxy = cast(PlanningProxy, PlanningActor.start(team, store).proxy())
        agent = f"@Writer{number}"
        for i in range(WARMUP):  # the actor's first writes pay for imports and caches
            proxy.update(agent, update=[TaskUpdate(id=number + 1, output=f"warm-up {i}")]).get()
        barrier.wait(TIMEOUT_S)
        created: list[int] = []
        latencies: list[float] = []
        for i in range(count):
            started = time.perf_counter()
            if i % 2 == 0:
                report = proxy.update(agent, create=[TaskCreate(description=f"writer {number} task {i}")]).get()
                created.extend(report.created)
            else:
                change = TaskUpdate(id=created[-1], status="in_progress", output=f"writer {number} step {i}")
                report = proxy.update(agent, update=[change]).get()
            latencies.append(time.perf_counter() - started)
            if report.errors:
                from toolcards.planning._render import render_update_report

                raise RuntimeError(f"update {i} was refused: {render_update_report(report)}")
        conn.send(("ok", time.perf_counter(), created, latencies))
    except Exception as exc:
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        pykka.ActorRegistry.stop_all()
        if store is not None:
            store.close()


def _burst(directory: Path) -> list[Row]:
    path = directory / "burst.db"
    team = "burst"
    store = SQLiteStore(path)
    children: list[_Child] = []
    try:
        ref, _ = _board(store, team, BURST_BOARD)
        ref.stop()
        barrier = _SPAWN.Barrier(WRITERS + 1)
        children = [_Child(_burst_main, str(path), team, number, WRITES_EACH, barrier) for number in range(WRITERS)]
        try:
            barrier.wait(TIMEOUT_S)
        except threading.BrokenBarrierError:
            for child in children:
                if not child.process.is_alive() or child.conn.poll():
                    child.answer(0)  # raises with the child's error
            raise RuntimeError("the writer processes did not reach the barrier") from None
        started = time.perf_counter()
        answers = [child.answer() for child in children]
        wall = max(finished for finished, _, _ in answers) - started
        ref, proxy = _board(store, team, 0)
        try:
            board = {task.id: task for task in proxy.tasks().get()}
        finally:
            ref.stop()
    finally:
        for child in children:
            child.close()
        store.close()
    total = WRITERS * WRITES_EACH
    throughput = total / wall
    latencies = [sample * 1000 for _, _, samples in answers for sample in samples]
    latency = statistics.median(latencies)
    missing = []
    for number, (_, created, _) in enumerate(answers):
        for index, task_id in enumerate(created):
            task = board.get(task_id)
            last = f"writer {number} step {2 * index + 1}"
            if task is None or task.description != f"writer {number} task {2 * index}" or task.output != last:
                missing.append(task_id)
    note = (
        f"target >= 2,000 updates/s; {throughput:,.0f} acknowledged updates/s ({total:,} in {wall:.2f} s); "
        f"{WRITERS} spawned processes x {WRITES_EACH} (create, then update it), board of {BURST_BOARD:,} + "
        f"{total // 2:,}; per-update latency median {latency:.2f} ms, p95 {percentile(latencies, 0.95):.2f} ms; "
        f"{_cpus()}"
    )
    label = f"{WRITERS} processes writing at once, SQLite"
    rows = [Case(label, throughput, note, unit="updates/s", target=2000.0, better="higher")]
    created_count = sum(len(created) for _, created, _ in answers)
    if missing or created_count != total // 2 or len(board) != BURST_BOARD + total // 2:
        rows.append(
            Case(
                "WARNING: 4 processes writing at once, SQLite",
                math.nan,
                f"the board lacks {len(missing)} of {created_count} created tasks (or their last update); "
                f"{len(board):,} tasks on it, {BURST_BOARD + total // 2:,} expected; first missing: {missing[:5]}",
            )
        )
    return rows


# -- 5: MCP servers on one PostgreSQL store ---------------------------------------------


class _Calls(NamedTuple):
    latencies: list[float]
    """Per measured call, in milliseconds."""
    wall: float
    """Seconds from the start signal to the last client's last answer."""
    client_cpu: float
    """CPU seconds the client process used per wall second meanwhile (1.0: one core busy)."""
    server_cpu: float
    """The same for the servers taking part (NaN where ``/proc`` is unavailable)."""
    database_cpu: float
    """The same for PostgreSQL's processes (NaN without ``/proc``)."""
    machine_cpu: float
    """The same for the whole machine: every process, other users' too (NaN without ``/proc``)."""
    acknowledged: list[int]
    """Every task id a create answered, warm-up included."""


async def _clients(urls: list[str], label: str, cpu_probe: Callable[[], tuple[float, float, float]]) -> _Calls:
    """CLIENTS clients spread over ``urls``, each making CALLS_EACH creates at once after CLIENT_WARMUP."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    finished: list[float] = []
    cpu_at_end: list[tuple[float, ...]] = []
    acknowledged: list[int] = []
    connected = 0
    all_connected, go = anyio.Event(), anyio.Event()

    async def create(session: Any, description: str) -> int:
        result = await session.call_tool("update_planning", {"create_tasks": [{"description": description}]})
        text = result.content[0].text
        found = _CREATED.fullmatch(text)
        if result.is_error or found is None:
            raise RuntimeError(f"update_planning failed: {text}")
        return int(found[1])

    async def client(number: int) -> None:
        nonlocal connected
        http = httpx2.AsyncClient(headers={"X-Agent-Name": f"{label}Client{number}"}, timeout=TIMEOUT_S)
        async with Client(streamable_http_client(urls[number % len(urls)], http_client=http)) as session:
            for i in range(CLIENT_WARMUP):
                acknowledged.append(await create(session, f"{label} client {number} warm-up {i}"))
            connected += 1
            if connected == CLIENTS:
                all_connected.set()
            await go.wait()
            for i in range(CALLS_EACH):
                started = time.perf_counter()
                acknowledged.append(await create(session, f"{label} client {number} task {i}"))
                latencies.append((time.perf_counter() - started) * 1000)
            finished.append(time.perf_counter())
            if len(finished) == CLIENTS:
                cpu_at_end.append((time.process_time(), *cpu_probe()))

    started = 0.0
    cpu_at_start: tuple[float, ...] = ()
    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for number in range(CLIENTS):
                group.start_soon(client, number)
            await all_connected.wait()
            started, cpu_at_start = time.perf_counter(), (time.process_time(), *cpu_probe())
            go.set()
    wall = max(finished) - started
    client_cpu, server_cpu, database_cpu, machine_cpu = (
        (end - start) / wall for start, end in zip(cpu_at_start, cpu_at_end[0], strict=True)
    )
    return _Calls(latencies, wall, client_cpu, server_cpu, database_cpu, machine_cpu, acknowledged)


def _process_cpu(pid: int) -> tuple[int, float]:
    """(parent pid, user + system CPU seconds so far) of a process, from Linux ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(servers: list[ServeProcess], postmaster: int | None) -> tuple[float, float, float]:
    """CPU seconds used so far by the servers, by PostgreSQL (postmaster and backends), by the machine.

    NaN where Linux ``/proc`` cannot tell.
    """
    try:
        serving = sum(_process_cpu(server.process.pid)[1] for server in servers)
    except (OSError, ValueError, IndexError):
        serving = math.nan
    database = math.nan
    if postmaster is not None:
        database = 0.0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    parent, seconds = _process_cpu(int(entry.name))
                    if postmaster in (parent, int(entry.name)):
                        database += seconds
    try:
        ticks = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    except (OSError, ValueError, IndexError):
        busy = math.nan
    return serving, database, busy


def _scale_out(server: Any, directory: Path) -> list[Row]:
    import anyio

    url = server.create_schema("bench_scale_out")
    postmaster: int | None = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    config = directory / "team.yaml"
    config.write_text("team_id: bench-scale\ncards:\n  - kind: planning\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "TOOLCARDS_WORKSPACES_ROOT": str(directory / "workspaces"),
        "TOOLCARDS_STORE": url,
    }
    rows: list[Row] = []
    servers: list[ServeProcess] = []
    try:
        servers = [ServeProcess(config, env) for _ in range(SERVERS)]
        urls = [s.url() for s in servers]
        for count in (SERVERS, 1):
            label = f"{count} server{'s' if count > 1 else ''} on PostgreSQL, {CLIENTS} clients"
            cpu = functools.partial(_cpu_seconds, servers[:count], postmaster)
            result = anyio.run(_clients, urls[:count], f"S{count}", cpu)
            calls = len(result.latencies)
            ids = sorted(result.acknowledged)
            distinct = ids == list(range(ids[0], ids[0] + len(ids)))
            note = (
                f"{calls / result.wall:,.0f} calls/s aggregate ({calls} update_planning creates in "
                f"{result.wall:.2f} s); {CLIENTS} MCP HTTP clients x {CALLS_EACH} in one asyncio process "
                f"(it used {result.client_cpu:.0%} of one core), spread over {count} `toolcards serve` "
                f"process(es) (they used {result.server_cpu:.0%}, PostgreSQL {result.database_cpu:.0%}, the "
                f"whole machine with anything else running {result.machine_cpu:.0%}); {_cpus()} shared by all; "
                "median per-call latency"
            )
            rows.append(Case.timed(label, Stats.of(result.latencies), note))
            if not distinct:
                rows.append(
                    Case(f"WARNING: {label}", math.nan, f"acknowledged ids not distinct and contiguous: {ids[:10]}...")
                )
    finally:
        for s in servers:
            s.stop()
    return rows


# -- running ------------------------------------------------------------------------------


@contextlib.contextmanager
def _postgres() -> Iterator[tuple[Any, str]]:
    """Yields ``(server, "")``, or ``(None, reason)`` when PostgreSQL cannot be started."""
    try:
        from tests.postgres_server import PostgresUnavailable, start_server
    except ImportError as exc:
        yield None, f"tests.postgres_server not importable: {exc}; run from the repository root"
        return
    try:
        server = start_server()
    except PostgresUnavailable as exc:
        yield None, str(exc)
        return
    try:
        yield server, ""
    finally:
        server.destroy()


def run() -> list[Row]:
    """Run every measurement on temporary databases and servers; takes about half a minute."""
    rows: list[Row] = []
    sqlite_conditions = f"SQLite WAL, synchronous=normal; {_cpus()}"
    pg_conditions = f"PostgreSQL on loopback, fsync=off; {_cpus()}"
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        try:
            store = SQLiteStore(directory / "board.db")
            try:
                rows.extend(_updates(store, "SQLite", 0.3, sqlite_conditions))
                try:
                    rows.extend(_catch_ups(store, str(store.path), "SQLite", sqlite_conditions))
                except Exception as exc:
                    rows.append(_failed("catch-up after one change by another process, SQLite", exc))
            finally:
                pykka.ActorRegistry.stop_all()
                store.close()
            try:
                rows.extend(_burst(directory))
            except Exception as exc:
                rows.append(_failed(f"{WRITERS} processes writing at once, SQLite", exc))
            with _postgres() as (server, reason):
                if server is None:
                    note = f"skipped: PostgreSQL unavailable ({reason})"
                    for label in ("update 1 task", "catch-up after one change by another process"):
                        rows.append(Case(f"{label}, board of 5,000, PostgreSQL", math.nan, note))
                    rows.append(Case(f"{SERVERS} servers on PostgreSQL, {CLIENTS} clients", math.nan, note))
                else:
                    url = server.create_schema("bench_board")
                    from toolcards.store._postgres import PostgresStore

                    pg = PostgresStore(url)
                    try:
                        rows.extend(_updates(pg, "PostgreSQL", 2.0, pg_conditions))
                        try:
                            rows.extend(_catch_ups(pg, url, "PostgreSQL", pg_conditions))
                        except Exception as exc:
                            rows.append(_failed("catch-up after one change by another process, PostgreSQL", exc))
                    finally:
                        pykka.ActorRegistry.stop_all()
                        pg.close()
                    try:
                        rows.extend(_scale_out(server, directory))
                    except Exception as exc:
                        rows.append(_failed(f"{SERVERS} servers on PostgreSQL, {CLIENTS} clients", exc))
        finally:
            pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("shared_store", case) for case in run()), end="")
