"""Coordination benchmark: claims, the ready queue, and processes draining one queue.

``run()`` returns :class:`~bench.timing.Case` rows:

* a claim on a board of 5,000 tasks (SQLite, through the actor proxy, commit included) —
  target at most 1 ms median; each round claims a fresh task;
* ``next_task`` on a board of 5,000 tasks of which 2,000 wait on a dependency — target at
  most 2 ms;
* 8 OS processes (``multiprocessing`` spawn, each its own team member and board cache on one
  SQLite file) taking tasks with ``next_task`` from one queue of 2,000 until it is empty:
  claims per second in total (target at least 1,000) and the number of tasks taken twice
  (target 0).

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import cast

import pykka

from bench.timing import Case, measure
from toolcards.planning import PlanningActor, PlanningProxy, TaskCreate
from toolcards.store import SQLiteStore

__all__ = ["run"]

_SPAWN = multiprocessing.get_context("spawn")
BOARD = 5_000
QUEUE = 2_000
PROCESSES = 8


def _board(store: SQLiteStore, team: str, size: int, dependencies: int = 0) -> PlanningProxy:
    proxy = cast(PlanningProxy, PlanningActor.start(team, store).proxy())
    tasks = [TaskCreate(description=f"Task {i} of the benchmark board") for i in range(size)]
    proxy.update("@Setup", create=tasks).get()
    if dependencies:
        # Tasks 2..dependencies+1 wait on task 1, which stays pending: they are never ready.
        from toolcards.planning import TaskUpdate

        changes = [TaskUpdate(id=task_id, dependencies=[1]) for task_id in range(2, dependencies + 2)]
        proxy.update("@Setup", update=changes).get()
    return proxy


def _claims(directory: Path) -> list[Case]:
    store = SQLiteStore(directory / "claims.db")
    proxy = _board(store, "claims", BOARD)
    counter = iter(range(1, BOARD + 1))
    stats = measure(lambda: proxy.claim("@Agent", next(counter)).get(), repeat=500, warmup=20)
    ready = _board(store, "ready", BOARD, dependencies=2_000)
    queued = measure(lambda: ready.next_task("@Agent").get(), repeat=500, warmup=20)
    pykka.ActorRegistry.stop_all()
    store.close()
    note = "SQLite WAL, through the actor proxy, commit included; median of 500"
    return [
        Case.timed(f"claim one task, board of {BOARD:,}", stats, note, target=1.0),
        Case.timed(
            f"next_task, board of {BOARD:,}, 2,000 waiting on a dependency",
            queued,
            "the best ready task claimed; " + note,
            target=2.0,
        ),
    ]


def _drain(conn: Connection, location: str, name: str) -> None:
    """A worker: join team ``drain`` on ``location``, wait for ``go``, take tasks until none is left."""
    os.environ["TOOLCARDS_STORE"] = location
    import toolcards
    from toolcards.errors import RetriableError
    from toolcards.planning import PlanningTool

    with toolcards.Team("drain") as team:
        tools = {t.name: t for t in team.member(name).factory(PlanningTool()).tools()}
        conn.send("ready")
        conn.recv()
        taken = []
        while True:
            try:
                text = tools["next_task"].call_sync({})
            except RetriableError:
                break
            taken.append(int(text.split("You hold task ", 1)[1].split(" ", 1)[0]))
        conn.send(taken)
        # Give the tasks back completed before leaving, or leaving would release them.
        for task_id in taken:
            done = {"id": task_id, "status": "completed", "output": "done"}
            tools["update_planning"].call_sync({"update_tasks": [done]})


def _queue(directory: Path) -> list[Case]:
    location = str(directory / "drain.db")
    store = SQLiteStore(location)
    proxy = _board(store, "drain", QUEUE)
    pykka.ActorRegistry.stop_all()
    store.close()
    del proxy
    pipes = []
    processes = []
    for index in range(PROCESSES):
        parent, child = _SPAWN.Pipe()
        process = _SPAWN.Process(target=_drain, args=(child, location, f"W{index}"), daemon=True)
        process.start()
        pipes.append(parent)
        processes.append(process)
    for pipe in pipes:
        pipe.recv()
    started = time.perf_counter()
    for pipe in pipes:
        pipe.send("go")
    taken: list[int] = []
    for pipe in pipes:
        taken += pipe.recv()
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join(timeout=60)
    twice = len(taken) - len(set(taken))
    conditions = f"{PROCESSES} processes, one SQLite file (WAL); {os.cpu_count()} CPUs"
    return [
        Case(
            f"{PROCESSES} processes taking tasks from one queue of {QUEUE:,}",
            len(taken) / elapsed,
            f"next_task through the tool pipeline until empty; {len(taken):,} taken; {conditions}",
            unit="claims/s",
            target=1_000,
            better="higher",
        ),
        Case(
            "tasks taken twice by those processes",
            float(twice),
            f"{len(set(taken)):,} distinct of {QUEUE:,}",
            unit="",
            target=0,
        ),
    ]


def run() -> list[Case]:
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        return [*_claims(directory), *_queue(directory)]
