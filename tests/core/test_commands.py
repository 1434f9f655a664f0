from __future__ import annotations

import pytest

from tests.core.cards import BasketCard, GreeterCard
from toolcards import CommandNotRecognized, ToolFactory


@pytest.fixture
def registry():  # type: ignore[no-untyped-def]
    return ToolFactory([GreeterCard(), BasketCard(add_items=False)]).command_registry()


def test_positional_keyword_and_quoted_arguments(registry) -> None:  # type: ignore[no-untyped-def]
    assert registry.dispatch("/greet_someone Ann") == "Hello, Ann!"
    assert registry.dispatch('/greet_someone "Ann Lee" 2 dry') == "Hello, Ann Lee. Hello, Ann Lee."
    assert registry.dispatch("/greet_someone tone=dry name=Bo") == "Hello, Bo."


def test_extra_words_fill_the_last_text_parameter(registry) -> None:  # type: ignore[no-untyped-def]
    # More words than parameters: the rest belongs to the last text parameter.
    name, args = registry.parse("/greet_someone Mary Ann Evans and friends")
    assert (name, args) == ("greet_someone", {"name": "Mary Ann Evans and friends"})
    # As many words as parameters: one each.
    assert registry.parse("/greet_someone Mary 2 dry")[1] == {"name": "Mary", "times": "2", "tone": "dry"}


def test_unknown_commands_list_the_known_ones(registry) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandNotRecognized, match=r"Unknown command /nope\. Known commands: /greet_someone"):
        registry.dispatch("/nope")
    with pytest.raises(CommandNotRecognized, match="start with '/'"):
        registry.dispatch("hello")


def test_failures_are_one_line_errors(registry) -> None:  # type: ignore[no-untyped-def]
    out = registry.dispatch("/greet_someone times=x")
    assert out.startswith("Error: Invalid arguments for greet_someone") and "\n" not in out
    assert registry.dispatch('/greet_someone "unclosed').startswith("Error: Cannot parse")
    assert registry.dispatch("/greet_someone crash") == "Error: greet_someone failed: ValueError: boom"


def test_descriptors_for_help_screens(registry) -> None:  # type: ignore[no-untyped-def]
    greet = registry.describe("greet_someone")
    assert greet.description == "Greet someone by name."
    assert greet.usage == "/greet_someone <name> [times] [tone]"
    tone = next(arg for arg in greet.args if arg.name == "tone")
    assert (tone.type, tone.default, tone.choices) == ("string", "warm", ("warm", "dry"))
    assert [d.name for d in registry.descriptors()] == ["greet_someone", "message_of_the_day"]
    assert registry.dispatch("/message_of_the_day") == "Be kind."
