from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from typing import Any

import pytest
import yaml

from tests.core.cards import BasketCard, GreeterCard, GreetParam
from toolcards import WiringError, card_kinds, dump_cards, load_cards
from toolcards.core import _registry as registry


def test_round_trip_through_json_and_yaml() -> None:
    cards = [GreeterCard(greet=GreetParam(greeting="Hi", expose={"command"}), motd=False), BasketCard()]  # type: ignore[arg-type]
    data = dump_cards(cards)
    assert data[0]["kind"] == "test_greeter"
    assert load_cards(json.loads(json.dumps(data))) == cards
    assert load_cards(yaml.safe_load(yaml.safe_dump(data))) == cards


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(WiringError) as err:
        load_cards([{"greet": True}, {"kind": "nope"}, {"kind": "test_greeter", "greet": "loud"}])
    message = str(err.value)
    assert "card #0: needs a 'kind' key" in message
    assert "card #1: Unknown card kind 'nope'" in message
    assert "card #2 (test_greeter): greet" in message


def test_builtin_kinds_are_listed_without_importing_them() -> None:
    kinds = card_kinds()
    assert kinds["planning"] == "toolcards.planning._tool:PlanningTool"
    assert kinds["test_greeter"].endswith(":GreeterCard")


def test_entry_point_cards_load(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="third_party", value="tests.core.cards:BasketCard", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    # A copy of the registry: loading registers the kind, which must not outlive this test.
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    assert card_kinds()["third_party"] == "tests.core.cards:BasketCard"
    loaded: list[Any] = load_cards([{"kind": "third_party"}])
    assert isinstance(loaded[0], BasketCard)


@pytest.mark.parametrize(
    ("data", "given"),
    [
        (None, "None"),
        ({"kind": "test_greeter"}, "a mapping (keys: kind)"),
        ("test_greeter", "str 'test_greeter'"),
        (42, "int 42"),
    ],
)
def test_what_is_not_a_list_of_cards_is_refused_naming_what_was_given(data: Any, given: str) -> None:
    with pytest.raises(WiringError) as err:
        load_cards(data)

    message = str(err.value)
    assert "a list of card mappings" in message
    assert f"not {given}" in message


def test_a_single_card_mapping_is_told_to_be_put_in_a_list() -> None:
    with pytest.raises(WiringError, match=r"put it in a list: \[\{'kind': 'test_greeter'\}\]"):
        load_cards({"kind": "test_greeter"})  # type: ignore[arg-type]


def test_entries_that_are_not_mappings_are_named_with_their_value() -> None:
    with pytest.raises(WiringError) as err:
        load_cards([{"kind": "test_greeter"}, 3, "planning", {"kind": 7}])  # type: ignore[list-item]

    message = str(err.value)
    assert "card #1: must be a mapping with a 'kind' key, not int 3" in message
    assert "card #2: must be a mapping with a 'kind' key, not str 'planning'" in message
    assert "card #3: 'kind' must be the name of a card kind (text), not int 7" in message
    assert "card #0" not in message
