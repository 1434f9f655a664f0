"""A keyed workspace change whose process is killed (``kill -9``) between writing its files and
recording its key: the retry with the same key is answered, never applied a second time.

Each change runs in a real child process binding the workspace card, as under ``toolcards
serve``. The child's script (test code) replaces one step of the change by ``SIGKILL`` to
itself: ``Journal.commit`` (the files are written, the key is not recorded), or the n-th
``Tree.write_bytes`` (the change's intent is stored, its first n-1 files are written). The
parent, the restarted server, then retries with the same key.
"""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcards import COMMAND, TOOL_CALL, RetriableError, Tool, ToolFactory, ToolFailed
from toolcards.store._base import Change, Snapshot
from toolcards.testing import FakeObserver
from toolcards.workspace._journal import Journal
from toolcards.workspace._tool import WorkspaceTool
from toolcards.workspace._tree import Tree

BOTH = {"expose": [TOOL_CALL, COMMAND]}
CARD: dict[str, Any] = {"workspace_history": BOTH, "workspace_undo": BOTH}
INTENTS = "intents"
WAIT_S = 120
"""How long the parent waits for a child at most (a bound for a broken run, not a timing assertion)."""

CHILD = """
import json, os, signal, sys
from toolcards import TOOL_CALL, ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace import _journal, _tree
from toolcards.workspace._tool import WorkspaceTool

spec = json.loads(sys.argv[1])


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


with FakeObserver("Alice", "team-1") as alice:
    tools = {t.name: t for t in ToolFactory([WorkspaceTool()], observer=alice).tools()}
    for path in spec["reads"]:
        tools["workspace_read"].call_sync({"path": path}, channel=TOOL_CALL)
    if spec.get("machine"):
        _journal.machine_mark = lambda: spec["machine"]  # as if this process ran on another host
    if spec["kill"] == "commit":
        _journal.Journal.commit = die
    else:
        writes = {"left": int(spec["kill"].split(":")[1])}
        write_bytes = _tree.Tree.write_bytes

        def write_or_die(self, *args, **kwargs):
            writes["left"] -= 1
            if writes["left"] == 0:
                die()
            return write_bytes(self, *args, **kwargs)

        _tree.Tree.write_bytes = write_or_die
    tools[spec["tool"]].call_sync(spec["args"], channel=TOOL_CALL, idempotency_key=spec["key"])
    print("not killed", flush=True)
"""


class Member:
    """Alice's workspace tools in this process: the server started again after the kill."""

    def __init__(self, observer: FakeObserver) -> None:
        self.factory = ToolFactory([WorkspaceTool(**CARD)], observer=observer)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in self.factory.tools()}
        self.root: Path = self.factory.cards[0].root  # type: ignore[attr-defined]

    def __call__(self, name: str, *, key: str | None = None, **args: Any) -> str:
        return str(self.tools[name].call_sync(args, channel=TOOL_CALL, idempotency_key=key))

    def journal(self) -> Journal:
        journal: Journal = self.factory.cards[0]._journal()  # type: ignore[attr-defined]
        return journal

    def intents(self) -> dict[str, Any]:
        """The intents the store holds now (read from the store, not a cache)."""
        journal = self.journal()
        snapshot = journal.store.read(journal.index_namespace, -1)
        assert isinstance(snapshot, Snapshot)
        return dict(snapshot.rows.get(INTENTS, {}))

    def history(self) -> list[str]:
        lines = self("workspace_history").splitlines()
        return [line for line in lines if line.startswith("#")]


def killed_in(step: str, tool: str, args: dict[str, Any], *, key: str, reads: list[str], **more: Any) -> None:
    """Run ``tool(**args)`` with ``key`` as Alice in a child process killed at ``step``."""
    spec = {"kill": step, "tool": tool, "args": args, "key": key, "reads": reads, **more}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, timeout=WAIT_S, check=False
    )
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr[-3000:])


EDIT = {"path": "e.txt", "old_string": "X", "new_string": "XY"}
PATCH = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n A\n+added\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1,2 @@\n B\n+added\n"


@pytest.fixture
def alice_here(isolated_root: Path, alice: FakeObserver) -> Member:
    (isolated_root / "team-1").mkdir(parents=True)
    return Member(alice)


def test_an_edit_killed_before_its_commit_is_answered_on_retry_not_applied_again(alice_here: Member) -> None:
    me = alice_here
    me("workspace_write", path="e.txt", content="X\n")
    killed_in("commit", "workspace_edit", EDIT, key="k-edit", reads=["e.txt"])
    assert (me.root / "e.txt").read_text() == "XY\n"  # written, its key not recorded

    me("workspace_read", path="e.txt")  # a new process needs a read before a write
    answer = me("workspace_edit", key="k-edit", **EDIT)

    assert (me.root / "e.txt").read_text() == "XY\n"
    assert "applied before its server stopped" in answer and "e.txt" in answer
    assert me("workspace_edit", key="k-edit", **EDIT) == answer  # and so is every later retry
    history = me.history()
    assert "@Alice workspace_edit: changed e.txt" in history[0]
    assert not any("outside" in line for line in history)
    assert me.intents() == {}


def test_the_scan_before_history_files_the_killed_change_as_the_calls(alice_here: Member) -> None:
    me = alice_here
    me("workspace_write", path="new/dir/w.txt", content="first\n")
    me("workspace_read", path="new/dir/w.txt")
    args = {"path": "made/here/w.txt", "content": "hello\n"}
    killed_in("commit", "workspace_write", args, key="k-write", reads=[])

    history = me.history()  # scans first

    assert "@Alice workspace_write: created made/, created made/here/, created made/here/w.txt" in history[0]
    assert not any("outside" in line for line in history)
    assert "applied before its server stopped" in me("workspace_write", key="k-write", **args)
    assert (me.root / "made/here/w.txt").read_text() == "hello\n"
    assert len(me.history()) == len(history)


def test_a_change_killed_before_any_file_was_written_is_applied_by_the_retry(alice_here: Member) -> None:
    me = alice_here
    me("workspace_write", path="e.txt", content="X\n")
    killed_in("write:1", "workspace_edit", EDIT, key="k-edit", reads=["e.txt"])
    assert (me.root / "e.txt").read_text() == "X\n"
    assert list(me.intents()) == ["@Alice|workspace_edit|k-edit"]  # stored before the write

    me("workspace_read", path="e.txt")
    answer = me("workspace_edit", key="k-edit", **EDIT)

    assert "+XY" in answer
    assert (me.root / "e.txt").read_text() == "XY\n"
    history = me.history()
    assert len(history) == 2 and "@Alice workspace_edit: changed e.txt" in history[0]
    assert me.intents() == {}


def test_a_patch_cut_between_its_files_records_what_was_applied_and_what_was_not(alice_here: Member) -> None:
    me = alice_here
    me("workspace_write", path="a.txt", content="A\n")
    me("workspace_write", path="b.txt", content="B\n")
    killed_in("write:2", "workspace_patch", {"patch_text": PATCH}, key="k-patch", reads=["a.txt", "b.txt"])
    after = {name: (me.root / name).read_text() for name in ("a.txt", "b.txt")}
    written = [name for name, text in after.items() if "added" in text]
    assert len(written) == 1  # the first file of the two
    (kept,) = {"a.txt", "b.txt"} - set(written)

    for name in ("a.txt", "b.txt"):
        me("workspace_read", path=name)
    answer = me("workspace_patch", key="k-patch", patch_text=PATCH)

    assert {name: (me.root / name).read_text() for name in ("a.txt", "b.txt")} == after  # not applied again
    assert answer.startswith("This workspace_patch call was cut short when its server stopped")
    assert f"It changed {written[0]} (change " in answer and f"{kept} was not changed." in answer
    history = me.history()
    assert f"@Alice workspace_patch: changed {written[0]}" in history[0]
    change = int(history[0].split()[0][1:])
    me("workspace_undo", change_id=change)  # the part that was applied can be taken back
    assert (me.root / written[0]).read_text() == ("A\n" if written[0] == "a.txt" else "B\n")


def test_an_intent_of_another_host_waits_and_a_retry_is_told_to_wait(alice_here: Member) -> None:
    me = alice_here
    me("workspace_write", path="e.txt", content="X\n")
    killed_in("commit", "workspace_edit", EDIT, key="k-edit", reads=["e.txt"], machine="another-host:1")

    me("workspace_read", path="e.txt")
    with pytest.raises(RetriableError, match="another host") as waiting:
        me("workspace_edit", key="k-edit", **EDIT)
    assert "nothing was changed" in str(waiting.value)
    history = me.history()
    assert len(history) == 1  # what the intent names is not filed as outside while it waits
    assert (me.root / "e.txt").read_text() == "XY\n"

    # Past its deadline it is settled as one from this machine would be.
    journal = me.journal()
    row = me.intents()["@Alice|workspace_edit|k-edit"]
    with journal.store.write(journal.index_namespace, since=None) as txn:
        txn.stage([Change(collection=INTENTS, key="@Alice|workspace_edit|k-edit", value={**row, "until": 0.0})])
    assert "applied before its server stopped" in me("workspace_edit", key="k-edit", **EDIT)
    assert (me.root / "e.txt").read_text() == "XY\n"


def test_a_keyed_change_leaves_no_intent_and_an_unkeyed_one_writes_none(alice_here: Member) -> None:
    me = alice_here
    journal = me.journal()
    me("workspace_write", path="e.txt", content="X\n")
    versions = journal.store.version(journal.index_namespace)
    me("workspace_write", path="e.txt", content="X2\n")
    assert journal.store.version(journal.index_namespace) == versions + 1  # one write: the commit
    me("workspace_write", path="e.txt", content="X3\n", key="k-1")
    me("workspace_read", path="e.txt")
    me("workspace_edit", path="e.txt", old_string="X3", new_string="X4", key="k-2")
    me("workspace_move", source="e.txt", destination="f.txt", key="k-3")
    assert me.intents() == {}
    assert journal.store.version(journal.index_namespace) == versions + 1 + 2 * 3  # intent and commit


def test_a_killed_keyed_edit_is_answered_on_postgresql(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, isolated_root: Path, alice: FakeObserver
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", postgres_url)
    (isolated_root / "team-1").mkdir(parents=True)
    me = Member(alice)
    me("workspace_write", path="e.txt", content="X\n")
    killed_in("commit", "workspace_edit", EDIT, key="k-edit", reads=["e.txt"])

    me("workspace_read", path="e.txt")
    answer = me("workspace_edit", key="k-edit", **EDIT)

    assert (me.root / "e.txt").read_text() == "XY\n"
    assert "applied before its server stopped" in answer
    assert me.intents() == {}


def test_a_keyed_change_that_fails_after_its_intent_leaves_none_and_its_retry_applies(
    alice_here: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = alice_here
    me("workspace_write", path="e.txt", content="X\n")
    me("workspace_read", path="e.txt")

    def no_space(*args: Any, **kwargs: Any) -> str:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Tree, "write_bytes", no_space)
    with pytest.raises((RetriableError, ToolFailed)):
        me("workspace_edit", key="k-edit", **EDIT)
    assert me.intents() == {}  # settled at once: put back, so dropped
    monkeypatch.undo()

    assert "+XY" in me("workspace_edit", key="k-edit", **EDIT)
    assert (me.root / "e.txt").read_text() == "XY\n"
