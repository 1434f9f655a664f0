"""``Tree``: paths walked from the root's handle, links, regular files only, errors in words."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolcards.core._deadline import deadline_after
from toolcards.errors import RetriableError, ToolFailed, ToolTimeout
from toolcards.workspace._os_errors import describe, file_error
from toolcards.workspace._paths import ESCAPE_MESSAGE
from toolcards.workspace._tree import MAX_SYMLINKS, Tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "src" / "pkg").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("a = 1\n")
    (tree / "src" / "pkg" / "b.py").write_text("b = 2\n")
    return tree


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("secret")
    return place


def read(tree: Tree, path: str) -> tuple[str, bytes]:
    with tree.open_file(path) as file:
        return file.rel, file.read_all(1 << 20, too_large="")


# -- paths ------------------------------------------------------------------------------------------


def test_paths_resolve_to_canonical_relative_paths(root: Path) -> None:
    tree = Tree(root)
    assert read(tree, "src/a.py") == ("src/a.py", b"a = 1\n")
    assert read(tree, "./src//pkg/../a.py")[0] == "src/a.py"
    assert tree.resolve("") == tree.resolve(".") == "."
    assert tree.resolve("src/new/deeper/file.txt") == "src/new/deeper/file.txt"
    assert tree.resolve("src/missing/../a.py") == "src/a.py"


@pytest.mark.parametrize("path", ["..", "../x", "src/../../x", "/etc/passwd", "/", "\\server\\share", "a\x00b"])
def test_paths_out_of_the_tree_are_refused_with_one_message(root: Path, path: str) -> None:
    with pytest.raises(RetriableError) as info:
        Tree(root).open_file(path)
    assert str(info.value) == f"{ESCAPE_MESSAGE} (got {path!r})"


def test_a_path_that_is_not_valid_text_is_refused(root: Path) -> None:
    with pytest.raises(RetriableError, match="not valid text"):
        Tree(root).resolve("bad\ud800name")


def test_links_inside_the_tree_are_followed_component_by_component(root: Path) -> None:
    (root / "alias.py").symlink_to("src/a.py")
    (root / "lib").symlink_to("src/pkg")
    (root / "src" / "pkg" / "up").symlink_to("..")
    (root / "absolute").symlink_to(root / "src")  # an absolute link that stays inside
    tree = Tree(root)
    assert read(tree, "alias.py") == ("src/a.py", b"a = 1\n")
    assert read(tree, "lib/b.py")[0] == "src/pkg/b.py"
    assert read(tree, "lib/up/a.py")[0] == "src/a.py"
    assert read(tree, "absolute/pkg/b.py")[0] == "src/pkg/b.py"


def test_links_that_leave_the_tree_are_refused_even_to_come_back(root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside)
    (root / "out_file").symlink_to(outside / "secret.txt")
    (root / "src" / "up2").symlink_to("../..")
    tree = Tree(root)
    for path in ("out/secret.txt", "out_file", "src/up2/outside/secret.txt", f"src/up2/{root.name}/src/a.py"):
        with pytest.raises(RetriableError, match="path escapes the workspace root"):
            tree.open_file(path)
        with pytest.raises(RetriableError, match="path escapes the workspace root"):
            tree.write_bytes(path, b"x")
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_link_loop_is_refused_in_words(root: Path) -> None:
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    with pytest.raises(RetriableError, match="too many levels of symbolic links"):
        Tree(root).open_file("loop_a/x")
    chain = [f"l{n}" for n in range(MAX_SYMLINKS + 2)]
    for name, target in zip(chain, [*chain[1:], "src"], strict=True):
        (root / name).symlink_to(target)
    with pytest.raises(RetriableError, match="too many levels of symbolic links"):
        Tree(root).open_file("l0/a.py")


# -- reading ---------------------------------------------------------------------------------------


def test_only_regular_files_are_opened(root: Path) -> None:
    os.mkfifo(root / "pipe")
    tree = Tree(root)
    with pytest.raises(RetriableError, match="'pipe' is a named pipe, not a regular file"):
        tree.open_file("pipe")
    with pytest.raises(RetriableError, match=re.escape("'src' is a directory, not a file. Call workspace_list")):
        tree.open_file("src")
    with pytest.raises(RetriableError, match=re.escape("File 'nope.txt' does not exist. Call workspace_glob")):
        tree.open_file("nope.txt")
    with pytest.raises(RetriableError, match=re.escape("File 'src/a.py/x' does not exist")):
        tree.open_file("src/a.py/x")


def test_a_file_too_large_is_refused_before_it_is_read(root: Path) -> None:
    with open(root / "huge.bin", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(RetriableError, match=r"'huge.bin' is 50.0 MB, more than the 16.0 MB .* Split it"):
        Tree(root).read_bytes("huge.bin", max_bytes=16 * 1024 * 1024, too_large="Split it.")


def test_a_file_that_changes_while_it_is_read_is_reported(root: Path) -> None:
    tree = Tree(root)
    with tree.open_file("src/a.py") as file:
        (root / "src" / "a.py").open("a").write("more = 3\n")  # in place, as a command appends
        with pytest.raises(
            RetriableError, match=re.escape("'src/a.py' changed while it was being read. Read it again.")
        ):
            file.read_all(1 << 20, too_large="")


def test_a_missing_file_reads_as_nothing_when_allowed(root: Path) -> None:
    current = Tree(root).read_bytes("src/new.py", max_bytes=100, too_large="", missing_ok=True)
    assert (current.rel, current.data, current.mode) == ("src/new.py", None, None)
    assert Tree(root).kind("src/a.py/below") is None
    assert Tree(root).kind("src") == stat.S_IFDIR


# -- changing --------------------------------------------------------------------------------------


def test_writes_are_atomic_create_parents_and_keep_permissions(root: Path) -> None:
    tree = Tree(root)
    (root / "run.sh").write_text("old")
    (root / "run.sh").chmod(0o750)
    assert tree.write_bytes("run.sh", b"new") == "run.sh"
    assert (root / "run.sh").read_bytes() == b"new" and stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o750
    assert tree.write_bytes("a/b/c.txt", b"deep") == "a/b/c.txt"
    assert (root / "a" / "b" / "c.txt").read_bytes() == b"deep"
    assert not list(root.rglob("*.tmp"))


def test_a_write_makes_a_chain_of_new_parents_of_any_depth(root: Path) -> None:
    # Each parent made used to count as a retry of a path in flux: past 16 the write failed
    # with "kept changing" and left the first 16 behind.
    deep = "/".join(f"d{level}" for level in range(40)) + "/f.txt"
    assert Tree(root).write_bytes(deep, b"deep") == deep
    assert (root / deep).read_bytes() == b"deep"


def test_a_write_through_a_link_replaces_its_target_inside_the_tree(root: Path) -> None:
    (root / "alias.py").symlink_to("src/a.py")
    assert Tree(root).write_bytes("alias.py", b"a = 2\n") == "src/a.py"
    assert (root / "alias.py").is_symlink() and (root / "src" / "a.py").read_text() == "a = 2\n"


def test_writes_refuse_directories_and_paths_below_files(root: Path) -> None:
    tree = Tree(root)
    with pytest.raises(RetriableError, match="Cannot write 'src': it is a directory"):
        tree.write_bytes("src", b"x")
    with pytest.raises(RetriableError, match=re.escape("Cannot write 'src/a.py/x.txt': a parent of it is a file")):
        tree.write_bytes("src/a.py/x.txt", b"x")


def test_delete_removes_a_link_not_its_target(root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside / "secret.txt")
    tree = Tree(root)
    assert tree.unlink("out") == "out"
    assert not (root / "out").is_symlink() and (outside / "secret.txt").read_text() == "secret"
    with pytest.raises(RetriableError, match="'src' is a directory; workspace_delete removes files only"):
        tree.unlink("src")


def test_make_and_remove_directories(root: Path, outside: Path) -> None:
    tree = Tree(root)
    assert tree.make_directory("x/y") == ("x/y", True)
    assert tree.make_directory("x/y") == ("x/y", False)
    with pytest.raises(RetriableError, match="it or one of its parents is a file"):
        tree.make_directory("src/a.py/z")
    with pytest.raises(RetriableError, match=r"Directory 'x' is not empty \(1 entry\)"):
        tree.remove_directory("x")
    (root / "x" / "y" / "link").symlink_to(outside)
    assert tree.remove_directory("x", recursive=True) == "x"
    assert not (root / "x").exists() and (outside / "secret.txt").exists()
    (root / "dirlink").symlink_to("src")
    with pytest.raises(RetriableError, match="'dirlink' is a symbolic link, not a directory"):
        tree.remove_directory("dirlink", recursive=True)
    assert (root / "src" / "a.py").exists()
    with pytest.raises(RetriableError, match="root cannot be removed"):
        tree.remove_directory("", recursive=True)


def test_a_recursive_removal_stops_at_the_deadline(root: Path) -> None:
    big = root / "big"
    big.mkdir()
    for n in range(500):
        (big / f"{n}.txt").write_text("x")
    with deadline_after(0.0), pytest.raises(ToolTimeout):
        Tree(root).remove_directory("big", recursive=True)
    assert big.exists()


def test_streaming_stops_at_the_deadline(root: Path) -> None:
    (root / "long.txt").write_bytes(b"x\n" * 1_000_000)
    with Tree(root).open_file("long.txt") as file, deadline_after(0.0), pytest.raises(ToolTimeout):
        file.digest()


def test_listing_reads_at_most_its_limit(root: Path) -> None:
    for n in range(30):
        (root / "src" / f"f{n}.txt").write_text("")
    with Tree(root).directory("src") as directory:
        entries, more = directory.entries(limit=10)
    assert len(entries) == 10 and more


# -- errors in words ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "words", "kind"),
    [
        (13, "permission denied", ToolFailed),
        (28, "no space left on the device", ToolFailed),
        (30, "the file system is read-only", ToolFailed),
        (5, "an input/output error", ToolFailed),
        (36, "a name in the path is too long", RetriableError),
        (95, "operation not supported", ToolFailed),
    ],
)
def test_os_errors_become_words_without_paths_or_class_names(code: int, words: str, kind: type) -> None:
    exc = OSError(code, os.strerror(code), "/host/secret/path/file.txt")
    error = file_error(exc, "write", "docs/file.txt")
    assert isinstance(error, kind)
    assert str(error).startswith(f"Cannot write 'docs/file.txt': {words}")
    assert "/host" not in str(error) and "Error" not in str(error)
    assert describe(exc).startswith(words)


def test_permission_denied_by_the_file_system(root: Path) -> None:
    """A real refusal by the kernel: an immutable directory refuses even root."""
    locked = root / "locked"
    locked.mkdir()
    (locked / "f.txt").write_text("x")
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(locked)], check=False).returncode != 0:
            pytest.skip("running as root, where chmod does not deny, and chattr +i is not available here")
    else:
        locked.chmod(0o500)
    try:
        tree = Tree(root)
        with pytest.raises(ToolFailed) as info:
            tree.write_bytes("locked/new.txt", b"x")
        assert str(info.value) in (
            "Cannot write 'locked/new.txt': permission denied.",
            "Cannot write 'locked/new.txt': the operation is not permitted.",
        )
        with pytest.raises(ToolFailed, match=r"Cannot delete 'locked/f.txt': (permission denied|the operation)"):
            tree.unlink("locked/f.txt")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(locked)], check=False)
        else:
            locked.chmod(0o700)


NO_SPACE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from toolcards.errors import ToolFailed
    from toolcards.workspace._tree import Tree

    tree = Tree(Path(sys.argv[1]))
    tree.write_bytes("keep.txt", b"original")
    try:
        tree.write_bytes("keep.txt", b"x" * (2 * 1024 * 1024))
    except ToolFailed as exc:
        print(exc)
    print(Path(sys.argv[1], "keep.txt").read_bytes().decode(), sorted(os.listdir(sys.argv[1])))
    """
)


def test_no_space_left_on_the_device(tmp_path: Path) -> None:
    """A real ENOSPC: a 1 MB tmpfs mounted in a private mount namespace of a child."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    small = tmp_path / "small"
    small.mkdir()
    script = f'mount -t tmpfs -o size=1m tmpfs "$1" && exec "{sys.executable}" -c "$2" "$1"'
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(small), NO_SPACE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "mount" in done.stderr + done.stdout:
        pytest.skip(f"cannot mount a tmpfs in a private namespace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    message, left = done.stdout.strip().split("\n")
    assert message == "Cannot write 'keep.txt': no space left on the device."
    assert left == "original ['keep.txt']"  # the old content, and no temporary left behind
