"""The pipeline's door: arguments are decoded, and refused past a size before validation."""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest
from pydantic import PrivateAttr

from toolcards import TOOL_CALL, BaseToolParam, Channels, RetriableError, Tool, ToolCard, ToolFactory, capability
from toolcards.core._arguments import DEFAULT_MAX_ARGUMENT_CHARS, arguments_size, decode_arguments


class NoteParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL}


class NotesCard(ToolCard):
    kind: ClassVar[str] = "test_door_notes"

    note: NoteParam | bool = True
    tag: NoteParam | bool = True
    _seen: list[Any] = PrivateAttr(default_factory=list)

    @capability("note", name="note")
    def add_note(self, text: str, tags: list[str] | None = None) -> str:
        """Keep a note.

        Args:
            text: The note.
            tags: Labels.
        """
        self._seen.append(text)
        return f"{len(text)} characters"

    @capability("tag", name="tag", max_argument_chars=100)
    def add_tag(self, tag: str) -> str:
        """Keep a tag.

        Args:
            tag: The tag.
        """
        self._seen.append(tag)
        return tag


def tools(card: NotesCard) -> dict[str, Tool]:
    return {tool.name: tool for tool in ToolFactory([card]).tools()}


def test_the_default_limit_is_8_million_characters() -> None:
    card = NotesCard()
    note = tools(card)["note"]
    assert note.max_argument_chars == DEFAULT_MAX_ARGUMENT_CHARS == 8_000_000
    assert note.call_sync({"text": "x" * 7_999_000}) == "7999000 characters"
    with pytest.raises(RetriableError) as refused:
        note.call_sync({"text": "x" * 8_000_000})
    assert str(refused.value) == (
        "The arguments of note are 8,000,010 characters, over its limit of 8,000,000, so the call did not run. "
        "Send less per call: split the work into several smaller calls."
    )
    assert len(card._seen) == 1


@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({"text": "x" * 200}),  # JSON text: refused before it is parsed
        {"text": "x" * 200},  # one long string: counted without encoding anything
        {"text": "x", "tags": ["y" * 50] * 4},  # nested: its JSON encoding counts
        {"text": "x", "tags": "z" * 200},  # refused before validation would have complained
    ],
)
def test_a_param_sets_the_limit_and_oversized_calls_never_reach_validation(arguments: Any) -> None:
    card = NotesCard(note=NoteParam(max_argument_chars=100))
    with pytest.raises(RetriableError, match=r"The arguments of note are [\d,]+ characters, over its limit of 100"):
        tools(card)["note"].call_sync(arguments)
    assert card._seen == []


def test_a_capability_sets_the_default_and_a_param_overrides_it() -> None:
    card = NotesCard()
    with pytest.raises(RetriableError, match="over its limit of 100"):
        tools(card)["tag"].call_sync({"tag": "t" * 100})
    assert tools(NotesCard(tag=NoteParam(max_argument_chars=1_000)))["tag"].call_sync({"tag": "t" * 100}) == "t" * 100


def test_every_channel_refuses_the_same_way() -> None:
    card = NotesCard(note=NoteParam(max_argument_chars=100, expose={TOOL_CALL}))
    factory = ToolFactory([card])
    note = next(f for f in factory.get_tools() if f.__name__ == "note")
    assert note(text="x" * 200).startswith("Error: The arguments of note are 210 characters")
    with pytest.raises(RetriableError, match="over its limit of 100"):
        asyncio.run(factory.tools()[0].call({"text": "x" * 200}))
    assert card._seen == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"text": ' + "1" * 5_000 + "}", "a number too long to read"),
        ('{"text": "unclosed', r"not valid JSON \(Unterminated string"),
        ("[1, 2]", "must be an object of parameter names to values, not list"),
    ],
    ids=["deep", "long-number", "broken", "not-an-object"],
)
def test_hostile_json_text_is_a_retriable_error(arguments: str, message: str) -> None:
    card = NotesCard()
    with pytest.raises(RetriableError, match=message):
        tools(card)["note"].call_sync(arguments)
    assert card._seen == []


def test_hostile_mappings_are_measured_without_crashing() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RetriableError, match="nested too deeply"):
        decode_arguments("note", {"tags": deep}, 1_000)
    # A huge int is sized from its bit length: str() on it would be refused (or slow).
    assert arguments_size("note", {"n": 10**100_000}, 10**9) > 100_000
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(RetriableError):
        decode_arguments("note", {"tags": circular}, 1_000)


def test_sizes_follow_the_json_text() -> None:
    arguments = {"text": "héllo", "tags": ["a", "b"], "n": 12345, "flag": True, "none": None}
    size = arguments_size("note", arguments, DEFAULT_MAX_ARGUMENT_CHARS)
    exact = len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))
    assert exact <= size <= exact + 50
