"""One team, many OS processes, one store: nothing acknowledged is lost or handed out twice.

Every test here runs real processes (``tests/shared_state_worker.py``): threads share one
interpreter and prove nothing about processes. The workers start together (each waits for
``go``), write through the real cards and tool pipeline, and print each acknowledged change
the moment the tool returns, so the parent knows exactly what each was told.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcards.core._events import StateChanged
from toolcards.store import StoreJournal, open_store

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


class Worker:
    """One ``shared_state_worker`` process and what it printed."""

    def __init__(self, mode: str, name: str, count: int, env: dict[str, str]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.shared_state_worker", mode, name, str(count)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.acks: list[str] = []
        self.render = ""

    def expect(self, word: str) -> None:
        """Read lines until ``word``; acknowledged changes on the way are collected."""
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.strip()
            if line.startswith("ack "):
                self.acks.append(line[4:])
            elif line.startswith("render "):
                self.render = line[7:]
            if line == word or line.startswith(word + " "):
                return
        raise AssertionError(f"{self.name} ended (code {self.process.wait()}) before printing {word!r}")

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def finish(self) -> None:
        self.send("report")
        self.expect("render")
        assert self.process.wait(timeout=120) == 0


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The workers' environment: the repo importable, one SQLite store file for the team."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": str(tmp_path / "team.db"),
    }


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait(timeout=60)


def start(workers: list[Worker], mode: str, count: int, env: dict[str, str], n: int) -> list[Worker]:
    batch = [Worker(mode, f"W{i}", count, env) for i in range(n)]
    workers.extend(batch)
    for worker in batch:
        worker.expect("ready")
    for worker in batch:
        worker.send("go")
    return batch


def board_ids(location: str) -> set[int]:
    store = open_store(location)
    try:
        return {int(key) for key in store.load("shared/#PlanningTool").rows.get("tasks", {})}
    finally:
        store.close()


def test_four_processes_creating_tasks_get_distinct_ids_and_all_see_all(
    env: dict[str, str], workers: list[Worker]
) -> None:
    batch = start(workers, "planning", 200, env, 4)
    for worker in batch:
        worker.expect("done")
    for worker in batch:
        worker.finish()

    acknowledged = [int(task_id) for worker in batch for task_id in worker.acks]
    assert len(acknowledged) == 800
    assert sorted(acknowledged) == list(range(1, 801))  # distinct, and no id skipped
    assert board_ids(env["TOOLCARDS_STORE"]) == set(acknowledged)
    for worker in batch:
        assert worker.render.startswith("**Team planning:** 800 tasks (")


def test_a_killed_writer_loses_nothing_it_acknowledged_and_the_others_carry_on(
    env: dict[str, str], workers: list[Worker]
) -> None:
    victim, *others = start(workers, "planning", 150, env, 3)
    while len(victim.acks) < 30:
        victim.expect("ack")
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait(timeout=60)
    for worker in others:
        worker.expect("done")
    for worker in others:
        worker.finish()

    acknowledged = [int(task_id) for worker in (victim, *others) for task_id in worker.acks]
    assert len(acknowledged) == len(set(acknowledged))
    assert len(acknowledged) >= 30 + 300
    assert set(acknowledged) <= board_ids(env["TOOLCARDS_STORE"])
    for worker in others:
        assert worker.render.startswith("**Team planning:**")


def test_graph_batches_from_three_processes_have_unique_gapless_seq(env: dict[str, str], workers: list[Worker]) -> None:
    batch = start(workers, "graph", 30, env, 3)
    for worker in batch:
        worker.expect("done")
    for worker in batch:
        worker.finish()

    names = {name for worker in batch for name in worker.acks}
    assert len(names) == 180
    store = open_store(env["TOOLCARDS_STORE"])
    try:
        assert set(store.load("shared/#KnowledgeGraphTool").rows["entities"]) == names
        # Every committed batch was published once to the team's one event log.
        events = StoreJournal(store, "shared").since(0)
    finally:
        store.close()
    graph_seqs = [e.seq for _, e in events if isinstance(e, StateChanged) and e.source == "#KnowledgeGraphTool"]
    assert sorted(graph_seqs) == list(range(1, 91))
    assert [number for number, _ in events] == list(range(1, len(events) + 1))
    for worker in batch:
        assert worker.render == "Knowledge graph: 180 entities, 0 relations."
