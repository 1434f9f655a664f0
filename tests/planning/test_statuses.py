"""One vocabulary of task statuses on every path: the four words, the synonyms read as them,
and the refusal of everything else.

The synonyms are listed here, not read from :data:`STATUS_SYNONYMS`, so dropping one from the
module fails a test. Every word goes through each way a status enters the board: a tool call
through the pipeline (``Tool.call_sync``), a slash command (``CommandRegistry.dispatch``), the
actor's own methods, and rows a store already holds.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from tests.planning.conftest import StartActor
from toolcards import Channels, RetriableError, ToolFactory
from toolcards.core._commands import CommandRegistry
from toolcards.core._schema import compact_json_schema
from toolcards.planning import TASK_STATUSES, PlanningTool, Task, TaskCreate, TaskUpdate
from toolcards.planning._actor import PLANNING_ACTOR_NAME
from toolcards.planning._models import STATUS_SYNONYMS, normalize_status
from toolcards.planning._render import render_plan, render_search
from toolcards.store import Change, MemoryStore, Store
from toolcards.testing import FakeObserver

CANONICAL = ["pending", "in_progress", "completed", "aborted"]
SYNONYMS: dict[str, list[str]] = {
    "in_progress": ["started", "doing", "active", "in progress", "in-progress", "wip", "working"],
    "completed": ["done", "complete", "finished", "closed", "resolved"],
    "aborted": ["abort", "aborted", "cancelled", "canceled", "dropped", "abandoned", "wontfix"],
    "pending": ["todo", "to do", "open", "new", "not started", "queued"],
}
# Each synonym, and each status as itself; then case and surrounding spaces, which are ignored.
WORDS: list[tuple[str, str]] = [(word, status) for status, words in SYNONYMS.items() for word in words]
WORDS += [(status, status) for status in CANONICAL]
WORDS += [(" DONE ", "completed"), ("In Progress", "in_progress"), ("WIP", "in_progress"), ("Not-Started", "pending")]
NOT_STATUSES = ["blocked", "review", "someday", "", "in_progres"]
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def tools(observer: FakeObserver) -> dict[str, Any]:
    return {tool.name: tool for tool in ToolFactory([PlanningTool()], observer=observer).tools()}


def other_than(status: str) -> str:
    """A status that is not ``status``: task 2 starts with it, so an update to ``status`` changes it."""
    return "aborted" if status != "aborted" else "pending"


def status_of(answer: str) -> str:
    """The status word of ``get_planning_task``'s answer (first line: ``ID 1 [status]``)."""
    return answer.splitlines()[0].split("[", 1)[1].rstrip("]")


def assert_names_the_four(message: str) -> None:
    assert "'pending', 'in_progress', 'completed' or 'aborted'" in message, message


# -- the vocabulary itself --------------------------------------------------------------------


def test_the_four_statuses_and_synonyms_are_the_published_ones() -> None:
    assert list(TASK_STATUSES) == CANONICAL
    expected = {word: status for status, words in SYNONYMS.items() for word in words}
    # The module folds "in-progress" to "in progress" and lists no status as its own synonym.
    assert dict(STATUS_SYNONYMS) == {
        word: status for word, status in expected.items() if word not in CANONICAL and "-" not in word
    }
    assert all(" ".join(word.split()) == word == word.casefold() for word in STATUS_SYNONYMS)


@pytest.mark.parametrize(("word", "status"), WORDS)
def test_normalize_status_reads_a_synonym_as_its_status(word: str, status: str) -> None:
    assert normalize_status(word) == status


@pytest.mark.parametrize("word", NOT_STATUSES)
def test_normalize_status_refuses_other_words_naming_the_four(word: str) -> None:
    with pytest.raises(ValueError, match=f"{word!r} is not a task status") as refused:
        normalize_status(word)
    assert_names_the_four(str(refused.value))


@pytest.mark.parametrize(
    ("word", "hint"),
    [
        ("blocked", "lists them in dependencies"),
        ("On Hold", "lists them in dependencies"),
        ("review", "in_progress until it is completed"),
        ("failed", "is aborted (say why in output)"),
    ],
)
def test_a_word_that_means_something_else_comes_with_what_to_do(word: str, hint: str) -> None:
    with pytest.raises(ValidationError) as refused:
        TaskUpdate.model_validate({"id": 1, "status": word})
    message = str(refused.value)
    assert_names_the_four(message)
    assert hint in message


def test_every_model_carrying_a_status_reads_synonyms() -> None:
    assert TaskCreate(description="x", status="Done").status == "completed"  # type: ignore[arg-type]
    assert TaskUpdate(id=1, status="wip").status == "in_progress"  # type: ignore[arg-type]
    task = Task(id=1, status="cancelled", description="x", creator="@A", created_at=NOW, updated_at=NOW)  # type: ignore[arg-type]
    assert task.status == "aborted"
    assert TaskCreate(description="x").status == "pending"
    with pytest.raises(ValidationError):
        TaskCreate.model_validate({"description": "x", "status": 3})  # not text: refused by the enum


@pytest.mark.parametrize("model", [TaskCreate, TaskUpdate])
def test_the_schema_enum_is_exactly_the_four(model: type[Any]) -> None:
    schema = compact_json_schema(model.model_json_schema())
    assert schema["properties"]["status"]["enum"] == CANONICAL


def test_every_tool_schema_shows_the_four_and_nothing_else(alice: FakeObserver) -> None:
    found = {}
    for tool in ToolFactory([PlanningTool()], observer=alice).tools(Channels.TOOL_CALL):
        text = json.dumps(tool.parameters_schema)
        found[tool.name] = text.count(json.dumps(CANONICAL))
        for word in ("started", "done", 'abort"', "cancelled"):
            assert word not in text, (tool.name, word)
    assert found == {
        "get_planning_task": 0,
        "update_planning": 2,
        "search_planning": 1,
        "claim_task": 0,
        "next_task": 0,
        "release_task": 0,
    }


# -- through the tool pipeline (what a model, MCP and pydantic-ai reach) -----------------------


@pytest.mark.parametrize(("word", "status"), WORDS)
def test_a_synonym_is_read_on_every_tool_call_path(word: str, status: str, alice: FakeObserver) -> None:
    board = tools(alice)
    board["update_planning"].call_sync(
        {
            "create_tasks": [
                {"description": "made", "status": word, "output": "ok"},
                {"description": "changed", "status": other_than(status), "output": "ok"},
            ]
        },
        channel=Channels.TOOL_CALL,
    )
    answer = board["update_planning"].call_sync(
        {"update_tasks": [{"id": 2, "status": word, "output": "ok"}]}, channel=Channels.TOOL_CALL
    )
    assert answer == "Updated task 2."
    for task_id in (1, 2):
        assert status_of(board["get_planning_task"].call_sync({"task_id": task_id})) == status
    found = board["search_planning"].call_sync({"status": word}, channel=Channels.TOOL_CALL)
    assert found.startswith("2 tasks match:") and f"#1 [{status}] made" in found and f"#2 [{status}]" in found


@pytest.mark.parametrize(("word", "hint"), [("blocked", "lists them in dependencies"), ("someday", "")])
def test_a_tool_call_with_another_word_is_refused_naming_the_four(word: str, hint: str, alice: FakeObserver) -> None:
    board = tools(alice)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("update_planning", {"create_tasks": [{"description": "x", "status": word}]}),
        ("update_planning", {"update_tasks": [{"id": 1, "status": word}]}),
        ("search_planning", {"status": word}),
    ]
    for name, arguments in calls:
        with pytest.raises(RetriableError) as refused:
            board[name].call_sync(arguments, channel=Channels.TOOL_CALL)
        message = str(refused.value)
        assert_names_the_four(message)
        assert f"(got {word!r})" in message and hint in message


def test_pydantic_ai_agents_send_synonyms_through_both_attachments(alice: FakeObserver) -> None:
    """``factory.toolset()`` validates with our schema; ``get_tools()`` with pydantic-ai's own
    validator built from the signature: both read the synonym."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(str(last.content))])
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "update_planning", {"create_tasks": [{"description": "x", "status": "Done", "output": "ok"}]}
                )
            ]
        )

    factory = ToolFactory([PlanningTool()], observer=alice)
    assert Agent(FunctionModel(model), toolsets=[factory.toolset()]).run_sync("go").output == "Created task 1."
    assert Agent(FunctionModel(model), tools=factory.get_tools()).run_sync("go").output == "Created task 2."
    found = tools(alice)["search_planning"].call_sync({"status": "completed"})
    assert found.startswith("2 tasks match:")


def test_an_mcp_client_sends_synonyms_and_reads_the_four() -> None:
    import asyncio

    from mcp import Client

    from toolcards.server import TeamServer
    from toolcards.server._config import ServeConfig

    async def session() -> tuple[list[str], str]:
        server = TeamServer(ServeConfig(team_id="status-words", cards=[{"kind": "planning"}]))
        try:
            async with Client(server.server) as client:
                listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
                await client.call_tool("update_planning", {"create_tasks": [{"description": "x", "status": "WIP"}]})
                found = await client.call_tool("search_planning", {"status": "in progress"})
                text = found.content[0].text  # type: ignore[union-attr]
        finally:
            server.close()
        return listed["search_planning"]["properties"]["status"]["enum"], text

    enum, found = asyncio.run(session())
    assert enum == CANONICAL
    assert "#1 [in_progress] x" in found


# -- through slash commands -------------------------------------------------------------------


@pytest.mark.parametrize(("word", "status"), WORDS)
def test_a_synonym_is_read_on_the_command_channel(word: str, status: str, alice: FakeObserver) -> None:
    # Every tool as a command, as `toolcards call` serves them (update_planning included).
    registry = CommandRegistry(ToolFactory([PlanningTool()], observer=alice).tools())
    created = json.dumps([{"description": "made", "status": word, "output": "ok"}])
    assert registry.dispatch(f"/update_planning create_tasks={shlex.quote(created)}") == "Created task 1."
    changing = json.dumps([{"description": "changed", "status": other_than(status)}])
    assert registry.dispatch(f"/update_planning create_tasks={shlex.quote(changing)}") == "Created task 2."
    changed = json.dumps([{"id": 2, "status": word, "output": "ok"}])
    assert registry.dispatch(f"/update_planning update_tasks={shlex.quote(changed)}") == "Updated task 2."
    assert status_of(registry.dispatch("/get_planning_task 1")) == status
    found = registry.dispatch(f"/search_planning status={shlex.quote(word)}")
    assert found.startswith("2 tasks match:") and f"#2 [{status}] changed" in found


def test_a_command_with_another_word_is_refused_naming_the_four(alice: FakeObserver) -> None:
    registry = CommandRegistry(ToolFactory([PlanningTool()], observer=alice).tools())
    answer = registry.dispatch("/search_planning status=blocked")
    assert answer.startswith("Error: Invalid arguments for search_planning: status:")
    assert_names_the_four(answer)
    assert "lists them in dependencies" in answer


# -- through the actor ------------------------------------------------------------------------


@pytest.mark.parametrize(("word", "status"), WORDS)
def test_a_synonym_is_read_by_the_actor(word: str, status: str, start: StartActor) -> None:
    proxy = start()
    made = TaskCreate.model_validate({"description": "made", "status": word})
    changing = TaskCreate.model_validate({"description": "changed", "status": other_than(status)})
    proxy.update("@A", create=[made, changing]).get(timeout=5)
    report = proxy.update("@A", update=[TaskUpdate.model_validate({"id": 2, "status": word})]).get(timeout=5)
    assert report.updated == [2]
    assert [task.status for task in proxy.tasks().get(timeout=5)] == [status, status]
    for search in (proxy.search, proxy.search_page):
        hits = search(status=word).get(timeout=5)
        assert [hit.task.id for hit in getattr(hits, "hits", hits)] == [1, 2]
    assert render_search(proxy.search_page(status=word).get(timeout=5)).startswith("2 tasks match:")


def test_the_actor_refuses_a_search_by_another_word_as_the_model_s_to_fix(start: StartActor) -> None:
    proxy = start()
    with pytest.raises(RetriableError, match="'blocked' is not a task status") as refused:
        proxy.search(status="blocked").get(timeout=5)
    assert_names_the_four(str(refused.value))
    assert "lists them in dependencies" in str(refused.value)


# -- boards stored with the earlier words -----------------------------------------------------


def store_old_board(store: Store, namespace: str) -> None:
    """Rows as a board written before the vocabulary changed holds them: ``started``, ``abort``."""
    rows = [
        {"id": 1, "status": "started", "description": "Implement auth", "creator": "@Lead", "owner": "@Bob"},
        {"id": 2, "status": "abort", "description": "Support Excel", "creator": "@Lead"},
        {"id": 3, "status": "completed", "description": "Design the API", "creator": "@Lead"},
        {"id": 4, "status": "pending", "description": "Write docs", "creator": "@Lead"},
    ]
    stamp = NOW.isoformat()
    with store.write(namespace, since=None) as txn:
        txn.stage(
            Change(collection="tasks", key=str(row["id"]), value={**row, "created_at": stamp, "updated_at": stamp})
            for row in rows
        )
        txn.stage([Change(collection="meta", key="board", value={"seq": 4, "next_id": 5})])


def test_a_board_stored_with_the_earlier_words_loads_as_the_four(store: MemoryStore, start: StartActor) -> None:
    store_old_board(store, f"team-1/{PLANNING_ACTOR_NAME}")
    proxy = start()
    tasks = proxy.tasks().get(timeout=5)
    assert [(task.id, task.status) for task in tasks] == [
        (1, "in_progress"),
        (2, "aborted"),
        (3, "completed"),
        (4, "pending"),
    ]
    # A search by the old word, the new word or a synonym finds the same tasks.
    for word in ("started", "in_progress", "doing"):
        assert [hit.task.id for hit in proxy.search(status=word).get(timeout=5)] == [1]
    for word in ("abort", "aborted", "cancelled"):
        assert [hit.task.id for hit in proxy.search(status=word).get(timeout=5)] == [2]
    plan = render_plan(tasks, "@Bob", filter_by_agent=False)
    assert "(1 pending, 1 in_progress, 1 completed, 1 aborted)" in plan
    assert "- #1 [in_progress] Implement auth" in plan and "Aborted: 2." in plan
    # The next change of a task writes it with the new word.
    proxy.update("@Bob", update=[TaskUpdate(id=1, output="half done")]).get(timeout=5)
    assert store.load(f"team-1/{PLANNING_ACTOR_NAME}").rows["tasks"]["1"]["status"] == "in_progress"


def test_a_stored_board_reaches_the_tools_and_the_view_in_the_four_words(alice: FakeObserver) -> None:
    from toolcards.store._default import default_store

    store_old_board(default_store(), f"team-1/{PLANNING_ACTOR_NAME}")
    board = tools(alice)
    assert status_of(board["get_planning_task"].call_sync({"task_id": 2})) == "aborted"
    assert "#1 [in_progress] Implement auth" in board["search_planning"].call_sync({"status": "started"})
    view = ToolFactory([PlanningTool()], observer=alice).views()["planning.board"].render()
    assert [task["status"] for task in view["tasks"]] == ["in_progress", "aborted", "completed", "pending"]
