"""``workspace_grep`` narrowed by the trigram index gives exactly ripgrep's answer.

A hypothesis property: random trees (text with Unicode, CRLF and lone CR, invalid UTF-8,
BOMs, NUL bytes, long lines, nested directories, ignore files) and random patterns in the
syntax grep accepts, searched once by ripgrep over the whole tree and once through the
index, with random ``path``, ``include`` and ``max_results``; then the tree is changed as a
shell would (files edited, created, deleted) and through the index's write notices, and
both are compared again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace._grep import grep, to_rust_regex
from toolcards.workspace._index import WorkspaceIndex
from toolcards.workspace._literals import analyse

_OLD = time.time() - 3600

WORDS = [
    "alpha",
    "Beta",
    "gamma",
    "delta",
    "KELVIN",
    "straße",
    "ſtar",
    "café",
    "naïve",
    "x_1",
    "def",
    "ab",
    "αβγ",
    "42",
]
PIECES = st.sampled_from([*WORDS, " ", " ", "\t", "\r", "-", ".", "(", ")", "é", "\u212a", "\ufffd", "0", "9", "_"])
LINE = st.lists(PIECES, max_size=12).map("".join)


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(LINE, max_size=8))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    data = ending.join(lines).encode("utf-8")
    extra = draw(st.sampled_from(["", "", "", "bom", "nul", "invalid", "long", "utf16", "trailing"]))
    if extra == "bom":
        data = b"\xef\xbb\xbf" + data
    elif extra == "nul":
        data += b"\x00beta"
    elif extra == "invalid":
        data = data.replace(b"a", b"\xff", 1) + b"\xc3gamma"
    elif extra == "long":
        data += b"\n" + b"alpha delta " * 400
    elif extra == "utf16":
        data = "\n".join(lines).encode("utf-16")
    elif extra == "trailing":
        data += ending.encode()
    return data


PATHS = st.sampled_from(
    [
        "a.txt",
        "b.py",
        "sub/c.txt",
        "sub/d.md",
        "sub/deep/e.py",
        ".hidden",
        "sub/.f.txt",
        "g.log",
        "build/h.txt",
        "k.TXT",
    ]
)
TREES = st.dictionaries(PATHS, file_bytes(), min_size=1, max_size=8)

ATOMS = st.sampled_from(
    [
        *WORDS,
        "alp",
        "eta",
        "lta",
        r"\d",
        r"\w",
        r"\s",
        ".",
        "[ab]",
        "[a-c]",
        "[^x]",
        r"\b",
        "^",
        "$",
        "(?:alpha|beta)",
        "colou?r",
        "é",
        r"\.",
        r"\(",
        "[éa]",
        r"\t",
    ]
)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = []
    for atom in draw(st.lists(ATOMS, min_size=1, max_size=4)):
        parts.append(atom + draw(st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{1,3}"])))
    body = "".join(parts)
    if draw(st.booleans()):
        body = body + "|" + draw(st.sampled_from(WORDS))
    return draw(st.sampled_from(["", "", "(?i)"])) + body


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="index-grep-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _write(root: Path, files: dict[str, bytes], stamp: float) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (stamp, stamp))  # older than RACY_S: the index trusts the stat


def _answer(root: Path, index: WorkspaceIndex | None, pattern: str, path: str, include: str, limit: int) -> str:
    try:
        return grep(root, pattern, path, include, max_results=limit, index=index)
    except RetriableError as exc:
        return f"refused: {exc}"


_counter = iter(range(10**9))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=TREES,
    ignore=st.sampled_from(["", "*.log\n", "build/\n", "sub/\n!sub/d.md\n", "*.txt\n"]),
    searches=st.lists(
        st.tuples(
            patterns(),
            st.sampled_from(["", "sub", "sub/deep"]),
            st.sampled_from(["", "*.txt", "sub/**", "*.py"]),
            st.sampled_from([1, 3, 100]),
        ),
        min_size=1,
        max_size=4,
    ),
    shell_changes=st.dictionaries(PATHS, st.one_of(st.none(), file_bytes()), max_size=3),
    tool_changes=st.dictionaries(PATHS, st.one_of(st.none(), file_bytes()), max_size=2),
    just_now=st.booleans(),
)
def test_the_index_answers_as_ripgrep(
    scratch: Path,
    files: dict[str, bytes],
    ignore: str,
    searches: list[tuple[str, str, str, int]],
    shell_changes: dict[str, bytes | None],
    tool_changes: dict[str, bytes | None],
    just_now: bool,
) -> None:
    root = scratch / f"t{next(_counter)}"
    root.mkdir()
    _write(root, {**files, ".gitignore": ignore.encode()}, _OLD)
    index = WorkspaceIndex(root)
    try:
        assert index.wait_ready(timeout=60)

        def compare() -> None:
            for pattern, path, include, limit in searches:
                if not (root / path).is_dir():
                    continue
                expected = _answer(root, None, pattern, path, include, limit)
                assert _answer(root, index, pattern, path, include, limit) == expected, (pattern, path, include)

        compare()
        for rel, data in shell_changes.items():  # a shell: the index learns at the next search
            if data is None:
                (root / rel).unlink(missing_ok=True)
            else:
                # Just now: too recent for the index to trust the stat (read at the search).
                _write(root, {rel: data}, time.time() if just_now else _OLD + 10)
        compare()
        for rel, data in tool_changes.items():  # the workspace's own writes: told at once
            if data is None:
                (root / rel).unlink(missing_ok=True)
            else:
                _write(root, {rel: data}, _OLD + 20)
        index.note_written(tool_changes)
        compare()
    finally:
        index.close()
        shutil.rmtree(root, ignore_errors=True)


def test_patterns_with_literals_are_narrowed_and_others_are_not() -> None:
    assert not analyse(to_rust_regex("def handler_5")).query.is_true
    assert not analyse(to_rust_regex(r"def handler_5\d\d_3\b")).query.is_true
    assert not analyse(to_rust_regex("(?i)import (os|sys)")).query.is_true
    for pattern in (".", r"\w+", "ab", "(?i)kkk", r"a.b.c"):
        assert analyse(to_rust_regex(pattern)).query.is_true, pattern
