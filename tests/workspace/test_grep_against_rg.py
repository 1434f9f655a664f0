"""``workspace_grep`` shows exactly the lines ripgrep prints, on both roads.

A hypothesis property over what lines may end with (``\\n``, ``\\r\\n``, a lone ``\\r``, nothing),
byte-order marks (one, two or three UTF-8 marks, one or two UTF-16 ones) and the ASCII
characters whose classes differ between engines (U+001C–U+001F, ``\\v``, ``\\f``): each tree is
searched by ``rg`` itself, the reference, and by ``grep`` through ripgrep alone and through a
ready index, which hands small ASCII files to Python's ``re``.
"""

from __future__ import annotations

import codecs
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toolcards.workspace._grep import find_rg, grep, to_rust_regex
from toolcards.workspace._grep_lines import clip_line
from toolcards.workspace._index import WorkspaceIndex

_OLD = time.time() - 3600

PIECES = st.sampled_from(
    ["needle", "word", "x1", " ", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "_", "-", "é", "\ufeff", "\r"]
)
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.lists(PIECES, max_size=6).map("".join), min_size=1, max_size=5))
    text = "".join(line + draw(ENDINGS) for line in lines[:-1]) + lines[-1]
    text += draw(st.sampled_from(["", "\n", "\r\n", "\r", "\r\r"]))
    mark = draw(st.sampled_from(["", "", "utf-8", "utf-8 twice", "utf-8 thrice", "utf-16", "utf-16 twice"]))
    if mark.startswith("utf-16"):
        return codecs.BOM_UTF16_LE * (2 if mark.endswith("twice") else 1) + text.encode("utf-16-le")
    marks = {"": 0, "utf-8": 1, "utf-8 twice": 2, "utf-8 thrice": 3}[mark]
    return codecs.BOM_UTF8 * marks + text.encode("utf-8")


PATTERNS = [
    "needle",
    r"needle\s",
    r"needle\S",
    r"word\s+\w",
    r"\bneedle\b",
    "needle$",
    "^needle",
    r"needle\d?",
    "(?i)NEEDLE",
    r"needle.\w",
    r"[^\s]needle",
    r"wor\W",
    r"x1\s*needle",
]


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="grep-against-rg-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _rg_lines(root: Path, pattern: str) -> list[str]:
    """What ``rg`` prints for ``pattern``, as ``grep`` shows it: ``path:line: text``.

    ripgrep ends each line it prints with the line's break, and gives a last line without one
    ``\\r\\n`` under ``--crlf``: one ``\\r`` comes off.
    """
    rg = find_rg()
    assert rg is not None
    command = [rg, "--no-config", "--no-mmap", "--encoding", "utf-8", "--crlf", "--no-ignore", "--hidden"]
    command += ["--null", "--line-number", "--no-heading", "--color", "never", "--regexp", to_rust_regex(pattern)]
    output = subprocess.run([*command, "--", "."], cwd=root, capture_output=True, check=False).stdout
    lines = []
    for record in output.split(b"\n")[:-1]:
        path, _, rest = record.partition(b"\0")
        number, _, text = rest.partition(b":")
        shown = clip_line(text.removesuffix(b"\r").decode("utf-8", "replace"), 0)
        lines.append(f"{os.fsdecode(path).removeprefix('./')}:{int(number)}: {shown}")
    return sorted(lines, key=lambda line: (line.split(":", 1)[0].split("/"), int(line.split(":")[1])))


_counter = iter(range(10**9))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(file_bytes(), min_size=1, max_size=4), patterns=st.lists(st.sampled_from(PATTERNS), max_size=3))
@example(files=[b"first needle\rsecond line\r", b"one\r\nlast needle\r"], patterns=[])
@example(files=[codecs.BOM_UTF8 * 2 + b"needle\n", codecs.BOM_UTF8 * 3 + b"needle\n"], patterns=["^needle"])
@example(files=[b"needle\x1fword\nneedle\x0bword\n"], patterns=[r"needle\s", r"needle\S"])
def test_both_roads_show_what_ripgrep_prints(scratch: Path, files: list[bytes], patterns: list[str]) -> None:
    root = scratch / f"t{next(_counter)}"
    contents = {f"f{n}.txt": data for n, data in enumerate(files)}
    # Files without the pattern's words: the index narrows the search to the few that hold them.
    contents.update({f"pad/p{n}.txt": b"nothing to see\n" for n in range(12)})
    for rel, data in contents.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (_OLD, _OLD))  # older than the index's racy window: it trusts what it read
    index = WorkspaceIndex(root)
    try:
        assert index.wait_ready(timeout=60)
        for pattern in ["needle", *patterns]:
            expected = _rg_lines(root, pattern)
            for road in (None, index):
                answer = grep(root, pattern, index=road)
                shown = [] if answer.startswith("No matches") else answer.split("\n")
                assert shown == expected, (pattern, "indexed" if road else "ripgrep", contents)
    finally:
        index.close()
        shutil.rmtree(root, ignore_errors=True)
