"""A command swapping directories for symlinks cannot make grep or glob show anything from outside.

A real child process flips ``d`` (a directory of the tree) with ``d_link`` (an absolute
symlink to a directory outside) and ``e`` with ``e_link`` (a relative one climbing out),
each with one ``renameat2(RENAME_EXCHANGE)``, in a tight loop, while grep (ripgrep alone, and
narrowed by the workspace index to the few files ``re`` confirms) and glob run over the
whole tree and over ``d``. Every file outside holds a canary in its name and its text; none
may come back. ripgrep opens what lies below its base by name, so it does read outside files
now and then: what it reports is read again through the tree before it is shown.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.workspace.hostile import renameat2_works
from toolcards.errors import RetriableError
from toolcards.workspace._glob import glob
from toolcards.workspace._grep import grep
from toolcards.workspace._index import WorkspaceIndex

pytestmark = pytest.mark.slow

CANARY = "CANARY-outside-the-tree-51c2"
MIN_CALLS = 20
"""Calls of each kind made while the swapper runs, however slow the machine."""
SECONDS_EACH = 2.0

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)

    def exchange(a, b):
        if function is not None:
            done = function(-100, a, -100, b, 2)
        else:  # x86_64 system call number
            done = libc.syscall(316, -100, a, -100, b, 2)
        if done != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    os.chdir(sys.argv[1])
    print("ready", flush=True)
    swaps = 0
    while not os.path.exists(sys.argv[2]):
        for _ in range(50):
            exchange(b"d", b"d_link")
            exchange(b"e", b"e_link")
            swaps += 1
    if swaps % 2:
        exchange(b"d", b"d_link")
        exchange(b"e", b"e_link")
    print(swaps, flush=True)
    """
)


def test_swapping_directories_for_symlinks_never_shows_outside_files(tmp_path: Path) -> None:
    if not renameat2_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available on this kernel or file system")
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    for n in range(40):
        (outside / f"f{n}.txt").write_text(f"hit {CANARY}\n")
        (outside / f"{CANARY}-{n}.txt").write_text("hit\n")
    (outside / "rare.txt").write_text(f"needle {CANARY}\n")
    for directory in ("d", "e"):
        (root / directory).mkdir()
        for n in range(40):
            (root / directory / f"f{n}.txt").write_text("hit inside\n")
        (root / directory / "rare.txt").write_text("needle inside\n")
    (root / "d_link").symlink_to(outside)
    (root / "e_link").symlink_to(os.path.relpath(outside, root))

    index = WorkspaceIndex(root)
    assert index.wait_ready(timeout=60)
    calls: list[tuple[str, Callable[[], str]]] = [
        ("grep, whole tree", lambda: grep(root, "hit")),
        ("grep, in d", lambda: grep(root, "hit", "d")),
        ("grep indexed, whole tree", lambda: grep(root, "needle", index=index)),
        ("grep indexed, in d", lambda: grep(root, "needle", "d", index=index)),
        ("glob, whole tree", lambda: glob(root, "**/*.txt")),
        ("glob, in d", lambda: glob(root, "**/*.txt", "d")),
    ]
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(stop)], stdout=subprocess.PIPE, text=True)
    assert swapper.stdout is not None
    assert swapper.stdout.readline().strip() == "ready"
    leaks: dict[str, int] = {}
    counts: dict[str, int] = {}
    try:
        for label, call in calls:
            finish = time.monotonic() + SECONDS_EACH
            # At least MIN_CALLS each, however slow the machine: the race needs calls, not time.
            while time.monotonic() < finish or counts.get(label, 0) < MIN_CALLS:
                try:
                    out = call()
                except RetriableError as exc:  # the walk met the link: refused
                    out = str(exc)
                counts[label] = counts.get(label, 0) + 1
                if CANARY in out:
                    leaks[label] = leaks.get(label, 0) + 1
    finally:
        stop.write_text("")
        index.close()
        swaps = int(swapper.communicate(timeout=30)[0].strip() or 0)
    print(f"{swaps} swaps; calls: {counts}")
    assert swaps > 0 and all(count >= MIN_CALLS for count in counts.values())
    assert leaks == {}
