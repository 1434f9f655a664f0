"""``dry_run`` on ``workspace_edit``, ``workspace_multi_edit`` and ``workspace_patch``: the diff, nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.workspace.test_journal import Member, plain
from toolcards import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool


@pytest.fixture
def a(alice: FakeObserver) -> Member:
    return Member(alice)


def state(a: Member) -> dict[str, bytes]:
    return {
        str(p.relative_to(a.root)): p.read_bytes()
        for p in sorted(a.root.rglob("*"))
        if p.is_file() and ".toolcards" not in p.parts
    }


def test_a_dry_run_edit_shows_the_diff_and_changes_nothing(a: Member) -> None:
    a("workspace_write", path="a.py", content="x = 1\ny = 2\n")
    before, changes = state(a), a.ids()
    answer = plain(a("workspace_edit", path="a.py", old_string="y = 2", new_string="y = 3", dry_run=True))
    assert answer.startswith("Dry run: nothing was changed. Would edit a.py (1 place).")
    assert "-y = 2\n+y = 3" in answer
    assert state(a) == before and a.ids() == changes
    # The real edit answers the same diff, and is journaled.
    real = plain(a("workspace_edit", path="a.py", old_string="y = 2", new_string="y = 3"))
    assert real.split("\n", 1)[1] == answer.split("\n", 1)[1]
    assert len(a.ids()) == len(changes) + 1


def test_a_dry_run_multi_edit_and_patch_change_nothing(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\ntwo\n")
    a("workspace_write", path="b.txt", content="three\n")
    before, changes = state(a), a.ids()
    edits = [
        {"path": "a.txt", "old_string": "one", "new_string": "ONE"},
        {"path": "b.txt", "old_string": "three", "new_string": "THREE"},
    ]
    answer = plain(a("workspace_multi_edit", edits=edits, dry_run=True))
    assert answer.startswith("Dry run: nothing was changed. Would apply 2 edits to 2 files.")
    assert "-one\n+ONE" in answer and "-three\n+THREE" in answer
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n"
        "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-three\n"
    )
    answer = plain(a("workspace_patch", patch_text=patch, dry_run=True))
    assert answer.startswith("Dry run: nothing was changed. Would patch:\nM a.txt\nA new.txt\nD b.txt\n")
    assert "-two\n+TWO" in answer and "+fresh" in answer and "-three" in answer
    assert "--- /dev/null\n+++ b/new.txt" in answer and "--- a/b.txt\n+++ /dev/null" in answer
    assert state(a) == before and a.ids() == changes


def test_a_dry_run_is_refused_as_the_change_would_be(a: Member, b_alice_bob: tuple[Member, Member]) -> None:
    _, b = b_alice_bob
    b("workspace_write", path="theirs.txt", content="theirs\n")
    # Not read: the change would be refused, so the dry run says so.
    message = a.refused("workspace_edit", path="theirs.txt", old_string="theirs", new_string="mine", dry_run=True)
    assert message.startswith("Call workspace_read on 'theirs.txt' first")
    a("workspace_read", path="theirs.txt")
    message = a.refused("workspace_edit", path="theirs.txt", old_string="absent", new_string="x", dry_run=True)
    assert "absent" in message or "not found" in message.lower()
    assert (a.root / "theirs.txt").read_text() == "theirs\n"


@pytest.fixture
def b_alice_bob(alice: FakeObserver, bob: FakeObserver) -> tuple[Member, Member]:
    return Member(alice), Member(bob)


def test_a_model_checks_an_edit_before_making_it(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    root: Path = factory.cards[0].root  # type: ignore[attr-defined]
    (root / "app.py").write_text("debug = True\n")
    seen: list[ToolReturnPart] = []
    calls = [
        ToolCallPart("workspace_read", {"path": "app.py"}),
        ToolCallPart(
            "workspace_edit", {"path": "app.py", "old_string": "True", "new_string": "False", "dry_run": True}
        ),
    ]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        if len(seen) < len(calls):
            return ModelResponse(parts=[calls[len(seen)]])
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("turn debug off, carefully")
    assert "-debug = True\n+debug = False" in plain(str(seen[1].content))
    assert (root / "app.py").read_text() == "debug = True\n"
