"""A team shares the real planning board: the lead hires two builders, plans their tasks,
briefs them by message; each builder sees its task in its context, completes it and reports;
the lead fires one. Driven by FunctionModel, no network."""

from __future__ import annotations

import re

from pydantic_ai.messages import ToolCallPart

from tests.team.cards import Turn, call, scripted
from toolcards import dump_cards
from toolcards.actors import ActorSystem
from toolcards.planning import PlanningTool
from toolcards.team import MessagingTool, RoleProfile, TeamRuntime, TeamTool


def lead(turn: Turn) -> list[ToolCallPart] | str:
    if turn.sender != "user":
        return f"ack {turn.sender}"
    steps = [
        [call("hire_team_member", role="builder")],
        [call("hire_team_member", role="builder")],
        [
            call(
                "update_planning",
                create_tasks=[
                    {"description": "Write the parser", "owner": "@Builder-1"},
                    {"description": "Write the tests", "owner": "@Builder-2"},
                ],
            )
        ],
        [
            call("send_message", to="Builder-1", text="your task is on the board"),
            call("send_message", to="Builder-2", text="yours too"),
        ],
    ]
    return steps[turn.step] if turn.step < len(steps) else "planned"


def builder(turn: Turn) -> list[ToolCallPart] | str:
    # The plan in the builder's context lists its own task: read the id from there.
    # Its own rows leave out the owner (itself): the lead created them.
    mine = re.search(r"#(\d+) \[pending\] Write the \w+ \(creator @Lead\)", turn.info.instructions or "")
    if turn.step == 0 and mine:
        return [
            call("update_planning", update_tasks=[{"id": int(mine.group(1)), "status": "completed", "output": "done"}])
        ]
    if turn.step == 1:
        return [call("send_message", to="Lead", text="completed my task")]
    return "finished"


def test_a_team_plans_on_a_shared_board_and_fires_a_member(system: ActorSystem) -> None:
    models = {"lead": lambda profile: scripted(lead), "builder": lambda profile: scripted(builder)}
    with TeamRuntime(system.team("team-1"), models=models) as team:
        team.register_profile(
            RoleProfile(
                role="lead",
                description="Plans and delegates.",
                model="lead",
                cards=dump_cards([TeamTool(), PlanningTool(), MessagingTool()]),
                hireable=False,
            )
        )
        team.register_profile(
            RoleProfile(role="builder", description="Builds.", model="builder", cards=dump_cards([PlanningTool()]))
        )
        team.hire("lead", "Lead")
        assert team.ask("Lead", "ship a parser", timeout=60) == "planned"
        team.wait_idle(60)

        plan = team.commands("Lead").dispatch("/get_planning")
        assert "Completed: 1-2 (outputs: get_planning_task(id))." in plan
        done = team.commands("Lead").dispatch("/search_planning status=completed")
        assert "#1 [completed] Write the parser — Output: done (owner @Builder-1, creator @Lead)" in done
        assert "#2 [completed] Write the tests — Output: done (owner @Builder-2, creator @Lead)" in done
        # One board and one set of mailboxes for the whole team.
        assert sorted(team.team.tool_actors()) == ["#Mailbox", "#PlanningTool"]

        assert team.commands("Lead").dispatch("/fire_team_member Builder-2").startswith("Fired @Builder-2")
        assert [m.handle for m in team.roster()] == ["@Lead", "@Builder-1"]
