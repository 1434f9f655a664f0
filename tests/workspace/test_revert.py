"""The line rule of ``workspace_undo``: a change taken back out of a file changed since."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.workspace._revert import is_mergeable, revert_lines


def text(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def test_a_change_far_from_a_later_one_is_taken_out() -> None:
    before = text("a", "b", "c", "d", "e", "f", "g")
    after = text("a", "B", "c", "d", "e", "f", "g")
    current = text("a", "B", "c", "d", "e", "F", "g")

    assert revert_lines(after, before, current) == text("a", "b", "c", "d", "e", "F", "g")


def test_a_later_change_to_the_same_or_the_next_line_conflicts() -> None:
    before = text("a", "b", "c", "d")
    after = text("a", "B", "c", "d")

    assert revert_lines(after, before, text("a", "BB", "c", "d")) is None
    assert revert_lines(after, before, text("a", "B", "C", "d")) is None
    assert revert_lines(after, before, text("A", "B", "c", "d")) is None
    assert revert_lines(after, before, text("a", "B", "inserted", "c", "d")) is None


def test_insertions_and_deletions_are_taken_back_with_lines_moved_since() -> None:
    before = text("a", "b", "c", "d", "e", "f")
    after = text("a", "b", "new", "c", "d", "e", "f")
    current = text("top", "a", "b", "new", "c", "d", "e")

    assert revert_lines(after, before, current) == text("top", "a", "b", "c", "d", "e")
    assert revert_lines(before, after, text("top", "a", "b", "c", "d", "e")) == text(
        "top", "a", "b", "new", "c", "d", "e"
    )


def test_line_endings_and_a_missing_last_newline_are_kept() -> None:
    before = b"a\r\nb\r\nc\r\nd\r\ne"
    after = b"a\r\nB\r\nc\r\nd\r\ne"
    current = b"a\r\nB\r\nc\r\nd\r\nE"

    assert revert_lines(after, before, current) == b"a\r\nb\r\nc\r\nd\r\nE"


def test_binary_and_huge_versions_are_not_merged() -> None:
    assert is_mergeable(b"text\n", b"more\n")
    assert not is_mergeable(b"text\n", b"\x00binary")
    assert not is_mergeable(b"x" * (2 * 1024 * 1024 + 1))


lines = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(base=st.lists(st.text("xyz", min_size=1, max_size=4), min_size=6, max_size=30, unique=True), data=st.data())
def test_reverting_an_edit_keeps_an_edit_elsewhere(base: list[str], data: st.DataObject) -> None:
    # Two edits of one line each, at least two lines apart: undoing the first keeps the second.
    # (Lines are distinct: with repeated lines a diff may align them another way, and the
    # revert is then refused rather than guessed.)
    first = data.draw(st.integers(0, len(base) - 1))
    second = data.draw(st.integers(0, len(base) - 1).filter(lambda n: abs(n - first) >= 2))
    before = text(*base)
    edited = list(base)
    edited[first] = "first!"
    both = list(edited)
    both[second] = "second!"
    expected = list(base)
    expected[second] = "second!"

    assert revert_lines(text(*edited), before, text(*both)) == text(*expected)


@settings(max_examples=300, deadline=None)
@given(before=lines, after=lines, current=lines)
def test_a_revert_is_either_refused_or_exact_where_nothing_changed_since(
    before: list[str], after: list[str], current: list[str]
) -> None:
    merged = revert_lines(text(*after), text(*before), text(*current))
    if current == after:
        assert merged == text(*before)
    if merged is not None and before == after:
        assert merged == text(*current)
