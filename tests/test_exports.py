"""One public door per package: ``__all__`` is sorted, and every name in it resolves."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "toolcards",
    "toolcards.core",
    "toolcards.actors",
    "toolcards.store",
    "toolcards.vector",
    "toolcards.workspace",
    "toolcards.planning",
    "toolcards.knowledge_graph",
    "toolcards.sandbox",
    "toolcards.search",
    "toolcards.mcp",
    "toolcards.team",
    "toolcards.skills",
    "toolcards.metadata",
    "toolcards.model",
    "toolcards.server",
    "toolcards.pydantic_ai",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), not n[:1].isupper(), n)) or exported == sorted(
        exported
    )
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert not missing, missing


def test_star_import_of_the_root_loads_every_card() -> None:
    namespace: dict[str, object] = {}
    exec("from toolcards import *", namespace)
    for card in (
        "WorkspaceTool",
        "PlanningTool",
        "KnowledgeGraphTool",
        "ExecTool",
        "SearchTool",
        "MCPTool",
        "TeamTool",
    ):
        assert card in namespace


def test_every_built_in_card_is_a_public_name_of_the_root() -> None:
    import toolcards
    from toolcards.core.registry import BUILTIN_CARDS

    for path in BUILTIN_CARDS.values():
        module, _, class_name = path.partition(":")
        assert class_name in toolcards.__all__, f"{class_name} is a built-in card but not exported"
        assert getattr(toolcards, class_name) is getattr(importlib.import_module(module), class_name)
