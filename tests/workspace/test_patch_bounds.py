"""Hostile patch shapes are refused early, with a message to act on, and change nothing.

Each test counts the parser's work (lines split, files read, look-aheads run) rather than
timing it; ``python -m bench hardening`` carries the times.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace import _patch as patch_module
from toolcards.workspace._actor import WorkspaceProxy, workspace_actor
from toolcards.workspace._models import content_digest
from toolcards.workspace._patch import MAX_PATCH_FILES, MAX_PATCH_HUNKS, apply_patch, parse_patch

AGENT = "team-1/@Alice"
HUNDRED = "".join(f"line {n}\n" for n in range(1, 101))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a.txt", "b.txt"):
        (tree / name).write_text(HUNDRED)
    return tree


@pytest.fixture
def ws(root: Path) -> WorkspaceProxy:
    proxy = workspace_actor(root)
    for name in ("a.txt", "b.txt"):
        data = (root / name).read_bytes()
        proxy.record_read(AGENT, name, data, True, content_digest(data)).get()
    return proxy


@pytest.fixture
def split_lines_seen(monkeypatch: pytest.MonkeyPatch) -> list[patch_module._PatchLines]:
    """Every ``_PatchLines`` the parser builds, to count how many lines it split."""
    seen: list[patch_module._PatchLines] = []

    class Recorded(patch_module._PatchLines):
        def __init__(self, text: str) -> None:
            super().__init__(text)
            seen.append(self)

    monkeypatch.setattr(patch_module, "_PatchLines", Recorded)
    return seen


def refused(ws: WorkspaceProxy, patch: str) -> str:
    with pytest.raises(RetriableError) as caught:
        ws.patch(AGENT, patch).get()
    return str(caught.value)


def unchanged(root: Path) -> bool:
    names = sorted(path.name for path in root.iterdir())
    return names == ["a.txt", "b.txt"] and all((root / n).read_text() == HUNDRED for n in names)


FIRST_FILE_OK = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-line 1\n+LINE 1\n"


def test_a_hunk_that_undercounts_before_many_lines_is_refused_at_the_files_length(
    ws: WorkspaceProxy, root: Path, split_lines_seen: list[patch_module._PatchLines]
) -> None:
    patch = FIRST_FILE_OK + "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n" + "-x\n" * 300_000
    message = refused(ws, patch)
    assert message.startswith(
        "Line 109 of the patch is old line 101 of hunk 1 (@@ -1 +1 @@) of b.txt, but the file has 100 lines, "
        "so the hunk cannot apply. Its header announces 1 old lines"
    )
    assert message.endswith("Nothing was changed.")
    assert unchanged(root)  # a.txt, which applied, is not written either
    assert len(split_lines_seen[0]._lines) < 100_000  # one block split, not 300,000 lines


def test_context_lines_that_run_on_after_the_counts_are_refused_the_same_way(ws: WorkspaceProxy, root: Path) -> None:
    message = refused(ws, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n" + " line 1\n" * 200_000)
    assert "is old line 101 of hunk 1 (@@ -1 +1 @@) of a.txt, but the file has 100 lines" in message
    assert unchanged(root)


def test_the_bound_counts_what_earlier_hunks_added(ws: WorkspaceProxy, root: Path) -> None:
    grow = "@@ -100,0 +101,2 @@\n+extra 1\n+extra 2\n"
    message = refused(ws, "--- a/a.txt\n+++ b/a.txt\n" + grow + "@@\n" + " z\n" * 103)
    assert "is old line 103 of hunk 2 (@@) of a.txt, but the file has 102 lines after the earlier hunks" in message
    assert unchanged(root)


def test_a_creation_with_context_lines_is_refused_at_its_first_one(
    split_lines_seen: list[patch_module._PatchLines],
) -> None:
    patch = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n" + " x\n" * 300_000
    with pytest.raises(RetriableError, match=r"so every line must start with '\+'\. Nothing was changed\."):
        apply_patch(patch, lambda path: None)
    assert len(split_lines_seen[0]._lines) < 100_000


def test_a_patch_is_refused_at_its_first_missing_file_without_reading_the_rest(
    split_lines_seen: list[patch_module._PatchLines],
) -> None:
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return None

    patch = "".join(f"--- a/f{n}\n+++ b/f{n}\n@@ -1 +1 @@\n-a\n+b\n" for n in range(100_000))
    with pytest.raises(RetriableError, match=r"^f0 does not exist, so the patch cannot change it"):
        apply_patch(patch, read)
    assert reads == ["f0"]
    assert len(split_lines_seen[0]._lines) < 100_000


def test_more_files_than_the_limit_are_refused_and_nothing_is_created(ws: WorkspaceProxy, root: Path) -> None:
    patch = FIRST_FILE_OK + "".join(f"--- /dev/null\n+++ b/new{n}.txt\n" for n in range(MAX_PATCH_FILES))
    message = refused(ws, patch)
    assert message == (
        f"The patch has more than {MAX_PATCH_FILES:,} files: file {MAX_PATCH_FILES + 1:,} starts at line "
        f"{6 + 2 * (MAX_PATCH_FILES - 1)}. Send at most {MAX_PATCH_FILES:,} files per patch, as several patches; "
        "nothing was changed."
    )
    assert unchanged(root)


def test_more_hunks_than_the_limit_are_refused_and_nothing_is_written(ws: WorkspaceProxy, root: Path) -> None:
    hunks = "".join(f"@@\n line {1 + n % 100}\n" for n in range(MAX_PATCH_HUNKS + 1))
    message = refused(ws, FIRST_FILE_OK + "--- a/b.txt\n+++ b/b.txt\n" + hunks)
    assert message.startswith(f"The patch has more than {MAX_PATCH_HUNKS:,} hunks: the one at line ")
    assert f"is hunk {MAX_PATCH_HUNKS:,} of b.txt." in message  # a.txt's hunk counts too
    assert message.endswith("or merge neighbouring hunks into one; nothing was changed.")
    assert unchanged(root)


def test_a_run_of_empty_lines_is_looked_past_once(
    ws: WorkspaceProxy, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0
    looked = patch_module._hunk_lines_follow

    def counted(lines: patch_module._PatchLines, index: int, *, ahead: int | None = None) -> bool:
        nonlocal calls
        calls += 1
        return looked(lines, index, ahead=ahead)

    monkeypatch.setattr(patch_module, "_hunk_lines_follow", counted)
    message = refused(ws, "--- a/a.txt\n+++ b/a.txt\n@@\n line 1\n" + "\n" * 200_000 + "+x\n")
    assert "is old line 101 of hunk 1 (@@) of a.txt, but the file has 100 lines" in message
    assert calls == 1  # once per run of empty lines, not once per empty line
    assert unchanged(root)


def test_repeated_no_newline_markers_are_read_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    marker = patch_module._HunkReader.no_newline

    def counted(reader: patch_module._HunkReader, line: str, index: int) -> None:
        nonlocal calls
        calls += 1
        marker(reader, line, index)

    monkeypatch.setattr(patch_module._HunkReader, "no_newline", counted)
    many = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n" + "\\ No newline at end of file\n" * 50_000 + "+b\n"
    (file_patch,) = parse_patch(many)
    assert calls == 1
    assert file_patch.hunks[0].lines == (("-", "a"), ("+", "b"))
    assert (file_patch.hunks[0].old_missing_newline, file_patch.hunks[0].new_missing_newline) == (True, False)


def test_a_long_hunk_that_matches_nowhere_is_not_scored_against_every_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("closest_block scores every window: far too slow here")

    monkeypatch.setattr(patch_module, "closest_block", never)
    text = "".join(f"line number {n}\n" for n in range(20_000))
    patch = "--- a/f\n+++ b/f\n@@\n" + "".join(f" line numbr {n}\n" for n in range(2_000))
    with pytest.raises(RetriableError) as caught:
        apply_patch(patch, lambda path: text)
    message = str(caught.value)
    assert message.startswith("f: hunk 1 (@@) does not apply")
    assert "The hunk has 2,000 context and removed lines and the file 20,000 lines, too many to search" in message


def test_a_20000_line_file_rewritten_whole_still_applies(ws: WorkspaceProxy, root: Path) -> None:
    old = "".join(f"line number {n} of the long file\n" for n in range(20_000))
    new = "".join(f"LINE {n}\n" for n in range(20_000))
    (root / "long.txt").write_text(old)
    data = (root / "long.txt").read_bytes()
    ws.record_read(AGENT, "long.txt", data, True, content_digest(data)).get()
    patch = (
        "--- a/long.txt\n+++ b/long.txt\n@@ -1,20000 +1,20000 @@\n"
        + "".join(f"-{line}\n" for line in old.splitlines())
        + "".join(f"+{line}\n" for line in new.splitlines())
    )
    assert ws.patch(AGENT, patch).get() == "Patched:\nM long.txt"
    assert (root / "long.txt").read_text() == new


LINE_PIECES = st.sampled_from(["", "a", " b", "+c", "-d", "--- e", "+++ f", "@@ g", "\\ h", "\r", "diff x", "  "])

# What each look-ahead pattern means, as the per-line checks it replaces wrote it.
LINE_TESTS = {
    "header": (patch_module._HEADER_LINE, lambda line: line.startswith(("--- ", "+++ ", "@@"))),
    "not a hunk line": (
        patch_module._NOT_HUNK_LINE,
        lambda line: line[:1] not in (" ", "+", "-", "\\", "") or line.startswith("--- "),
    ),
    "change or boundary": (
        patch_module._CHANGE_OR_BOUNDARY,
        lambda line: line[:1] in ("+", "-") or line.startswith(("@@", "diff ")),
    ),
    "not empty": (patch_module._NON_EMPTY_LINE, lambda line: line != ""),
    "not blank": (patch_module._NOT_BLANK, lambda line: line.strip() != ""),
    "not a marker": (patch_module._NOT_MARKER, lambda line: not line.startswith("\\")),
}


@given(
    st.lists(LINE_PIECES, max_size=30),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.integers(0, 30),
    st.integers(1, 9),
)
def test_next_matching_agrees_with_looking_at_each_line(
    pieces: list[str], newline: str, final: bool, start: int, block: int
) -> None:
    text = newline.join(pieces) + (newline if pieces and final else "")
    for name, (pattern, wanted) in LINE_TESTS.items():
        every = list(patch_module._PatchLines(text))
        expected = next((i for i in range(start, len(every)) if wanted(every[i])), len(every))
        lines = patch_module._PatchLines(text)
        lines._BLOCK = block  # lines split over several blocks
        assert lines.next_matching(start, pattern) == expected, (name, text, start)


# --- placing a hunk in a file of repeated lines ---------------------------------------------------


def _brute_force(haystack: list[str], needle: list[str], floor: int) -> list[int]:
    size = len(needle)
    return [i for i in range(floor, len(haystack) - size + 1) if haystack[i : i + size] == needle]


@given(
    st.lists(st.sampled_from("ab"), max_size=40),
    st.lists(st.sampled_from("abc"), min_size=1, max_size=6),
    st.integers(0, 5),
)
def test_every_place_a_block_occurs_is_found_by_both_searches(
    haystack: list[str], needle: list[str], floor: int
) -> None:
    expected = _brute_force(haystack, needle, floor)
    assert patch_module._occurrences(haystack, needle, floor) == expected
    assert patch_module._occurrences_linear(haystack, needle, floor) == expected


def test_a_long_block_against_a_file_of_two_alternating_lines_turns_linear(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[int] = []
    linear = patch_module._occurrences_linear

    def recorded(haystack: list[str], needle: list[str], floor: int) -> list[int]:
        searched.append(floor)
        return linear(haystack, needle, floor)

    monkeypatch.setattr(patch_module, "_occurrences_linear", recorded)
    original = "ab\ncd\n" * 5_000
    block = "".join(f" {line}\n" for line in ["ab", "cd"] * 2_500) + "-ab\n-XX\n+new\n"
    with pytest.raises(RetriableError) as caught:
        apply_patch(f"--- a/f\n+++ b/f\n@@\n{block}", lambda path: original)
    assert "were not found in the file" in str(caught.value)
    # The exact pass and the one ignoring trailing whitespace each went linear early.
    assert len(searched) == 2 and all(floor < 100 for floor in searched)


def test_a_block_of_identical_lines_in_a_file_of_them_is_ambiguous_everywhere() -> None:
    original = "same\n" * 20_000
    block = " same\n" * 5_000 + "-same\n+other\n"
    with pytest.raises(RetriableError) as caught:
        apply_patch(f"--- a/f\n+++ b/f\n@@\n{block}", lambda path: original)
    assert "its 5001 context and removed lines occur 15000 times (starting at lines 1, 2, 3," in str(caught.value)
