"""A team's presence in the store, on every store: one roster for several processes.

Each ``StorePresence`` stands for one process (its own id); they share one store and one
fake wall clock, so expiry is tested without waiting. Real OS processes are in
``tests/team/test_presence_across_processes.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolcards.actors import ActorAddress, MemberJoined, MemberLeft
from toolcards.store import SQLiteStore, Store, StorePresence
from toolcards.store._presence import DEFAULT_INTERVAL_S, DEFAULT_TTL_S

TEAM = "t"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def presence(store: Store, clock: Clock, *, interval_s: float = 5.0, ttl_s: float = 30.0) -> StorePresence:
    return StorePresence(store, TEAM, interval_s=interval_s, ttl_s=ttl_s, clock=clock)


def address(name: str, role: str = "agent") -> ActorAddress:
    return ActorAddress(name=name, role=role, team_id=TEAM, agent_id=name)


def names(of: StorePresence) -> list[str]:
    return [member.name for member in of.present()]


def test_two_processes_each_join_a_member_and_both_see_both(store: Store, clock: Clock) -> None:
    one, two = presence(store, clock), presence(store, clock)
    [joined] = one.join(address("Alice", "builder"))
    clock.now += 1
    two.join(address("Bob"))

    assert names(one) == names(two) == ["Alice", "Bob"]
    alice = two.present()[0]
    assert (alice.handle, alice.role, alice.process) == ("@Alice", "builder", one.process)
    assert alice.process != two.process and alice.pid > 0 and alice.host
    assert alice.joined == alice.seen and alice.joined.timestamp() == 1_000_000.0
    assert isinstance(joined, MemberJoined)
    assert (joined.member, joined.membership, joined.process) == (alice.address, alice.membership, one.process)


def test_a_leave_is_gone_for_everyone_when_it_returns(store: Store, clock: Clock) -> None:
    one, two = presence(store, clock), presence(store, clock)
    one.join(address("Alice"))
    assert names(two) == ["Alice"]

    [left] = one.leave("Alice", "session ended")

    assert names(two) == [] and names(one) == []
    assert isinstance(left, MemberLeft) and (left.member.name, left.reason) == ("Alice", "session ended")
    assert one.leave("Alice", "left") == []  # not a member any more: nothing to announce


def test_a_name_a_live_member_of_another_process_holds_is_refused(store: Store, clock: Clock) -> None:
    one, two = presence(store, clock), presence(store, clock)
    one.join(address("Alice"))
    version = store.version(one.namespace)

    with pytest.raises(ValueError, match=r"@Alice is already a member of team t, in process \d+ on host"):
        two.join(address("Alice"))

    assert store.version(one.namespace) == version  # nothing written
    assert [member.process for member in two.present()] == [one.process]


def test_beats_keep_members_live_with_one_write_per_process(store: Store, clock: Clock) -> None:
    one, two = presence(store, clock), presence(store, clock)
    for name in ("Alice", "Bob", "Carol"):
        one.join(address(name))
    for _ in range(20):  # 100 s, far beyond the TTL, renewed every 5 s
        clock.now += 5
        version = store.version(one.namespace)
        assert one.beat() == []
        assert store.version(one.namespace) == version + 1  # the three members in one write
        assert two.beat() == []  # no members, nothing due: it only reads
        assert store.version(one.namespace) == version + 1
    assert names(two) == ["Alice", "Bob", "Carol"]
    assert two.present()[0].seen.timestamp() == clock.now


def test_a_process_that_stops_renewing_drops_out_after_its_ttl_and_one_process_announces_it(
    store: Store, clock: Clock
) -> None:
    dead, one, two = presence(store, clock, ttl_s=10), presence(store, clock), presence(store, clock)
    dead.join(address("Alice"))
    one.join(address("Bob"))
    clock.now += 10
    assert names(one) == ["Alice", "Bob"]  # its TTL, the writer's, has not passed yet

    clock.now += 1
    assert names(two) == ["Bob"]  # gone from every roster at once, before any sweep
    departures = [*one.beat(), *two.beat(), *one.beat()]

    assert [(event.member.name, event.reason) for event in departures] == [("Alice", "expired")]
    [event] = departures
    assert isinstance(event, MemberLeft) and event.process == dead.process
    one.announced(departures)
    clock.now += 100
    assert [*one.beat(), *two.beat()] == []  # announced once, kept no longer


def test_a_departure_whose_announcer_died_is_announced_again_with_the_same_membership(
    store: Store, clock: Clock
) -> None:
    one, other = presence(store, clock), presence(store, clock)
    one.join(address("Alice"))
    [first] = one.leave("Alice", "left")
    # ``one`` dies before it publishes the departure and calls ``announced``: it stays kept...
    clock.now += 29
    assert other.beat() == []
    clock.now += 2  # ...until its TTL passes; then the next sweeper announces it
    [again] = other.beat()

    assert isinstance(first, MemberLeft) and isinstance(again, MemberLeft)
    assert (again.member.name, again.reason, again.membership) == ("Alice", "left", first.membership)
    other.announced([again])
    clock.now += 100
    assert other.beat() == []


def test_an_expired_name_is_taken_over_with_its_departure_first(store: Store, clock: Clock) -> None:
    dead, alive = presence(store, clock), presence(store, clock)
    dead.join(address("Alice", "old"))
    clock.now += 31

    events = alive.join(address("Alice", "new"))

    assert [type(event).__name__ for event in events] == ["MemberLeft", "MemberJoined"]
    assert isinstance(events[0], MemberLeft) and (events[0].member.role, events[0].reason) == ("old", "expired")
    assert [(m.role, m.process) for m in alive.present()] == [("new", alive.process)]


def test_a_frozen_process_puts_its_members_back_or_waits_for_the_name(store: Store, clock: Clock) -> None:
    frozen, other = presence(store, clock), presence(store, clock)
    frozen.join(address("Alice"))
    frozen.join(address("Bob"))
    clock.now += 31
    swept = other.beat()
    other.announced([event for event in swept if isinstance(event, MemberLeft)])
    other.join(address("Bob"))  # the expired name is free: another process takes it

    back = frozen.beat()  # the frozen process wakes up

    assert [(type(event).__name__, event.member.name) for event in back] == [("MemberJoined", "Alice")]
    assert [(m.name, m.process) for m in other.present()] == [("Alice", frozen.process), ("Bob", other.process)]
    other.leave("Bob", "left")
    clock.now += 1
    [bob] = frozen.beat()  # the name is free again: its own Bob is back
    assert (type(bob).__name__, bob.member.name) == ("MemberJoined", "Bob")
    assert {m.name: m.process for m in other.present()} == {"Alice": frozen.process, "Bob": frozen.process}


def test_a_leave_that_cannot_be_written_is_no_longer_renewed(
    store: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, other = presence(store, clock), presence(store, clock)
    one.join(address("Alice"))
    with monkeypatch.context() as patched:
        patched.setattr(one.store, "write", lambda *args, **kwargs: (_ for _ in ()).throw(OSError("store down")))
        with pytest.raises(OSError):
            one.leave("Alice", "left")
    clock.now += 31

    assert names(other) == []
    events = [*one.beat(), *other.beat()]  # one no longer renews Alice: it expires, announced once
    assert [(e.member.name, e.reason) for e in events if isinstance(e, MemberLeft)] == [("Alice", "expired")]
    assert len(events) == 1


def test_teams_have_separate_rosters(store: Store, clock: Clock) -> None:
    StorePresence(store, "a", clock=clock).join(ActorAddress(name="Alice", team_id="a"))
    assert StorePresence(store, "b", clock=clock).present() == []
    assert StorePresence(store, "b", clock=clock).join(ActorAddress(name="Alice", team_id="b"))


def test_interval_and_ttl_are_checked() -> None:
    from toolcards.store import MemoryStore

    assert DEFAULT_INTERVAL_S < DEFAULT_TTL_S
    with pytest.raises(ValueError, match="0 < interval_s < ttl_s"):
        StorePresence(MemoryStore(), TEAM, interval_s=5, ttl_s=5)
    with pytest.raises(ValueError, match="0 < interval_s < ttl_s"):
        StorePresence(MemoryStore(), TEAM, interval_s=0, ttl_s=5)


JOIN_AND_WAIT = """
import sys, time
from toolcards.actors import ActorAddress
from toolcards.store import SQLiteStore, StorePresence
presence = StorePresence(SQLiteStore(sys.argv[1]), "t")
presence.join(ActorAddress(name="Alice", role="old", team_id="t", agent_id="Alice"))
print("joined", flush=True)
time.sleep(600)
"""


def test_a_member_whose_process_was_killed_gives_its_name_back_at_once(tmp_path: Path) -> None:
    # A server killed with kill -9 and started again must get its members' names back, not
    # wait out their TTL as someone else (@Alice-2).
    path = tmp_path / "state.db"
    child = subprocess.Popen([sys.executable, "-c", JOIN_AND_WAIT, str(path)], stdout=subprocess.PIPE, text=True)
    store = SQLiteStore(path)
    try:
        assert child.stdout is not None and child.stdout.readline() == "joined\n"
        restarted = StorePresence(store, TEAM)
        with pytest.raises(ValueError, match="already a member"):
            restarted.join(address("Alice", "new"))  # its process still runs
        child.kill()
        child.wait()
        events = restarted.join(address("Alice", "new"))
        assert [type(event).__name__ for event in events] == ["MemberLeft", "MemberJoined"]
        assert isinstance(events[0], MemberLeft) and (events[0].member.role, events[0].reason) == ("old", "expired")
        assert [(m.role, m.process) for m in restarted.present()] == [("new", restarted.process)]
    finally:
        child.kill()
        child.wait()
        store.close()


def test_a_dead_pid_of_another_machine_waits_for_its_ttl(
    store: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    elsewhere = presence(store, clock)
    monkeypatch.setattr(elsewhere, "_pid", int(ended.stdout))  # a pid no process has here now
    monkeypatch.setattr("toolcards.store._presence.machine_mark", lambda: "another-boot:4026531836")
    elsewhere.join(address("Alice"))
    monkeypatch.undo()
    with pytest.raises(ValueError, match="already a member"):
        presence(store, clock).join(address("Alice"))  # on another machine that pid means nothing here
