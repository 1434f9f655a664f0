"""Agents in several OS processes changing one tree: the tree lock makes each change atomic.

Threads prove nothing here (one process's actor already serializes them), so the tests
marked ``slow`` run real processes, started with the ``spawn`` method so that each builds
its own actors and opens its own lock file. The others check, in this process, that every
mutation takes the lock, that a lock left taken fails a mutation cleanly, and the probe.
"""

from __future__ import annotations

import errno
import itertools
import multiprocessing
import os
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

from toolcards import TOOL_CALL, RetriableError, ToolFactory, ToolFailed
from toolcards.testing import FakeObserver
from toolcards.workspace import _tree_lock as tree_lock
from toolcards.workspace._actor import WorkspaceProxy, stop_workspace_actors, workspace_actor
from toolcards.workspace._models import FileEdit, content_digest
from toolcards.workspace._tool import WorkspaceTool
from toolcards.workspace._tree import Tree
from toolcards.workspace._tree_lock import TreeLock, probe_tree_locks, tree_lock_path

SPAWN = multiprocessing.get_context("spawn")
PROCESSES = 4
EDITS = 50
LOG = "log.md"
END = "<end of log>\n"
FILLER_LINES = 300
"""Lines the shared file starts with: each change then reads, hashes and writes ~20 KB, so
the window between the gate's check and the rename is real."""
WAIT_S = 120
"""How long the parent waits for a child at most (a bound for a broken run, never a timing
assertion)."""
AGENT = "team-1/@Parent"

ofd_only = pytest.mark.skipif(not tree_lock.OFD_LOCKS, reason="two holders in one process need OFD locks")


# -- what the child processes run (module level, so that spawn can find it) --------------------


def append_lines(name: str, edits: int, ready: Barrier, results: Any) -> None:
    """One agent: append ``edits`` lines to the log through the real card, re-reading on refusals.

    Every attempt's line is unique (``<name> edit <n> try <k>``); puts ``(name, [(line,
    "applied" | "refused"), ...])`` on ``results``, or ``(name, traceback)`` if anything else
    went wrong.
    """
    try:
        outcomes: list[tuple[str, str]] = []
        with FakeObserver(name, "team-1") as agent:
            tools = {tool.name: tool for tool in ToolFactory([WorkspaceTool()], observer=agent).tools()}
            ready.wait(timeout=WAIT_S)
            for n in range(edits):
                for attempt in itertools.count():
                    line = f"{name} edit {n} try {attempt}"
                    tools["workspace_read"].call_sync({"path": LOG}, channel=TOOL_CALL)
                    edit = {"path": LOG, "old_string": END, "new_string": f"{line}\n{END}"}
                    try:
                        tools["workspace_edit"].call_sync(edit, channel=TOOL_CALL)
                    except RetriableError as exc:
                        if "changed since you read it" not in str(exc):
                            raise
                        outcomes.append((line, "refused"))
                        continue
                    outcomes.append((line, "applied"))
                    break
        stop_workspace_actors()
        results.put((name, outcomes))
    except BaseException:
        results.put((name, traceback.format_exc()))


def overwrite_after_reading(root: str, ofd: bool, asking: Event, results: Any) -> None:
    """Read ``notes.md``, then overwrite it (the parent holds the lock meanwhile); then do it again.

    Puts the two outcomes, ``[("applied" | "refused" | "failed", message), ...]``.
    """
    tree_lock.OFD_LOCKS = ofd
    outcomes: list[tuple[str, str]] = []
    try:
        tree = Path(root)
        ws = workspace_actor(tree)
        for _ in range(2):
            data = (tree / "notes.md").read_bytes()
            ws.record_read("team-1/@Child", "notes.md", data, True, content_digest(data))
            asking.set()
            try:
                outcomes.append(("applied", ws.write("team-1/@Child", "notes.md", "child's version\n").get()))
            except RetriableError as exc:
                outcomes.append(("refused", str(exc)))
            except ToolFailed as exc:
                outcomes.append(("failed", str(exc)))
        stop_workspace_actors()
    except BaseException:
        outcomes.append(("failed", traceback.format_exc()))
    results.put(outcomes)


def hold_lock(root: str, ofd: bool, held: Event, release: Event) -> None:
    """Hold the tree's lock until ``release`` is set (or forever, to be killed)."""
    tree_lock.OFD_LOCKS = ofd
    lock = TreeLock(Path(root))
    with lock.held():
        held.set()
        release.wait(timeout=WAIT_S)


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def tree(isolated_root: Path) -> Path:
    path = isolated_root / "shared"
    path.mkdir(parents=True)
    return path


@pytest.fixture(params=["ofd", "lockf"])
def ofd(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both lock kinds: OFD locks (Linux) and the ``lockf`` fallback; the parent uses it too."""
    use_ofd = request.param == "ofd"
    if use_ofd and not tree_lock.OFD_LOCKS:
        pytest.skip("OFD locks are Linux-only")
    monkeypatch.setattr(tree_lock, "OFD_LOCKS", use_ofd)
    return use_ofd


@pytest.fixture
def children() -> Iterator[list[Any]]:
    """Processes a test starts; any still running at the end is killed."""
    started: list[Any] = []
    yield started
    for process in started:
        if process.is_alive():
            process.kill()
        process.join(timeout=WAIT_S)


def start(children: list[Any], target: Callable[..., None], *args: Any) -> Any:
    process = SPAWN.Process(target=target, args=args, daemon=True)
    process.start()
    children.append(process)
    return process


def collect(results: Any, children: list[Any], count: int) -> list[Any]:
    """``count`` reports from ``results``; fails if the children all exit before sending them."""
    reports: list[Any] = []
    deadline = time.monotonic() + WAIT_S * 4
    while len(reports) < count:
        try:
            reports.append(results.get(timeout=1))
        except Empty:
            if all(not child.is_alive() for child in children) and results.empty():
                pytest.fail(f"the children exited with {[c.exitcode for c in children]} before reporting")
            if time.monotonic() > deadline:
                pytest.fail("the children did not report in time")
    return reports


# -- several processes ---------------------------------------------------------------------------


@pytest.mark.slow
def test_agents_in_four_processes_lose_no_edit(isolated_root: Path, children: list[Any]) -> None:
    tree = isolated_root / "team-1"
    tree.mkdir(parents=True)
    filler = "".join(f"line {n}: the log starts with some text to read, hash and write\n" for n in range(FILLER_LINES))
    (tree / LOG).write_text(filler + END)
    ready = SPAWN.Barrier(PROCESSES)
    results = SPAWN.Queue()
    for number in range(PROCESSES):
        start(children, append_lines, f"Agent{number}", EDITS, ready, results)
    reports = dict(collect(results, children, PROCESSES))
    failures = {name: report for name, report in reports.items() if isinstance(report, str)}
    assert not failures, failures

    lines = (tree / LOG).read_text().removeprefix(filler).removesuffix(END).splitlines()
    applied = [line for outcomes in reports.values() for line, outcome in outcomes if outcome == "applied"]
    refused = [line for outcomes in reports.values() for line, outcome in outcomes if outcome == "refused"]
    # Every acknowledged edit is in the file exactly once; no refused attempt is.
    assert len(applied) == PROCESSES * EDITS
    assert Counter(lines) == Counter(applied)
    assert not set(refused) & set(lines)
    # Each agent's edits are in the order it made them.
    for name in reports:
        mine = [line for line in lines if line.startswith(f"{name} ")]
        assert [int(line.split()[2]) for line in mine] == list(range(EDITS))
    # The processes did race (otherwise this test proves nothing): some reads went stale.
    assert refused, "no edit was ever refused: the processes did not run concurrently"


@pytest.mark.slow
def test_a_write_waits_for_the_lock_then_sees_the_change(tree: Path, ofd: bool, children: list[Any]) -> None:
    (tree / "notes.md").write_text("original\n")
    asking = SPAWN.Event()
    results = SPAWN.Queue()
    parent = TreeLock(tree)
    with parent.held():
        start(children, overwrite_after_reading, str(tree), ofd, asking, results)
        assert asking.wait(timeout=WAIT_S)
        # Give the child's write time to reach the lock: a child slower than this only
        # makes the test weaker, never wrong. The write must wait, not overwrite.
        time.sleep(0.5)
        assert (tree / "notes.md").read_text() == "original\n"
        # A change another process makes while it holds the lock.
        Tree(tree).write_bytes("notes.md", b"parent's version\n")
    parent.close()
    [[(first, first_message), (second, _)]] = collect(results, children, 1)
    # The waiting write checked the gate after the lock was released: refused, not lost.
    assert first == "refused", first_message
    assert "changed since you read it" in first_message
    assert "or through them by another process" in first_message
    assert "+parent's version" in first_message
    assert second == "applied"
    assert (tree / "notes.md").read_text() == "child's version\n"


@pytest.mark.slow
def test_a_lock_held_too_long_fails_the_change_cleanly(tree: Path, ofd: bool, children: list[Any]) -> None:
    held, release = SPAWN.Event(), SPAWN.Event()
    start(children, hold_lock, str(tree), ofd, held, release)
    assert held.wait(timeout=WAIT_S)
    lock = TreeLock(tree, timeout_s=0.2)
    with (
        pytest.raises(ToolFailed, match="another process has kept workspace tree 'shared' locked") as failure,
        lock.held(),
    ):
        pytest.fail("the lock was granted while another process held it")
    assert str(tree) not in str(failure.value)
    release.set()
    lock.timeout_s = WAIT_S
    with lock.held():
        pass
    lock.close()


@pytest.mark.slow
def test_a_killed_holder_leaves_no_stale_lock(tree: Path, ofd: bool, children: list[Any]) -> None:
    held, never = SPAWN.Event(), SPAWN.Event()
    holder = start(children, hold_lock, str(tree), ofd, held, never)
    assert held.wait(timeout=WAIT_S)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(timeout=WAIT_S)
    ws = workspace_actor(tree)
    assert ws.write(AGENT, "after.md", "written\n").get(timeout=WAIT_S) == "Created after.md (1 line)."


# -- every mutation takes the lock (in this process: OFD locks exclude two holders here too) -------


def _read(ws: WorkspaceProxy, tree: Path, path: str) -> None:
    data = (tree / path).read_bytes()
    ws.record_read(AGENT, path, data, True, content_digest(data)).get()


MUTATIONS: dict[str, Callable[[WorkspaceProxy], Any]] = {
    "write": lambda ws: ws.write(AGENT, "a.md", "new\n"),
    "edit": lambda ws: ws.edit(AGENT, "a.md", "alpha", "beta"),
    "multi_edit": lambda ws: ws.multi_edit(AGENT, [FileEdit(path="a.md", old_string="alpha", new_string="beta")]),
    "patch": lambda ws: ws.patch(AGENT, "--- a/a.md\n+++ b/a.md\n@@ -1 +1 @@\n-alpha\n+beta\n"),
    "delete": lambda ws: ws.delete(AGENT, "a.md"),
    "mkdir": lambda ws: ws.mkdir(AGENT, "new-dir"),
    "rmdir": lambda ws: ws.rmdir(AGENT, "old-dir"),
}


@ofd_only
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_every_mutation_waits_for_the_lock(tree: Path, mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "a.md").write_text("alpha\n")
    (tree / "old-dir").mkdir()
    monkeypatch.setattr(tree_lock, "LOCK_TIMEOUT_S", 0.1)
    ws = workspace_actor(tree)
    _read(ws, tree, "a.md")
    other = TreeLock(tree)
    with other.held(), pytest.raises(ToolFailed, match="kept workspace tree 'shared' locked"):
        MUTATIONS[mutation](ws).get(timeout=WAIT_S)
    other.close()
    assert sorted(p.name for p in tree.iterdir()) == ["a.md", "old-dir"]
    assert (tree / "a.md").read_text() == "alpha\n"
    # Once the lock is free, the same mutation goes through.
    MUTATIONS[mutation](ws).get(timeout=WAIT_S)


def test_the_lock_file_is_outside_the_tree_and_kept_open(tree: Path, isolated_root: Path) -> None:
    path = tree_lock_path(tree)
    assert path.parent == isolated_root / ".toolcards" / "locks"
    assert path.name.startswith("shared-") and path.suffix == ".lock"
    ws = workspace_actor(tree)
    ws.write(AGENT, "a.md", "one\n").get()
    lock = ws.tree_lock.get()
    fd = lock._fd
    ws.write(AGENT, "b.md", "two\n").get()
    assert lock._fd == fd is not None and path.exists()
    assert sorted(p.name for p in tree.iterdir()) == ["a.md", "b.md"]
    stop_workspace_actors()
    assert lock._fd is None


def test_the_lock_is_not_reentrant(tree: Path) -> None:
    lock = TreeLock(tree)
    with lock.held(), pytest.raises(RuntimeError, match="not reentrant"), lock.held():
        pass
    lock.close()


# -- the probe --------------------------------------------------------------------------------------


def test_the_probe_passes_where_locks_work(tmp_path: Path) -> None:
    assert probe_tree_locks(tmp_path / "ofd") is None
    assert not list((tmp_path / "ofd").iterdir())  # the scratch file is gone


@pytest.mark.slow
def test_the_fallback_probe_asks_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_lock, "OFD_LOCKS", False)
    assert probe_tree_locks(tmp_path / "lockf") is None


def test_a_probe_that_fails_gives_one_line_and_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file system that grants every lock, as some network file systems do.
    monkeypatch.setattr(tree_lock, "_try_lock", lambda fd: True)
    reason = probe_tree_locks(tmp_path)
    assert reason is not None and "\n" not in reason
    assert reason.startswith(f"file locks do not work on {tmp_path} (")
    assert "a second lock was granted" in reason or "another process was granted" in reason
    assert reason.endswith("put it on a local disk or an NFSv4/SMB share with locking")
    monkeypatch.undo()
    assert probe_tree_locks(tmp_path) == reason


def test_the_probe_refuses_nfs_with_local_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_lock, "_file_system", lambda directory: ("nfs", ["rw", "nolock", "local_lock=all"]))
    reason = probe_tree_locks(tmp_path)
    assert reason == (
        f"file locks do not work on {tmp_path} (nfs: mounted with locks local to this host): several processes "
        "cannot share this workspaces root; put it on a local disk or an NFSv4/SMB share with locking"
    )


def test_changes_are_refused_where_the_probe_failed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(tree_lock, "_try_lock", lambda fd: True)
        assert probe_tree_locks() is not None  # cached for this process
    with pytest.raises(ToolFailed, match="file locks do not work where workspace tree 'shared'") as failure:
        workspace_actor(tree).write(AGENT, "a.md", "text\n").get()
    assert str(tree) not in str(failure.value)
    assert not (tree / "a.md").exists()


def test_an_unlockable_file_system_fails_the_change(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe_tree_locks() is None

    def no_locks(fd: int) -> bool:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(tree_lock, "_try_lock", no_locks)
    with pytest.raises(ToolFailed, match=rf"keeps its lock \({os.strerror(errno.ENOLCK)}\)"):
        workspace_actor(tree).write(AGENT, "a.md", "text\n").get()
    assert not (tree / "a.md").exists()


def test_a_card_that_may_write_refuses_to_bind_where_locks_do_not_work(
    alice: FakeObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcards.errors import WiringError
    from toolcards.workspace import WorkspaceTool
    from toolcards.workspace import _tool as workspace_tool

    reason = "file locks do not work on /x (nfs: mounted with locks local to this host): put it elsewhere"
    monkeypatch.setattr(workspace_tool, "probe_tree_locks", lambda: reason)

    with pytest.raises(WiringError, match="locks local to this host"):
        ToolFactory([WorkspaceTool()], observer=alice)
    # A read-only card changes nothing, so it may still serve.
    ToolFactory([WorkspaceTool(read_only=True)], observer=alice)
