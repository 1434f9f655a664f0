"""TeamRuntime: the catalog, hiring and firing, messages from outside, waiting, stopping."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from pydantic_ai.models.test import TestModel

from toolcards import RetriableError, WiringError
from toolcards.actors import ActorSystem, MemberLeft
from toolcards.team import MemberFired, MemberHired, RoleProfile, TeamRuntime
from toolcards.team._member import MemberActor


def test_register_profile_checks_the_cards(runtime: TeamRuntime) -> None:
    with pytest.raises(WiringError, match=r"Role 'broken': Invalid card config: card #0: Unknown card kind 'nope'"):
        runtime.register_profile(RoleProfile(role="broken", description="x", model="lead", cards=[{"kind": "nope"}]))
    assert "broken" not in runtime.profiles()
    stored = runtime.register_profile({"role": "scribe", "description": "Writes.", "model": "builder"})
    assert runtime.profiles()["scribe"] == stored


def test_profiles_registered_on_the_team_as_dicts_are_read_as_profiles(runtime: TeamRuntime) -> None:
    runtime.team.register_profile("scribe", {"role": "scribe", "description": "Writes.", "model": "builder"})
    assert runtime.profiles()["scribe"].description == "Writes."


def test_model_factories_get_the_profile_and_strings_go_to_pydantic_ai(system: ActorSystem) -> None:
    seen: list[RoleProfile] = []

    def factory(profile: RoleProfile) -> Any:
        seen.append(profile)
        return TestModel()

    runtime = TeamRuntime(system.team("t2"), models={"custom": factory})
    custom = runtime.register_profile(RoleProfile(role="a", description="x", model="custom"))
    runtime.register_profile(RoleProfile(role="b", description="x", model="test"))
    runtime.register_profile(RoleProfile(role="c", description="x", model="nowhere:model"))
    runtime.hire("a")
    runtime.hire("b")
    assert seen == [custom]
    with pytest.raises(WiringError, match=r"model 'nowhere:model' cannot be used .*\(registered: custom\)"):
        runtime.hire("c")
    assert [m.name for m in runtime.roster()] == ["A-1", "B-1"]


def test_hire_names_members_and_publishes(runtime: TeamRuntime) -> None:
    first = runtime.hire("Builder ")
    second = runtime.hire("builder", "@Bea")
    assert (first.name, first.role, first.team_id, second.name) == ("Builder-1", "builder", "team-1", "Bea")
    runtime.fire("Builder-1")
    assert runtime.hire("builder").name == "Builder-2"  # a fired member's name is not handed out again
    hired = [e.member.name for _, e in runtime.team.events() if isinstance(e, MemberHired)]
    assert hired == ["Builder-1", "Bea", "Builder-2"]


def test_the_application_may_hire_any_role_members_only_hireable_ones(runtime: TeamRuntime) -> None:
    lead = runtime.hire("lead", "Lead")
    with pytest.raises(
        RetriableError, match=re.escape("Role 'lead' cannot be hired by team members. Roles you can hire: builder.")
    ):
        runtime.hire("lead", by=lead)
    with pytest.raises(RetriableError, match=re.escape("Unknown role 'cook'. Roles you can hire: builder, lead.")):
        runtime.hire("cook")
    with pytest.raises(
        RetriableError,
        match=re.escape("The name 'LEAD' is taken. Choose another name, or omit the name to get Builder-1."),
    ):
        runtime.hire("builder", "LEAD")


def test_fire_stops_the_actor_and_leaves_the_roster(runtime: TeamRuntime) -> None:
    runtime.hire("builder")
    runtime.hire("builder")
    ref = runtime.team.member_ref("Builder-1")
    assert ref is not None and ref.is_alive()
    fired = runtime.fire("@builder-1")
    assert fired.name == "Builder-1"
    assert not ref.is_alive()
    assert [m.name for m in runtime.roster()] == ["Builder-2"]
    assert [e.member.name for _, e in runtime.team.events() if isinstance(e, MemberFired)] == ["Builder-1"]
    left = [(e.member.name, e.reason) for _, e in runtime.team.events() if isinstance(e, MemberLeft)]
    assert left == [("Builder-1", "fired")]  # once: the stopping actor found itself gone already
    assert [m.handle for m in runtime.team.present_members()] == ["@Builder-2"]
    with pytest.raises(RetriableError, match=r"No member called 'Builder-1'. Members: @Builder-2. Retry"):
        runtime.fire("Builder-1")
    with pytest.raises(
        RetriableError, match=re.escape("No teammate or role called 'Builder-1'. Teammates: @Builder-2 (builder).")
    ):
        runtime.send("Builder-1", "hello?")


def test_a_member_cannot_fire_itself(runtime: TeamRuntime) -> None:
    lead = runtime.hire("lead", "Lead")
    with pytest.raises(RetriableError, match=r"You cannot fire yourself \(@Lead\). There is no other member."):
        runtime.fire("Lead", by=lead)


def test_a_namesake_hired_while_the_old_member_stops_keeps_its_place(runtime: TeamRuntime) -> None:
    runtime.hire("builder", "Bo")
    old = runtime.team.member_ref("Bo")
    assert old is not None
    runtime.fire("Bo", wait=False)
    runtime.hire("builder", "Bo")
    assert old.actor_stopped.wait(20)
    assert [m.name for m in runtime.roster()] == ["Bo"]
    new = runtime.team.member_ref("Bo")
    assert new is not None and new.is_alive() and new.actor_urn != old.actor_urn


def test_wait_idle_times_out_on_a_busy_team(runtime: TeamRuntime) -> None:
    from tests.team.cards import scripted
    from tests.team.test_member import ENTERED, GATE, one_tool_then_answer

    GATE.clear()
    ENTERED.clear()
    runtime.register_model("gated", lambda profile: scripted(one_tool_then_answer("wait_at_gate")))
    runtime.register_profile(
        RoleProfile(role="gated", description="x", model="gated", cards=[{"kind": "team_test_gate"}])
    )
    runtime.hire("gated", "Gated")
    runtime.send("Gated", "wait")
    assert ENTERED.wait(20)
    with pytest.raises(TimeoutError, match=re.escape("@Gated was still busy")):
        runtime.wait_idle(timeout=0.2)
    GATE.set()
    runtime.wait_idle(30)


def test_a_member_stopped_directly_leaves_the_roster(runtime: TeamRuntime) -> None:
    runtime.hire("builder")
    ref = runtime.team.member_ref("Builder-1")
    assert ref is not None
    ref.stop()
    assert runtime.roster() == []
    with pytest.raises(
        RetriableError, match=re.escape("No member called 'Builder-1' reads messages. There is no other member.")
    ):
        runtime.ask("Builder-1", "anyone?")


def test_stop_fires_every_member(system: ActorSystem) -> None:
    with TeamRuntime(system.team("t3"), models={"m": lambda profile: TestModel()}) as runtime:
        runtime.register_profile(RoleProfile(role="worker", description="x", model="m"))
        refs = [runtime.team.member_ref(runtime.hire("worker").name) for _ in range(3)]
    assert runtime.roster() == []
    assert all(ref is not None and not ref.is_alive() for ref in refs)
    runtime.stop()  # idempotent


def test_hiring_concurrently_gives_distinct_names(runtime: TeamRuntime) -> None:
    names: list[str] = []
    barrier = threading.Barrier(6)

    def hire() -> None:
        barrier.wait()
        names.append(runtime.hire("builder").name)

    threads = [threading.Thread(target=hire) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(names) == [f"Builder-{n}" for n in range(1, 7)]
    assert all(isinstance(runtime.team.member_ref(n), object) for n in names)
    assert {ref.actor_class for ref in (runtime.team.member_ref(n) for n in names) if ref} == {MemberActor}


def test_a_fired_member_is_forgotten_by_the_runtime(runtime: TeamRuntime) -> None:
    # An orchestrator that hires and fires for days must not keep every fired member's agent,
    # factory and tools.
    for _ in range(3):
        hired = runtime.hire("builder")
        runtime.fire(hired.name)
    assert runtime.roster() == []
    assert runtime._members == {}
