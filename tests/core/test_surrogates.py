"""Strings that are not text (a lone UTF-16 surrogate, JSON's ``"\\ud800"``): found at any depth
and refused by the pipeline on every channel, naming where they are; escaped where text goes out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.core.cards import BasketCard, GreeterCard
from toolcards import TOOL_CALL, RetriableError, Tool, ToolFactory
from toolcards.core._surrogates import escape_surrogates, find_surrogate

CALLS: list[dict[str, Any]] = []


def note(text: str, tags: list[str] | None = None, extra: dict[str, Any] | None = None) -> str:
    """Keep a note.

    Args:
        text: The note.
        tags: Its tags.
        extra: Anything else.
    """
    CALLS.append({"text": text, "tags": tags, "extra": extra})
    return "kept"


@pytest.fixture
def tool() -> Tool:
    CALLS.clear()
    return Tool.from_function(note)


@pytest.mark.parametrize(
    ("value", "where", "position", "code"),
    [
        ("@x\ud800", (), 2, 0xD800),
        ({"member": "@x\ud800"}, ("member",), 2, 0xD800),
        ({"tasks": [{"title": "ok"}, {"title": "a\udc00"}]}, ("tasks", 1, "title"), 1, 0xDC00),
        ({"a": ("x", {"b": ["é", "c\udcff"]})}, ("a", 1, "b", 1), 1, 0xDCFF),
        (json.loads('{"text": "caf\\u00e9 \\udbff"}'), ("text",), 5, 0xDBFF),
    ],
)
def test_a_string_holding_a_lone_surrogate_is_found_with_its_place(
    value: Any, where: tuple[Any, ...], position: int, code: int
) -> None:
    found = find_surrogate(value)
    assert found is not None
    assert (found.path, found.in_key, found.position, found.code) == (where, False, position, code)


def test_keys_are_looked_into_too() -> None:
    top = find_surrogate({"\ud800": 1})
    nested = find_surrogate({"meta": {"ok": 1, "k\ud800": 2}})
    assert top is not None and top.in_key and top.where() == "a parameter name"
    assert nested is not None and nested.where() == "a key of `meta`"
    assert nested.where("params") == "a key of `params.meta`"


def test_text_is_not_a_surrogate_a_pair_from_json_included() -> None:
    assert find_surrogate({"a": "café 😀 日本", "b": [1, 2.5, None, True, {"c": "ü"}], "d": object()}) is None
    assert find_surrogate(json.loads('{"emoji": "\\ud83d\\ude00"}')) is None  # a pair is one character
    assert find_surrogate("plain") is None


def test_escaping_writes_each_surrogate_as_text_and_leaves_text_as_it_is() -> None:
    clean = {"a": ["x", {"b": "é"}]}
    assert escape_surrogates(clean) is clean
    escaped = escape_surrogates({"a": ["x\ud800", ("y",)], "\udcff": "é"})
    assert escaped == {"a": ["x\\ud800", ["y"]], "\\udcff": "é"}
    json.dumps(escaped, ensure_ascii=False).encode("utf-8")  # UTF-8 carries it now


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"text": "notes \ud800"}, "`text` holds an unpaired UTF-16 surrogate (\\ud800 at position 6)"),
        ('{"text": "notes \\ud800"}', "`text` holds an unpaired UTF-16 surrogate (\\ud800 at position 6)"),
        (b'{"text": "\xed\xa0\x80"}'.decode("utf-8", "surrogatepass"), "`text`"),  # CESU-8 bytes, as json reads them
        ({"text": "a", "tags": ["ok", "\udfff"]}, "`tags[1]` holds"),
        ({"text": "a", "tags": '["ok", "\\udfff"]'}, "`tags[1]` holds"),  # a list sent as JSON text
        ({"text": "a", "extra": {"\ud800": 1}}, "a key of `extra` holds"),
        ({"\ud800": "a"}, "a parameter name holds"),
    ],
)
def test_the_pipeline_refuses_them_naming_where_and_nothing_runs(tool: Tool, arguments: Any, where: str) -> None:
    with pytest.raises(RetriableError) as refused:
        tool.call_sync(arguments, channel=TOOL_CALL)
    message = str(refused.value)
    assert message.startswith("Invalid arguments for note: ") and where in message
    assert message.endswith("which is not text, so nothing was done. Send the text as UTF-8.")
    message.encode("utf-8")  # the refusal itself is text
    assert CALLS == []


def test_ordinary_text_still_runs(tool: Tool) -> None:
    assert tool.call_sync({"text": "café 😀", "tags": ["日本"]}) == "kept"
    assert tool.call_sync('{"text": "\\ud83d\\ude00"}') == "kept"
    assert [call["text"] for call in CALLS] == ["café 😀", "😀"]


def test_the_async_road_refuses_them_too(tool: Tool) -> None:
    with pytest.raises(RetriableError, match="`text` holds an unpaired"):
        asyncio.run(tool.call({"text": "\ud800"}))
    assert CALLS == []


def test_an_orchestrator_command_is_refused_in_the_same_words() -> None:
    registry = ToolFactory([GreeterCard()]).command_registry()
    answer = registry.dispatch("/greet_someone name=Ann\ud800")
    assert answer.startswith("Error: Invalid arguments for greet_someone: `name` holds an unpaired UTF-16 surrogate")
    assert registry.dispatch("/greet_someone name=Ann") == "Hello, Ann!"


@pytest.mark.parametrize(
    "args", ['{"items": [{"name": "a\\ud800"}]}', '{"items": [{"name": "ok"}], "note": "\\udc80"}']
)
def test_a_pydantic_ai_agent_gets_the_refusal_as_a_retry(args: str) -> None:
    """A model's arguments arrive as JSON text: pydantic-core's parser would refuse them as
    "Invalid JSON"; the toolset hands them on, and the pipeline's refusal is the retry."""
    answers: list[ToolReturnPart | RetryPromptPart] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answers[:] = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if answers:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("add_items", args)])

    card = BasketCard()
    result = Agent(FunctionModel(respond), toolsets=[ToolFactory([card]).toolset()]).run_sync("go")

    assert result.output == "done"
    (answer,) = answers
    # pydantic-ai 2 sends a retry as a tool return whose outcome says so; older ones as a retry prompt.
    assert isinstance(answer, RetryPromptPart) or answer.outcome == "retried"
    retry = str(answer.content)
    assert retry.startswith("Invalid arguments for add_items: `")
    assert "holds an unpaired UTF-16 surrogate" in retry and retry.endswith("Send the text as UTF-8.")
    assert card._items == []


def test_other_invalid_json_stays_pydantic_ai_s_to_answer() -> None:
    from pydantic_core import ValidationError

    from toolcards.pydantic_ai._arguments import PASS_THROUGH

    assert PASS_THROUGH.validate_json('{"a": "\\ud800"}') == {"a": "\ud800"}
    assert PASS_THROUGH.validate_json('{"a": "\\ud83d\\ude00"}') == {"a": "😀"}
    for text in ('{"a": ', "[1]", '{"a": NaN, "b": "\\ud800"'):
        with pytest.raises(ValidationError):
            PASS_THROUGH.validate_json(text)
