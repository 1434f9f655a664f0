"""Coordination benchmark: claims, the ready queue, and processes draining one queue.

``run()`` returns :class:`~bench.timing.Case` rows:

* a claim on a board of 5,000 tasks (SQLite, through the actor proxy, commit included) —
  target at most 1 ms median; each round claims a fresh task;
* ``next_task`` on a board of 5,000 tasks of which 2,000 wait on a dependency — target at
  most 2 ms;
* 8 OS processes (``multiprocessing`` spawn, each its own team member and board cache on one
  SQLite file) taking tasks with ``next_task`` from one queue of 2,000 until it is empty:
  claims per second in total (target at least 1,000) and the number of tasks taken twice
  (target 0);
* send + read one message across processes: two OS processes on one SQLite file play
  ping-pong through ``send_message`` and ``read_messages`` (the tool pipeline, roster checks
  included; a reader finding nothing reads again after 0.5 ms); half a round trip — target at
  most 5 ms median;
* reminder lateness, due → in the member's mailbox (``ReminderFired.late_s``): 200 reminders
  spread over 4 s, set by a process that stays alive, with a second process alive too; then
  100 set by a process that exits at once, delivered by the others — target at most 1 s p99.

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import pykka

from bench.timing import Case, Stats, measure
from toolcards.planning import PlanningProxy, TaskCreate
from toolcards.planning._actor import PlanningActor
from toolcards.store import SQLiteStore

__all__ = ["run"]

_SPAWN = multiprocessing.get_context("spawn")
BOARD = 5_000
QUEUE = 2_000
PROCESSES = 8
POLL_S = 0.0005
"""How long a benchmark reader waits before reading its empty mailbox again: spinning would
take a core from the process it waits for."""


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


def _mail_echo(conn: Connection, location: str, team_name: str) -> None:
    """A worker: member ``Echo`` of ``team_name``; answers each ``ping k`` with ``pong k`` until ``quit``."""
    os.environ["TOOLCARDS_STORE"] = location
    import toolcards
    from toolcards.team import MessagingTool

    with toolcards.Team(team_name) as team:
        tools = {t.name: t for t in team.member("Echo").factory(MessagingTool()).tools()}
        conn.send("ready")
        while True:
            page = str(tools["read_messages"].call_sync({}))
            if page == "No unread messages.":
                time.sleep(POLL_S)
            for line in page.splitlines():
                if line == "quit":
                    conn.send("bye")
                    return
                if line.startswith("ping "):
                    tools["send_message"].call_sync({"to": "Pinger", "text": "pong " + line[5:]})


def _mail_round_trip(directory: Path) -> list[Case]:
    location = str(directory / "mail.db")
    os.environ["TOOLCARDS_STORE"] = location
    import toolcards
    from toolcards.team import MessagingTool

    parent, child = _SPAWN.Pipe()
    echo = _SPAWN.Process(target=_mail_echo, args=(child, location, "mail"), daemon=True)
    echo.start()
    parent.recv()
    with toolcards.Team("mail") as team:
        tools = {t.name: t for t in team.member("Pinger").factory(MessagingTool()).tools()}
        counter = iter(range(1_000_000))

        def ping_pong() -> None:
            k = next(counter)
            tools["send_message"].call_sync({"to": "Echo", "text": f"ping {k}"})
            while f"pong {k}" not in str(tools["read_messages"].call_sync({})):
                time.sleep(POLL_S)

        stats = measure(ping_pong, repeat=300, warmup=20)
        tools["send_message"].call_sync({"to": "Echo", "text": "quit"})
        parent.recv()
    echo.join(timeout=60)
    half = Stats(median=stats.median / 2, p95=stats.p95 / 2, p99=stats.p99 / 2, count=stats.count)
    note = (
        "half a ping-pong between 2 OS processes, send_message + read_messages through the tool pipeline "
        f"(roster check, commit, the reader's catch-up; readers poll every 0.5 ms); SQLite WAL; median of {stats.count}"
    )
    return [Case.timed("send + read one message across processes", half, note, target=5.0)]


def _mail_keeper(conn: Connection, location: str, team_name: str, name: str, reminders: int) -> None:
    """A worker: sets ``reminders`` reminders (due 1 to 2 s ahead) as members ``<name>-<n>`` and
    exits at once when there are any; else member ``name`` stays alive (its mailbox delivering)
    until told to go."""
    os.environ["TOOLCARDS_STORE"] = location
    import toolcards
    from toolcards.team import MessagingTool

    with toolcards.Team(team_name) as team:
        if reminders:
            _set_reminders(team, name, reminders, first_s=1.0, spacing_s=0.01)
            conn.send("ready")
            return
        team.member(name).factory(MessagingTool())
        conn.send("ready")
        conn.recv()


def _set_reminders(team: Any, name: str, count: int, *, first_s: float, spacing_s: float) -> None:
    """``count`` reminders due ``first_s`` seconds from now and every ``spacing_s`` after, set by
    members ``<name>-0``, ``<name>-1``... (a member may have 50 pending)."""
    from toolcards.team import REMINDERS_MAX, MessagingTool

    members: dict[int, Any] = {}
    for index in range(count):
        group = index // REMINDERS_MAX
        if group not in members:
            members[group] = {t.name: t for t in team.member(f"{name}-{group}").factory(MessagingTool()).tools()}
        members[group]["remind_me"].call_sync({"text": f"r{index}", "after_s": first_s + index * spacing_s})


def _lateness(team: Any, count: int) -> list[float]:
    """The ``late_s`` of the first ``count`` reminders fired in ``team``'s log, waiting for them."""
    from toolcards.team import ReminderFired

    deadline = time.monotonic() + 60
    while True:
        fired = [event.late_s for _, event in team.handle.events() if isinstance(event, ReminderFired)]
        if len(fired) >= count or time.monotonic() > deadline:
            return fired
        time.sleep(0.1)


def _reminders(directory: Path) -> list[Case]:
    location = str(directory / "remind.db")
    os.environ["TOOLCARDS_STORE"] = location
    import toolcards

    parent, child = _SPAWN.Pipe()
    keeper = _SPAWN.Process(target=_mail_keeper, args=(child, location, "remind", "Keeper", 0), daemon=True)
    keeper.start()
    parent.recv()
    with toolcards.Team("remind") as team:
        _set_reminders(team, "Setter", 200, first_s=0.5, spacing_s=0.02)
        alive = _lateness(team, 200)
        parent2, child2 = _SPAWN.Pipe()
        setter = _SPAWN.Process(target=_mail_keeper, args=(child2, location, "remind", "Leaver", 100), daemon=True)
        setter.start()
        parent2.recv()
        setter.join(timeout=60)
        exited = _lateness(team, 300)[200:]
    parent.send("go")
    keeper.join(timeout=60)
    conditions = f"2 processes alive, one SQLite file (WAL); {os.cpu_count()} CPUs"
    cases = []
    for label, samples in (("setter alive", alive), ("setter exited", exited)):
        stats = Stats.of([late * 1000 for late in samples])
        cases.append(
            Case(
                f"reminder lateness p99, {label}",
                stats.p99,
                f"due → in the mailbox; median {stats.median:.1f} ms of {stats.count}; {conditions}",
                target=1000.0,
            )
        )
    return cases


def run() -> list[Case]:
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        previous = os.environ.get("TOOLCARDS_STORE")
        try:
            return [*_claims(directory), *_queue(directory), *_mail_round_trip(directory), *_reminders(directory)]
        finally:
            if previous is None:
                os.environ.pop("TOOLCARDS_STORE", None)
            else:
                os.environ["TOOLCARDS_STORE"] = previous
