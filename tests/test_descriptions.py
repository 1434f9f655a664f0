"""Every word a model reads is paid for, and must be true.

A walk over every tool description, parameter description and system prompt of the
built-in cards: each tool name mentioned must be a tool the model can call in that same
configuration. Also: no ``title`` keys in schemas, and the default card set stays within
its token budget (akgentic-tool's comparable set is ~5,000 tokens of tool definitions).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from toolcards import Channels, ToolCard, ToolFactory
from toolcards.core.registry import BUILTIN_CARDS, card_class
from toolcards.testing import FakeObserver

MODEL_CARD_KINDS = ["workspace", "planning", "knowledge_graph", "exec", "search"]


def all_capability_names() -> set[str]:
    names: set[str] = set()
    for kind in BUILTIN_CARDS:
        cls = card_class(kind)
        names.update(cap.name for cap in cls._capabilities)
    return names


def texts_models_read(factory: ToolFactory) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for tool in factory.tools(Channels.TOOL_CALL):
        out.append((tool.name, tool.description))
        out.append((f"{tool.name} schema", json.dumps(tool.parameters_schema)))
    for prompt in factory.get_system_prompts():
        out.append((f"prompt {prompt.__name__}", prompt() or ""))
    return out


def configurations() -> list[list[dict[str, Any]]]:
    return [
        [{"kind": kind} for kind in MODEL_CARD_KINDS],
        [{"kind": "planning", "get_planning_task": False, "search_planning": False}],
        [{"kind": "knowledge_graph", "search_graph": False}],
        [{"kind": "workspace", "read_only": True}],
    ]


@pytest.mark.parametrize("config", configurations())
def test_mentioned_tools_exist(config: list[dict[str, Any]], tmp_path: Any) -> None:
    from toolcards import load_cards

    universe = all_capability_names()
    pattern = re.compile(r"\b(" + "|".join(sorted(universe, key=len, reverse=True)) + r")\b")
    with FakeObserver("Alice", "team-1") as alice:
        cards: list[ToolCard] = load_cards(
            [{**entry, **({"mode": "local"} if entry["kind"] == "exec" else {})} for entry in config]
        )
        factory = ToolFactory(cards, observer=alice)
        callable_names = {tool.name for tool in factory.tools(Channels.TOOL_CALL)}
        problems = [
            f"{where} mentions {name}, which is not a callable tool here"
            for where, text in texts_models_read(factory)
            for name in set(pattern.findall(text))
            if name not in callable_names
        ]
    assert not problems, problems


def test_schemas_have_no_titles_and_are_closed() -> None:
    with FakeObserver("Alice", "team-1") as alice:
        cards = [card_class(kind)(**({"mode": "local"} if kind == "exec" else {})) for kind in MODEL_CARD_KINDS]
        for tool in ToolFactory(cards, observer=alice).tools():
            text = json.dumps(tool.parameters_schema)
            assert '"title"' not in text, tool.name
            assert tool.parameters_schema["additionalProperties"] is False


def default_set_chars() -> int:
    with FakeObserver("Alice", "team-1") as alice:
        cards = [card_class(kind)(**({"mode": "local"} if kind == "exec" else {})) for kind in MODEL_CARD_KINDS]
        factory = ToolFactory(cards, observer=alice)
        return sum(
            len(
                json.dumps(
                    {"name": t.name, "description": t.description, "parameters": t.parameters_schema},
                    separators=(",", ":"),
                )
            )
            for t in factory.tools(Channels.TOOL_CALL)
        )


def test_default_card_set_stays_within_its_token_budget() -> None:
    # ~4 characters per token for English and JSON; half of akgentic-tool's ~5,000 tokens.
    assert default_set_chars() / 4 <= 2_500
