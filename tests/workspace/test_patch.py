"""Unified-diff parsing and in-memory application: placement, line endings, refusals."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace._patch import FilePatch, apply_file_patch, apply_patch, parse_patch
from toolcards.workspace._text import unified_diff

TWENTY = "".join(f"line {n}\n" for n in range(1, 21))


def _one(patch: str) -> FilePatch:
    (file_patch,) = parse_patch(patch)
    return file_patch


def _apply(original: str | None, patch: str) -> str | None:
    return apply_file_patch(original, _one(patch))


# --- parsing --------------------------------------------------------------------------------


def test_parse_multi_file_patch_with_git_noise_between_files() -> None:
    patch = """\
From 1234 Mon Sep 17 00:00:00 2001
Subject: [PATCH] two files

diff --git a/src/a.py b/src/a.py
index 83db48f..bf269f4 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1,2 +1,2 @@ def top():
 keep
-old
+new
diff --git a/b.txt b/b.txt
new file mode 100644
--- /dev/null
+++ b/b.txt
@@ -0,0 +1 @@
+hello
diff --git a/c.txt b/c.txt
deleted file mode 100644
--- a/c.txt\t2024-01-01 10:00:00.000000000 +0000
+++ /dev/null
@@ -1 +0,0 @@
-bye
-- {signature}
2.39.0
"""
    a, b, c = parse_patch(patch.replace("-- {signature}", "-- "))  # git's signature line is "-- " with a space
    assert (a.old_path, a.new_path, a.path) == ("src/a.py", "src/a.py", "src/a.py")
    assert a.hunks[0].lines == ((" ", "keep"), ("-", "old"), ("+", "new"))
    assert a.hunks[0].header == "@@ -1,2 +1,2 @@ def top():"
    assert (b.is_creation, b.path, b.hunks[0].new_count) == (True, "b.txt", 1)
    assert (c.is_deletion, c.path, len(c.hunks[0].lines)) == (True, "c.txt", 1)


def test_parse_omitted_counts_mean_one() -> None:
    hunk = _one("--- a/x\n+++ b/x\n@@ -3 +3 @@\n-a\n+b\n").hunks[0]
    assert (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count) == (3, 1, 3, 1)


def test_parse_no_newline_markers_apply_to_their_side() -> None:
    hunk = _one("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n").hunks[0]
    assert (hunk.old_missing_newline, hunk.new_missing_newline) == (True, False)
    hunk = _one("--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n\\ No newline at end of file\n+b\n").hunks[0]
    assert (hunk.old_missing_newline, hunk.new_missing_newline) == (True, True)


def test_parse_quoted_git_path() -> None:
    file_patch = _one('--- "a/caf\\303\\251 \\"x\\".txt"\n+++ "b/caf\\303\\251 \\"x\\".txt"\n@@ -1 +1 @@\n-a\n+b\n')
    assert file_patch.path == 'café "x".txt'


def test_parse_crlf_patch_text() -> None:
    file_patch = _one("--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n")
    assert file_patch.hunks[0].lines == (("-", "a"), ("+", "b"))


def test_parse_removed_and_added_lines_that_look_like_headers() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- old\n+++ new\n keep\n"
    assert _one(patch).hunks[0].lines == (("-", "-- old"), ("+", "++ new"), (" ", "keep"))


def test_parse_context_line_that_lost_its_space() -> None:
    hunk = _one("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n").hunks[0]
    assert hunk.lines == ((" ", "a"), (" ", ""), ("-", "b"), ("+", "B"))


def test_parse_header_that_undercounts_keeps_the_lines_up_to_the_next_hunk() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n-b\n+B\n@@ -9 +9 @@\n-y\n+Y\n"
    first, second = _one(patch).hunks
    assert first.lines == ((" ", "a"), ("-", "b"), ("+", "B"))
    assert second.lines == (("-", "y"), ("+", "Y"))


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ("just some text\n", "no file header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "before any file header"),
        ("--- a/x\nsomething\n", "is not followed by a '+++ b/<path>' line"),
        ("+++ b/x\n@@ -1 +1 @@\n", "has no '--- a/<path>' line before it"),
        ("--- a/x\n+++ b/x\n", "has no hunks"),
        ("--- a/x\n+++ b/x\n@@ -a,1 +b @@\n-a\n", "malformed header"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n", "has no lines"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n", "does not start with ' ', '-' or '+'"),
        ("--- a/x\n+++ b/x\n@@\n a\nplain\n+added\n", "does not start with ' ', '-' or '+'"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n", "belongs after the line"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "/dev/null on both"),
    ],
)
def test_malformed_patches_are_refused_with_a_clear_message(patch: str, fragment: str) -> None:
    with pytest.raises(RetriableError, match=None) as caught:
        parse_patch(patch)
    assert fragment in str(caught.value)


def test_malformed_message_names_the_line_file_and_hunk() -> None:
    with pytest.raises(RetriableError) as caught:
        parse_patch("--- a/src/x.py\n+++ b/src/x.py\n@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n")
    message = str(caught.value)
    assert "Line 5 of the patch, 'b'" in message
    assert "hunk 1 (@@ -1,3 +1,3 @@) of src/x.py" in message


# --- add, update, delete --------------------------------------------------------------------


def test_update_applies_several_hunks() -> None:
    patch = """\
--- a/f.txt
+++ b/f.txt
@@ -3,3 +3,3 @@
 line 3
-line 4
+LINE 4
 line 5
@@ -15,2 +15,3 @@
 line 15
+inserted
 line 16
"""
    expected = TWENTY.replace("line 4\n", "LINE 4\n").replace("line 15\n", "line 15\ninserted\n")
    assert _apply(TWENTY, patch) == expected


def test_add_creates_the_file_and_refuses_an_existing_one() -> None:
    patch = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    assert _apply(None, patch) == "hello\nworld\n"
    assert _apply("", patch) == "hello\nworld\n"
    with pytest.raises(RetriableError, match="already exists"):
        _apply("something\n", patch)


def test_add_without_final_newline() -> None:
    patch = "--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
    assert _apply(None, patch) == "x"


def test_delete_returns_none_and_checks_every_line_goes() -> None:
    patch = "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
    assert _apply("a\nb\n", patch) is None
    with pytest.raises(RetriableError, match="leave 1 of its 3 lines"):
        _apply("a\nb\nc\n", patch)
    with pytest.raises(RetriableError, match="does not exist"):
        _apply(None, patch)


def test_update_of_a_missing_file_is_refused() -> None:
    with pytest.raises(RetriableError, match="does not exist"):
        _apply(None, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")


def test_creation_hunk_with_context_is_refused() -> None:
    with pytest.raises(RetriableError, match="every line must start with '\\+'"):
        _apply(None, "--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n a\n+b\n")


# --- placement ------------------------------------------------------------------------------


def test_hunk_with_wrong_line_numbers_applies_where_its_context_occurs_once() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -30,3 +30,3 @@\n line 9\n-line 10\n+LINE 10\n line 11\n"
    assert _apply(TWENTY, patch) == TWENTY.replace("line 10\n", "LINE 10\n")


def test_offset_of_one_hunk_carries_to_the_next() -> None:
    shifted = "header\n" * 5 + TWENTY
    patch = """\
--- a/f
+++ b/f
@@ -2,1 +2,1 @@
-line 2
+LINE 2
@@ -12,1 +12,1 @@
-line 12
+LINE 12
"""
    expected = shifted.replace("line 2\n", "LINE 2\n").replace("line 12\n", "LINE 12\n")
    assert _apply(shifted, patch) == expected


def test_stated_line_wins_when_the_context_occurs_several_times() -> None:
    text = "a\nb\nc\n" * 3
    patch = "--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n a\n-b\n+B\n c\n"
    assert _apply(text, patch) == "a\nb\nc\na\nB\nc\na\nb\nc\n"


def test_ambiguous_context_is_refused_naming_the_hunk_and_candidates() -> None:
    text = "a\nb\nc\n" * 3
    patch = "--- a/f\n+++ b/f\n@@ -20,3 +20,3 @@\n a\n-b\n+B\n c\n"
    with pytest.raises(RetriableError) as caught:
        _apply(text, patch)
    message = str(caught.value)
    assert message.startswith("f: hunk 1 (@@ -20,3 +20,3 @@) does not match at its stated line 20")
    assert "occur 3 times (starting at lines 1, 4, 7)" in message


def test_bare_hunk_header_is_placed_by_its_lines() -> None:
    assert _apply(TWENTY, "--- a/f\n+++ b/f\n@@\n line 7\n-line 8\n+eight\n") == TWENTY.replace("line 8\n", "eight\n")


def test_hunks_apply_in_order_never_before_the_previous_one() -> None:
    # Before the first hunk's end "x" occurs too; the second hunk only looks after it.
    text = "x\ny\nx\ny\n"
    patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n@@\n-x\n+X2\n"
    assert _apply(text, patch) == "x\nY\nX2\ny\n"


def test_trailing_whitespace_differences_still_apply_and_context_keeps_the_files_text() -> None:
    text = "a  \nb\nc\n"
    assert _apply(text, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n") == "a  \nB\nc\n"


def test_pure_insertion_uses_the_line_after_which_to_insert() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -2,0 +3,1 @@\n+new\n"
    assert _apply("a\nb\nc\n", patch) == "a\nb\nnew\nc\n"
    with pytest.raises(RetriableError, match="inserts after line 9"):
        _apply("a\n", "--- a/f\n+++ b/f\n@@ -9,0 +10 @@\n+new\n")
    with pytest.raises(RetriableError, match="cannot be placed"):
        _apply("a\n", "--- a/f\n+++ b/f\n@@\n+new\n")


def test_mismatch_shows_expected_lines_and_the_closest_text() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n line 4\n-line five\n+line 5!\n line 6\n"
    with pytest.raises(RetriableError) as caught:
        _apply(TWENTY, patch)
    message = str(caught.value)
    assert message.startswith("f.txt: hunk 1 (@@ -4,3 +4,3 @@) does not apply")
    assert "The hunk expects:\n  line 4\n  line five\n  line 6" in message
    assert "lines 4-6" in message
    assert "  5 | line 5" in message
    assert "the hunk's line 2 is 'line five'; the file's line 5 is quoted above" in message
    quoted = message.split("[BEGIN UNTRUSTED", 1)[1].split("[END UNTRUSTED", 1)[0]
    assert "  5 | line 5" in quoted and "line 5 exactly: 'line 5'" in quoted


# --- line endings and final newlines --------------------------------------------------------


def test_crlf_file_keeps_crlf_for_changed_and_added_lines() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n"
    assert _apply("a\r\nb\r\nc\r\n", patch) == "a\r\nB\r\nB2\r\nc\r\n"


def test_adding_and_removing_the_final_newline() -> None:
    add = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    assert _apply("a\nb", add) == "a\nb\n"
    remove = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
    assert _apply("a\nb\n", remove) == "a\nb"


def test_appending_to_a_file_without_final_newline_never_joins_lines() -> None:
    # A patch that ignores the marker keeps the file's missing final newline.
    assert _apply("a\nb", "--- a/f\n+++ b/f\n@@ -2 +2,2 @@\n b\n+c\n") == "a\nb\nc"


# --- whole patches --------------------------------------------------------------------------


def test_apply_patch_returns_every_file_to_write_or_delete() -> None:
    files = {"keep.txt": "a\nb\n", "gone.txt": "bye\n", "old/name.txt": "x\n"}
    patch = """\
--- a/keep.txt
+++ b/keep.txt
@@ -1,2 +1,2 @@
 a
-b
+B
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hi
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
--- a/old/name.txt
+++ b/new/name.txt
@@ -1 +1 @@
-x
+y
"""
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return files.get(path)

    result = apply_patch(patch, read)
    assert result == {
        "keep.txt": "a\nB\n",
        "new.txt": "hi\n",
        "gone.txt": None,
        "old/name.txt": None,
        "new/name.txt": "y\n",
    }
    assert len(reads) == len(set(reads))


def test_apply_patch_applies_two_patches_of_one_file_in_order() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-b\n+c\n"
    assert apply_patch(patch, lambda path: "a\n") == {"f": "c\n"}


def test_apply_patch_is_all_or_nothing() -> None:
    patch = "--- a/ok\n+++ b/ok\n@@ -1 +1 @@\n-a\n+b\n--- a/bad\n+++ b/bad\n@@ -1 +1 @@\n-zzz\n+y\n"
    with pytest.raises(RetriableError, match="bad: hunk 1"):
        apply_patch(patch, lambda path: "a\n")


def test_apply_patch_refuses_a_rename_onto_an_existing_file() -> None:
    patch = "--- a/one\n+++ b/two\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(RetriableError, match="already exists"):
        apply_patch(patch, lambda path: "a\n")


# --- round trips ----------------------------------------------------------------------------

CONTENT = st.sampled_from(["a", "b", "c", "", "  x", "-- y", "++ z", "--- q", "+++ r", "\\ w", "@@ v", " "])


def _difflib_patch(old: str, new: str, context: int) -> str:
    """A GNU unified diff from difflib, with git headers and no-newline markers."""
    out: list[str] = []
    for line in difflib.unified_diff(_keepends(old), _keepends(new), fromfile="a/f.txt", tofile="b/f.txt", n=context):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _keepends(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=300, deadline=None)
@given(
    old_lines=st.lists(CONTENT, max_size=14),
    new_lines=st.lists(CONTENT, max_size=14),
    crlf=st.booleans(),
    old_final=st.booleans(),
    new_final=st.booleans(),
    context=st.integers(0, 3),
)
def test_difflib_diff_applied_to_a_gives_b(
    *,
    old_lines: list[str],
    new_lines: list[str],
    crlf: bool,
    old_final: bool,
    new_final: bool,
    context: int,
) -> None:
    nl = "\r\n" if crlf else "\n"
    old = nl.join(old_lines) + (nl if old_final and old_lines else "")
    new = nl.join(new_lines) + (nl if new_final and new_lines else "")
    if "\n" not in old:
        new = new.replace("\r\n", "\n")  # no line ending to keep: added lines get "\n"
    patch = _difflib_patch(old, new, context)
    if not patch:
        assert old == new
        return
    assert apply_file_patch(old, _one(patch)) == new


@settings(max_examples=100, deadline=None)
@given(old_lines=st.lists(CONTENT, max_size=10), new_lines=st.lists(CONTENT, max_size=10))
def test_unified_diff_output_applies_back(old_lines: list[str], new_lines: list[str]) -> None:
    old = "".join(line + "\n" for line in old_lines)
    new = "\n".join(new_lines)
    diff = unified_diff(old, new, "f.txt", max_lines=None)
    if not diff:
        assert old == new
        return
    assert apply_file_patch(old, _one(diff)) == new


# --- less common paths ----------------------------------------------------------------------


def test_creation_of_an_empty_file_has_no_hunks() -> None:
    assert _apply(None, "--- /dev/null\n+++ b/empty.txt\n") == ""


def test_blank_lines_between_hunks_are_tolerated() -> None:
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-line 1\n+one\n\n\n@@ -20 +20 @@\n-line 20\n+twenty\n"
    assert _apply(TWENTY, patch) == TWENTY.replace("line 1\n", "one\n").replace("line 20\n", "twenty\n")


def test_a_header_without_a_path_is_refused() -> None:
    with pytest.raises(RetriableError, match="names no file"):
        parse_patch("--- a/\n+++ b/\n@@ -1 +1 @@\n-a\n+b\n")


def test_text_after_a_bare_hunk_is_fine_when_no_change_follows() -> None:
    patch = "--- a/f\n+++ b/f\n@@\n-line 3\n+three\nTrailing words\n with a leading space\n"
    assert _apply(TWENTY, patch) == TWENTY.replace("line 3\n", "three\n")


def test_old_side_without_final_newline_prefers_the_end_of_the_file() -> None:
    text = "x\ny\nx\ny"
    patch = "--- a/f\n+++ b/f\n@@\n x\n-y\n\\ No newline at end of file\n+Y\n"
    assert _apply(text, patch) == "x\ny\nx\nY\n"


def test_mismatch_message_cuts_a_long_hunk() -> None:
    body = "".join(f" nope {n}\n" for n in range(12))
    with pytest.raises(RetriableError) as caught:
        _apply(TWENTY, "--- a/f\n+++ b/f\n@@ -1,12 +1,12 @@\n" + body)
    assert "  ... 4 more lines" in str(caught.value)


def test_mismatch_against_an_empty_file() -> None:
    with pytest.raises(RetriableError, match="The file is empty"):
        _apply("", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")


@given(st.lists(st.sampled_from(["", "a", "\r", "--- x", "@@", "\n", "\r\n", "b\r"]), max_size=40), st.integers(1, 7))
def test_patch_lines_split_lazily_are_the_lines_split_at_once(pieces: list[str], block: int) -> None:
    from toolcards.workspace._patch import _PatchLines

    text = "".join(pieces)
    expected = [line.removesuffix("\r") for line in text.split("\n")]
    if expected[-1] == "":
        expected.pop()
    lines = _PatchLines(text)
    lines._BLOCK = block  # small blocks, so lines are split over several steps
    assert len(lines) == len(expected)
    assert [lines[i] for i in range(len(lines))] == expected
    assert list(lines[1:-1]) == expected[1:-1]


def test_a_patch_refused_at_its_first_line_is_not_split_whole() -> None:
    from toolcards.workspace import _patch as patch_module

    seen: list[patch_module._PatchLines] = []

    class Recorded(patch_module._PatchLines):
        def __init__(self, text: str) -> None:
            super().__init__(text)
            seen.append(self)

    garbage = "@@ -1 +1 @@\n" + "-x\n" * 300_000
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(patch_module, "_PatchLines", Recorded)
        with pytest.raises(RetriableError, match=r"Line 1 of the patch is a hunk header \('@@ -1 \+1 @@'\) before any"):
            parse_patch(garbage)
    assert len(seen[0]) == 300_001
    assert len(seen[0]._lines) < 100_000  # one block was split, not 300,001 lines
