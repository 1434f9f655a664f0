"""The orchestrator and the team's presence: joins, leaves and beats reach it, its events are published.

A recording presence stands in for a shared one; ``tests/store/test_presence.py`` tests the
store's, and ``tests/team/test_presence_across_processes.py`` real processes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import pykka
import pytest

from toolcards.actors import (
    ActorAddress,
    ActorSystem,
    LeaveReason,
    MemberEvent,
    MemberJoined,
    MemberLeft,
    MemoryJournal,
    MemoryPresence,
    Presence,
)

WAIT = 30  # seconds a test waits for a condition before failing; never a timing assertion


class RecordingPresence(MemoryPresence):
    """This process's members, recording every call; beats when ``interval`` is given."""

    def __init__(self, team_id: str, *, interval: float | None = None) -> None:
        super().__init__(team_id)
        self.interval = interval
        self.calls: list[tuple[Any, ...]] = []
        self.beats = 0
        self.beat_events: list[MemberEvent] = []
        self.fail: BaseException | None = None

    @property
    def beat_interval_s(self) -> float | None:  # type: ignore[override]
        return self.interval

    def join(self, address: ActorAddress) -> list[MemberEvent]:
        self.calls.append(("join", address.name))
        if self.fail is not None:
            raise self.fail
        return super().join(address)

    def leave(self, name: str, reason: LeaveReason) -> list[MemberEvent]:
        self.calls.append(("leave", name, reason))
        if self.fail is not None:
            raise self.fail
        return super().leave(name, reason)

    def beat(self) -> list[MemberEvent]:
        self.beats += 1
        events, self.beat_events = self.beat_events, []
        return events

    def announced(self, departures: Sequence[MemberLeft]) -> None:
        self.calls.append(("announced", [event.member.name for event in departures]))


def address(name: str, role: str = "agent") -> ActorAddress:
    return ActorAddress(name=name, role=role, team_id="t", agent_id=name)


def eventually(check: Any) -> Any:
    deadline = time.monotonic() + WAIT
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


@pytest.fixture
def journal() -> MemoryJournal:
    return MemoryJournal()


@pytest.fixture
def presences() -> list[RecordingPresence]:
    return []


@pytest.fixture
def recorded(journal: MemoryJournal, presences: list[RecordingPresence]) -> Any:
    def make(team_id: str) -> RecordingPresence:
        made = RecordingPresence(team_id)
        presences.append(made)
        return made

    with ActorSystem(journal=lambda _team: journal, presence=make) as system:
        yield system


def events_of(journal: MemoryJournal) -> list[tuple[str, str, str | None]]:
    return [
        (event.kind, event.member.name, getattr(event, "reason", None))
        for _, event in journal.since(0)
        if isinstance(event, MemberEvent)
    ]


def test_the_default_presence_is_this_process_roster() -> None:
    assert isinstance(MemoryPresence("t"), Presence)
    with ActorSystem() as system:
        team = system.team("t")
        team.register_member(address("Alice", "builder"))
        [alice] = team.present_members()

        assert (alice.handle, alice.role, alice.address) == ("@Alice", "builder", address("Alice", "builder"))
        assert alice.joined <= alice.seen and alice.pid > 0 and alice.host in alice.process
        team.unregister_member("Alice")
        assert team.present_members() == []


def test_joins_and_leaves_reach_the_presence_and_the_log_with_their_reason(
    recorded: ActorSystem, journal: MemoryJournal, presences: list[RecordingPresence]
) -> None:
    team = recorded.team("t")
    team.register_member(address("Alice"))
    team.register_member(address("Bob"))
    team.unregister_member("Alice", reason="session ended")
    team.unregister_member("Bob", reason="fired")
    assert team.unregister_member("Nobody") is None

    [presence] = presences
    assert presence.calls == [
        ("join", "Alice"),
        ("join", "Bob"),
        ("leave", "Alice", "session ended"),
        ("announced", ["Alice"]),
        ("leave", "Bob", "fired"),
        ("announced", ["Bob"]),
    ]
    assert events_of(journal) == [
        ("member_joined", "Alice", None),
        ("member_joined", "Bob", None),
        ("member_left", "Alice", "session ended"),
        ("member_left", "Bob", "fired"),
    ]
    joined = next(event for _, event in journal.since(0) if isinstance(event, MemberJoined))
    assert joined.team_id == "t" and joined.process == presence.process


def test_a_name_the_presence_refuses_does_not_join_this_process_either(
    recorded: ActorSystem, presences: list[RecordingPresence]
) -> None:
    team = recorded.team("t")
    team.present_members()
    presences[0].fail = ValueError("@Alice is already a member of team t, in process 7 on host elsewhere.")

    with pytest.raises(ValueError, match="in process 7 on host elsewhere"):
        team.register_member(address("Alice"))
    assert team.members() == []


def test_a_presence_out_of_reach_leaves_this_process_roster_working(
    recorded: ActorSystem,
    journal: MemoryJournal,
    presences: list[RecordingPresence],
    caplog: pytest.LogCaptureFixture,
) -> None:
    team = recorded.team("t")
    team.present_members()
    presences[0].fail = OSError("store down")

    with caplog.at_level(logging.WARNING, logger="toolcards.actors"):
        team.register_member(address("Alice"))
        assert team.members() == [address("Alice")]
        assert team.unregister_member("Alice") == address("Alice")
    assert team.members() == []
    assert "@Alice joins this process's roster only" in caplog.text and "will let it expire" in caplog.text
    assert events_of(journal) == []


def test_a_name_held_here_is_refused_before_the_presence_is_asked(
    recorded: ActorSystem, presences: list[RecordingPresence]
) -> None:
    team = recorded.team("t")
    team.register_member(address("Alice"))
    with pytest.raises(ValueError, match="@Alice is already a member of team t"):
        team.register_member(address("Alice"))
    assert presences[0].calls == [("join", "Alice")]


def test_a_member_whose_actor_died_leaves_before_its_namesake_joins(
    recorded: ActorSystem, journal: MemoryJournal
) -> None:
    team = recorded.team("t")
    dead = pykka.ThreadingActor.start()
    dead.stop()
    team.register_member(address("Alice"), dead)
    team.register_member(address("Alice"))

    assert events_of(journal) == [
        ("member_joined", "Alice", None),
        ("member_left", "Alice", "left"),
        ("member_joined", "Alice", None),
    ]


def test_stopping_the_system_makes_every_remaining_member_leave(
    journal: MemoryJournal, presences: list[RecordingPresence]
) -> None:
    def make(team_id: str) -> RecordingPresence:
        presences.append(RecordingPresence(team_id))
        return presences[-1]

    with ActorSystem(journal=lambda _team: journal, presence=make) as system:
        system.team("t").register_member(address("Alice"))
        system.team("t").register_member(address("Bob"))

    assert presences[0].present() == []
    assert events_of(journal)[-2:] == [("member_left", "Alice", "left"), ("member_left", "Bob", "left")]


def test_one_timer_per_orchestrator_renews_the_presence_and_publishes_what_it_finds(journal: MemoryJournal) -> None:
    presence = RecordingPresence("t", interval=0.02)
    with ActorSystem(journal=lambda _team: journal, presence=lambda _team: presence) as system:
        team = system.team("t")
        for name in ("Alice", "Bob", "Carol"):
            team.register_member(address(name))
        assert eventually(lambda: presence.beats >= 5)
        assert [t.name for t in threading.enumerate()].count("t presence") == 1

        gone = MemoryPresence("t")
        [joined] = gone.join(address("Dave"))
        [expired] = gone.leave("Dave", "expired")
        presence.beat_events = [expired]
        assert eventually(lambda: ("announced", ["Dave"]) in presence.calls)
        assert ("member_left", "Dave", "expired") in events_of(journal)
        assert joined.membership == expired.membership
    assert eventually(lambda: "t presence" not in [t.name for t in threading.enumerate()])


def test_a_presence_without_an_interval_starts_no_timer(recorded: ActorSystem) -> None:
    recorded.team("quiet").register_member(address("Alice"))
    assert "quiet presence" not in [t.name for t in threading.enumerate()]
