"""Find-and-replace edits: the strategy cascade, exact spans, refusals and their messages."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolcards.errors import RetriableError
from toolcards.workspace import _edit as edit_module
from toolcards.workspace._edit import STRATEGIES, apply_edit
from toolcards.workspace._text import change_diff

PYTHON = """\
def total(items):
    result = 0
    for item in items:
        result += item.price
    return result


def count(items):
    return len(items)
"""
CRLF = PYTHON.replace("\n", "\r\n")


# --- one case per strategy, which no earlier strategy solves ---------------------------------


@pytest.mark.parametrize(
    ("text", "old", "new", "strategy", "expected", "first_line"),
    [
        pytest.param(
            PYTHON, "item.price", "item.cost", "exact", PYTHON.replace("item.price", "item.cost"), 4, id="mid-line"
        ),
        pytest.param(
            CRLF,
            "    result = 0\n    for item in items:",
            "    result = 1\n    for item in items:",
            "line_endings",
            CRLF.replace("result = 0", "result = 1"),
            2,
            id="lf-old-in-crlf-file",
        ),
        pytest.param(
            "a = 1   \nb = 2\t\nc = 3\n",
            "a = 1\nb = 2",
            "a = 10\nb = 20",
            "trailing_whitespace",
            "a = 10\nb = 20\nc = 3\n",
            1,
            id="spaces-at-line-ends",
        ),
        pytest.param(
            PYTHON,
            "for item in items:\n    result += item.price",
            "for item in items:\n    if item:\n        result += item.price",
            "indentation",
            PYTHON.replace("        result += item.price\n", "        if item:\n            result += item.price\n"),
            3,
            id="other-indent-new-reindented",
        ),
        pytest.param(
            PYTHON,
            "result  +=   item.price\nreturn    result",
            "result += item.price * 2\nreturn result",
            "whitespace",
            PYTHON.replace("result += item.price", "result += item.price * 2"),
            4,
            id="other-inner-spacing",
        ),
        pytest.param(
            'print("hi")\nx = 1\n',
            'print(\\"hi\\")\\nx = 1',
            'print(\\"bye\\")\\nx = 2',
            "escapes",
            'print("bye")\nx = 2\n',
            1,
            id="escaped-twice",
        ),
        pytest.param(
            "a\n\tb\nc\n",
            "a\\n\\tb",
            'a\n\tprint("\\n")',
            "escapes",
            'a\n\tprint("\\n")\nc\n',
            1,
            id="escaped-old-real-new",
        ),
        pytest.param(
            PYTHON,
            "    for itme in items:\n        result += item.prise",
            "    for item in items:\n        result += item.price * 2",
            "fuzzy",
            PYTHON.replace("result += item.price", "result += item.price * 2"),
            3,
            id="misquoted-lines",
        ),
        pytest.param(
            PYTHON,
            "for itme in items:\nresult += item.prise",
            "for item in items:\n    result -= 1",
            "fuzzy",
            PYTHON.replace("        result += item.price\n", "        result -= 1\n"),
            3,
            id="misquoted-new-reindented",
        ),
    ],
)
def test_each_strategy_finds_what_no_earlier_one_does(
    text: str, old: str, new: str, strategy: str, expected: str, first_line: int
) -> None:
    out = apply_edit(text, old, new)
    assert (out.strategy, out.text, out.first_line, out.replacements) == (strategy, expected, first_line, 1)


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


# --- exactly this text: spans, line endings, replace_all -------------------------------------


def edit(
    text: str,
    old: str,
    new: str,
    expected: str,
    *,
    id: str,
    strategy: str | None = None,
    replace_all: bool = False,
    replacements: int = 1,
) -> pytest.ParameterSet:
    """One edit and the text it must give (and its strategy and count, when they matter)."""
    return pytest.param(text, old, new, replace_all, expected, strategy, replacements, id=id)


@pytest.mark.parametrize(
    ("text", "old", "new", "replace_all", "expected", "strategy", "replacements"),
    [
        # Spans are exact: a neighbouring line is never swallowed, joined or left blank.
        edit(
            "alpha\ncompute(first, second)\nvalidate(first)\nomega\n",
            "compute(frist, second)\nvalidate(frist)",
            "X",
            "alpha\nX\nomega\n",
            strategy="fuzzy",
            id="fuzzy-keeps-neighbours",
        ),
        edit("a  \nb\nc\n", "a\nb\n", "A\nB\n", "A\nB\nc\n", id="loose-new-with-final-newline"),
        edit("keep\ndrop me   \nkeep too\n", "drop me", "", "keep\n   \nkeep too\n", id="delete-literal"),
        edit("keep\ndrop me   \nkeep too\n", "drop me \n", "", "keep\nkeep too\n", id="delete-whole-lines"),
        edit("a\nb \nb ", "b", "", "a\n \n ", replace_all=True, replacements=2, id="delete-last-letters"),
        edit("a\nx \nx ", "x  ", "", "a", replace_all=True, replacements=2, id="delete-last-lines-no-newline"),
        # The model copied old_string from the first non-blank character of its first line.
        edit(
            "def f():\n    x = 1   \n    return x\n",
            "x = 1\n    return x",
            "x = 2\n    return x",
            "def f():\n    x = 2\n    return x\n",
            id="unindented-first-line",
        ),
        edit("a\r\nb\r\n", "\nb", "\nB", "a\r\nB\r\n", strategy="line_endings", id="never-between-cr-and-lf"),
        # Line endings of new_string become the file's.
        edit("one\r\ntwo\r\n", "two", "two\nthree", "one\r\ntwo\r\nthree\r\n", strategy="exact", id="crlf-stays"),
        edit("one\ntwo\n", "two", "2\r\n2", "one\n2\n2\n", id="lf-stays"),
        # replace_all: left to right, non-overlapping, in the original text.
        edit("a a a", "a", "aa", "aa aa aa", replace_all=True, replacements=3, id="all-new-contains-old"),
        edit("aaaa", "aa", "b", "bb", replace_all=True, replacements=2, id="all-non-overlapping"),
        edit("aaa", "aa", "b", "ba", replace_all=True, id="all-overlap-left-first"),
        edit(
            "x = 1  \ny = 2\nx = 1 \n",
            "x = 1\n",
            "x = 1\nx = 1",
            # The line new_string keeps is kept as the file has it, trailing spaces included.
            "x = 1  \nx = 1\ny = 2\nx = 1 \nx = 1\n",
            strategy="trailing_whitespace",
            replace_all=True,
            replacements=2,
            id="all-loose",
        ),
        # Less common paths through the cascade.
        edit("first   \nsecond\n", "first\\nsecond", "1st\\n2nd", "1st\n2nd\n", strategy="escapes", id="escapes-loose"),
        edit(
            "def handler(request):\n    return respond(request.body)\n",
            "def handler(request):\\n    return respnod(request.body)",
            "pass",
            "pass\n",
            strategy="fuzzy",
            id="escaped-with-typo",
        ),
        edit(
            "class A:\n        def f(self):\n            return 1\n",
            "    def f(self):\n        return 1",
            "    def f(self):\n\n        return 2\n  # shallower",
            "class A:\n        def f(self):\n\n            return 2\n      # shallower\n",
            strategy="indentation",
            id="reindent-keeps-blank-and-shallower-lines",
        ),
        edit(
            "if x:\n        a = 1\n        b = 2\n",
            "  a = 1\n  b = 2",
            "  a = 1\nz = 0\n  b = 3",
            "if x:\n        a = 1\n      z = 0\n        b = 3\n",
            id="reindent-deeper",
        ),
    ],
)
def test_an_edit_gives_exactly_this_text(
    text: str, old: str, new: str, replace_all: bool, expected: str, strategy: str | None, replacements: int
) -> None:
    out = apply_edit(text, old, new, replace_all=replace_all)
    assert out.text == expected
    assert out.replacements == replacements
    if strategy is not None:
        assert out.strategy == strategy
    if "\r\n" in text:
        assert re.search(r"(?<!\r)\n", out.text) is None


LINE = st.text(alphabet="ab (){}x", max_size=8)


def draw_block(data: st.DataObject, lines: list[str], hows: list[str]) -> tuple[list[str], str]:
    """A run of ``lines`` to look for, as a model might quote it: ``(block, how)``.

    ``how``: verbatim, with a typo in one line, indented, with trailing spaces, or (the caller
    joins it) with escaped line breaks.
    """
    start = data.draw(st.integers(0, len(lines) - 1))
    size = data.draw(st.integers(1, len(lines) - start))
    block = lines[start : start + size]
    how = data.draw(st.sampled_from(hows))
    if how == "typo":
        row = data.draw(st.integers(0, size - 1))
        block[row] = block[row][1:] + "q"
    elif how == "indent":
        block = ["  " + line for line in block]
    elif how == "trailing":
        block = [line + " " for line in block]
    return block, how


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
    block, _ = draw_block(data, lines, ["verbatim", "typo", "indent", "trailing"])
    size = len(block)
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


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=12),
    data=st.data(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    replace_all=st.booleans(),
)
def test_an_outcome_says_truly_what_it_left_unchanged_and_the_diff_is_the_same_with_it(
    lines: list[str], data: st.DataObject, crlf: bool, final_newline: bool, replace_all: bool
) -> None:
    nl = "\r\n" if crlf else "\n"
    text = nl.join(lines) + (nl if final_newline else "")
    block, how = draw_block(data, lines, ["verbatim", "typo", "indent", "escaped"])
    old = "\\n".join(block) if how == "escaped" else "\n".join(block)
    new = data.draw(st.sampled_from(["N", "N1\nN2", "", "ab"]))
    try:
        out = apply_edit(text, old, new, replace_all=replace_all)
    except RetriableError:
        return
    head, tail = out.same_head, out.same_tail
    assert out.text[:head] == text[:head]
    assert text[:head].count("\n") == out.same_head_lines
    assert out.text[len(out.text) - tail :] == text[len(text) - tail :]
    hinted = change_diff(text, out.text, "f.py", same_head=head, same_head_lines=out.same_head_lines, same_tail=tail)
    assert hinted == change_diff(text, out.text, "f.py")


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "old", "new", "message"),
    [
        pytest.param("text", "", "new", "workspace_write", id="empty-old-string"),
        pytest.param("text", "text", "text", "identical", id="identical"),
        pytest.param("a = 1   \n", "a  =  1", "a = 1   ", "changes nothing", id="no-change"),
        pytest.param(PYTHON, "for thing in stuff:\n    total -= thing.weight", "x", "not found", id="too-different"),
        pytest.param("", "x", "y", "is empty", id="empty-file"),
        pytest.param("}\n}\n}\n", "}\n}", "}", "2 places", id="overlapping-matches"),
    ],
)
def test_a_refusal_says_why(text: str, old: str, new: str, message: str) -> None:
    with pytest.raises(RetriableError, match=message):
        apply_edit(text, old, new)


def test_several_matches_without_replace_all_are_refused_with_count_and_lines() -> None:
    with pytest.raises(RetriableError) as caught:
        apply_edit(PYTHON, "items", "things")
    message = str(caught.value)
    assert "4 places" in message
    assert "lines 1, 3, 8, 9" in message
    assert "replace_all" in message


def test_ambiguous_fuzzy_match_lists_similarities() -> None:
    text = "start\nalpha(one)\nbeta(two)\nmiddle\nalpha(one)\nbeta(two)\nend\n"
    with pytest.raises(RetriableError) as caught:
        apply_edit(text, "alpha(onx)\nbeta(twx)", "Z")
    message = str(caught.value)
    assert "2 places" in message
    assert "2 (" in message and "5 (" in message
    assert "% similar" in message


def test_of_overlapping_fuzzy_runs_the_most_similar_wins_even_when_later() -> None:
    rows = [
        "def f():",
        "    result = compute(alpha, beta, 1)",
        "    result = compute(alpha, beta, 2)",
        "    result = compute(alpha, beta, 3)",
        "    return result",
    ]
    # Lines 2-3 are 97 % similar, lines 3-4 98 %: they overlap, so only the better one counts.
    out = apply_edit(
        "\n".join(rows) + "\n", "result = compute(alpha, beta, 2)\nresult = compute(alpha, beta, 4)", "x = 0"
    )
    assert (out.strategy, out.first_line, out.replacements) == ("fuzzy", 3, 1)
    assert out.text == "\n".join([*rows[:2], "    x = 0", rows[4]]) + "\n"


def test_of_overlapping_fuzzy_runs_equally_similar_the_first_wins() -> None:
    text = "start\nalpha(one)\nalpha(one)\nalpha(one)\nend\n"
    out = apply_edit(text, "alpha(onx)\nalpha(onx)", "Z")
    assert (out.strategy, out.first_line, out.text) == ("fuzzy", 2, "start\nZ\nalpha(one)\nend\n")


def test_fuzzy_replace_all_replaces_the_best_runs_that_do_not_overlap() -> None:
    text = "alpha(one)\nbeta(two)\nmiddle\nalpha(one)\nbeta(two)\nend\n"
    out = apply_edit(text, "alpha(onx)\nbeta(twx)", "Z", replace_all=True)
    assert (out.strategy, out.replacements, out.text) == ("fuzzy", 2, "Z\nmiddle\nZ\nend\n")


@pytest.mark.parametrize("seed", range(40))
def test_the_fuzzy_prefilter_credits_runs_as_its_definition_says(seed: int) -> None:
    # The prefilter scores all anchor lines in one array; it must credit exactly the runs
    # that adding up each anchor's per-line ratio (above the floor) would credit.
    from rapidfuzz import fuzz

    rng = random.Random(seed)
    words = ["value", "total", "x", "if", "for", "return", "(", ")", "=", "item", "42", "#"]
    stripped = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 9))) for _ in range(rng.randrange(5, 300))]
    count = rng.randrange(1, min(12, len(stripped)) + 1)
    at = rng.randrange(0, len(stripped) - count + 1)
    query = list(stripped[at : at + count])
    for _ in range(rng.randrange(0, 4)):
        row = rng.randrange(count)
        if query[row]:
            spot = rng.randrange(len(query[row]))
            query[row] = query[row][:spot] + rng.choice("abxyz ") + query[row][spot + 1 :]
    weights = [len(line) for line in query]
    anchors = sorted(rng.sample(range(count), rng.randrange(1, count + 1)))
    least = rng.uniform(0, 40) * sum(weights)
    floor = edit_module._ANCHOR_FLOOR
    credit: dict[int, float] = {}
    for j in anchors:
        for line, text in enumerate(stripped):
            score = fuzz.ratio(query[j], text, score_cutoff=floor)
            if score:
                credit[line - j] = credit.get(line - j, 0.0) + weights[j] * (score - floor)
    last = len(stripped) - count
    expected = sorted(start for start, value in credit.items() if 0 <= start <= last and value >= least)
    assert edit_module._credited_starts(stripped, query, anchors, weights, least) == expected


def test_no_match_names_the_closest_region_with_line_numbers() -> None:
    with pytest.raises(RetriableError) as caught:
        apply_edit(PYTHON, "def count(things):\n    return sum(things)", "x", path="shop.py")
    message = str(caught.value)
    assert "not found in shop.py" in message
    assert "lines 8-9" in message
    assert "  8 | def count(items):" in message
    assert "  9 |     return len(items)" in message


@given(st.lists(st.text(alphabet="abc ", max_size=5), min_size=1, max_size=8), st.data())
def test_edit_outcome_first_line_points_at_the_change(lines: list[str], data: st.DataObject) -> None:
    row = data.draw(st.integers(0, len(lines) - 1))
    marker_text = "\n".join([*lines[:row], "MARKER", *lines[row:]])
    assume(marker_text.count("MARKER") == 1)
    out = apply_edit(marker_text, "MARKER", "DONE")
    assert out.text.split("\n")[out.first_line - 1] == "DONE"


# --- less common paths ----------------------------------------------------------------------


def test_fuzzy_match_of_a_long_block_scores_every_run() -> None:
    rows = [f"    value_{n} = compute({n}, {n * 7 % 13})" for n in range(60)]
    text = "\n".join(rows) + "\n"
    block = rows[10:50]
    block[20] = block[20].replace("compute", "cmopute")
    out = apply_edit(text, "\n".join(block), "    pass")
    assert out.strategy == "fuzzy"
    assert out.text == "\n".join([*rows[:10], "    pass", *rows[50:]]) + "\n"


def test_an_old_string_far_longer_than_the_file_is_refused_without_loading_the_fuzzy_matcher() -> None:
    # Loading rapidfuzz costs ~0.1 s; a refusal that no run of the file could change must not pay it.
    script = (
        "import sys\n"
        "from toolcards.errors import RetriableError\n"
        "from toolcards.workspace._edit import apply_edit\n"
        "try:\n"
        "    apply_edit(\"print('a')\\n\" * 100, 'q' * 1_000_000, 'x')\n"
        "except RetriableError as exc:\n"
        "    print('not found' in str(exc), 'rapidfuzz' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
