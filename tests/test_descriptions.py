"""Every word a model reads is paid for, and must be true.

A walk over every tool description, parameter description and system prompt of the
built-in cards: each tool name mentioned must be a tool the model can call in that same
configuration. Also: no ``title`` keys in schemas, and the default card set stays within
its token budget (akgentic-tool's comparable set is ~5,000 tokens of tool definitions).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from toolcards import Channels, ToolCard, ToolFactory
from toolcards.core._registry import BUILTIN_CARDS, card_class
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


SKILLS = str(Path(__file__).with_name("skills") / "data")
ROSTER = {"fast": "test", "deep": {"model": "test", "description": "Careful."}}


def configurations() -> list[list[dict[str, Any]]]:
    return [
        [{"kind": kind} for kind in MODEL_CARD_KINDS],
        [{"kind": "planning", "get_planning_task": False, "search_planning": False}],
        [{"kind": "knowledge_graph", "search_graph": False}],
        [{"kind": "workspace", "read_only": True}],
        [
            {"kind": "skills", "paths": [SKILLS], "installed": False},
            {"kind": "metadata", "fields": {"customer": "Acme"}},
        ],
        [{"kind": "skills", "paths": [SKILLS], "installed": False, "use_skill": False}],
        [{"kind": "model", "roster": ROSTER, "default": "fast"}],
        [{"kind": "model", "roster": ROSTER, "list_models": False}],
        [{"kind": "model", "roster": ROSTER, "read_only": True}],
        [{"kind": "exec", "max_background_runs": 2}],
        [{"kind": "exec", "max_background_runs": 2, "exec_stop": False, "exec_status": False}],
        [{"kind": "exec", "max_background_runs": 2, "read_only": True}],
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
    from bench.tokens import BEYOND_THE_PEER

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
            if t.name not in BEYOND_THE_PEER
        )


AKGENTIC_DEFINITIONS_TOKENS = 5_075
"""o200k tokens of akgentic-tool's tool definitions for the same capabilities (bench/tokens.py)."""


def test_default_card_set_stays_within_its_token_budget() -> None:
    # At most half of akgentic-tool's for the same capabilities, counted as the token benchmark
    # counts (o200k, offline); characters stand in when the encoder is not installed (~4.4 per
    # token here). Tools the peer has no counterpart for (bench.tokens.BEYOND_THE_PEER) are
    # reported by the benchmark, not held to the peer's figure.
    try:
        from bench.tokens import count_tokens

        tokens = count_tokens("x")
    except ImportError:
        tokens = 0
    budget = AKGENTIC_DEFINITIONS_TOKENS / 2
    if tokens:
        assert default_set_tokens() <= budget
    else:
        assert default_set_chars() / 4.4 <= budget


def default_set_tokens() -> int:
    from bench.tokens import BEYOND_THE_PEER, count_tokens

    with FakeObserver("Alice", "team-1") as alice:
        cards = [card_class(kind)(**({"mode": "local"} if kind == "exec" else {})) for kind in MODEL_CARD_KINDS]
        payload = [
            {"name": t.name, "description": t.description, "parameters": t.parameters_schema}
            for t in ToolFactory(cards, observer=alice).tools(Channels.TOOL_CALL)
            if t.name not in BEYOND_THE_PEER
        ]
    return count_tokens(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


# -- what tools answer, not only how they describe themselves ------------------------------

DISABLED = [
    {"kind": "planning", "get_planning_task": False, "search_planning": False},
    {"kind": "knowledge_graph", "search_graph": False},
    {
        "kind": "workspace",
        "workspace_list": False,
        "workspace_glob": False,
        "workspace_view": False,
        "workspace_read": False,
        "workspace_grep": False,
    },
    {"kind": "exec", "mode": "local", "allowed_commands": ["echo"]},
]

BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("update_planning", {"update_tasks": [{"id": 404, "status": "in_progress"}]}),
    ("update_planning", {"delete_tasks": [404]}),
    ("update_planning", {"create_tasks": [{"description": "x", "dependencies": [404]}]}),
    ("update_planning", {}),
    ("update_graph", {"update_entities": [{"name": "Nobody", "add_observations": ["x"]}]}),
    ("update_graph", {"create_relations": [{"from_entity": "A", "to_entity": "B", "relation_type": "uses"}]}),
    ("update_graph", {}),
    ("workspace_write", {"path": "../outside.txt", "content": "x"}),
    ("workspace_write", {"path": "notes.txt", "content": "overwrite without a read"}),
    ("workspace_edit", {"path": "missing.txt", "old_string": "a", "new_string": "b"}),
    ("workspace_edit", {"path": "notes.txt", "old_string": "a", "new_string": "b"}),
    ("workspace_delete", {"path": "missing.txt"}),
    ("workspace_delete", {"path": "notes.txt"}),
    ("workspace_patch", {"patch_text": "not a patch"}),
    ("workspace_multi_edit", {"edits": [{"path": "missing.txt", "old_string": "a", "new_string": "b"}]}),
    ("exec_command", {"cmd": "rm -rf /"}),
    ("exec_command", {"cmd": "echo hi", "cwd": "../.."}),
]


def bound_tools(config: list[dict[str, Any]], agent: FakeObserver) -> ToolFactory:
    from toolcards import load_cards

    return ToolFactory(load_cards(config), observer=agent)


def mentioned(text: str) -> set[str]:
    universe = all_capability_names()
    pattern = re.compile(r"\b(" + "|".join(sorted(universe, key=len, reverse=True)) + r")\b")
    return set(pattern.findall(text))


@pytest.mark.parametrize("config", [[entry] for entry in DISABLED] + [DISABLED])
def test_errors_name_only_tools_the_model_can_call(config: list[dict[str, Any]], isolated_root: Any) -> None:
    from toolcards import RetriableError, ToolFailed
    from toolcards.fs._locations import workspace_dir

    (workspace_dir("team-1") / "notes.txt").write_text("hello\n")
    with FakeObserver("Alice", "team-1") as alice:
        factory = bound_tools(config, alice)
        tools = {tool.name: tool for tool in factory.tools(Channels.TOOL_CALL)}
        problems = []
        for name, arguments in BAD_CALLS:
            if name not in tools:
                continue
            try:
                answer = str(tools[name].call_sync(arguments, channel=Channels.TOOL_CALL))
            except (RetriableError, ToolFailed) as exc:
                answer = str(exc)
            problems += [f"{name}({arguments}) names {other}" for other in mentioned(answer) - set(tools)]
    assert not problems, problems


def test_a_populated_board_names_only_tools_the_model_can_call() -> None:
    with FakeObserver("Alice", "team-1") as alice:
        board = bound_tools([{"kind": "planning"}], alice)
        update = next(tool for tool in board.tools() if tool.name == "update_planning")
        update.call_sync({"create_tasks": [{"description": f"Task {i}", "owner": "@Alice"} for i in range(80)]})
        bare = bound_tools([DISABLED[0]], alice)
        callable_names = {tool.name for tool in bare.tools(Channels.TOOL_CALL)}
        texts = [prompt() or "" for prompt in bare.get_system_prompts()]
        assert any("more open tasks not shown" in text for text in texts)
        assert not {name for text in texts for name in mentioned(text)} - callable_names


def test_in_facade_mode_the_served_context_says_how_to_reach_the_tools_it_names() -> None:
    import asyncio

    from mcp import Client

    from toolcards.server import TeamServer
    from toolcards.server._config import ServeConfig

    async def read(facade: bool) -> tuple[set[str], str]:
        server = TeamServer(ServeConfig(team_id="facade-names", cards=[{"kind": "planning"}], facade=facade))
        try:
            async with Client(server.server) as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
                await client.call_tool("update_planning", {"create_tasks": [{"description": "x"}]})
                resource = await client.read_resource("toolcards://facade-names/get_planning")
                text = resource.contents[0].text  # type: ignore[union-attr]
        finally:
            server.close()
        return listed, text

    listed, text = asyncio.run(read(True))
    assert "search_planning" in text and "search_planning" not in listed
    assert text.endswith("The tools named above are reached through call_tool(name, arguments).")
    _, plain = asyncio.run(read(False))
    assert "call_tool" not in plain
