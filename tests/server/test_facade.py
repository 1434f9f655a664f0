"""Facade search: tokenising, BM25 ranking, suggestions, and the catalog's errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolcards import RetriableError, Tool
from toolcards.server._facade import BM25Index, ToolCatalog, did_you_mean, meta_tools, summary, tokenize


def read_file(path: str, offset: int = 0) -> str:
    """Read a text file from the workspace.

    Args:
        path: The file's path.
        offset: The first line.
    """
    return path


def write_file(path: str, content: str) -> str:
    """Write a text file in the workspace, replacing it."""
    return path


def search_web(query: str) -> str:
    """Search the web and return the top pages."""
    return query


def create_task(title: str, assignee: str | None = None) -> str:
    """Create a task on the team's planning board."""
    return title


def update_task(task_id: int, status: str) -> str:
    """Change a task's status on the planning board."""
    return str(task_id)


def run_command(command: str, timeout_s: float = 30) -> str:
    """Run a shell command in the sandbox."""
    return command


FUNCTIONS: list[Callable[..., str]] = [read_file, write_file, search_web, create_task, update_task, run_command]
TOOLS = {f.__name__: Tool.from_function(f) for f in FUNCTIONS}


def test_tokenize_splits_names_and_stems() -> None:
    assert tokenize("read_file") == ["read", "file"]
    assert tokenize("getPlanningBoard") == ["get", "plann", "board"]
    assert tokenize("Tasks, reading files!") == ["task", "read", "file"]
    assert tokenize("--") == []


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("read a file", "read_file"),
        ("file at an offset", "read_file"),
        ("replace file content", "write_file"),
        ("look something up on the internet web", "search_web"),
        ("create a task for someone", "create_task"),
        ("mark task done status", "update_task"),
        ("shell command", "run_command"),
        ("timeout", "run_command"),
    ],
)
def test_search_ranks_the_right_tool_first(query: str, best: str) -> None:
    assert ToolCatalog(TOOLS).search(query)[0]["name"] == best


def test_search_results_carry_a_summary_and_a_decreasing_score() -> None:
    results = ToolCatalog(TOOLS).search("task", limit=5)
    assert {r["name"] for r in results} == {"create_task", "update_task"}
    assert results[0]["score"] >= results[1]["score"] > 0
    summaries = {r["name"]: r["summary"] for r in results}
    assert summaries["create_task"] == "Create a task on the team's planning board."
    assert len(ToolCatalog(TOOLS).search("file", limit=1)) == 1


def test_a_name_match_outranks_a_mention_in_a_description() -> None:
    index = BM25Index([("board", ["board"] * 3), ("create_task", ["create", "task", "board"])])
    assert [name for name, _ in index.search("board")] == ["board", "create_task"]


def test_search_without_words_or_matches_says_what_to_do() -> None:
    with pytest.raises(RetriableError, match="no words"):
        ToolCatalog(TOOLS).search("??")
    with pytest.raises(RetriableError, match="No tool matches 'zebra'"):
        ToolCatalog(TOOLS).search("zebra")


def test_describe_gives_the_full_schema() -> None:
    described = ToolCatalog(TOOLS).describe("read_file")
    assert described["input_schema"] == TOOLS["read_file"].parameters_schema
    assert described["description"].startswith("Read a text file")


def test_unknown_names_get_suggestions() -> None:
    assert did_you_mean("readfile", TOOLS)[0] == "read_file"
    assert did_you_mean("zzz", TOOLS) == []
    with pytest.raises(RetriableError, match=r"There is no tool called 'read_fil'\. Did you mean read_file"):
        ToolCatalog(TOOLS).resolve("read_fil")


def test_summary_is_the_first_sentence() -> None:
    assert summary("Read a file. Then more.\n\nDetails") == "Read a file."
    assert len(summary("x" * 500)) == 120


def test_meta_tools_validate_like_any_tool() -> None:
    metas = meta_tools(ToolCatalog(TOOLS))
    assert list(metas) == ["search_tools", "describe_tool", "call_tool"]
    assert metas["search_tools"].call_sync({"query": "file", "limit": "1"})[0]["name"] in {"read_file", "write_file"}
    with pytest.raises(RetriableError, match="limit"):
        metas["search_tools"].call_sync({"query": "file", "limit": 0})
    assert metas["call_tool"].parameters_schema["required"] == ["name"]
