"""The workspace journal through the card: history, diff and undo, as models and orchestrators use them.

Every call goes through the factory and the pipeline (``Tool.call_sync``), with the journal's
tools exposed as tool calls too, and every answer is read as the model would read it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from toolcards import COMMAND, TOOL_CALL, RetriableError, Tool, ToolFactory, ToolFailed
from toolcards.actors._system import ActorSystem
from toolcards.errors import StoreError
from toolcards.planning import PlanningTool
from toolcards.store import default_store
from toolcards.testing import FakeObserver
from toolcards.workspace._actor import stop_workspace_actors
from toolcards.workspace._journal import Journal, journal_namespaces
from toolcards.workspace._paths import ESCAPE_MESSAGE
from toolcards.workspace._tool import WorkspaceTool
from toolcards.workspace._tree import Tree

BOTH = {"expose": [TOOL_CALL, COMMAND]}
JOURNAL_TOOLS: dict[str, Any] = {
    "workspace_history": BOTH,
    "workspace_diff": BOTH,
    "workspace_undo": BOTH,
    "workspace_mkdir": True,
    "workspace_rmdir": True,
}
ENVELOPE = re.compile(r"^\[(BEGIN|END) UNTRUSTED [0-9a-f]{8}[^\n]*\]$", re.MULTILINE)


def plain(text: str) -> str:
    return ENVELOPE.sub("", text).strip("\n")


class Member:
    """One member's workspace tools (the journal's as tool calls too), through the pipeline."""

    def __init__(self, observer: FakeObserver, *cards: Any, **card: Any) -> None:
        self.factory = ToolFactory([WorkspaceTool(**{**JOURNAL_TOOLS, **card}), *cards], observer=observer)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in self.factory.tools()}
        self.root: Path = self.factory.cards[0].root  # type: ignore[attr-defined]

    def __call__(self, name: str, *, key: str | None = None, **args: Any) -> str:
        return str(self.tools[name].call_sync(args, channel=TOOL_CALL, idempotency_key=key))

    def refused(self, name: str, **args: Any) -> str:
        with pytest.raises((RetriableError, ToolFailed)) as caught:
            self(name, **args)
        return str(caught.value)

    def history(self, **filters: Any) -> list[str]:
        text = plain(self("workspace_history", **filters))
        return [] if text.startswith(("No change", "The journal holds")) else text.split("\n")

    def ids(self, **filters: Any) -> list[int]:
        return [int(line.split()[0][1:]) for line in self.history(**filters)]

    def read_and_edit(self, path: str, old: str, new: str) -> str:
        self("workspace_read", path=path)
        return self("workspace_edit", path=path, old_string=old, new_string=new)


@pytest.fixture(autouse=True)
def history_scans_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``workspace_history`` scans at most once a second; here, at every call."""
    monkeypatch.setattr("toolcards.workspace._tool.HISTORY_SCAN_INTERVAL_S", 0.0)


@pytest.fixture
def a(alice: FakeObserver) -> Member:
    """Alice, with every workspace tool."""
    return Member(alice)


@pytest.fixture
def b(bob: FakeObserver) -> Member:
    """Bob, on the same tree."""
    return Member(bob)


def numbered(lines: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, lines + 1))


# -- recording ------------------------------------------------------------------------------------


def test_every_tool_change_is_journaled_with_its_member_tool_and_paths(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    a.read_and_edit("a.txt", "one", "two")
    a("workspace_multi_edit", edits=[{"path": "a.txt", "old_string": "two", "new_string": "three"}])
    a("workspace_patch", patch_text="--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+bee\n")
    a("workspace_delete", path="b.txt")
    a("workspace_mkdir", path="d/e")
    a("workspace_rmdir", path="d", recursive=True)

    lines = a.history()
    assert [re.match(r"#(\d+) \S+ \S+ @Alice (\w+):", line).groups() for line in lines] == [  # type: ignore[union-attr]
        ("7", "workspace_rmdir"),
        ("6", "workspace_mkdir"),
        ("5", "workspace_delete"),
        ("4", "workspace_patch"),
        ("3", "workspace_multi_edit"),
        ("2", "workspace_edit"),
        ("1", "workspace_write"),
    ]
    assert lines[-1].endswith("created a.txt")
    assert lines[1].endswith("created d/, created d/e/")
    assert lines[0].endswith("deleted d/, deleted d/e/")
    entry = a.factory.cards[0]._journal().entry(1).public()  # type: ignore[attr-defined]
    assert (entry.member, entry.team, entry.tool, entry.task_id) == ("@Alice", "team-1", "workspace_write", None)
    created = entry.files[0]
    assert (created.path, created.before, created.before_kept) == ("a.txt", None, True)
    assert created.after == "2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806"  # sha256 of "one\n"


def test_history_filters_by_path_agent_task_and_limit(alice: FakeObserver, bob: FakeObserver) -> None:
    planner = Member(alice, PlanningTool())
    other = Member(bob, PlanningTool())
    planner("update_planning", create_tasks=[{"description": "write the docs"}])
    planner("claim_task", task_id=1)
    planner("workspace_write", path="docs/a.md", content="a\n")
    other("workspace_write", path="src/b.py", content="b\n")
    planner("release_task", task_id=1)
    planner("workspace_write", path="docs/c.md", content="c\n")

    assert planner.ids() == [3, 2, 1]
    assert planner.ids(agent="@Bob") == [2]
    assert planner.ids(agent="Alice") == [3, 1]
    assert planner.ids(task_id=1) == [1]
    assert planner.history(task_id=1)[0].endswith(" task 1: created docs/, created docs/a.md")
    assert planner.ids(path="docs") == [3, 1]
    assert planner.ids(path="docs/c.md") == [3]
    assert planner.ids(path="docs", agent="@Alice", limit=1) == [3]
    assert planner.ids(agent="@Nobody") == []
    assert planner.history(agent="@Nobody") == []
    assert ESCAPE_MESSAGE in planner.refused("workspace_history", path="../elsewhere")


def test_a_change_made_outside_the_tools_is_recorded_at_the_next_scan(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    assert a.ids() == [1]  # the first scan adopts the tree as it is
    (a.root / "a.txt").write_text("changed by an editor\n")
    (a.root / "new.txt").write_text("made by a program\n")

    lines = a.history()
    assert lines[0].split()[3:] == ["outside:", "changed", "a.txt,", "created", "new.txt"]
    assert "changed by an editor" in plain(a("workspace_diff", change_id=2))


def test_a_member_called_outside_is_named_with_the_at_sign_and_the_bare_word_means_no_tool(
    system: ActorSystem,
) -> None:
    outsider = Member(FakeObserver("outside", "team-1", system=system))
    outsider("workspace_write", path="mine.txt", content="x\n")
    assert outsider.ids() == [1]  # the first scan adopts the tree as it is
    (outsider.root / "made.txt").write_text("by a program\n")

    assert outsider.history(agent="@outside")[0].endswith("@outside workspace_write: created mine.txt")
    assert outsider.ids(agent="@outside") == outsider.ids(agent=" @outside ") == [1]
    assert outsider.ids(agent="outside") == outsider.ids(agent="OUTSIDE") == [2]
    assert plain(outsider("workspace_undo", agent="@outside", dry_run=True)).startswith(
        "Undoing change 1 (workspace_write by @outside) would change 1 path"
    )
    assert plain(outsider("workspace_undo", agent="outside", dry_run=True)).startswith(
        "Undoing change 2 (made outside the tools) would change 1 path"
    )
    assert "No change matches" in outsider.refused("workspace_undo", agent="@")
    assert outsider("workspace_undo").startswith("Undid change 1")  # its own last change
    assert not (outsider.root / "mine.txt").exists()


def test_a_tool_notices_a_file_changed_outside_before_changing_it(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    (a.root / "a.txt").write_text("two\n")
    a.read_and_edit("a.txt", "two", "three")

    lines = a.history()
    assert "outside: changed a.txt" in lines[1]
    assert "@Alice workspace_edit: changed a.txt" in lines[0]


def test_diff_shows_the_change_inside_the_untrusted_envelope(a: Member) -> None:
    a("workspace_write", path="a.txt", content=numbered(5))
    a.read_and_edit("a.txt", "line 3\n", "line three\n")

    diff = a("workspace_diff", change_id=2)
    assert diff.startswith("[BEGIN UNTRUSTED ")
    assert "-line 3\n+line three\n" in diff
    assert "--- a/a.txt\n+++ b/a.txt" in diff
    assert "There is no change 9 in the journal (the last is 2)" in a.refused("workspace_diff", change_id=9)


# -- undo -----------------------------------------------------------------------------------------


def test_undo_restores_exactly_the_bytes_before(a: Member) -> None:
    original = b"\xef\xbb\xbfwindows\r\nline\r\n"
    (a.root / "a.txt").write_bytes(original)
    a.history()  # adopted as it is
    a.read_and_edit("a.txt", "windows", "unix")
    assert (a.root / "a.txt").read_bytes() != original

    answer = a("workspace_undo")
    assert answer.startswith("Undid change 1 (workspace_edit by @Alice), 1 path:\nM a.txt\n")
    assert (a.root / "a.txt").read_bytes() == original


def test_undo_brings_back_a_deleted_binary_file_with_its_permissions(a: Member) -> None:
    data = bytes(range(256)) * 40
    (a.root / "blob.bin").write_bytes(data)
    os.chmod(a.root / "blob.bin", 0o750)
    a.history()
    a("workspace_delete", path="blob.bin")

    a("workspace_undo", path="blob.bin")
    assert (a.root / "blob.bin").read_bytes() == data
    assert stat.S_IMODE(os.stat(a.root / "blob.bin").st_mode) == 0o750


def test_an_undo_is_a_change_and_can_be_undone(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    a.read_and_edit("a.txt", "one", "two")

    first = a("workspace_undo", change_id=2)
    assert first.endswith("This undo is change 3; undo it to redo.")
    assert (a.root / "a.txt").read_text() == "one\n"
    a("workspace_undo", change_id=3)
    assert (a.root / "a.txt").read_text() == "two\n"
    assert a.history()[0].endswith("@Alice workspace_undo: changed a.txt (undid 3)")
    a("workspace_undo")  # the caller's last change: the redo
    assert (a.root / "a.txt").read_text() == "one\n"
    assert "undone already" in a.refused("workspace_undo", change_id=2)


def test_undo_of_creations_and_directories(a: Member) -> None:
    a("workspace_mkdir", path="pkg/sub")
    a("workspace_write", path="pkg/sub/m.py", content="x = 1\n")
    a("workspace_write", path="pkg/n.py", content="y = 2\n")
    a("workspace_rmdir", path="pkg", recursive=True)
    assert not (a.root / "pkg").exists()

    a("workspace_undo", change_id=4)
    assert (a.root / "pkg/sub/m.py").read_text() == "x = 1\n"
    assert (a.root / "pkg/n.py").read_text() == "y = 2\n"
    a("workspace_undo", agent="@Alice", since="1")
    assert not (a.root / "pkg").exists()


def test_the_directories_a_write_makes_are_its_own_and_go_with_its_undo(a: Member) -> None:
    # They used to be found by the next scan and filed as made outside, after the write.
    a("workspace_write", path="jd/x/f.txt", content="f\n")
    a("workspace_patch", patch_text="--- /dev/null\n+++ b/pd/q/g.txt\n@@ -0,0 +1 @@\n+g\n")
    lines = a.history()
    assert len(lines) == 2 and "outside" not in "".join(lines)
    assert lines[1].endswith("@Alice workspace_write: created jd/, created jd/x/, created jd/x/f.txt")
    a("workspace_undo")
    a("workspace_undo", change_id=1)
    assert not (a.root / "jd").exists() and not (a.root / "pd").exists()
    assert "outside" not in "".join(a.history())


def test_a_conflicting_undo_is_refused_naming_the_later_change(a: Member, b: Member) -> None:
    a("workspace_write", path="a.txt", content=numbered(10))
    a.read_and_edit("a.txt", "line 5\n", "alice was here\n")
    b.read_and_edit("a.txt", "alice was here\n", "bob was here\n")
    before = (a.root / "a.txt").read_bytes()

    message = a.refused("workspace_undo", change_id=2)
    assert message.startswith("Nothing was undone: undoing change 2 would overwrite later work.")
    assert "a.txt was changed since on the same lines (or next to them), by change 3 (@Bob, workspace_edit" in message
    assert (a.root / "a.txt").read_bytes() == before
    assert a.ids() == [3, 2, 1]


def test_undo_keeps_a_later_change_to_other_lines(a: Member, b: Member) -> None:
    a("workspace_write", path="a.txt", content=numbered(20))
    a.read_and_edit("a.txt", "line 2\n", "alice's line\n")
    b.read_and_edit("a.txt", "line 18\n", "bob's line\n")

    answer = a("workspace_undo", change_id=2)
    assert "Kept the later edits of a.txt." in answer
    assert (a.root / "a.txt").read_text() == numbered(20).replace("line 18\n", "bob's line\n")


def test_undo_of_a_file_deleted_or_turned_binary_since_is_refused(a: Member, b: Member) -> None:
    a("workspace_write", path="gone.txt", content="text\n")
    a("workspace_write", path="bin.txt", content="text\n")
    a.read_and_edit("gone.txt", "text", "more text")
    a.read_and_edit("bin.txt", "text", "more text")
    b("workspace_delete", path="gone.txt")
    (a.root / "bin.txt").write_bytes(b"\x00\x01binary")

    gone = a.refused("workspace_undo", change_id=3)
    assert "gone.txt was deleted since, by change 5 (@Bob, workspace_delete" in gone
    binary = a.refused("workspace_undo", change_id=4)
    assert "bin.txt was changed since and is binary now (it cannot be merged), by change 6 (made outside" in binary
    assert (a.root / "bin.txt").read_bytes() == b"\x00\x01binary"
    assert not (a.root / "gone.txt").exists()
    assert "undone already, or changed back since" in a.refused("workspace_undo", change_id=1)


def test_undo_of_many_files_is_all_or_nothing_when_a_write_fails(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in "abc":
        a("workspace_write", path=f"{name}.txt", content=f"{name}1\n")
    a("workspace_multi_edit", edits=[_read_edit(a, f"{name}.txt", f"{name}1", f"{name}2") for name in "abc"])
    after = {name: (a.root / f"{name}.txt").read_bytes() for name in "abc"}
    real = Tree.write_bytes
    calls: list[str] = []

    def failing(self: Tree, path: str, data: bytes, **kwargs: Any) -> str:
        calls.append(path)
        if len(calls) == 2:
            raise ToolFailed(f"{path!r} could not be written (no space left on the device).")
        return real(self, path, data, **kwargs)

    monkeypatch.setattr(Tree, "write_bytes", failing)
    message = a.refused("workspace_undo", change_id=4)
    assert "everything was put back: nothing was changed" in message
    monkeypatch.setattr(Tree, "write_bytes", real)
    assert {name: (a.root / f"{name}.txt").read_bytes() for name in "abc"} == after
    assert a.ids() == [4, 3, 2, 1]


def test_a_store_error_mid_undo_leaves_nothing_half_restored(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    a("workspace_write", path="b.txt", content="bee\n")
    a(
        "workspace_multi_edit",
        edits=[_read_edit(a, "a.txt", "one", "two"), _read_edit(a, "b.txt", "bee", "wasp")],
    )
    real = Journal.commit

    def failing(self: Journal, *args: Any, **kwargs: Any) -> int:
        if kwargs.get("tool") == "workspace_undo":
            raise StoreError("The store is out of reach (test).")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Journal, "commit", failing)
    message = a.refused("workspace_undo", change_id=3)
    assert "could not record the undo" in message and "nothing was changed" in message
    assert (a.root / "a.txt").read_text() == "two\n"
    assert (a.root / "b.txt").read_text() == "wasp\n"
    monkeypatch.setattr(Journal, "commit", real)
    assert a.ids() == [3, 2, 1]


def test_a_store_error_during_a_write_puts_the_file_back(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    a("workspace_write", path="a.txt", content="one\n")

    def failing(self: Journal, *args: Any, **kwargs: Any) -> int:
        raise StoreError("The store is out of reach (test).")

    monkeypatch.setattr(Journal, "commit", failing)
    message = a.refused("workspace_edit", path="a.txt", old_string="one", new_string="two")
    assert "The workspace journal could not record the change" in message and "nothing was changed" in message
    assert (a.root / "a.txt").read_text() == "one\n"


def test_bad_undo_requests_are_clear_and_change_nothing(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")

    assert "There is no change 42 in the journal (the last is 1)" in a.refused("workspace_undo", change_id=42)
    assert ESCAPE_MESSAGE in a.refused("workspace_undo", path="../../etc/passwd")
    assert "since='soon' is not a change id" in a.refused("workspace_undo", agent="@Alice", since="soon")
    assert "No change matches" in a.refused("workspace_undo", agent="@Nobody")
    assert "Change 1 did not change 'b.txt'" in a.refused("workspace_undo", change_id=1, path="b.txt")
    assert (a.root / "a.txt").read_text() == "one\n"
    assert a.ids() == [1]


def test_a_dry_run_shows_the_diff_and_writes_nothing(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    a.read_and_edit("a.txt", "one", "two")

    answer = a("workspace_undo", change_id=2, dry_run=True)
    assert answer.startswith(
        "Undoing change 2 (workspace_edit by @Alice) would change 1 path (dry run, nothing written):"
    )
    assert "-two\n+one" in answer and "[BEGIN UNTRUSTED" in answer
    assert (a.root / "a.txt").read_text() == "two\n"
    assert a.ids() == [2, 1]


def test_the_orchestrator_reverts_everything_one_member_did_since_a_change(a: Member, b: Member, system: Any) -> None:
    a("workspace_write", path="keep.txt", content="alice\n")
    b("workspace_write", path="b1.txt", content="bob\n")
    b.read_and_edit("b1.txt", "bob", "bob again")
    b("workspace_write", path="b2.txt", content="more\n")
    a("workspace_write", path="later.txt", content="alice, later\n")
    registry = FakeOrchestrator(system).factory.command_registry()

    answer = registry.dispatch("/workspace_undo agent=@Bob since=2")
    assert answer.startswith("Undid changes 4, 3, 2 (workspace_edit by @Bob; workspace_write by @Bob), 2 paths:")
    assert not (a.root / "b1.txt").exists() and not (a.root / "b2.txt").exists()
    assert (a.root / "keep.txt").read_text() == "alice\n"
    assert (a.root / "later.txt").read_text() == "alice, later\n"
    assert "@Boss workspace_undo: deleted b1.txt, deleted b2.txt (undid 4, 3, 2)" in a.history()[0]


def test_undo_by_task_and_since_a_time(alice: FakeObserver) -> None:
    member = Member(alice, PlanningTool())
    member("update_planning", create_tasks=[{"description": "one"}, {"description": "two"}])
    member("claim_task", task_id=1)
    member("workspace_write", path="t1.txt", content="task one\n")
    member("release_task", task_id=1)
    member("claim_task", task_id=2)
    member("workspace_write", path="t2.txt", content="task two\n")

    member("workspace_undo", task_id=1, since="1h")
    assert not (member.root / "t1.txt").exists()
    assert (member.root / "t2.txt").exists()
    assert " @Alice workspace_undo task 2: deleted t1.txt (undid 1)" in member.history()[0]


def test_exactly_once_a_retried_write_is_not_applied_twice(a: Member) -> None:
    a("workspace_write", path="log.txt", content="start\n")
    a("workspace_read", path="log.txt")

    first = a("workspace_edit", key="retry-1", path="log.txt", old_string="start\n", new_string="start\nmore\n")
    again = a("workspace_edit", key="retry-1", path="log.txt", old_string="start\n", new_string="start\nmore\n")
    assert again == first
    assert (a.root / "log.txt").read_text() == "start\nmore\n"
    assert a.ids() == [2, 1]
    undo = a("workspace_undo", key="undo-1", change_id=2)
    assert a("workspace_undo", key="undo-1", change_id=2) == undo
    assert a.ids() == [3, 2, 1]
    with pytest.raises(ToolFailed, match="reuses the idempotency key"):
        a("workspace_undo", key="undo-1", change_id=1)


def test_retention_drops_the_oldest_changes_and_says_so(alice: FakeObserver) -> None:
    member = Member(alice, journal_mb=1)
    for n in range(4):  # each file's content becomes history when it is deleted
        member("workspace_write", path=f"big{n}.txt", content=os.urandom(300_000).hex())
        member("workspace_delete", path=f"big{n}.txt")

    ids = member.ids(limit=10)
    assert ids[0] == 8 and 1 not in ids
    message = member.refused("workspace_undo", change_id=1)
    assert "Change 1 was dropped from the journal by its retention (it keeps 1 MB of history for 30 days)" in message
    assert "was dropped from the journal" in member.refused("workspace_diff", change_id=1)
    journal = member.factory.cards[0]._journal()  # type: ignore[attr-defined]
    assert journal.history_bytes <= 1024 * 1024
    member("workspace_undo", change_id=8)  # what is kept can still be undone
    assert len((member.root / "big3.txt").read_text()) == 600_000


def test_retention_by_age(alice: FakeObserver) -> None:
    member = Member(alice, journal_days=1e-9)  # every change is older than that by the next one
    member("workspace_write", path="a.txt", content="one\n")
    member("workspace_write", path="b.txt", content="two\n")
    assert 1 not in member.ids()
    assert "dropped from the journal" in member.refused("workspace_undo", change_id=1)


def test_with_the_journal_off_nothing_is_kept(alice: FakeObserver) -> None:
    member = Member(alice, journal=False)
    member("workspace_write", path="a.txt", content="one\n")

    assert "The workspace journal is off" in member.refused("workspace_history")
    assert "The workspace journal is off" in member.refused("workspace_undo")
    index, blobs = journal_namespaces("team-1")
    assert default_store().version(index) == 0 and default_store().version(blobs) == 0


def test_the_journal_is_read_back_from_the_store(a: Member) -> None:
    a("workspace_write", path="a.txt", content="one\n")
    a.read_and_edit("a.txt", "one", "two")
    stop_workspace_actors()  # the next call attaches to a new hub, which loads the journal from the store

    assert a.ids() == [2, 1]
    a("workspace_undo", change_id=2)
    assert (a.root / "a.txt").read_text() == "one\n"


class FakeOrchestrator:
    """An orchestrator's command registry on the same tree (a member of the team)."""

    def __init__(self, system: Any) -> None:
        self.factory = ToolFactory([WorkspaceTool()], observer=FakeObserver("Boss", "team-1", system=system))


def _read_edit(member: Member, path: str, old: str, new: str) -> dict[str, str]:
    member("workspace_read", path=path)
    return {"path": path, "old_string": old, "new_string": new}


def test_history_scans_at_most_once_a_second(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolcards.workspace._tool.HISTORY_SCAN_INTERVAL_S", 3600.0)
    a("workspace_write", path="a.txt", content="one\n")
    assert a.ids() == [1]  # never scanned in this process: it scans (and adopts the tree)
    (a.root / "a.txt").write_text("edited outside\n")
    assert a.ids() == [1]  # scanned a moment ago: not yet seen
    refusal = a.refused("workspace_undo", dry_run=True)  # an undo always scans first
    assert "by change 2 (made outside the tools, " in refusal
    assert a.ids() == [2, 1]


def test_the_journal_works_on_postgresql(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, alice: FakeObserver
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", postgres_url)
    member = Member(alice)
    member("workspace_write", path="a.txt", content=numbered(300))
    member.read_and_edit("a.txt", "line 7\n", "line seven\n")
    (member.root / "big.bin").write_bytes(os.urandom(600_000))  # several rows of the blob namespace
    assert member.ids() == [2, 1]  # the first scan adopts big.bin
    member("workspace_delete", path="big.bin")
    stop_workspace_actors()  # read back from the server

    member("workspace_undo", change_id=3)
    assert (member.root / "big.bin").stat().st_size == 600_000
    member("workspace_undo", change_id=2)
    assert (member.root / "a.txt").read_text() == numbered(300)


def test_a_file_too_large_to_keep_is_recorded_by_digest_and_not_restored(a: Member) -> None:
    (a.root / "huge.bin").write_bytes(b"\x01" * (16 * 1024 * 1024 + 1))
    a("workspace_delete", path="huge.bin")

    assert a.history()[0].endswith("@Alice workspace_delete: deleted huge.bin")
    change = a.factory.cards[0]._journal().entry(1).public().files[0]  # type: ignore[attr-defined]
    assert (change.before_kept, change.after) == (False, None)
    assert "was not kept (it was over 16 MiB)" in a.refused("workspace_undo", change_id=1)
    assert not (a.root / "huge.bin").exists()
