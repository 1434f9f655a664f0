"""Line endings, line splitting, numbered quotes and the closest block, unified diffs and the change diff."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace._patch import apply_file_patch, parse_patch
from toolcards.workspace._text import (
    change_diff,
    closest_block,
    detect_newline,
    file_text,
    quote_lines,
    split_lines,
    to_newline,
    unified_diff,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\nb\n", "\n"),
        ("a\r\nb\r\n", "\r\n"),
        ("a\r\nb\r\nc\n", "\r\n"),
        ("a\nb\nc\r\n", "\n"),
        ("a\r\nb\n", "\n"),
        ("no line break", "\n"),
        ("", "\n"),
        ("old\rmac\r", "\n"),
    ],
)
def test_detect_newline_picks_the_majority_and_defaults_to_lf(text: str, expected: str) -> None:
    assert detect_newline(text) == expected


def test_to_newline_converts_both_ways_and_leaves_lone_cr() -> None:
    assert to_newline("a\r\nb\nc", "\r\n") == "a\r\nb\r\nc"
    assert to_newline("a\r\nb\nc\r\n", "\n") == "a\nb\nc\n"
    assert to_newline("a\rb\n", "\r\n") == "a\rb\r\n"


def test_to_newline_rejects_an_unknown_ending() -> None:
    with pytest.raises(ValueError, match="nl must be"):
        to_newline("a", "\r")


@given(st.text(alphabet="ab\r\n ", max_size=40))
def test_split_lines_keeps_every_character(text: str) -> None:
    lines = split_lines(text)
    assert "".join(lines) == text
    assert all(line.endswith("\n") for line in lines[:-1])
    assert all("\n" not in line[:-1] for line in lines)


def test_split_lines_of_empty_text_is_empty() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a\n"]


def test_quote_lines_numbers_cuts_and_counts_the_rest() -> None:
    lines = [f"line {n}\n" for n in range(1, 13)]
    quoted = quote_lines(lines, 95, limit=3)
    assert quoted.splitlines() == ["   95 | line 1", "   96 | line 2", "   97 | line 3", "  ... 9 more lines"]
    long = quote_lines(["x" * 200], 1, width=20)
    assert long == "  1 | " + "x" * 17 + "..."
    assert quote_lines([], 1) == ""


def test_closest_block_finds_the_most_similar_run() -> None:
    lines = ["alpha", "beta", "gamma", "delta"]
    assert closest_block(lines, ["gamma", "delt"])[:2] == (2, 2)  # type: ignore[index]
    assert closest_block(lines, []) is None
    start, count, score = closest_block(["x"], ["a", "b", "c"])  # type: ignore[misc]
    assert (start, count) == (0, 1)
    assert 0 <= score <= 100


def test_unified_diff_has_git_style_headers_and_hunks() -> None:
    diff = unified_diff("a\nb\nc\n", "a\nB\nc\n", "src/x.py")
    assert diff.splitlines() == ["--- a/src/x.py", "+++ b/src/x.py", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]


def test_unified_diff_of_equal_texts_is_empty() -> None:
    assert unified_diff("same\n", "same\n", "x") == ""


def test_unified_diff_names_dev_null_for_added_and_deleted_files() -> None:
    added = unified_diff(None, "new\n", "n.txt")
    assert added.startswith("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+new\n")
    deleted = unified_diff("old\n", None, "o.txt")
    assert deleted.startswith("--- a/o.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n")


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a\nb", "a\nb\n", "x")
    assert diff.endswith("-b\n\\ No newline at end of file\n+b\n")


def test_unified_diff_shows_crlf_content_as_lf() -> None:
    diff = unified_diff("a\r\nb\r\n", "a\r\nB\r\n", "x")
    assert "\r" not in diff
    assert "-b\n+B\n" in diff


def test_unified_diff_says_when_only_line_endings_changed() -> None:
    note = unified_diff("a\nb\n", "a\r\nb\r\n", "x.txt")
    assert note == "x.txt: only the line endings changed (LF -> CRLF).\n"


def test_unified_diff_is_capped_and_says_how_much_was_cut() -> None:
    old = "".join(f"{n}\n" for n in range(100))
    new = "".join(f"{n}!\n" for n in range(100))
    full = unified_diff(old, new, "x", max_lines=None)
    capped = unified_diff(old, new, "x", max_lines=10)
    total = len(full.splitlines())
    assert capped.splitlines()[:10] == full.splitlines()[:10]
    assert capped.splitlines()[10] == f"... {total - 10} more diff lines cut"
    assert len(capped.splitlines()) == 11


def test_unified_diff_rejects_a_non_positive_cap() -> None:
    with pytest.raises(ValueError, match="max_lines"):
        unified_diff("a", "b", "x", max_lines=0)


def random_change(seed: int, vocabulary: int | None) -> tuple[str, str]:
    """A text and a few random line insertions, deletions and replacements of it.

    Lines are unique unless ``vocabulary`` limits them to that many distinct ones; some
    texts are long (blocks of several KB) and some lose their final line ending.
    """
    rng = random.Random(seed)
    width = rng.choice([0, 0, 150])
    ending = rng.choice(["\n", "\n", "\r\n"])

    def line(n: int) -> str:
        return f"line {rng.randrange(vocabulary) if vocabulary else n}{'x' * rng.randrange(width + 1)}{ending}"

    lines = [line(n) for n in range(rng.randrange(0, 300 if width else 60))]
    new = list(lines)
    for step in range(rng.randrange(1, 4)):
        at = rng.randrange(0, len(new) + 1)
        kind = rng.randrange(3)
        if kind == 0 and at < len(new):
            del new[at]
        elif kind == 1:
            new.insert(at, line(1000 + step))
        elif at < len(new):
            new[at] = line(2000 + step)
    old_text, new_text = "".join(lines), "".join(new)
    if rng.random() < 0.2:
        old_text = old_text.rstrip("\r\n")
    if rng.random() < 0.3:
        new_text = new_text.rstrip("\r\n")
    return old_text, new_text


@pytest.mark.parametrize("seed", range(60))
def test_change_diff_matches_a_full_unified_diff(seed: int) -> None:
    old, new = random_change(seed, vocabulary=None)
    assert change_diff(old, new, "f.py") == unified_diff(old, new, "f.py")


@pytest.mark.parametrize("seed", range(60))
def test_change_diff_of_repetitive_text_applies_as_a_patch(seed: int) -> None:
    old, new = random_change(seed, vocabulary=6)
    if old == new:
        return
    diff = change_diff(old, new, "f.py", max_lines=None)
    if not diff.startswith("---"):  # only the line endings changed
        assert "only the line endings changed" in diff
        return
    (file_patch,) = parse_patch(diff)
    assert apply_file_patch(old, file_patch) == new


@pytest.mark.parametrize("data", [b"a\x00b", b"caf\xe9", b"\xff\xfe\x00a"], ids=["nul", "latin-1", "utf-16"])
def test_file_text_refuses_what_is_not_utf8_without_nul(data: bytes) -> None:
    with pytest.raises(RetriableError, match=r"'x\.bin' looks binary \(it is not UTF-8 text\), so it cannot be shown"):
        file_text(data, "x.bin")
    with pytest.raises(RetriableError, match=r"so it cannot be edited\. Overwrite it whole with workspace_write"):
        file_text(data, "x.bin", doing="edit")


def test_file_text_keeps_a_byte_order_mark() -> None:
    assert file_text("\ufeffé\r\n".encode(), "a.txt") == "\ufeffé\r\n"
