"""Facade search finds the right tool for a task said in a sentence, as well as in keywords."""

from __future__ import annotations

import pytest

from toolcards import Channels, ToolFactory
from toolcards.knowledge_graph import KnowledgeGraphTool
from toolcards.planning import PlanningTool
from toolcards.sandbox import ExecTool
from toolcards.search import SearchTool
from toolcards.server._facade import ToolCatalog, query_terms, tokenize
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool

SENTENCES = {
    "read the contents of a file": "workspace_read",
    "look at a screenshot": "workspace_view",
    "what tasks are assigned to me": "search_planning",
    "remember that the API uses OAuth": "update_graph",
    "run the unit tests": "exec_command",
    "find where a function is defined": "workspace_grep",
    "undo a change to a file": "workspace_edit",
    "search the web for the latest release": "web_search",
}
KEYWORDS = {
    "read file": "workspace_read",
    "edit file": "workspace_edit",
    "run command": "exec_command",
    "search web": "web_search",
    "list tasks": "search_planning",
    "grep": "workspace_grep",
    "view image": "workspace_view",
    "record knowledge": "update_graph",
}


@pytest.fixture
def catalog(alice: FakeObserver) -> ToolCatalog:
    cards = [WorkspaceTool(), PlanningTool(), KnowledgeGraphTool(), ExecTool(mode="local"), SearchTool()]
    factory = ToolFactory(cards, observer=alice)
    return ToolCatalog({tool.name: tool for tool in factory.tools(Channels.TOOL_CALL)})


def first_hits(catalog: ToolCatalog, queries: dict[str, str]) -> dict[str, str]:
    return {query: catalog.search(query, 3)[0]["name"] for query in queries}


def test_sentences_rank_the_right_tool_first(catalog: ToolCatalog) -> None:
    found = first_hits(catalog, SENTENCES)
    right = [query for query, tool in SENTENCES.items() if found[query] == tool]
    assert len(right) >= 7, {q: (found[q], SENTENCES[q]) for q in SENTENCES if q not in right}


def test_keywords_rank_the_right_tool_first(catalog: ToolCatalog) -> None:
    found = first_hits(catalog, KEYWORDS)
    right = [query for query, tool in KEYWORDS.items() if found[query] == tool]
    assert len(right) >= 7, {q: (found[q], KEYWORDS[q]) for q in KEYWORDS if q not in right}


def test_a_query_drops_stop_words_and_reads_everyday_words_as_tool_words() -> None:
    assert tokenize("What are the tasks assigned to me?") == ["task", "assign"]
    assert tokenize("the API uses OAuth") == ["api", "use", "auth"]
    assert query_terms("look at a screenshot") == ["look", "screenshot", "view", "imag"]
