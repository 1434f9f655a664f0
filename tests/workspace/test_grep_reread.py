"""The lines ripgrep reports are read again from the tree in one forward pass per file.

Every matching line of an unchanged file is shown, however far into it, as long as the call's
reading budget lasts; a line the file no longer holds is left out, and each note gives its
true reason: the file changed, or the budget was spent.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolcards.workspace import _grep as grep_module
from toolcards.workspace import _grep_reread as reread_module
from toolcards.workspace._grep import MAX_GREP_COLLECTED, grep

LINES = 15_000
"""Matching lines in the large file: about 250 KB, all but the first few thousand past 64 KB."""


def numbered(index: int) -> str:
    """The text of matching line ``index`` (from 0), as it is shown."""
    return f"{index:05} needle {'x' * (index % 7)}"


def large_file(kind: str) -> tuple[bytes, int]:
    """The bytes of a file of :data:`LINES` matching lines, and the line number of the first."""
    text = "".join(numbered(index) + "\n" for index in range(LINES))
    if kind == "ascii":
        return text.encode(), 1
    if kind == "multibyte":  # ripgrep's offsets are bytes, the lines' lengths characters
        return text.replace("x", "é").encode(), 1
    if kind == "crlf":
        return text.replace("\n", "\r\n").encode(), 1
    if kind == "bom":  # ripgrep's offsets start after the byte-order mark
        return codecs.BOM_UTF8 + text.encode(), 1
    if kind == "latin1":  # an invalid byte first: every later offset is off, lines are counted
        return b"caf\xe9\n" + text.encode(), 2
    assert kind == "utf16"  # offsets count transcoded bytes: lines are counted
    return codecs.BOM_UTF16_LE + text.encode("utf-16-le"), 1


KINDS = ["ascii", "multibyte", "crlf", "bom", "latin1", "utf16"]


def shown_lines(answer: str, name: str = "big.txt") -> list[str]:
    return [line for line in answer.splitlines() if line.startswith(f"{name}:")]


def expected_lines(first: int, kind: str, count: int = LINES) -> list[str]:
    texts = [numbered(index) for index in range(count)]
    if kind == "multibyte":
        texts = [text.replace("x", "é") for text in texts]
    return [f"big.txt:{first + index}: {text}" for index, text in enumerate(texts)]


@pytest.mark.parametrize("kind", KINDS)
def test_every_match_of_an_unchanged_large_file_is_shown(tmp_path: Path, kind: str) -> None:
    content, first = large_file(kind)
    assert len(content) > 3 * 64 * 1024
    (tmp_path / "big.txt").write_bytes(content)
    answer = grep(tmp_path, "needle", max_results=MAX_GREP_COLLECTED)
    assert answer.splitlines() == expected_lines(first, kind)


@pytest.mark.parametrize("kind", ["ascii", "utf16"])
def test_a_budget_the_size_of_the_file_reads_all_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # Each byte is read once, by offset or by counting lines, whatever the lines shown.
    content, first = large_file(kind)
    (tmp_path / "big.txt").write_bytes(content)
    monkeypatch.setattr(reread_module, "REREAD_BYTES", len(content))
    answer = grep(tmp_path, "needle", max_results=MAX_GREP_COLLECTED)
    assert answer.splitlines() == expected_lines(first, kind)


def test_lines_past_the_budget_are_not_shown_and_the_note_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    content, _ = large_file("ascii")
    (tmp_path / "big.txt").write_bytes(content)
    budget = 2 * 64 * 1024  # files are read 64 KB at a time
    monkeypatch.setattr(reread_module, "REREAD_BYTES", budget)
    monkeypatch.setattr(grep_module, "REREAD_BYTES", 1024 * 1024)  # the figure the note gives
    *lines, unread_note, showing_note = grep(tmp_path, "needle", max_results=MAX_GREP_COLLECTED).splitlines()
    # The first 64 KB cost nothing, then the budget buys as many bytes of lines again (but for
    # the line that runs past them).
    assert 64 * 1024 + budget - 100 <= sum(len(line.split(": ", 1)[1]) + 1 for line in lines) <= 64 * 1024 + budget
    assert lines == expected_lines(1, "ascii", len(lines))
    unread = LINES - len(lines)
    assert unread_note == (
        f"({unread} matching lines were not shown: each line is read again from its file before it is shown, "
        "and this call had read the 1 MB it may read for that)"
    )
    assert showing_note == (
        f"(showing {len(lines)} of {LINES} matching lines in 1 files; narrow the pattern, path or include to see "
        "the rest)"
    )


def changed_before_reread(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    """Make ``change`` run after ripgrep searched and before its lines are read again."""
    real = grep_module.render_found

    def render_found(*args: Any) -> Any:
        change()
        return real(*args)

    monkeypatch.setattr(grep_module, "render_found", render_found)


@pytest.mark.parametrize("kind", ["ascii", "latin1"])
def test_lines_a_large_file_no_longer_holds_are_left_out_as_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    content, first = large_file(kind)
    target = tmp_path / "big.txt"
    target.write_bytes(content)
    gone = [5_000, 9_000, 14_999]

    def change() -> None:
        # Same length, so that every other line stays at the offset ripgrep reported.
        with open(target, "r+b") as handle:
            for index in gone:
                handle.seek(content.index(numbered(index).encode()))
                handle.write(numbered(index).replace("needle", "thread").encode())

    changed_before_reread(monkeypatch, change)
    answer = grep(tmp_path, "needle", max_results=MAX_GREP_COLLECTED)
    expected = [line for index, line in enumerate(expected_lines(first, kind)) if index not in gone]
    assert answer.splitlines() == [
        *expected,
        "(3 matching lines were left out: their files changed while being searched)",
    ]


def test_a_large_file_replaced_whole_is_left_out_as_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, _ = large_file("ascii")
    target = tmp_path / "big.txt"
    target.write_bytes(content)
    (tmp_path / "small.txt").write_text("a needle\n")

    def change() -> None:
        target.write_bytes(content.replace(b"needle", b"thread"))
        os.utime(target)

    changed_before_reread(monkeypatch, change)
    answer = grep(tmp_path, "needle", max_results=MAX_GREP_COLLECTED)
    assert answer.splitlines() == [
        "small.txt:1: a needle",
        f"({LINES} matching lines were left out: their files changed while being searched)",
    ]
