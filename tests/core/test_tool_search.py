"""Tool search in process (``CatalogToolset``): a few tools listed, the rest found and loaded for the conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import CombinedToolset

from tests.skills.conftest import DATA
from toolcards import ToolFactory, WiringError
from toolcards.planning import PlanningTool
from toolcards.pydantic_ai import CatalogToolset
from toolcards.pydantic_ai._catalog import LOADED_KEY, loaded_tool_names
from toolcards.skills import SkillsTool
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool


class Script:
    """Each request takes the next call of the script (then answers); what each request listed is kept."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = list(calls)
        self.listed: list[list[str]] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        self.listed.append([tool.name for tool in info.function_tools])
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(self.calls):
            return ModelResponse(parts=[ToolCallPart(*self.calls[step])])
        return ModelResponse(parts=[TextPart("done")])


def returns(messages: list[Any]) -> list[ToolReturnPart]:
    return [part for m in messages for part in getattr(m, "parts", ()) if isinstance(part, ToolReturnPart)]


@pytest.fixture
def factory(alice: FakeObserver) -> ToolFactory:
    return ToolFactory([WorkspaceTool(), PlanningTool()], observer=alice)


def test_the_model_starts_with_the_search_tools_only(factory: ToolFactory) -> None:
    script = Script()
    Agent(FunctionModel(script), toolsets=[factory.toolset(tool_search=True)]).run_sync("hi")
    assert script.listed == [["search_tools", "describe_tool"]]


def test_found_tools_are_loaded_for_the_next_requests_after_the_fixed_ones(factory: ToolFactory) -> None:
    script = Script(
        ("search_tools", {"query": "write a file"}),
        ("workspace_write", {"path": "a.md", "content": "hello\n"}),
        ("search_tools", {"query": "create a task in the team plan"}),
        ("update_planning", {"create_tasks": [{"description": "Review a.md"}]}),
    )
    result = Agent(FunctionModel(script), toolsets=[factory.toolset(tool_search=True)]).run_sync("go")
    first, second, third, fourth, last = script.listed
    assert first == ["search_tools", "describe_tool"]
    assert second[:2] == first and "workspace_write" in second
    assert third == second  # a tool call loads nothing
    assert fourth[: len(third)] == third and "update_planning" in fourth  # appended: the start never changes
    assert last == fourth
    found, written, _, planned = returns(result.all_messages())
    assert found.content.startswith("Loaded: workspace_write")
    assert "workspace_write" in found.metadata[LOADED_KEY]
    assert written.outcome == "success" and planned.outcome == "success"


def test_describe_tool_loads_the_tool_it_describes(factory: ToolFactory) -> None:
    script = Script(("describe_tool", {"name": "workspace_glob"}), ("describe_tool", {"name": "workspace_glb"}))
    result = Agent(FunctionModel(script), toolsets=[factory.toolset(tool_search=True)]).run_sync("go")
    described, unknown = returns(result.all_messages())
    assert described.content.startswith("workspace_glob is loaded: ")
    assert "workspace_glob" in script.listed[1]
    assert unknown.outcome == "retried" and "Did you mean workspace_glob" in str(unknown.content)
    assert script.listed[2] == script.listed[1]  # a refused describe loads nothing


def test_a_query_without_words_is_retried_and_loads_nothing(factory: ToolFactory) -> None:
    script = Script(("search_tools", {"query": "??"}), ("search_tools", {"query": "zebra unicorn"}))
    result = Agent(FunctionModel(script), toolsets=[factory.toolset(tool_search=True)]).run_sync("go")
    no_words, nothing = returns(result.all_messages())
    assert no_words.outcome == "retried" and "has no words to search for" in str(no_words.content)
    assert nothing.outcome == "retried" and "No tool matches" in str(nothing.content)
    assert all(listed == ["search_tools", "describe_tool"] for listed in script.listed)


def test_loaded_tools_last_as_long_as_the_conversation(factory: ToolFactory) -> None:
    toolset = factory.toolset(tool_search=True)
    first = Script(("search_tools", {"query": "write a file"}))
    history = Agent(FunctionModel(first), toolsets=[toolset]).run_sync("go").all_messages()
    assert "workspace_write" in loaded_tool_names(history)
    again = Script()
    Agent(FunctionModel(again), toolsets=[toolset]).run_sync("more", message_history=history)
    assert "workspace_write" in again.listed[0]
    fresh = Script()
    Agent(FunctionModel(fresh), toolsets=[toolset]).run_sync("new conversation")
    assert fresh.listed[0] == ["search_tools", "describe_tool"]


def test_hot_tools_are_always_listed(factory: ToolFactory) -> None:
    script = Script()
    toolset = factory.toolset(tool_search=True, hot_tools=["workspace_read", "get_planning_task"])
    Agent(FunctionModel(script), toolsets=[toolset]).run_sync("hi")
    assert script.listed == [["search_tools", "describe_tool", "workspace_read", "get_planning_task"]]


def test_the_tools_a_context_names_stay_listed_and_skills_are_found(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool(), SkillsTool(paths=[str(DATA)], installed=False)], observer=alice)
    script = Script(("search_tools", {"query": "tidy a csv export from a spreadsheet"}))
    result = Agent(FunctionModel(script), toolsets=[factory.toolset(tool_search=True)]).run_sync("go")
    assert script.listed[0] == ["search_tools", "describe_tool", "use_skill", "read_skill_file"]
    (found,) = returns(result.all_messages())
    assert "use_skill(name='csv-cleanup'): Skill csv-cleanup: Clean a CSV export" in found.content


def test_instructions_pass_through(factory: ToolFactory) -> None:
    seen: list[str | None] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(model), toolsets=[factory.toolset(tool_search=True)]).run_sync("hi")
    assert seen[0] is not None and "Team plan" in seen[0]


def test_other_toolsets_are_searched_too(factory: ToolFactory) -> None:
    extra = FunctionToolset()

    @extra.tool_plain
    def convert_currency(amount: float, currency: str) -> str:
        """Convert an amount of money to another currency."""
        return f"{amount} {currency}"

    toolset = CatalogToolset(CombinedToolset([factory.toolset(), extra]))
    script = Script(
        ("search_tools", {"query": "convert money to euros"}), ("convert_currency", {"amount": 3, "currency": "EUR"})
    )
    result = Agent(FunctionModel(script), toolsets=[toolset]).run_sync("go")
    assert returns(result.all_messages())[-1].content == "3.0 EUR"


def test_bad_options_fail_at_once(factory: ToolFactory) -> None:
    with pytest.raises(WiringError, match="pass tool_search=True too"):
        factory.toolset(hot_tools=["workspace_read"])
    with pytest.raises(WiringError, match="do not offer: workspace_reed"):
        factory.toolset(tool_search=True, hot_tools=["workspace_reed"])


def test_a_tool_named_like_a_search_tool_is_refused(factory: ToolFactory) -> None:
    clashing = FunctionToolset()

    @clashing.tool_plain
    def search_tools(query: str) -> str:
        """My own search."""
        return query

    toolset = CatalogToolset(CombinedToolset([factory.toolset(), clashing]))
    with pytest.raises(UserError, match="search_tools, which tool search uses"):
        Agent(FunctionModel(Script()), toolsets=[toolset]).run_sync("hi")


def test_an_unknown_hot_tool_of_another_toolset_is_refused_at_the_first_request(factory: ToolFactory) -> None:
    toolset = CatalogToolset(
        CombinedToolset([factory.toolset(), FunctionToolset()]), hot_tools=frozenset({"workspace_reed"})
    )
    with pytest.raises(UserError, match=r"workspace_reed \(did you mean workspace_read"):
        Agent(FunctionModel(Script()), toolsets=[toolset]).run_sync("hi")


def test_the_front_door_offers_the_option(tmp_path: Path) -> None:
    import toolcards

    with toolcards.Team("search-team") as team:
        toolset = team.member("Alice").toolset(WorkspaceTool(), tool_search=True)
        script = Script()
        Agent(FunctionModel(script), toolsets=[toolset]).run_sync("hi")
    assert script.listed == [["search_tools", "describe_tool"]]
