"""Role profiles and team events serialise; member names follow one rule everywhere."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from tests.team.cards import BoardTool
from toolcards import ActorAddress, RetriableError, dump_cards
from toolcards.team import MemberHired, RoleProfile, RunFinished, TeamMessage
from toolcards.team._models import default_member_name, find_member, validate_member_name


def test_profile_round_trips_through_json_with_cards_as_config() -> None:
    profile = RoleProfile(
        role="builder",
        description="Writes code.",
        model="openai:gpt-4o",
        instructions="Test first.",
        cards=[*dump_cards([BoardTool(show=False)]), {"kind": "messaging", "teammates": False}],
    )
    assert profile.cards[0] == {"kind": "team_test_board", "read_only": False, "post": True, "show": False}
    again = RoleProfile.model_validate(json.loads(profile.model_dump_json()))
    assert again == profile
    assert again.hireable is True


def test_profile_rejects_bad_roles_unknown_fields_and_card_objects() -> None:
    with pytest.raises(ValidationError):
        RoleProfile(role="two words", description="x", model="m")
    with pytest.raises(ValidationError):
        RoleProfile.model_validate({"role": "a", "description": "x", "model": "m", "budget": 3})
    with pytest.raises(ValidationError):
        RoleProfile(role="a", description="x", model="")
    with pytest.raises(ValidationError, match="valid dictionary"):
        RoleProfile.model_validate({"role": "a", "description": "x", "model": "m", "cards": [BoardTool()]})


def test_profiles_are_frozen() -> None:
    profile = RoleProfile(role="a", description="x", model="m")
    with pytest.raises(ValidationError):
        profile.hireable = False


def test_events_round_trip() -> None:
    member = ActorAddress(name="Builder-1", role="builder", team_id="t")
    for event in (
        MemberHired(team_id="t", member=member, hired_by="@Lead"),
        TeamMessage(team_id="t", sender="@Lead", recipient="@Builder-1", text="go"),
        RunFinished(team_id="t", member="@Builder-1", sender="@Lead", output="done"),
    ):
        assert type(event).model_validate_json(event.model_dump_json()) == event


def test_message_prompt_names_the_sender() -> None:
    message = TeamMessage(sender="@Lead", recipient="@Builder-1", text="write the parser")
    assert message.as_prompt() == "Message from @Lead:\nwrite the parser"


@pytest.mark.parametrize(("raw", "clean"), [("Builder-2", "Builder-2"), (" @ann_b ", "ann_b"), ("x" * 40, "x" * 40)])
def test_valid_names_are_normalised(raw: str, clean: str) -> None:
    assert validate_member_name(raw) == clean


@pytest.mark.parametrize("raw", ["", "@", "two words", "x" * 41, "dot.name", "émile"])
def test_invalid_names_say_the_rule(raw: str) -> None:
    with pytest.raises(RetriableError, match=r"letters, digits, '-' or '_'"):
        validate_member_name(raw)


def test_default_names_count_up_per_role_ignoring_case() -> None:
    assert default_member_name("builder", []) == "Builder-1"
    assert default_member_name("builder", ["builder-1", "Builder-3"]) == "Builder-2"
    assert default_member_name("qa_engineer", []) == "QaEngineer-1"
    long_name = default_member_name("r" * 40, [])
    assert len(long_name) == 40 and long_name.endswith("-1")
    assert validate_member_name(long_name) == long_name


def test_find_member_ignores_at_and_case_unless_ambiguous() -> None:
    ann = ActorAddress(name="Ann", team_id="t")
    bob = ActorAddress(name="bob", team_id="t")
    bob_upper = ActorAddress(name="BOB", team_id="t")
    assert find_member([ann, bob], "@Ann") is ann
    assert find_member([ann, bob], "ANN") is ann
    assert find_member([ann, bob, bob_upper], "BOB") is bob_upper
    assert find_member([ann, bob, bob_upper], "Bob") is None
    assert find_member([ann], "Zed") is None
