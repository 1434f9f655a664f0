"""The actor runtime: race-free spawning, teams kept apart, orderly shutdown, events."""

from __future__ import annotations

import threading
from typing import Any

import pykka
import pytest

from toolcards import ActorAddress, ActorUnavailable
from toolcards.actors import ActorSystem, ask

STOPPED: list[str] = []


class Counter(pykka.ThreadingActor):
    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label
        self.value = 0

    def increment(self) -> int:
        self.value += 1
        return self.value

    def on_stop(self) -> None:
        STOPPED.append(self.label)


class Member(Counter):
    pass


def test_get_or_spawn_is_race_free(system: ActorSystem) -> None:
    team = system.team("t1")
    proxies: list[Any] = []
    barrier = threading.Barrier(20)

    def bind() -> None:
        barrier.wait()
        proxies.append(team.get_or_spawn("#Counter", Counter, "c"))

    threads = [threading.Thread(target=bind) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for proxy in proxies:
        proxy.increment().get()
    assert proxies[0].value.get() == 20
    assert len(team.tool_actors()) == 1


def test_teams_never_share_actors(system: ActorSystem) -> None:
    one = system.team("one").get_or_spawn("#Counter", Counter, "one")
    two = system.team("two").get_or_spawn("#Counter", Counter, "two")
    one.increment().get()
    assert two.value.get() == 0
    assert system.teams() == ["one", "two"]


def test_a_name_bound_to_another_class_is_refused(system: ActorSystem) -> None:
    team = system.team("t")
    team.get_or_spawn("#Counter", Counter, "a")

    class Other(pykka.ThreadingActor):
        pass

    with pytest.raises(TypeError, match="is a Counter, not a Other"):
        team.get_or_spawn("#Counter", Other)


def test_stop_is_orderly_members_then_tool_actors() -> None:
    STOPPED.clear()
    system = ActorSystem()
    team = system.team("t")
    team.get_or_spawn("#Counter", Counter, "tool")
    member = Member.start("member")
    team.register_member(ActorAddress(name="Ann", team_id="t"), member)
    system.stop()
    assert STOPPED == ["member", "tool"]
    assert not member.is_alive()
    system.stop()  # idempotent
    with pytest.raises(RuntimeError, match="stopped"):
        system.team("t")


class LateSpawner(Counter):
    """On stop, starts another tool actor and has another member join (a call finishing as
    the system stops), and records what happened."""

    def __init__(self, team: Any, outcomes: list[str]) -> None:
        super().__init__("spawner")
        self.team = team
        self.outcomes = outcomes
        self.joiner = Member.start("joiner")

    def on_stop(self) -> None:
        super().on_stop()
        try:
            self.team.get_or_spawn("#Late", Counter, "late")
            self.outcomes.append("spawned")
        except RuntimeError as exc:
            self.outcomes.append(str(exc))
        try:
            self.team.register_member(ActorAddress(name="Late", team_id="t"), self.joiner)
            self.outcomes.append("joined")
        except RuntimeError as exc:
            self.outcomes.append(str(exc))


def test_nothing_started_while_the_system_stops_outlives_it() -> None:
    # An actor left running would keep the process from exiting (pykka's threads are not daemons).
    system = ActorSystem()
    team = system.team("t")
    outcomes: list[str] = []
    spawner = team.get_or_spawn("#Spawner", LateSpawner, team, outcomes)
    joiner = spawner.joiner.get()
    system.stop()
    assert outcomes == ["team t is stopping: #Late is not started again", "team t is stopping: @Late cannot join"]
    assert pykka.ActorRegistry.get_all() == []
    assert not joiner.is_alive()


def test_roster_and_lookup(system: ActorSystem) -> None:
    team = system.team("t")
    ann = ActorAddress(name="Ann", role="builder", team_id="t")
    ref = Member.start("ann")
    team.register_member(ann, ref)
    with pytest.raises(ValueError, match="@Ann is already a member"):
        team.register_member(ann)
    assert team.members() == [ann]
    assert system.lookup(ann) is ref
    tool = team.get_or_spawn("#Counter", Counter, "x")
    assert system.lookup(ActorAddress(name="#Counter", team_id="t")) is not None
    assert system.lookup(ActorAddress(name="Nobody", team_id="t")) is None
    assert team.unregister_member("Ann") == ann
    assert team.members() == []
    tool.increment().get()


def test_events_are_sequenced_and_delivered(system: ActorSystem) -> None:
    team = system.team("t")
    received: list[tuple[int, Any]] = []
    done = threading.Event()

    def subscriber(seq: int, event: Any) -> None:
        received.append((seq, event))
        if len(received) == 2:
            done.set()

    unsubscribe = team.subscribe(subscriber)
    team.publish("a")
    assert team.publish_and_wait("b") == 2
    assert done.wait(5)
    assert received == [(1, "a"), (2, "b")]
    unsubscribe()
    team.publish_and_wait("c")
    assert len(received) == 2
    assert [event for _, event in team.events(since=1)] == ["b", "c"]


def test_batched_events_cost_one_message_per_batch_and_keep_their_order(system: ActorSystem) -> None:
    from toolcards.actors._orchestrator import MAX_BATCH

    team = system.team("t")
    told: list[Any] = []
    tell = team.ref.tell

    def counting_tell(message: Any) -> None:
        told.append(message)
        tell(message)

    team.ref.tell = counting_tell  # type: ignore[method-assign]
    count = 3 * MAX_BATCH
    for number in range(count):
        team.publish_batched(number)
    team.publish("after")  # a plain publish writes the waiting batch first
    # One message when the queue turns non-empty and one per MAX_BATCH events; a batch the
    # timer writes while the loop runs on a slow machine adds one, never one per event.
    assert len(told) < count / 10
    assert [event for _, event in team.events()] == [*range(count), "after"]


def test_profiles(system: ActorSystem) -> None:
    team = system.team("t")
    team.register_profile("builder", {"description": "builds"})
    assert team.profiles() == {"builder": {"description": "builds"}}


def test_ask_translates_dead_actors() -> None:
    ref = Counter.start("dead")
    proxy = ref.proxy()
    ref.stop()
    with pytest.raises(ActorUnavailable, match="#Counter is stopped"):
        ask(proxy.increment(), actor="#Counter")


def test_address_handles() -> None:
    assert ActorAddress(name="Ann", team_id="t").handle == "@Ann"
    assert ActorAddress(name="#PlanningTool", team_id="t").is_tool_actor
    assert str(ActorAddress(name="Ann", team_id="t")) == "t/@Ann"
