from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.cards import BasketCard, GreeterCard
from toolcards import (
    CommandNotRecognized,
    CommandRegistry,
    GuardError,
    RetriableError,
    Tool,
    ToolExecutionRecord,
    ToolFactory,
)
from toolcards.core._commands import MAX_COMMAND_CHARS, split_command
from toolcards.core._guards import GuardContext


@pytest.fixture
def registry():  # type: ignore[no-untyped-def]
    return ToolFactory([GreeterCard(), BasketCard(add_items=False)]).command_registry()


def test_positional_keyword_and_quoted_arguments(registry) -> None:  # type: ignore[no-untyped-def]
    assert registry.dispatch("/greet_someone Ann") == "Hello, Ann!"
    assert registry.dispatch('/greet_someone "Ann Lee" 2 dry') == "Hello, Ann Lee. Hello, Ann Lee."
    assert registry.dispatch("/greet_someone tone=dry name=Bo") == "Hello, Bo."


def test_a_quoted_word_is_a_value_even_when_it_reads_like_key_value(registry) -> None:  # type: ignore[no-untyped-def]
    # As in a shell, quoting makes the word literal: it once set tone (or name) instead.
    assert registry.parse("/greet_someone 'tone=dry'")[1] == {"name": "tone=dry"}
    assert registry.parse('/greet_someone Ann 2 "tone=dry"')[1] == {"name": "Ann", "times": "2", "tone": "tone=dry"}
    assert registry.parse("/greet_someone \\name=Bo tone=dry")[1] == {"name": "name=Bo", "tone": "dry"}
    assert registry.parse("/greet_someone name='Ann Lee' tone=dry")[1] == {"name": "Ann Lee", "tone": "dry"}


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


# -- parsing is linear and bounded --------------------------------------------------------------

QUOTING = st.text(alphabet=st.sampled_from(list("ab =\t\n'\"\\é\x0b\x1c\xa0\x00")), max_size=24)


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(QUOTING)
def test_split_command_agrees_with_shlex(text: str) -> None:
    try:
        expected: list[str] | None = shlex.split(text)
    except ValueError:
        expected = None
    try:
        got: list[str] | None = split_command(text)
    except RetriableError:
        got = None
    assert got == expected


def test_double_quoted_escapes_whatever_characters_the_text_holds() -> None:
    for text in ['"a\\\\b\\"c\\d"', '"a\\\\b\\"c\\d" \x00\x01\x02\x03']:
        assert split_command(text) == shlex.split(text)
    assert split_command('"a\\\\b\\"c\\d"') == ['a\\b"c\\d']


def test_unbalanced_quoting_says_what_to_fix(registry) -> None:  # type: ignore[no-untyped-def]
    assert registry.dispatch("/greet_someone 'Ann") == (
        'Error: Cannot parse "/greet_someone \'Ann": the quote "\'Ann" is never closed. Close it.'
    )
    assert registry.dispatch("/greet_someone Ann\\") == (
        "Error: Cannot parse '/greet_someone Ann\\\\': it ends with a lone backslash. Remove it or double it."
    )


def test_a_command_past_the_limit_is_refused_unread(registry) -> None:  # type: ignore[no-untyped-def]
    for text in ["/greet_someone " + "a" * MAX_COMMAND_CHARS, "/greet_someone " + "'a' \\b " * 400_000]:
        out = registry.dispatch(text)
        assert out.startswith("Error: The command ") and f"{len(text):,} characters" in out
        assert "over the limit of 262,144" in out and len(out) < 400


@pytest.mark.parametrize(
    "unit",
    ["a", "a ", "x=1 ", "'' ", "a'b' ", '"\\"" ', "\\a ", "\\a", '"a', "'a"],
    ids=["word", "words", "pairs", "empty-quotes", "quoted", "dq-escapes", "escapes", "joined", "dq-run", "sq-run"],
)
def test_pathological_commands_under_the_limit_get_an_answer(registry, unit: str) -> None:  # type: ignore[no-untyped-def]
    """Every shape the old tokenizer took seconds on; the answer is an ordinary one-line error."""
    text = "/greet_someone " + unit * ((MAX_COMMAND_CHARS - 20) // len(unit))
    out = registry.dispatch(text)
    assert out.startswith("Error: ") and "\n" not in out
    assert len(out) < 1000  # errors never echo the payload


def test_a_large_quoted_argument_parses_exactly() -> None:
    tools = ToolFactory([BasketCard()]).tools()
    registry = CommandRegistry(tools)
    items = json.dumps([{"name": f"item {i}", "qty": i} for i in range(3000)])
    name, args = registry.parse(f'/add_items items={shlex.quote(items)} note="a \\"big\\" one"')
    assert (name, args) == ("add_items", {"items": items, "note": 'a "big" one'})
    assert registry.dispatch(f"/add_items items={shlex.quote(items)}") == "3000 items"


def test_positional_words_bind_in_order_and_keywords_by_name() -> None:
    from tests.core.cards import GreetParam
    from toolcards import COMMAND

    registry = ToolFactory([GreeterCard(greet=GreetParam(expose={COMMAND}))]).command_registry()
    assert registry.parse("/greet_someone Ann 2") == ("greet_someone", {"name": "Ann", "times": "2"})
    assert registry.parse("/greet_someone times=2 Ann") == ("greet_someone", {"times": "2", "name": "Ann"})
    assert registry.parse("/greet_someone 'Ann Lee'") == ("greet_someone", {"name": "Ann Lee"})
    assert registry.dispatch("/greet_someone Ann 2") == "Hello, Ann! Hello, Ann!"


# -- plain words for plain parameters: converted here, the same answer as validation's ----------


def tally(label: str, count: int, note: str = "none") -> str:
    """Count something.

    Args:
        label: What is counted.
        count: How many.
        note: A remark.
    """
    if label == "crash":
        raise ValueError("boom")
    return repr((label, count, note))


def flagged(label: str, loud: bool = False) -> str:
    """A bool parameter: lax words ("yes", "on") are validation's to read."""
    return repr((label, loud))


def registries(**options: object) -> CommandRegistry:
    """A registry of ``tally`` and ``flagged``."""
    return CommandRegistry([Tool.from_function(tally, **options), Tool.from_function(flagged, **options)])


def test_plain_words_are_validated_as_a_tool_call_is() -> None:
    fast = registries()
    assert fast.dispatch("/tally count=4 3") == "('3', 4, 'none')"  # a keyword binds by name first
    assert fast.dispatch("/tally apples 007 ripe") == "('apples', 7, 'ripe')"
    assert fast.dispatch("/flagged a yes") == "('a', True)"
    assert fast.dispatch("/tally apples").startswith("Error: Invalid arguments for tally")
    assert "count" in fast.dispatch("/tally apples many")
    assert fast.dispatch("/tally apples -2") == "('apples', -2, 'none')"
    assert fast.dispatch("/tally apples 1.5").startswith("Error: Invalid arguments for tally")
    # Extra words join into the last text parameter, as the general road binds them.
    assert fast.dispatch("/tally apples 3 very ripe ones") == "('apples', 3, 'very ripe ones')"


NUMBER_WORDS = ["3", "007", "0", "-1", "+2", "1_000", "1.0", "NaN", "\u0663", "\u00b2", "9" * 18, "9" * 19]
OTHER_WORDS = ["apples", "x=1", "count=4", "\u00e9", "'a b'", '"q"', "a\\ b", ""]
WORDS = st.sampled_from([*NUMBER_WORDS, *OTHER_WORDS])
SEPARATORS = st.sampled_from([" ", "  ", "\t", " \x0b", "\xa0", "\x1c"])


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.sampled_from(["/tally", "/flagged"]), st.lists(st.tuples(SEPARATORS, WORDS), max_size=4))
def test_any_words_get_an_answer_or_a_clear_error(command: str, words: list[tuple[str, str]]) -> None:
    text = command + "".join(separator + word for separator, word in words)
    assert outcome(registries(), text).startswith(("(", "Error: ", "not recognized: "))


def outcome(registry: CommandRegistry, text: str) -> str:
    try:
        return registry.dispatch(text)
    except CommandNotRecognized as exc:
        return f"not recognized: {exc}"


def test_the_argument_limit_holds_for_commands() -> None:
    limit = 60
    fast = registries(max_argument_chars=limit)
    assert fast.dispatch(f"/tally {'a' * (limit - 40)} 3").startswith("('a")
    refused = fast.dispatch(f"/tally {'a' * limit} 3")
    assert refused.startswith("Error: The arguments of tally are") and f"limit of {limit}" in refused


def test_guards_approval_records_and_errors_on_commands() -> None:
    records: list[ToolExecutionRecord] = []
    seen: list[dict[str, Any]] = []

    def watch(ctx: GuardContext) -> dict[str, Any] | None:
        seen.append(dict(ctx.args))
        if ctx.args["label"] == "secret":
            raise GuardError("Counting secrets is not allowed.")
        if ctx.args["label"] == "rewrite":
            return {"label": "rewritten", "count": "many"}
        return None

    fast = registries(guards=(watch,), record_sink=records.append, agent="@Ann")
    assert fast.dispatch("/tally apples 3") == "('apples', 3, 'none')"
    assert seen == [{"label": "apples", "count": 3, "note": "none"}]
    assert fast.dispatch("/tally secret 3") == "Error: Counting secrets is not allowed."
    assert fast.dispatch("/tally rewrite 3").startswith("Error: Invalid arguments for tally")  # validated again
    assert fast.dispatch("/tally crash 3") == "Error: tally failed: ValueError: boom"
    assert [(r.tool, r.channel, r.agent, r.success) for r in records] == [
        ("tally", "command", "@Ann", True),
        ("tally", "command", "@Ann", False),
        ("tally", "command", "@Ann", False),
        ("tally", "command", "@Ann", False),
    ]
    assert records[-1].error == "ToolFailed: tally failed: ValueError: boom"

    guarded = registries(requires_approval=True)
    assert "needs a human's approval" in guarded.dispatch("/tally apples 3")
    assert guarded.dispatch("/tally apples 3", approved=True) == "('apples', 3, 'none')"


def test_a_bounded_text_parameter_is_left_to_validation(registry) -> None:  # type: ignore[no-untyped-def]
    # greet_someone's name is Annotated with a length bound, checked for a command too.
    assert registry.dispatch("/greet_someone " + "a" * 41).startswith("Error: Invalid arguments for greet_someone")
