from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from typing import Any

import pytest
import yaml

from tests.core.cards import BasketCard, GreeterCard, GreetParam
from toolcards import WiringError, card_kinds, dump_cards, load_cards
from toolcards.core import registry


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
    assert kinds["planning"] == "toolcards.planning.tool:PlanningTool"
    assert kinds["test_greeter"].endswith(":GreeterCard")


def test_entry_point_cards_load(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="third_party", value="tests.core.cards:BasketCard", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    # A copy of the registry: loading registers the kind, which must not outlive this test.
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    assert card_kinds()["third_party"] == "tests.core.cards:BasketCard"
    loaded: list[Any] = load_cards([{"kind": "third_party"}])
    assert isinstance(loaded[0], BasketCard)
