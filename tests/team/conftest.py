"""Team fixtures: a runtime on a real actor system, with scripted models registered by name."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ToolCallPart

from tests.team.cards import Turn, call, scripted
from toolcards import dump_cards
from toolcards.actors import ActorSystem
from toolcards.team import RoleProfile, TeamRuntime, TeamTool


def lead_model(turn: Turn) -> list[ToolCallPart] | str:
    """Acknowledges reports; on ``call <tool> <json>`` makes that call and reports its outcome;
    on anything else from the user, hires two builders and sends each a task."""
    if turn.sender != "user":
        return f"ack {turn.sender}"
    if turn.text.startswith("call "):
        _, tool, args = turn.text.split(" ", 2)
        if turn.step == 0:
            return [call(tool, **json.loads(args))]
        return f"{turn.returns[-1].outcome}: {turn.returns[-1].content}"
    if turn.step < 2:
        return [call("hire_team_member", role="builder")]
    if turn.step == 2:
        return [
            call("send_message", to="Builder-1", text="write the parser"),
            call("send_message", to="Builder-2", text="write the tests"),
        ]
    return "delegated"


def builder_model(turn: Turn) -> list[ToolCallPart] | str:
    """Posts its task on the board, reports to whoever asked, then stops."""
    if turn.step == 0:
        return [call("post_note", text=f"{turn.me} took: {turn.text}")]
    if turn.step == 1 and turn.sender.startswith("@"):
        return [call("send_message", to=turn.sender, text=f"done: {turn.text}")]
    return f"finished {turn.text}"


@pytest.fixture
def runtime(system: ActorSystem) -> Iterator[TeamRuntime]:
    models = {
        "lead": lambda profile: scripted(lead_model),
        "builder": lambda profile: scripted(builder_model),
    }
    with TeamRuntime(system.team("team-1"), models=models) as team_runtime:
        team_runtime.register_profile(
            RoleProfile(
                role="lead",
                description="Plans and delegates.",
                model="lead",
                cards=dump_cards([TeamTool()]),
                hireable=False,
            )
        )
        team_runtime.register_profile(
            RoleProfile(
                role="builder",
                description="Writes code.",
                model="builder",
                instructions="Post what you take on the board.",
                cards=[{"kind": "team_test_board"}],
            )
        )
        yield team_runtime
