"""A command that swaps workspace directories for symlinks while tools run cannot lead them out.

A real child process flips ``d`` (a directory of the tree) with ``d_link`` (a symlink to a
directory outside the tree, by absolute path) and ``e`` with ``e_link`` (a relative link
that climbs out), each with one ``renameat2(RENAME_EXCHANGE)``, in a tight loop, while this
process calls the workspace tools through the real card on paths under ``d/`` and ``e/``.
Every file outside holds a canary. Whatever the interleaving: no canary comes back, nothing
outside is created, changed or deleted, and every refusal is a clear message (checked by
:class:`~tests.workspace.hostile.CheckedAgent`).
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent, renameat2_works
from toolcards.testing import FakeObserver

pytestmark = pytest.mark.slow

CANARY = "CANARY-outside-the-tree-7f3a"
FILES = [f"f{n}.txt" for n in range(8)]
MIN_SECONDS = 6.0
MIN_OPERATIONS = 3000
MAX_SECONDS = 120.0

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    renameat2 = getattr(libc, "renameat2", None)

    def exchange(a, b):
        if renameat2 is not None:
            done = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
        else:  # x86_64 system call number
            done = libc.syscall(316, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
        if done != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    os.chdir(sys.argv[1])
    stop = sys.argv[2]
    pairs = [(b"d", b"d_link"), (b"e", b"e_link")]
    swaps = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        for _ in range(50):
            for a, b in pairs:
                exchange(a, b)
                swaps += 1
    if (swaps // len(pairs)) % 2:  # leave each pair as it was
        for a, b in pairs:
            exchange(a, b)
    print(swaps, flush=True)
    """
)


def fingerprint(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "->" + os.readlink(path)
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[str(path)] = "dir"
    return found


def png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(buffer, "PNG")
    return buffer.getvalue()


def test_swapping_directories_for_symlinks_never_leads_a_tool_outside(alice: FakeObserver, tmp_path: Path) -> None:
    if not renameat2_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available on this kernel or file system")
    have_pillow = True
    try:
        outside_png, inside_png = png((255, 0, 0)), png((0, 0, 255))
    except ImportError:
        have_pillow = False
        outside_png, inside_png = b"", b""
    agent = CheckedAgent(alice, tmp_path)
    root = agent.root
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in [*FILES, "edit.txt"]:
        (outside / name).write_text(f"alpha {CANARY}\n")
    for n in range(4000):
        (outside / f"del{n}.txt").write_text(CANARY)
    (outside / f"only-outside-{CANARY}.txt").write_text(CANARY)
    (outside / "img.png").write_bytes(outside_png)
    for directory in ("d", "e"):
        (root / directory).mkdir()
        for name in FILES:
            (root / directory / name).write_text(f"inside {directory}/{name}\n")
        (root / directory / "edit.txt").write_text("alpha\n")
        (root / directory / "img.png").write_bytes(inside_png)
        for n in range(2000):
            (root / directory / f"del{n}.txt").write_text("inside\n")
    (root / "d_link").symlink_to(outside)  # absolute, as a command would plant it
    (root / "e_link").symlink_to(os.path.relpath(outside, root))  # "../../outside"
    before = fingerprint(outside)

    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(stop)], stdout=subprocess.PIPE, text=True)
    assert swapper.stdout is not None
    assert swapper.stdout.readline().strip() == "ready"

    returned: list[str] = []
    started = time.monotonic()
    operations = refused = 0
    deleted = 0
    try:
        while True:
            elapsed = time.monotonic() - started
            if (elapsed >= MIN_SECONDS and operations >= MIN_OPERATIONS) or elapsed >= MAX_SECONDS:
                break
            for directory in ("d", "e"):
                name = FILES[operations % len(FILES)]
                outcomes = [
                    agent.attempt("workspace_read", path=f"{directory}/{name}"),
                    agent.attempt("workspace_list", path=directory),
                    agent.attempt("workspace_list", path=directory, depth=0),
                    agent.attempt("workspace_write", path=f"{directory}/new{operations}.txt", content="new\n"),
                    agent.attempt("workspace_read", path=f"{directory}/edit.txt"),
                    agent.attempt(
                        "workspace_edit", path=f"{directory}/edit.txt", old_string="alpha", new_string="beta"
                    ),
                    agent.attempt(
                        "workspace_edit", path=f"{directory}/edit.txt", old_string="beta", new_string="alpha"
                    ),
                    agent.attempt("workspace_delete", path=f"{directory}/del{deleted}.txt"),
                    agent.attempt("workspace_mkdir", path=f"{directory}/made{operations}"),
                ]
                if have_pillow:
                    image, message = agent.attempt("workspace_view", path=f"{directory}/img.png")
                    assert image is None or image.data != outside_png, "an image from outside was returned"
                    outcomes.append((None, message))
                deleted += 1
                operations += len(outcomes)
                for result, message in outcomes:
                    if message is not None:
                        refused += 1
                    elif isinstance(result, str):
                        returned.append(result)
                assert not any(CANARY in text for text in returned[-len(outcomes) :]), returned[-len(outcomes) :]
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=60)
    swaps = int(out.split()[-1])

    assert swapper.returncode == 0
    assert swaps > 1000, f"the swapper made only {swaps} swaps: the race was not exercised"
    assert operations >= MIN_OPERATIONS, f"only {operations} operations in {MAX_SECONDS:g} s"
    assert not any(CANARY in text for text in returned)
    assert fingerprint(outside) == before, "a file outside the tree was created, changed or deleted"
    # The tools did work inside the tree while the swaps went on (roughly half the time).
    assert refused < operations
    assert any((root / "d").glob("new*.txt")) and any((root / "e").glob("made*"))
