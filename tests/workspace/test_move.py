"""``workspace_move``: files and directories renamed in one step, journaled, gated and undoable."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.workspace.test_journal import Member, plain
from toolcards import ToolFactory
from toolcards.errors import StoreError
from toolcards.testing import FakeObserver
from toolcards.workspace._journal import Journal
from toolcards.workspace._tool import WorkspaceTool


@pytest.fixture
def a(alice: FakeObserver) -> Member:
    return Member(alice)


@pytest.fixture
def b(bob: FakeObserver) -> Member:
    return Member(bob)


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)) + ("/" if p.is_dir() else ""): "" if p.is_dir() else p.read_text()
        for p in sorted(root.rglob("*"))
        if ".toolcards" not in p.parts
    }


def test_a_file_is_renamed_into_new_directories_and_undo_puts_it_back(a: Member) -> None:
    a("workspace_write", path="notes/a.txt", content="alpha\n")
    inode = (a.root / "notes/a.txt").stat().st_ino
    assert a("workspace_move", source="notes/a.txt", destination="archive/2026/a.md") == (
        "Moved notes/a.txt to archive/2026/a.md."
    )
    assert files(a.root) == {"archive/": "", "archive/2026/": "", "archive/2026/a.md": "alpha\n", "notes/": ""}
    assert (a.root / "archive/2026/a.md").stat().st_ino == inode  # renamed, not copied
    assert "workspace_move: moved notes/a.txt to archive/2026/a.md" in a.history()[0]

    assert a("workspace_undo").startswith("Undid change 2 (workspace_move by @Alice)")
    assert files(a.root) == {"notes/": "", "notes/a.txt": "alpha\n"}


def test_a_directory_moves_whole_and_undo_brings_every_file_back(a: Member) -> None:
    a("workspace_write", path="src/pkg/one.py", content="one = 1\n")
    a("workspace_write", path="src/pkg/sub/two.py", content="two = 2\n")
    assert a("workspace_move", source="src/pkg", destination="lib/pkg") == "Moved directory src/pkg to lib/pkg."
    assert files(a.root) == {
        "lib/": "",
        "lib/pkg/": "",
        "lib/pkg/one.py": "one = 1\n",
        "lib/pkg/sub/": "",
        "lib/pkg/sub/two.py": "two = 2\n",
        "src/": "",
    }
    a("workspace_undo")
    assert files(a.root) == {
        "src/": "",
        "src/pkg/": "",
        "src/pkg/one.py": "one = 1\n",
        "src/pkg/sub/": "",
        "src/pkg/sub/two.py": "two = 2\n",
    }


def test_read_records_follow_the_file(a: Member, b: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    b("workspace_read", path="a.txt")
    a("workspace_move", source="a.txt", destination="b.txt")
    # Both know the content at its new path: no second read is needed to edit it.
    assert b("workspace_edit", path="b.txt", old_string="one", new_string="two").startswith("Edited b.txt")
    # Alice's record followed too, and Bob's edit made it stale.
    refusal = a.refused("workspace_edit", path="b.txt", old_string="two", new_string="three")
    assert "@Bob" in refusal and "b.txt" in refusal


def test_an_existing_destination_is_replaced_only_when_asked_and_read(a: Member, b: Member) -> None:
    a("workspace_write", path="new.txt", content="new\n")
    b("workspace_write", path="old.txt", content="old\n")
    assert a.refused("workspace_move", source="new.txt", destination="old.txt") == (
        "'old.txt' already exists. Pass overwrite=true to replace it (read it first), or choose another destination."
    )
    message = a.refused("workspace_move", source="new.txt", destination="old.txt", overwrite=True)
    assert message.startswith("Call workspace_read on 'old.txt' first")
    assert files(a.root) == {"new.txt": "new\n", "old.txt": "old\n"}

    a("workspace_read", path="old.txt")
    assert a("workspace_move", source="new.txt", destination="old.txt", overwrite=True) == (
        "Moved new.txt to old.txt (replacing it)."
    )
    assert files(a.root) == {"old.txt": "new\n"}
    a("workspace_undo")
    assert files(a.root) == {"new.txt": "new\n", "old.txt": "old\n"}


def test_moving_a_file_onto_a_hard_link_of_itself_removes_the_source_name(a: Member) -> None:
    # rename() does nothing when both names are links of one file: the move must still end
    # with the source name gone, as it says and as its journal entry records.
    a("workspace_write", path="h1.txt", content="same\n")
    os.link(a.root / "h1.txt", a.root / "h2.txt")
    a("workspace_read", path="h2.txt")
    assert a("workspace_move", source="h1.txt", destination="h2.txt", overwrite=True) == (
        "Moved h1.txt to h2.txt (replacing it)."
    )
    assert files(a.root) == {"h2.txt": "same\n"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"source": "missing.txt", "destination": "x.txt"}, "Nothing is at 'missing.txt'. Call workspace_glob"),
        ({"source": "a.txt", "destination": "a.txt"}, "'a.txt' and 'a.txt' are the same path"),
        ({"source": "d", "destination": "d/inner"}, "'d' cannot be moved into itself"),
        ({"source": "", "destination": "elsewhere"}, "The workspace root cannot be moved"),
        ({"source": "d/f.txt", "destination": ""}, "The destination is the workspace root, a directory. To move"),
        ({"source": "a.txt", "destination": "d"}, "'d' is a directory. To move 'a.txt' into it, give the full"),
        ({"source": "d", "destination": "a.txt", "overwrite": True}, "'a.txt' is a file; a directory cannot"),
        ({"source": "a.txt", "destination": "../outside.txt"}, "path escapes the workspace root"),
        ({"source": "../x", "destination": "b.txt"}, "path escapes the workspace root"),
        ({"source": "a.txt/b", "destination": "c.txt"}, "Nothing is at 'a.txt/b'"),
    ],
)
def test_bad_moves_are_refused_in_words_and_change_nothing(a: Member, args: dict[str, Any], expected: str) -> None:
    a("workspace_write", path="a.txt", content="a\n")
    a("workspace_write", path="d/f.txt", content="f\n")
    before = files(a.root)
    assert expected in a.refused("workspace_move", **args)
    assert files(a.root) == before


def test_a_named_pipe_is_not_moved(a: Member) -> None:
    os.mkfifo(a.root / "pipe")
    assert "named pipe" in a.refused("workspace_move", source="pipe", destination="p2")
    assert (a.root / "pipe").exists()


def test_a_symbolic_link_moves_as_a_link(a: Member) -> None:
    a("workspace_write", path="target.txt", content="t\n")
    os.symlink("target.txt", a.root / "link")
    a("workspace_move", source="link", destination="link2")
    assert os.readlink(a.root / "link2") == "target.txt" and not (a.root / "link").exists()


def test_the_journal_failing_moves_it_back(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    a("workspace_write", path="a.txt", content="a\n")

    def failing(self: Journal, *args: Any, **kwargs: Any) -> int:
        raise StoreError("The store is out of reach (test).")

    monkeypatch.setattr(Journal, "commit", failing)
    message = a.refused("workspace_move", source="a.txt", destination="b/a.txt")
    assert "could not record the move" in message and "nothing was changed" in message
    assert (a.root / "a.txt").read_text() == "a\n" and not (a.root / "b/a.txt").exists()


def test_without_the_journal_a_move_still_works(alice: FakeObserver) -> None:
    a = Member(alice, journal=False, workspace_history=False, workspace_diff=False, workspace_undo=False)
    a("workspace_write", path="a.txt", content="a\n")
    assert a("workspace_move", source="a.txt", destination="b.txt") == "Moved a.txt to b.txt."


def test_two_agents_moving_at_once_lose_nothing(a: Member, b: Member) -> None:
    # The same source, two destinations: one move wins, the other finds nothing to move.
    for round_ in range(10):
        a("workspace_write", path=f"s{round_}.txt", content=f"{round_}\n")
        results: dict[str, str] = {}
        start = threading.Barrier(2)

        def move(
            member: Member,
            name: str,
            destination: str,
            round_: int = round_,
            results: dict[str, str] = results,
            start: threading.Barrier = start,
        ) -> None:
            start.wait()
            try:
                results[name] = member("workspace_move", source=f"s{round_}.txt", destination=destination)
            except Exception as exc:
                results[name] = str(exc)

        threads = [
            threading.Thread(target=move, args=(a, "a", f"a{round_}.txt")),
            threading.Thread(target=move, args=(b, "b", f"b{round_}.txt")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        moved = [name for name, text in results.items() if text.startswith("Moved")]
        assert len(moved) == 1, results
        assert (a.root / f"{moved[0]}{round_}.txt").read_text() == f"{round_}\n"
        assert not (a.root / f"s{round_}.txt").exists()


def test_two_sources_to_one_destination_never_overwrite_each_other(a: Member, b: Member) -> None:
    a("workspace_write", path="x.txt", content="x\n")
    b("workspace_write", path="y.txt", content="y\n")
    results: list[str] = []
    start = threading.Barrier(2)

    def move(member: Member, source: str) -> None:
        start.wait()
        try:
            results.append(member("workspace_move", source=source, destination="same.txt"))
        except Exception as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=move, args=args) for args in ((a, "x.txt"), (b, "y.txt"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(text.startswith("Moved") for text in results) == 1
    assert sorted(files(a.root).values()) == ["x\n", "y\n"]


def test_a_model_moves_a_file_through_an_agent(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    root: Path = factory.cards[0].root  # type: ignore[attr-defined]
    (root / "draft.md").write_text("# Draft\n")
    seen: list[ToolReturnPart] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        seen.extend(returned)
        if not seen:
            assert "workspace_move" in {tool.name for tool in info.function_tools}
            return ModelResponse(
                parts=[ToolCallPart("workspace_move", {"source": "draft.md", "destination": "docs/final.md"})]
            )
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("publish the draft")
    assert plain(str(seen[0].content)) == "Moved draft.md to docs/final.md."
    assert (root / "docs/final.md").read_text() == "# Draft\n" and not (root / "draft.md").exists()
