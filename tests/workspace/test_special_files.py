"""Named pipes, sockets and devices in a tree: clear refusals, and nothing ever blocks.

Made for real (``os.mkfifo``, a bound unix socket), as a sandboxed command would. Every
call runs in a thread and fails the test if it does not return within 30 s; afterwards
another agent's write to another file of the tree still goes through, so the tree's actor
was never blocked.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent, bound_unix_socket
from toolcards.workspace._tree import Tree


@pytest.fixture
def unix_socket(a: CheckedAgent) -> Iterator[str]:
    """A listening unix socket at ``sock`` in the tree."""
    server = bound_unix_socket(a.root, "sock")
    server.listen(1)
    yield "sock"
    server.close()


def every_call(path: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("workspace_read", {"path": path}),
        ("workspace_write", {"path": path, "content": "x\n"}),
        ("workspace_edit", {"path": path, "old_string": "a", "new_string": "b"}),
        ("workspace_multi_edit", {"edits": [{"path": path, "old_string": "a", "new_string": "b"}]}),
        ("workspace_patch", {"patch_text": f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"}),
        ("workspace_delete", {"path": path}),
        ("workspace_rmdir", {"path": path}),
    ]


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_pipes_and_sockets_get_clear_refusals_and_block_nothing(
    a: CheckedAgent, b: CheckedAgent, kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "fifo":
        os.mkfifo(a.root / "pipe")
        os.mkfifo(a.root / "pipe.png")
        path, words = "pipe", "is a named pipe, not a regular file"
    else:
        path, words = request.getfixturevalue("unix_socket"), "is a socket, not a regular file"
    for name, args in every_call(path):
        result, message = a.bounded(name, **args)
        assert message is not None, f"{name} on a {kind} was not refused: {result!r}"
        if name == "workspace_rmdir":
            kind_words = "a named pipe" if kind == "fifo" else "a socket"
            assert f"'{path}' is {kind_words}, not a directory" in message
        else:
            assert f"'{path}' {words}" in message, (name, message)
    if kind == "fifo":
        _, message = a.bounded("workspace_view", path="pipe.png")
        assert message is not None and "'pipe.png' is a named pipe, not a regular file" in message
    listing, message = a.bounded("workspace_list")
    assert message is None and f"{path} ({'named pipe' if kind == 'fifo' else 'socket'})" in listing
    # The tree's actor was never blocked: another agent still writes another file.
    created, message = b.bounded("workspace_write", path="other.txt", content="still works\n")
    assert message is None and created == "Created other.txt (1 line)."
    assert stat.S_ISFIFO((a.root / "pipe").stat().st_mode) if kind == "fifo" else (a.root / path).is_socket()


def test_what_a_command_writes_into_a_fifo_stays_in_it(a: CheckedAgent) -> None:
    """A command fills a named pipe; the refused read takes nothing out of it."""
    os.mkfifo(a.root / "feed")
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import os, sys
                fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)  # holds both ends open
                written = 0
                try:
                    while True:
                        written += os.write(fd, b"x" * 4096)
                except BlockingIOError:
                    pass  # the pipe's buffer is full
                print(written, flush=True)
                sys.stdin.read()  # keep the pipe open until the test is done
                """
            ),
            str(a.root / "feed"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        written = int(writer.stdout.readline())
        assert written > 0
        _, message = a.bounded("workspace_read", path="feed")
        assert message is not None and "'feed' is a named pipe, not a regular file" in message
        _, message = a.bounded("workspace_write", path="feed", content="more")
        assert message is not None and "named pipe" in message
        fd = os.open(a.root / "feed", os.O_RDONLY | os.O_NONBLOCK)
        try:
            left = 0
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                left += len(chunk)
        finally:
            os.close(fd)
        assert left == written, "the refused read took data out of the pipe"
    finally:
        writer.kill()
        writer.communicate()


def test_a_character_device_is_refused_and_listed_as_such(a: CheckedAgent) -> None:
    try:
        os.mknod(a.root / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD, which this process lacks")
    _, message = a.bounded("workspace_read", path="null")
    assert message is not None and "'null' is a character device, not a regular file" in message
    _, message = a.bounded("workspace_write", path="null", content="x")
    assert message is not None and "character device" in message
    listing, _ = a.bounded("workspace_list")
    assert "null (character device)" in listing


def test_the_tree_refuses_special_files_directly(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    tree = Tree(tmp_path)
    with pytest.raises(Exception, match="'pipe' is a named pipe, not a regular file"):
        tree.open_file("pipe")
    with pytest.raises(Exception, match="'pipe' is a named pipe"):
        tree.write_bytes("pipe", b"x")
    with pytest.raises(Exception, match="'pipe' is a named pipe"):
        tree.unlink("pipe")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert tree.kind("pipe") == stat.S_IFIFO
