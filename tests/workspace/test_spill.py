"""Outputs over a tool's budget, kept whole in the workspace (``.toolcards/spill/``).

Through the real card and the real pipeline: the answer shows the head, the tail, the path and
how to read on; the file is read back whole by ``workspace_read`` pages, here and by a teammate
in another OS process; the folder is hidden from listings unless named; retention, the quota
and failures to write fall back to the cut, never to a failed call.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import toolcards
from toolcards import TOOL_CALL, RetriableError, Tool, ToolFactory
from toolcards.fs._locations import workspace_dir
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool
from toolcards.workspace._grep import grep
from toolcards.workspace._spill import SPILL_DIR, spill_folder
from toolcards.workspace._tool import WorkspaceGrepParam

REPO = Path(__file__).resolve().parents[2]
SPILLED_PATH = re.compile(r"saved whole in the workspace as '(\.toolcards/spill/[^']+)'")
NUMBERED = re.compile(r" *(\d+)\t(.*)")


def workspace(observer: FakeObserver, **fields: Any) -> dict[str, Tool]:
    card = WorkspaceTool(workspace_grep=WorkspaceGrepParam(max_results=20_000), **fields)
    return {tool.name: tool for tool in ToolFactory([card], observer=observer).tools()}


def plant(root: Path, files: int, lines: int, width: int = 60) -> None:
    """``files`` files of ``lines`` lines, each holding ``needle``, under ``root/src``."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    for n in range(files):
        body = "".join(f"needle {n:02d}:{k:05d} " + "y" * (width - 20) + "\n" for k in range(lines))
        (root / "src" / f"f{n:02d}.txt").write_text(body)


def spilled_path(answer: str) -> str:
    found = SPILLED_PATH.search(answer)
    assert found, answer[-800:]
    return found[1]


def read_whole(read: Tool, path: str) -> str:
    """The whole file at ``path``, page by page through ``workspace_read``, numbers taken off."""
    lines: list[str] = []
    offset = 1
    while True:
        page = read.call_sync({"path": path, "offset": offset}, channel=TOOL_CALL)
        numbered = [NUMBERED.fullmatch(line) for line in page.split("\n")[1:-1]]
        shown = [(int(m[1]), m[2]) for m in numbered if m]
        assert shown and shown[0][0] == offset
        lines += [text for _, text in shown]
        offset = shown[-1][0] + 1
        if "to continue)" not in page:
            return "\n".join(lines)


@pytest.fixture
def root(alice: FakeObserver) -> Path:
    return workspace_dir(alice.team_id)


def test_a_long_grep_is_kept_whole_and_read_back_by_pages(alice: FakeObserver, bob: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=250)
    whole = grep(root, "needle", max_results=20_000)
    answer = workspace(alice)["workspace_grep"].call_sync({"pattern": "needle"}, channel=TOOL_CALL, call_id="c-42")
    path = spilled_path(answer)
    assert re.fullmatch(r"\.toolcards/spill/\d{8}T\d{6}Z-workspace_grep-c-42-[0-9a-f]{12}\.txt", path)
    assert (root / path).read_text() == whole
    # The model reads the head and the tail, and how to read on or search.
    assert answer.startswith("[BEGIN UNTRUSTED") and "src/f00.txt:1: needle 00:00000" in answer
    assert "src/f19.txt:250: needle 19:00249" in answer and len(answer) < 21_000
    head_lines = answer.split("\n[… ")[0].count("\n")
    assert answer.endswith(
        f"more than the 20,000 an answer shows. It is saved whole in the workspace as {path!r}, kept for up to "
        f"24 hours. Read on with workspace_read(path={path!r}, offset={head_lines + 1}). "
        f"Search it with workspace_grep(pattern=<regex>, path={path!r}).]"
    )
    # A teammate pages it, or searches it by naming it.
    bobs = workspace(bob)
    assert read_whole(bobs["workspace_read"], path) == whole
    found = bobs["workspace_grep"].call_sync({"pattern": "needle 07:00123", "path": path})
    assert f"{path}:1874: src/f07.txt:124: needle 07:00123" in found


def test_the_spill_folder_is_listed_only_when_named(alice: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=250)
    tools = workspace(alice)
    path = spilled_path(tools["workspace_grep"].call_sync({"pattern": "needle"}))
    assert ".toolcards/ (skipped)" in tools["workspace_list"].call_sync({"depth": 0})
    assert ".toolcards" not in tools["workspace_glob"].call_sync({"pattern": "**/*.txt"})
    assert "spill" not in tools["workspace_grep"].call_sync({"pattern": "needle 03:00001"})
    assert path.rsplit("/", 1)[1] in tools["workspace_list"].call_sync({"path": SPILL_DIR})
    assert path in tools["workspace_glob"].call_sync({"pattern": "*.txt", "path": SPILL_DIR})
    assert f"{path}:" in tools["workspace_grep"].call_sync({"pattern": "needle 03:00001", "path": ".toolcards"})
    # A command's `git add -A` leaves it out of the project too.
    assert (root / ".toolcards" / ".gitignore").read_text().endswith("\n*\n")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, check=True
        )
        assert status.stdout.split() == ["??", "src/"]


def test_tools_read_the_spill_folder_but_never_change_it(alice: FakeObserver, root: Path) -> None:
    # A file moved or written there would vanish from listings and be swept away by retention.
    plant(root, files=20, lines=250)
    tools = workspace(alice, workspace_mkdir=True, workspace_rmdir=True)
    path = spilled_path(tools["workspace_grep"].call_sync({"pattern": "needle"}))
    tools["workspace_read"].call_sync({"path": path})
    (root / "outside-link").symlink_to(".toolcards")
    refusals = [
        ("workspace_write", {"path": ".toolcards/note.txt", "content": "x"}),
        ("workspace_write", {"path": "outside-link/note.txt", "content": "x"}),
        ("workspace_write", {"path": "src/../.toolcards/spill/new.txt", "content": "x"}),
        ("workspace_edit", {"path": path, "old_string": "needle", "new_string": "pin", "replace_all": True}),
        ("workspace_move", {"source": "src/f00.txt", "destination": ".toolcards/spill/f00.txt"}),
        ("workspace_move", {"source": ".toolcards", "destination": "moved"}),
        ("workspace_move", {"source": path, "destination": "kept.txt"}),
        ("workspace_delete", {"path": path}),
        ("workspace_mkdir", {"path": ".toolcards/mine"}),
        ("workspace_rmdir", {"path": ".toolcards", "recursive": True}),
    ]
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    for name, args in refusals:
        with pytest.raises(RetriableError, match=r"\.toolcards/ is toolcards' own folder"):
            tools[name].call_sync(args, channel=TOOL_CALL)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


def test_a_read_only_card_spills_too(alice: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=250)
    path = spilled_path(workspace(alice, read_only=True)["workspace_grep"].call_sync({"pattern": "needle"}))
    assert (root / path).is_file()


def test_a_nul_is_kept_as_a_replacement_character_so_the_file_stays_text(alice: FakeObserver, root: Path) -> None:
    workspace(alice)  # binds the card: the team's spill sink
    text = ("a\x00b\n" * 10_000) + "é\ud800"
    tool = Tool.from_function(lambda: text, name="noisy", output_budget=1_000)
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    bound = tool.replace(spill=factory.tools()[0].spill)
    path = spilled_path(bound.call_sync({}))
    assert (root / path).read_text() == text.replace("\x00", "\ufffd").replace("\ud800", "?")
    assert "a\ufffdb" in workspace(alice)["workspace_read"].call_sync({"path": path, "limit": 1})


def test_retention_deletes_the_oldest_spills_past_the_size_limit(alice: FakeObserver, root: Path) -> None:
    plant(root, files=10, lines=400)  # ~0.3 MB of grep output each time
    grep_tool = workspace(alice, spill_mb=1)["workspace_grep"]
    start = time.time() - 100
    paths = []
    for n in range(6):
        paths.append(spilled_path(grep_tool.call_sync({"pattern": "needle"})))
        os.utime(root / paths[-1], (start + n,) * 2)  # strictly older to newer, whatever the clock's grain
    kept = sorted(p.name for p in (root / SPILL_DIR).iterdir())
    fits = (1024 * 1024) // (root / paths[-1]).stat().st_size
    assert fits == 3 and kept == sorted(path.rsplit("/", 1)[1] for path in paths[-fits:])


def test_retention_deletes_spills_past_their_age_and_says_so(alice: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=250)
    tools = workspace(alice, spill_hours=2)
    path = spilled_path(tools["workspace_grep"].call_sync({"pattern": "needle"}))
    recent = spilled_path(tools["workspace_grep"].call_sync({"pattern": "needle"}))
    os.utime(root / path, (time.time() - 3 * 3600,) * 2)
    (root / SPILL_DIR / "notes.txt").write_text("not a spill")  # left alone whatever its age
    os.utime(root / SPILL_DIR / "notes.txt", (time.time() - 10 * 3600,) * 2)
    spill_folder(root).sweep()
    assert not (root / path).exists() and (root / recent).exists() and (root / SPILL_DIR / "notes.txt").exists()
    gone = (
        f"{path!r} is no longer kept: spilled outputs are kept for up to 2 hours, and the oldest are deleted first "
        "when the folder is full. Make the call that produced it again."
    )
    for name, args in (("workspace_read", {"path": path}), ("workspace_grep", {"pattern": "x", "path": path})):
        with pytest.raises(RetriableError) as refused:
            tools[name].call_sync(args)
        assert str(refused.value) == gone


def test_a_spill_past_the_disk_quota_is_cut_instead(alice: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=1_000)  # ~1.3 MB of grep output, more than the 1 MB quota
    answer = workspace(alice, disk_mb=1)["workspace_grep"].call_sync({"pattern": "needle"})
    assert "[output cut: showed 20,000 of" in answer
    assert "the whole could not be saved: the workspace's disk quota (1 MB) is reached." in answer
    assert not list((root / SPILL_DIR).iterdir())


def test_a_spill_that_cannot_be_written_is_cut_with_the_reason(
    alice: FakeObserver, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(root, files=20, lines=250)

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("toolcards.workspace._spill.atomic_write_at", disk_full)
    answer = workspace(alice)["workspace_grep"].call_sync({"pattern": "needle"})
    assert "the whole could not be saved: no space left on device. Narrow the request" in answer


def test_a_link_in_place_of_the_spill_folder_is_not_followed(alice: FakeObserver, root: Path) -> None:
    plant(root, files=20, lines=250)
    (root / "elsewhere").mkdir()
    (root / ".toolcards").symlink_to("elsewhere")
    answer = workspace(alice)["workspace_grep"].call_sync({"pattern": "needle"})
    assert "the whole could not be saved: '.toolcards/spill' is not a plain directory of the workspace" in answer
    assert not list((root / "elsewhere").iterdir())


def test_names_never_collide(alice: FakeObserver, root: Path) -> None:
    workspace(alice)
    folder = spill_folder(root)
    said = [folder("x" * 100, tool="t", call_id="same", agent=None, from_line=1, from_char=0) for _ in range(50)]
    assert len(set(said)) == 50 and len(list((root / SPILL_DIR).iterdir())) == 50


# -- other OS processes --------------------------------------------------------------------------


def run_child(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=240,
        check=False,
    )


@pytest.mark.slow
def test_a_5_mb_grep_is_read_back_whole_by_a_teammate_in_another_process(isolated_root: Path) -> None:
    with toolcards.Team("acme") as team:
        tree = workspace_dir("acme")
        # Files within grep's first read (64 KB): lines further in are read again one by one.
        plant(tree, files=95, lines=200, width=260)
        whole = grep(tree, "needle", max_results=20_000)
        assert len(whole) > 5_000_000
        card = WorkspaceTool(workspace_grep=WorkspaceGrepParam(max_results=20_000))
        grep_tool = {tool.name: tool for tool in team.member("Alice").factory(card).tools()}["workspace_grep"]
        answer = grep_tool.call_sync({"pattern": "needle"}, channel=TOOL_CALL)
    path = spilled_path(answer)
    assert answer.count("\n") < 200 and f"offset={answer.split(chr(10) + '[… ')[0].count(chr(10)) + 1})" in answer
    child = run_child(
        f"""
        import hashlib, re, toolcards
        from toolcards import TOOL_CALL
        from toolcards.workspace import WorkspaceTool
        numbered = re.compile(r" *(\\d+)\\t(.*)")
        with toolcards.Team("acme") as team:
            tools = {{t.name: t for t in team.member("Bob").factory(WorkspaceTool(read_only=True)).tools()}}
            lines, offset = [], 1
            while True:
                page = tools["workspace_read"].call_sync({{"path": {path!r}, "offset": offset}}, channel=TOOL_CALL)
                shown = [m for m in map(numbered.fullmatch, page.split("\\n")[1:-1]) if m]
                lines += [m[2] for m in shown]
                offset = int(shown[-1][1]) + 1
                if "to continue)" not in page:
                    break
            text = "\\n".join(lines)
            print(len(text), hashlib.sha256(text.encode()).hexdigest())
        """
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == [str(len(whole)), hashlib.sha256(whole.encode()).hexdigest()]


@pytest.mark.slow
def test_two_processes_spilling_at_once_keep_every_output(isolated_root: Path, tmp_path: Path) -> None:
    tree = workspace_dir("acme")
    plant(tree, files=20, lines=250)
    go = tmp_path / "go"
    script = """
        import os, sys, time, toolcards
        from toolcards.workspace import WorkspaceTool
        from toolcards.workspace._tool import WorkspaceGrepParam
        name, go = sys.argv[1], sys.argv[2]
        card = WorkspaceTool(workspace_grep=WorkspaceGrepParam(max_results=20_000))
        with toolcards.Team("acme") as team:
            grep = {t.name: t for t in team.member(name).factory(card).tools()}["workspace_grep"]
            print("ready", flush=True)
            while not os.path.exists(go):  # both start spilling together
                time.sleep(0.005)
            for n in range(10):
                print(grep.call_sync({"pattern": "needle"}, call_id=f"{name}-{n}").rsplit("\\n", 1)[1])
    """
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), name, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
        )
        for name in ("P1", "P2")
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n", child.communicate(timeout=240)
    go.touch()
    outputs = [child.communicate(timeout=240) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in outputs]
    paths = {spilled_path(line) for out, _ in outputs for line in out.splitlines()}
    whole = grep(tree, "needle", max_results=20_000)
    assert len(paths) == 20 and {(tree / path).read_text() == whole for path in paths} == {True}
    assert sorted(p.name for p in (tree / SPILL_DIR).iterdir()) == sorted(p.rsplit("/", 1)[1] for p in paths)


def test_each_member_spills_into_the_tree_its_own_card_reads(alice: FakeObserver, bob: FakeObserver) -> None:
    for observer, workspace_id in ((alice, "team-1"), (bob, "bobs-tree")):
        tree = workspace_dir(workspace_id)
        plant(tree, files=20, lines=250)
        tools = workspace(observer, workspace_id=workspace_id)
        path = spilled_path(tools["workspace_grep"].call_sync({"pattern": "needle"}))
        assert (tree / path).is_file() and "needle" in tools["workspace_read"].call_sync({"path": path, "limit": 1})
