"""The workspace index: what it holds, how it stays current, and what it does with bad input."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcards.workspace import _index as index_module
from toolcards.workspace import _watch as watch_module
from toolcards.workspace._grep import grep, to_rust_regex
from toolcards.workspace._ignore_rules import IgnoreRules
from toolcards.workspace._index import WorkspaceIndex
from toolcards.workspace._literals import analyse

_OLD = time.time() - 3600


def _write(root: Path, files: dict[str, bytes | str], stamp: float = _OLD) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
        os.utime(path, (stamp, stamp))


def _candidates(index: WorkspaceIndex, pattern: str, below: str = "") -> list[str]:
    index.refresh()
    return index.candidates(analyse(to_rust_regex(pattern)).query, below).files


@pytest.fixture(params=["inotify", "stat walk"])
def tree(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if request.param == "stat walk":
        monkeypatch.setattr(index_module, "inotify_available", lambda root: False)
    elif not watch_module.inotify_available(str(tmp_path)):
        pytest.skip("inotify is not available here")
    _write(
        tmp_path,
        {
            "a.py": "import os\ndef alpha():\n    return 1\n",
            "b.md": "Beta notes\n",
            "bin.dat": b"alpha\x00beta",
            "sub/c.txt": "alpha beta gamma\n",
            "node/x.js": "alpha()\n",
            ".gitignore": "node/\n",
        },
    )
    yield tmp_path


@pytest.fixture
def index(tree: Path) -> Iterator[WorkspaceIndex]:
    built = WorkspaceIndex(tree)
    assert built.wait_ready(60)
    yield built
    built.close()


def test_text_files_are_narrowed_binary_files_dropped_ignored_files_kept_open(index: WorkspaceIndex) -> None:
    assert _candidates(index, "alpha") == ["a.py", "node/x.js", "sub/c.txt"]
    assert _candidates(index, "(?i)BETA") == ["b.md", "node/x.js", "sub/c.txt"]
    assert _candidates(index, "gamma", "sub") == ["sub/c.txt"]
    status = index.status()
    assert status.ready and status.files_done == status.files_total == 6
    assert status.index_bytes > 0


def test_outside_changes_are_seen_at_the_next_search(index: WorkspaceIndex, tree: Path) -> None:
    _write(tree, {"b.md": "now alpha too\n", "sub/deeper/new.txt": "alpha\n"}, _OLD + 5)
    (tree / "a.py").unlink()
    assert _candidates(index, "alpha") == ["b.md", "node/x.js", "sub/c.txt", "sub/deeper/new.txt"]
    os.rename(tree / "sub", tree / "moved")
    assert _candidates(index, "alpha") == ["b.md", "moved/c.txt", "moved/deeper/new.txt", "node/x.js"]


def test_the_workspaces_writes_are_taken_at_once(index: WorkspaceIndex, tree: Path) -> None:
    _write(tree, {"b.md": "alpha\n"}, _OLD + 5)
    index.note_written(["b.md"])
    assert "b.md" in index.candidates(analyse("alpha").query, "").files
    index.note_removed_below("sub")
    assert "sub/c.txt" not in index.candidates(analyse("alpha").query, "").files


def test_a_file_changed_just_now_is_searched_until_its_stat_can_be_trusted(index: WorkspaceIndex, tree: Path) -> None:
    (tree / "b.md").write_text("nothing here\n")  # mtime now: within RACY_S
    assert "b.md" in _candidates(index, "alpha")


def test_huge_files_stay_open(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "MAX_INDEXED_BYTES", 12)
    built = WorkspaceIndex(tree)
    try:
        assert built.wait_ready(60)
        assert "sub/c.txt" in _candidates(built, "zzzz")  # 17 bytes: not indexed, always searched
        assert "b.md" not in _candidates(built, "zzzz")
    finally:
        built.close()


def test_a_file_changing_while_it_is_read_stays_open(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = index_module.text_as_searched

    def changing(fd: int, limit: int) -> str | None:
        text = real(fd, limit)
        if text is not None and text.startswith("Beta"):
            with open(tree / "b.md", "a") as file:
                file.write("more\n")
        return text

    monkeypatch.setattr(index_module, "text_as_searched", changing)
    built = WorkspaceIndex(tree)
    try:
        assert built.wait_ready(60)
        assert "b.md" in _candidates(built, "zzzz")
    finally:
        built.close()


def test_a_changed_ignore_file_rebuilds_the_index(index: WorkspaceIndex, tree: Path) -> None:
    _write(tree, {".gitignore": "sub/\n"}, _OLD + 5)
    index.refresh()
    assert index.wait_ready(60)
    assert _candidates(index, "gamma") == ["sub/c.txt"]  # open now: ignored
    assert _candidates(index, "zzzz") == ["sub/c.txt"]
    assert _candidates(index, "alpha") == ["a.py", "node/x.js", "sub/c.txt"]


def test_a_damaged_index_is_dropped_and_rebuilt(index: WorkspaceIndex) -> None:
    index.check()
    index._entries["a.py"].number = 999
    with pytest.raises(ValueError, match="damaged"):
        index.check()
    assert not index.ready or index.wait_ready(60)
    assert index.wait_ready(60)
    index.check()
    assert _candidates(index, "alpha") == ["a.py", "node/x.js", "sub/c.txt"]


def test_grep_before_the_index_is_ready_is_ripgreps_answer(tree: Path) -> None:
    built = WorkspaceIndex(tree)
    try:
        assert grep(tree, "alpha", index=built) == grep(tree, "alpha")
        assert built.wait_ready(60)
        assert grep(tree, "alpha", index=built) == grep(tree, "alpha")
        assert grep(tree, r"\w+", index=built) == grep(tree, r"\w+")
    finally:
        built.close()


def test_ignore_rules_follow_git() -> None:
    texts = {".gitignore": "*.log\nbuild/\n", "sub/.gitignore": "!keep.log\n", "sub/.ignore": "secret*\n"}
    rules = IgnoreRules.read(texts, texts.get)
    assert rules.ignores("a.log") and rules.ignores("build/x.py") and rules.ignores("sub/build/y")
    assert not rules.ignores("sub/keep.log") and rules.ignores("sub/other.log")
    assert rules.ignores("sub/secret.txt") and not rules.ignores("secret.txt")
    assert not rules.ignores("src/main.py")
    assert not IgnoreRules({}).ignores("a.log")


def test_an_index_that_fails_is_dropped_and_grep_answers_without_it(
    index: WorkspaceIndex, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("damaged")

    monkeypatch.setattr(index, "candidates", broken)
    assert grep(tree, "alpha", index=index) == grep(tree, "alpha")
    assert not index.ready


def test_many_changes_at_once_are_searched_while_a_build_reads_them(
    index: WorkspaceIndex, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "_REINDEX_AT_ONCE", 1)
    # The build waits until the search has been made, however the threads are scheduled.
    searched = threading.Event()
    real = index_module.text_as_searched

    def after_the_search(fd: int, limit: int) -> str | None:
        searched.wait(60)
        return real(fd, limit)

    monkeypatch.setattr(index_module, "text_as_searched", after_the_search)
    _write(tree, {"b.md": "omega\n", "sub/c.txt": "nothing\n", "new.txt": "omega too\n"}, _OLD + 5)
    assert {"b.md", "new.txt", "sub/c.txt"} <= set(_candidates(index, "omega"))
    searched.set()
    assert index.wait_ready(60)
    assert _candidates(index, "omega") == ["b.md", "new.txt", "node/x.js"]  # node/ is ignored: open
