"""Edits never change a byte outside what ``new_string`` replaces (a property, over whitespace).

A file is drawn as lines, each with a unique word, indentation of spaces or tabs, inner runs
of whitespace and trailing whitespace, with ``\\n`` or ``\\r\\n`` line endings and with or
without a final newline. The model's ``old_string`` quotes a run of those lines the way
models misquote them (trailing whitespace dropped, tabs for spaces, runs collapsed);
``new_string`` is that quote with one line changed, inserted or deleted. Whatever strategy
matches, the text before and after the matched lines is byte for byte the same, and every
line ``new_string`` kept as ``old_string`` had it comes out exactly as the file had it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcards.workspace._edit import apply_edit
from toolcards.workspace._text import detect_newline, to_newline

INDENTS = st.sampled_from(["", " ", "  ", "    ", "\t", "\t\t", " \t"])
GAPS = st.sampled_from([" ", "  ", "\t", " \t "])
TRAILING = st.sampled_from(["", "", " ", "  ", "\t", " \t"])
WORDS = st.lists(st.sampled_from(["x", "=", "f(a)", "return", "{", "}", "#", "b"]), min_size=0, max_size=3)


@dataclass(frozen=True)
class Line:
    indent: str
    words: list[str]
    gaps: list[str]
    trailing: str

    def exact(self) -> str:
        text = self.words[0]
        for gap, word in zip(self.gaps, self.words[1:], strict=False):
            text += gap + word
        return self.indent + text + self.trailing


@st.composite
def lines(draw: st.DrawFn, index: int) -> Line:
    words = [f"w{index}", *draw(WORDS)]
    gaps = [draw(GAPS) for _ in words[1:]]
    return Line(draw(INDENTS), words, gaps, draw(TRAILING))


@st.composite
def misquoted(draw: st.DrawFn, line: Line) -> str:
    """How a model might quote ``line``: exactly, or with its whitespace changed."""
    how = draw(st.sampled_from(["exact", "no_trailing", "tabs_to_spaces", "collapsed", "reindented"]))
    text = line.exact()
    if how == "no_trailing":
        return text.rstrip()
    if how == "tabs_to_spaces":
        return text.replace("\t", "    ").rstrip()
    if how == "collapsed":
        return line.indent + " ".join(line.words)
    if how == "reindented":
        return "  " + text.lstrip()
    return text


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str, str, int, int, list[str], list[int | None]]:
    count = draw(st.integers(min_value=1, max_value=8))
    file_lines = [draw(lines(index)) for index in range(count)]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.booleans())
    text = newline.join(line.exact() for line in file_lines) + (newline if final else "")
    first = draw(st.integers(min_value=0, max_value=count - 1))
    last = draw(st.integers(min_value=first, max_value=count - 1))
    quoted = [draw(misquoted(line)) for line in file_lines[first : last + 1]]
    # One consistent way of quoting: a model that drops trailing whitespace drops it everywhere.
    old = "\n".join(quoted)
    new_lines: list[str] = list(quoted)
    kept: list[int | None] = list(range(first, last + 1))  # the file line each new line keeps
    change = draw(st.sampled_from(["change", "insert", "delete"]))
    at = draw(st.integers(min_value=0, max_value=len(quoted) - 1))
    if change == "change":
        new_lines[at] = quoted[at] + " changed"
        kept[at] = None
    elif change == "insert":
        new_lines.insert(at, "inserted line")
        kept.insert(at, None)
    elif len(quoted) > 1:
        del new_lines[at]
        del kept[at]
    else:
        new_lines[at] = "replaced"
        kept[at] = None
    new = "\n".join(new_lines)
    return text, old, new, first, last, [line.exact() for line in file_lines], kept


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits())
def test_an_edit_changes_no_byte_outside_what_it_replaces(
    case: tuple[str, str, str, int, int, list[str], list[int | None]],
) -> None:
    text, old, new, first, last, file_lines, kept = case
    outcome = apply_edit(text, old, new)
    newline = "\r\n" if "\r\n" in text else "\n"
    result = outcome.text
    # Before the first matched line and after the last, nothing moved.
    head = "".join(line + newline for line in file_lines[:first])
    tail_lines = file_lines[last + 1 :]
    tail = "".join(newline + line for line in tail_lines) + (newline if text.endswith(newline) else "")
    if outcome.strategy in ("exact", "line_endings"):
        # A span of the text matched as it is (line endings aside): exactly that span changes.
        quoted = to_newline(old, newline)
        at = text.find(quoted)
        assert result == text[:at] + to_newline(new, detect_newline(text)) + text[at + len(quoted) :]
        return
    assert result.startswith(head), (outcome.strategy, text, old, new, result)
    assert result.endswith(tail), (outcome.strategy, text, old, new, result)
    middle = result[len(head) : len(result) - len(tail)]
    got = middle.split(newline) if middle else []
    assert len(got) == len(kept), (outcome.strategy, text, old, new, result)
    for line, source in zip(got, kept, strict=True):
        if source is not None:
            assert line == file_lines[source], (outcome.strategy, text, old, new, result)
