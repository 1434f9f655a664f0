"""Find-and-replace edits: the strategy cascade, exact spans, refusals and their messages."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace.edit import STRATEGIES, apply_edit

PYTHON = """\
def total(items):
    result = 0
    for item in items:
        result += item.price
    return result


def count(items):
    return len(items)
"""


# --- one case per strategy, which no earlier strategy solves ---------------------------------


def test_exact_replaces_a_verbatim_substring_even_mid_line() -> None:
    out = apply_edit(PYTHON, "item.price", "item.cost")
    assert out.strategy == "exact"
    assert "result += item.cost\n" in out.text
    assert out.first_line == 4
    assert out.replacements == 1


def test_line_endings_matches_lf_old_string_in_crlf_file_and_keeps_crlf() -> None:
    crlf = PYTHON.replace("\n", "\r\n")
    out = apply_edit(crlf, "    result = 0\n    for item in items:", "    result = 1\n    for item in items:")
    assert out.strategy == "line_endings"
    assert out.text == crlf.replace("result = 0", "result = 1")
    assert re.search(r"(?<!\r)\n", out.text) is None


def test_trailing_whitespace_ignores_spaces_at_line_ends() -> None:
    text = "a = 1   \nb = 2\t\nc = 3\n"
    out = apply_edit(text, "a = 1\nb = 2", "a = 10\nb = 20")
    assert out.strategy == "trailing_whitespace"
    assert out.text == "a = 10\nb = 20\nc = 3\n"


def test_indentation_matches_other_indent_and_reindents_new_string() -> None:
    old = "for item in items:\n    result += item.price"
    new = "for item in items:\n    if item:\n        result += item.price"
    out = apply_edit(PYTHON, old, new)
    assert out.strategy == "indentation"
    assert "    for item in items:\n        if item:\n            result += item.price\n" in out.text
    assert out.first_line == 3


def test_whitespace_collapsed_matches_different_inner_spacing() -> None:
    out = apply_edit(PYTHON, "result  +=   item.price\nreturn    result", "result += item.price * 2\nreturn result")
    assert out.strategy == "whitespace"
    assert "        result += item.price * 2\n    return result\n" in out.text


def test_escapes_undoes_a_double_escaped_old_string() -> None:
    text = 'print("hi")\nx = 1\n'
    out = apply_edit(text, 'print(\\"hi\\")\\nx = 1', 'print(\\"bye\\")\\nx = 2')
    assert out.strategy == "escapes"
    assert out.text == 'print("bye")\nx = 2\n'


def test_escapes_keeps_new_string_that_already_has_real_line_breaks() -> None:
    text = "a\n\tb\nc\n"
    out = apply_edit(text, "a\\n\\tb", 'a\n\tprint("\\n")')
    assert out.strategy == "escapes"
    assert out.text == 'a\n\tprint("\\n")\nc\n'


def test_fuzzy_matches_a_misquoted_block_of_whole_lines() -> None:
    old = "    for itme in items:\n        result += item.prise"
    new = "    for item in items:\n        result += item.price * 2"
    out = apply_edit(PYTHON, old, new)
    assert out.strategy == "fuzzy"
    assert out.text == PYTHON.replace("result += item.price", "result += item.price * 2")
    assert out.first_line == 3


def test_fuzzy_reindents_new_string_to_the_file() -> None:
    out = apply_edit(PYTHON, "for itme in items:\nresult += item.prise", "for item in items:\n    result -= 1")
    assert out.strategy == "fuzzy"
    assert "    for item in items:\n        result -= 1\n    return result" in out.text


def test_the_cascade_lists_seven_strategies_in_order() -> None:
    assert STRATEGIES == (
        "exact",
        "line_endings",
        "trailing_whitespace",
        "indentation",
        "whitespace",
        "escapes",
        "fuzzy",
    )


# --- spans are exact ------------------------------------------------------------------------


def test_fuzzy_never_swallows_or_joins_a_neighbouring_line() -> None:
    text = "alpha\ncompute(first, second)\nvalidate(first)\nomega\n"
    out = apply_edit(text, "compute(frist, second)\nvalidate(frist)", "X")
    assert out.strategy == "fuzzy"
    assert out.text == "alpha\nX\nomega\n"


def test_loose_match_with_trailing_newline_in_new_does_not_add_a_blank_line() -> None:
    text = "a  \nb\nc\n"
    out = apply_edit(text, "a\nb\n", "A\nB\n")
    assert out.text == "A\nB\nc\n"


def test_deleting_whole_lines_takes_their_line_endings() -> None:
    text = "keep\ndrop me   \nkeep too\n"
    assert apply_edit(text, "drop me", "").text == "keep\n   \nkeep too\n"  # exact: literal
    assert apply_edit(text, "drop me \n", "").text == "keep\nkeep too\n"  # whole lines


def test_deleting_the_last_lines_of_a_file_without_final_newline() -> None:
    out = apply_edit("a\nb \nb ", "b", "", replace_all=True)
    assert out.text == "a\n \n "  # exact: only the letters go
    out = apply_edit("a\nx \nx ", "x  ", "", replace_all=True)
    assert out.text == "a"
    assert out.replacements == 2


def test_unindented_first_line_keeps_the_files_indentation() -> None:
    # The model copied old_string from the first non-blank character of its first line.
    text = "def f():\n    x = 1   \n    return x\n"
    out = apply_edit(text, "x = 1\n    return x", "x = 2\n    return x")
    assert out.text == "def f():\n    x = 2\n    return x\n"


def test_exact_never_cuts_between_cr_and_lf() -> None:
    out = apply_edit("a\r\nb\r\n", "\nb", "\nB")
    assert out.strategy == "line_endings"
    assert out.text == "a\r\nB\r\n"


LINE = st.text(alphabet="ab (){}x", max_size=8)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=12),
    data=st.data(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
)
def test_an_edit_changes_only_the_lines_it_matched(
    lines: list[str], data: st.DataObject, crlf: bool, final_newline: bool
) -> None:
    nl = "\r\n" if crlf else "\n"
    text = nl.join(lines) + (nl if final_newline else "")
    start = data.draw(st.integers(0, len(lines) - 1))
    size = data.draw(st.integers(1, len(lines) - start))
    block = lines[start : start + size]
    how = data.draw(st.sampled_from(["verbatim", "typo", "indent", "trailing"]))
    if how == "typo":
        row = data.draw(st.integers(0, size - 1))
        block[row] = block[row][1:] + "q"
    elif how == "indent":
        block = ["  " + line for line in block]
    elif how == "trailing":
        block = [line + " " for line in block]
    new = data.draw(st.sampled_from(["N", "N1\nN2", ""]))
    try:
        out = apply_edit(text, "\n".join(block), new)
    except RetriableError:
        return  # not found, ambiguous or a no-op: refused, nothing to check
    if "\r\n" not in text:
        nl = "\n"  # a one-line text has no line ending to keep
    if "\r\n" in text:
        assert re.search(r"(?<!\r)\n", out.text) is None
    first = out.first_line - 1
    if out.strategy in ("exact", "line_endings"):
        # Literal strategies: old_string spans len(block) lines, the last one up to where it ends.
        before, after = text.split(nl), out.text.split(nl)
        kept_tail = len(before) - first - size
        assert kept_tail >= 0
        assert after[:first] == before[:first]
        assert after[len(after) - kept_tail :] == before[first + size :]
        return
    # Whole-line strategies: exactly lines first .. first+size-1 were replaced or deleted, where
    # a final line break in old_string does not start another line.
    size = len("\n".join(block).removesuffix("\n").split("\n"))
    final = text.endswith(nl)
    rows = text.split(nl)[:-1] if final else text.split(nl)
    assert first + size <= len(rows)
    if new == "":
        kept = rows[:first] + rows[first + size :]
        assert out.text == (nl.join(kept) + (nl if final else "") if kept else "")
        return
    prefix = "".join(row + nl for row in rows[:first])
    suffix = "".join(nl + row for row in rows[first + size :]) + (nl if final else "")
    assert out.text.startswith(prefix)
    assert out.text.endswith(suffix)
    middle = out.text[len(prefix) : len(out.text) - len(suffix)]
    assert [line.strip() for line in middle.split(nl)] == new.split("\n")


# --- replace_all ----------------------------------------------------------------------------


def test_replace_all_terminates_when_new_contains_old() -> None:
    out = apply_edit("a a a", "a", "aa", replace_all=True)
    assert out.text == "aa aa aa"
    assert out.replacements == 3


def test_replace_all_uses_non_overlapping_matches_left_to_right() -> None:
    out = apply_edit("aaaa", "aa", "b", replace_all=True)
    assert out.text == "bb"
    out = apply_edit("aaa", "aa", "b", replace_all=True)
    assert out.text == "ba"


def test_replace_all_with_a_loose_strategy() -> None:
    text = "x = 1  \ny = 2\nx = 1 \n"
    out = apply_edit(text, "x = 1\n", "x = 1\nx = 1", replace_all=True)
    assert out.strategy == "trailing_whitespace"
    assert out.text == "x = 1\nx = 1\ny = 2\nx = 1\nx = 1\n"
    assert out.replacements == 2


# --- refusals -------------------------------------------------------------------------------


def test_several_matches_without_replace_all_are_refused_with_count_and_lines() -> None:
    with pytest.raises(RetriableError) as caught:
        apply_edit(PYTHON, "items", "things")
    message = str(caught.value)
    assert "4 places" in message
    assert "lines 1, 3, 8, 9" in message
    assert "replace_all" in message


def test_overlapping_matches_count_as_ambiguous() -> None:
    with pytest.raises(RetriableError, match="2 places"):
        apply_edit("}\n}\n}\n", "}\n}", "}")


def test_ambiguous_fuzzy_match_lists_similarities() -> None:
    text = "start\nalpha(one)\nbeta(two)\nmiddle\nalpha(one)\nbeta(two)\nend\n"
    with pytest.raises(RetriableError) as caught:
        apply_edit(text, "alpha(onx)\nbeta(twx)", "Z")
    message = str(caught.value)
    assert "2 places" in message
    assert "2 (" in message and "5 (" in message
    assert "% similar" in message


def test_no_match_names_the_closest_region_with_line_numbers() -> None:
    with pytest.raises(RetriableError) as caught:
        apply_edit(PYTHON, "def count(things):\n    return sum(things)", "x", path="shop.py")
    message = str(caught.value)
    assert "not found in shop.py" in message
    assert "lines 8-9" in message
    assert "  8 | def count(items):" in message
    assert "  9 |     return len(items)" in message


def test_empty_old_string_points_to_workspace_write() -> None:
    with pytest.raises(RetriableError, match="workspace_write"):
        apply_edit("text", "", "new")


def test_identical_old_and_new_are_refused() -> None:
    with pytest.raises(RetriableError, match="identical"):
        apply_edit("text", "text", "text")


def test_an_edit_that_changes_nothing_is_refused() -> None:
    with pytest.raises(RetriableError, match="changes nothing"):
        apply_edit("a = 1   \n", "a  =  1", "a = 1   ")


def test_a_block_too_different_is_not_matched() -> None:
    with pytest.raises(RetriableError, match="not found"):
        apply_edit(PYTHON, "for thing in stuff:\n    total -= thing.weight", "x")


def test_old_string_in_an_empty_file() -> None:
    with pytest.raises(RetriableError, match="is empty"):
        apply_edit("", "x", "y")


# --- line endings ---------------------------------------------------------------------------


def test_crlf_file_stays_crlf_after_an_exact_edit() -> None:
    out = apply_edit("one\r\ntwo\r\n", "two", "two\nthree")
    assert out.strategy == "exact"
    assert out.text == "one\r\ntwo\r\nthree\r\n"


def test_lf_file_stays_lf_when_new_string_has_crlf() -> None:
    out = apply_edit("one\ntwo\n", "two", "2\r\n2")
    assert out.text == "one\n2\n2\n"


@given(st.lists(st.text(alphabet="abc ", max_size=5), min_size=1, max_size=8), st.data())
def test_edit_outcome_first_line_points_at_the_change(lines: list[str], data: st.DataObject) -> None:
    row = data.draw(st.integers(0, len(lines) - 1))
    marker_text = "\n".join([*lines[:row], "MARKER", *lines[row:]])
    assume(marker_text.count("MARKER") == 1)
    out = apply_edit(marker_text, "MARKER", "DONE")
    assert out.text.split("\n")[out.first_line - 1] == "DONE"


# --- less common paths ----------------------------------------------------------------------


def test_escapes_with_trailing_whitespace_in_the_file() -> None:
    out = apply_edit("first   \nsecond\n", "first\\nsecond", "1st\\n2nd")
    assert out.strategy == "escapes"
    assert out.text == "1st\n2nd\n"


def test_double_escaped_old_string_with_a_typo_is_matched_fuzzily_unescaped() -> None:
    text = "def handler(request):\n    return respond(request.body)\n"
    out = apply_edit(text, "def handler(request):\\n    return respnod(request.body)", "pass")
    assert out.strategy == "fuzzy"
    assert out.text == "pass\n"


def test_reindent_keeps_blank_lines_and_dedents_shallower_lines() -> None:
    text = "class A:\n        def f(self):\n            return 1\n"
    old = "    def f(self):\n        return 1"
    new = "    def f(self):\n\n        return 2\n  # shallower"
    out = apply_edit(text, old, new)
    assert out.strategy == "indentation"
    assert out.text == "class A:\n        def f(self):\n\n            return 2\n      # shallower\n"


def test_reindent_moves_a_dedented_block_deeper() -> None:
    text = "if x:\n        a = 1\n        b = 2\n"
    out = apply_edit(text, "  a = 1\n  b = 2", "  a = 1\nz = 0\n  b = 3")
    assert out.text == "if x:\n        a = 1\n      z = 0\n        b = 3\n"


def test_fuzzy_match_of_a_long_block_scores_every_run() -> None:
    rows = [f"    value_{n} = compute({n}, {n * 7 % 13})" for n in range(60)]
    text = "\n".join(rows) + "\n"
    block = rows[10:50]
    block[20] = block[20].replace("compute", "cmopute")
    out = apply_edit(text, "\n".join(block), "    pass")
    assert out.strategy == "fuzzy"
    assert out.text == "\n".join([*rows[:10], "    pass", *rows[50:]]) + "\n"
