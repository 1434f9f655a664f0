"""Claims across real OS processes, on SQLite and on a real PostgreSQL server.

Each worker is ``python -m tests.claim_worker``: a separate interpreter joining team ``claims``
through ``toolcards.Team``, with its own actors and its own cache of the board; the store is
the only thing they share.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolcards
from toolcards.planning import PlanningTool
from toolcards.store import close_default_stores

REPO = Path(__file__).resolve().parents[2]
WAIT = 120.0


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    location = str(tmp_path / "claims.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    monkeypatch.setenv("TOOLCARDS_STORE", location)
    close_default_stores()
    yield {**os.environ, "TOOLCARDS_STORE": location}
    close_default_stores()


def start(mode: str, name: str, env: dict[str, str], arg: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.claim_worker", mode, name, *([arg] if arg else [])],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line == "ready", (line, process.stderr.read() if process.stderr else "")
    return process


def go(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()


def setup_board(*descriptions: str) -> None:
    with toolcards.Team("claims") as team:
        tools = {t.name: t for t in team.member("Lead").factory(PlanningTool()).tools()}
        tools["update_planning"].call_sync({"create_tasks": [{"description": text} for text in descriptions]})


def test_ten_processes_racing_for_one_task_leave_one_winner(store_env: dict[str, str]) -> None:
    setup_board("the only task")
    workers = [start("race", f"W{i}", store_env, "1") for i in range(10)]
    for worker in workers:
        go(worker)
    answers = []
    for worker in workers:  # each answers, and stays on the team (its claim held) until all did
        assert worker.stdout is not None
        answers.append(worker.stdout.readline().strip())
    for worker in workers:
        _, err = worker.communicate(timeout=WAIT)
        assert worker.returncode == 0, err
    winners = [answer for answer in answers if answer == "won"]
    refusals = [answer for answer in answers if answer.startswith("refused Task 1 is claimed by @W")]
    assert len(winners) == 1 and len(refusals) == 9, answers


def test_a_killed_owner_s_task_is_back_to_pending(store_env: dict[str, str]) -> None:
    # Back when its lease runs out, or sooner when a process of its machine sees it gone
    # (the roster drops a member whose process ended): whichever comes first.
    setup_board("held by a process that dies")
    holder = start("hold", "Holder", {**store_env, "LEASE_S": "2"}, "1")
    go(holder)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with toolcards.Team("claims") as team:
        tools = {t.name: t for t in team.member("Watcher").factory(PlanningTool()).tools()}
        time.sleep(3)  # beyond the lease: the holder keeps it while it works
        assert "[in_progress]" in tools["get_planning_task"].call_sync({"task_id": 1})
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=WAIT)
        killed_at = time.monotonic()
        while "[pending]" not in tools["get_planning_task"].call_sync({"task_id": 1}):
            assert time.monotonic() - killed_at < WAIT
            time.sleep(0.05)
        text = tools["get_planning_task"].call_sync({"task_id": 1})
    assert "Owner: unassigned" in text
    assert "lease of @Holder expired" in text or "@Holder left the team (expired)" in text


def test_processes_draining_one_queue_never_take_a_task_twice(store_env: dict[str, str]) -> None:
    setup_board(*(f"job {i}" for i in range(120)))
    workers = [start("drain", f"D{i}", store_env) for i in range(4)]
    for worker in workers:
        go(worker)
    taken: list[int] = []
    for worker in workers:
        out, err = worker.communicate(timeout=WAIT)
        assert worker.returncode == 0, err
        lines = out.split()
        taken += [int(lines[i + 1]) for i, word in enumerate(lines) if word == "took"]
    assert sorted(taken) == list(range(1, 121))  # every task once, none twice
