"""One roster for every process of a team: real OS processes on one store (SQLite, PostgreSQL).

Each worker (``tests/team/presence_worker.py``) is a ``toolcards.Team`` member in a process of
its own, renewing its presence every 0.2 s with a TTL of 2 s. The test waits for what another
process must come to see with a generous bound (``WAIT``), never asserting how long it took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.team.presence_worker import Worker
from toolcards.actors import MemberLeft
from toolcards.store import Store, StoreJournal, open_store

pytestmark = pytest.mark.slow

TEAM = "crew"
INTERVAL_S = 0.2
TTL_S = 2.0
WAIT = 60.0


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment of processes sharing one store of the given kind."""
    location = str(tmp_path / "state.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    return {
        **os.environ,
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
        "TOOLCARDS_STORE": location,
    }


@pytest.fixture
def start(env: dict[str, str]) -> Iterator[Callable[[str], Worker]]:
    started: list[Worker] = []

    def start_worker(name: str) -> Worker:
        started.append(Worker(TEAM, name, env, interval_s=INTERVAL_S, ttl_s=TTL_S))
        return started[-1]

    yield start_worker
    for worker in started:
        worker.stop()


@pytest.fixture
def store(env: dict[str, str]) -> Iterator[Store]:
    """The same store, opened by the test itself (to read the team's log)."""
    opened = open_store(env["TOOLCARDS_STORE"])
    yield opened
    opened.close()


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def departures(store: Store) -> list[MemberLeft]:
    return [event for _, event in StoreJournal(store, TEAM).since(0) if isinstance(event, MemberLeft)]


def test_two_processes_each_join_a_member_and_each_sees_both(start: Callable[[str], Worker]) -> None:
    alice, bob = start("Alice"), start("Bob")
    assert (alice.first, bob.first) == ("joined", "joined")

    expected = {"Alice": alice.pid, "Bob": bob.pid}
    assert alice.roster() == expected  # each join was committed before the worker said so
    assert bob.roster() == expected


def test_a_clean_leave_is_gone_for_the_other_process_at_once(start: Callable[[str], Worker], store: Store) -> None:
    alice, bob = start("Alice"), start("Bob")
    assert alice.ask("leave") == "left"

    assert bob.roster() == {"Bob": bob.pid}  # no waiting: the leave was committed
    assert [(event.member.name, event.reason) for event in departures(store)] == [("Alice", "left")]


def test_a_killed_process_members_drop_out_after_its_ttl(start: Callable[[str], Worker], store: Store) -> None:
    alice, bob = start("Alice"), start("Bob")
    assert bob.roster() == {"Alice": alice.pid, "Bob": bob.pid}

    alice.kill()

    assert eventually(lambda: bob.roster() == {"Bob": bob.pid})
    # Bob's process sweeps the expired member out and announces it (at least once).
    assert eventually(lambda: bool(departures(store)))
    assert {(event.member.name, event.reason) for event in departures(store)} == {("Alice", "expired")}


def test_a_name_a_live_member_of_another_process_holds_is_refused(start: Callable[[str], Worker], store: Store) -> None:
    first = start("Alice")
    second = start("Alice")

    assert first.first == "joined"
    assert second.first.startswith(f"refused @Alice is already a member of team {TEAM}, in process {first.pid}")
    assert "Give this agent another name" in second.first
    assert second.roster() == {"Alice": first.pid}

    first.kill()
    assert eventually(lambda: second.roster() == {})
    third = start("Alice")  # the name of a member whose process died is free after its TTL
    assert third.first == "joined"
    assert third.roster() == {"Alice": third.pid}
