"""One public door per package: ``__all__`` is sorted, every name in it resolves, the docs
list exactly those names, and every other module is private."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "toolcards"
API_PAGE = SRC.parents[1] / "docs" / "api.md"
PUBLIC_MODULES = {"__init__.py", "__main__.py", "errors.py", "testing.py"}
# The examples are runnable documentation, quoted by the docs, not API.
EXAMPLES = SRC / "examples"
PACKAGES = [
    "toolcards",
    *sorted(
        f"toolcards.{p.name}"
        for p in SRC.iterdir()
        if (p / "__init__.py").exists() and not p.name.startswith("_") and p != EXAMPLES
    ),
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
    from toolcards.core._registry import BUILTIN_CARDS

    for path in BUILTIN_CARDS.values():
        module, _, class_name = path.partition(":")
        assert class_name in toolcards.__all__, f"{class_name} is a built-in card but not exported"
        assert getattr(toolcards, class_name) is getattr(importlib.import_module(module), class_name)


def test_every_module_behind_a_package_door_is_private() -> None:
    public = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if EXAMPLES not in path.parents
        and not any(part.startswith("_") and part != path.name for part in path.relative_to(SRC).parts[:-1])
        and not path.name.startswith("_")
        and (path.parent != SRC or path.name not in PUBLIC_MODULES)
    ]
    assert not public, f"modules outside the public surface must be private (_name.py): {public}"


def _documented() -> dict[str, set[str]]:
    sections = re.split(r"^## `([\w.]+)`$", API_PAGE.read_text(), flags=re.M)
    # A section is its module's summary, then one line naming its exports.
    return {
        name: set(re.findall(r"`(\w+)`", body.strip().splitlines()[-1]))
        for name, body in zip(sections[1::2], sections[2::2], strict=True)
    }


def test_the_public_api_page_lists_exactly_every_door() -> None:
    documented = _documented()
    doors = [*PACKAGES, "toolcards.errors", "toolcards.testing"]
    for name in doors:
        exported = set(importlib.import_module(name).__all__)
        if exported:
            assert documented.get(name) == exported, f"docs/api.md and {name}.__all__ differ"
    assert set(documented) <= set(doors), set(documented) - set(doors)
