"""A whole team, offline: a lead hires two builders, they share a board, report back, one is fired."""

from __future__ import annotations

from typing import cast

from tests.team.cards import BoardActor
from toolcards.actors import ask
from toolcards.team import MemberFired, MemberHired, RunFinished, TeamMessage, TeamRuntime


def board_notes(runtime: TeamRuntime) -> list[str]:
    ref = runtime.team.tool_actors()["#TestBoard"]
    notes: list[str] = ask(ref.proxy().read(), actor="#TestBoard")
    return notes


def test_lead_hires_builders_who_share_a_board_and_report_back(runtime: TeamRuntime) -> None:
    runtime.hire("lead", "Lead")
    assert runtime.ask("Lead", "ship the parser", timeout=60) == "delegated"
    runtime.wait_idle(60)

    assert [(m.name, m.role) for m in runtime.roster()] == [
        ("Lead", "lead"),
        ("Builder-1", "builder"),
        ("Builder-2", "builder"),
    ]
    assert sorted(board_notes(runtime)) == [
        "@Builder-1: Builder-1 took: write the parser",
        "@Builder-2: Builder-2 took: write the tests",
    ]
    events = [event for _, event in runtime.team.events()]
    hires = [(e.member.name, e.hired_by) for e in events if isinstance(e, MemberHired)]
    assert hires == [("Lead", None), ("Builder-1", "@Lead"), ("Builder-2", "@Lead")]
    messages = {(e.sender, e.recipient, e.text) for e in events if isinstance(e, TeamMessage)}
    assert messages == {
        ("user", "@Lead", "ship the parser"),
        ("@Lead", "@Builder-1", "write the parser"),
        ("@Lead", "@Builder-2", "write the tests"),
        ("@Builder-1", "@Lead", "done: write the parser"),
        ("@Builder-2", "@Lead", "done: write the tests"),
    }
    finished = {(e.member, e.output) for e in events if isinstance(e, RunFinished)}
    assert finished == {
        ("@Lead", "delegated"),
        ("@Builder-1", "finished write the parser"),
        ("@Builder-2", "finished write the tests"),
        ("@Lead", "ack @Builder-1"),
        ("@Lead", "ack @Builder-2"),
    }

    # The lead fires a builder through its tool: the actor stops and leaves the roster.
    builder_one = runtime.team.member_ref("Builder-1")
    assert builder_one is not None
    answer = runtime.ask("Lead", 'call fire_team_member {"name": "Builder-1"}', timeout=60)
    assert answer == "success: Fired @Builder-1 (builder); they stop after their current turn."
    assert builder_one.actor_stopped.wait(20)
    assert [m.name for m in runtime.roster()] == ["Lead", "Builder-2"]
    fired = [(e.member.name, e.fired_by) for _, e in runtime.team.events() if isinstance(e, MemberFired)]
    assert fired == [("Builder-1", "@Lead")]

    # Its name is gone for messages too, and the lead is told who is left.
    answer = runtime.ask("Lead", 'call send_message {"to": "Builder-1", "text": "still there?"}', timeout=60)
    assert answer.startswith("retried: No teammate called 'Builder-1'. Teammates: @Builder-2. Retry")


def test_the_lead_sees_its_team_in_every_request(runtime: TeamRuntime) -> None:
    runtime.hire("lead", "Lead")
    runtime.ask("Lead", "ship it", timeout=60)
    runtime.wait_idle(60)
    history = runtime.history("Lead")
    requests = [m for m in history if type(m).__name__ == "ModelRequest"]
    rosters = [cast(str, getattr(r, "instructions", "")) for r in requests]
    assert "Team roster (1):\n- @Lead (lead, you)" in rosters[0]
    assert "- @Builder-1 (builder)" in rosters[1] and "- @Builder-2 (builder)" not in rosters[1]
    assert "- @Builder-2 (builder)" in rosters[2]
    assert all("Roles you can hire with hire_team_member:\n- builder: Writes code." in text for text in rosters)
    assert all("Your teammates" not in text for text in rosters)  # the roster is shown once


def test_board_actor_is_shared_by_the_team(runtime: TeamRuntime) -> None:
    runtime.hire("builder")
    runtime.hire("builder")
    actors = runtime.team.tool_actors()
    assert list(actors) == ["#TestBoard"]
    assert actors["#TestBoard"].actor_class is BoardActor
