"""TeamTool and MessagingTool: what the model sees, and every mistake answered with the choices."""

from __future__ import annotations

import json
import re

import pytest

from tests.team.cards import FakeManager
from toolcards import (
    COMMAND,
    SYSTEM_PROMPT,
    TOOL_CALL,
    RetriableError,
    ToolFactory,
    WiringError,
    dump_cards,
    load_cards,
)
from toolcards.actors import ActorSystem
from toolcards.team import (
    HireParam,
    MessagingTool,
    RoleProfile,
    RolesParam,
    SendMessageParam,
    TeammatesParam,
    TeamRuntime,
    TeamTool,
)
from toolcards.testing import FakeObserver


@pytest.fixture
def lead(runtime: TeamRuntime) -> str:
    runtime.hire("lead", "Lead")
    return "Lead"


def test_cards_round_trip_as_config() -> None:
    cards = [TeamTool(fire_team_member=False), MessagingTool(teammates=TeammatesParam(expose={COMMAND}))]
    data = dump_cards(cards)
    assert [entry["kind"] for entry in data] == ["team", "messaging"]
    assert load_cards(json.loads(json.dumps(data))) == cards


def test_team_card_needs_a_member_allowed_to_manage(alice: FakeObserver) -> None:
    with pytest.raises(WiringError, match="TeamManagementToolObserver"):
        ToolFactory([TeamTool()], observer=alice)
    ToolFactory([MessagingTool()], observer=alice)  # messaging needs only a team member


def test_channels_and_schemas(runtime: TeamRuntime, system: ActorSystem, lead: str) -> None:
    registry = runtime.commands(lead)
    assert {"hire_team_member", "fire_team_member", "team_roster", "hireable_roles"} <= set(registry.names)
    manager = FakeManager("Boss", runtime, system)
    tools = {tool.name: tool for tool in ToolFactory([TeamTool()], observer=manager).tools()}
    assert tools["hire_team_member"].channels == {TOOL_CALL, COMMAND}
    assert tools["fire_team_member"].channels == {TOOL_CALL, COMMAND}
    assert tools["team_roster"].channels == {SYSTEM_PROMPT, COMMAND}
    assert tools["hireable_roles"].channels == {SYSTEM_PROMPT, COMMAND}
    hire_schema = tools["hire_team_member"].parameters_schema
    assert hire_schema["required"] == ["role"]
    assert set(hire_schema["properties"]) == {"role", "name"}


def test_roster_marks_you_and_roles_lists_only_hireable(runtime: TeamRuntime, lead: str) -> None:
    runtime.hire("builder")
    registry = runtime.commands(lead)
    assert registry.dispatch("/team_roster") == "Team roster (2):\n- @Lead (lead, you)\n- @Builder-1 (builder)"
    assert registry.dispatch("/hireable_roles") == "Roles you can hire with hire_team_member:\n- builder: Writes code."
    builder_view = runtime.commands("Builder-1").dispatch("/teammates")
    assert builder_view.startswith("You are @Builder-1. Your teammates: @Lead (lead). Their messages arrive as")


def test_roles_prompt_mentions_hiring_only_when_the_model_can_hire(runtime: TeamRuntime) -> None:
    runtime.register_profile(
        RoleProfile(
            role="watcher",
            description="Watches.",
            model="lead",
            cards=dump_cards(
                [TeamTool(hire_team_member=HireParam(expose={COMMAND}), hireable_roles=RolesParam(expose={COMMAND}))]
            ),
        )
    )
    runtime.hire("watcher", "Watcher")
    roles = runtime.commands("Watcher").dispatch("/hireable_roles")
    assert roles is not None
    assert roles.startswith("Roles you can hire:\n") and "hire_team_member" not in roles


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/hire_team_member cook", "Unknown role 'cook'. Roles you can hire: builder, watcher."),
        (
            "/hire_team_member lead",
            "Role 'lead' cannot be hired by team members. Roles you can hire: builder, watcher.",
        ),
        (
            "/hire_team_member builder Lead",
            "The name 'Lead' is taken. Choose another name, or omit the name to get Builder-1.",
        ),
        (
            "/hire_team_member builder lead",
            "The name 'lead' is taken. Choose another name, or omit the name to get Builder-1.",
        ),
        ("/hire_team_member builder 'Bob Smith'", "Invalid name 'Bob Smith'"),
        ("/fire_team_member Zed", "No member called 'Zed'. Members: @Ann. Retry with one of these names."),
        ("/fire_team_member @lead", "You cannot fire yourself (@Lead). Members: @Ann. Retry with one of these names."),
    ],
)
def test_mistakes_come_back_with_the_valid_choices(
    runtime: TeamRuntime, lead: str, command: str, expected: str
) -> None:
    runtime.register_profile(RoleProfile(role="watcher", description="Watches.", model="lead"))
    runtime.hire("builder", "Ann")
    assert runtime.commands(lead).dispatch(command).startswith("Error: " + expected)


def test_hiring_and_firing_through_commands(runtime: TeamRuntime, lead: str) -> None:
    registry = runtime.commands(lead)
    assert registry.dispatch("/hire_team_member builder") == "Hired @Builder-1 (builder)."
    assert registry.dispatch("/hire_team_member builder name=Bea") == "Hired @Bea (builder)."
    assert registry.dispatch("/fire_team_member builder-1") == (
        "Fired @Builder-1 (builder); they stop after their current turn."
    )
    assert [m.name for m in runtime.roster()] == ["Lead", "Bea"]


def test_a_broken_profile_fails_the_call_instead_of_retrying(runtime: TeamRuntime, lead: str) -> None:
    runtime.register_profile(RoleProfile(role="ghost", description="Haunts.", model="nowhere:model"))
    answer = runtime.ask(lead, 'call hire_team_member {"role": "ghost"}')
    assert answer.startswith("failed: Role 'ghost' cannot be hired: Role 'ghost': model 'nowhere:model' cannot be used")
    assert [m.name for m in runtime.roster()] == ["Lead"]


def test_model_fixable_mistakes_become_retries(runtime: TeamRuntime, lead: str) -> None:
    answer = runtime.ask(lead, 'call hire_team_member {"role": "cook"}')
    assert answer.startswith("retried: Unknown role 'cook'. Roles you can hire: builder.")


# -- messaging ------------------------------------------------------------------------------


def test_messaging_mistakes_list_the_teammates(alice: FakeObserver, bob: FakeObserver) -> None:
    alice.team.register_member(alice.address)
    bob.team.register_member(bob.address)
    send = ToolFactory([MessagingTool()], observer=alice).get_commands()[SendMessageParam]
    with pytest.raises(
        RetriableError, match=re.escape("No teammate or role called 'Zed'. Teammates: @Bob (agent). Retry")
    ):
        send(to="Zed", text="hi")
    with pytest.raises(
        RetriableError, match=re.escape("'@alice' is you; name another member. Teammates: @Bob (agent).")
    ):
        send(to="@alice", text="hi")
    # A member without an actor of its own (an application's agent, an MCP session) has a
    # mailbox too: the message waits there until it reads it.
    assert send(to="Bob", text="hi") == "Sent to @Bob."


def test_teammates_prompt_lists_others_and_mentions_send_only_if_offered(
    alice: FakeObserver, bob: FakeObserver
) -> None:
    alice.team.register_member(alice.address)
    bob.team.register_member(bob.address)
    (prompt,) = ToolFactory([MessagingTool(unread_messages=False)], observer=alice).get_system_prompts()
    text = prompt() or ""
    assert text.startswith("You are @Alice. Your teammates: @Bob (agent). Their messages arrive as")
    assert "send_message" in text
    quiet = MessagingTool(send_message=SendMessageParam(expose={COMMAND}), unread_messages=False)
    (prompt,) = ToolFactory([quiet], observer=alice).get_system_prompts()
    assert prompt() == "You are @Alice. Your teammates: @Bob (agent)."
