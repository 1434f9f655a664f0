"""Find-and-replace edits of a text, tolerant of the ways a model misquotes it.

:func:`apply_edit` replaces ``old`` by ``new`` in a text and returns the new text (the caller
reads and writes the file). ``old`` is looked for through a cascade of strategies, strictest
first; the first that finds ``old`` at all decides:

1. ``exact``; 2. ``line_endings`` (``"\\r\\n"`` and ``"\\n"`` alike);
3. ``trailing_whitespace``, 4. ``indentation`` (same relative indentation) and
5. ``whitespace`` (runs of spaces and tabs collapsed): whole lines equal but for that;
6. ``escapes``: 1-5 again with ``old`` and ``new`` unescaped when ``old`` was escaped twice
   (``new`` kept as it is when it already holds real line breaks);
7. ``fuzzy``: the best non-overlapping runs of as many lines as ``old``, at least
   :data:`FUZZY_THRESHOLD` similar (rapidfuzz ``ratio`` of the stripped lines). Runs are first
   estimated from ``old``'s longest lines in one ``cdist`` call and only promising ones scored
   in full, so a run that scores well only across line boundaries may be passed over.

Strategies 4, 5 and 7 re-indent ``new`` to the matched lines (each indentation of ``old``
mapped to its counterpart, other lines shifted by the difference). Every strategy maps back to
exact spans: 3-7 replace whole lines, keep the line ending after the last one, and write back a
line ``new`` keeps as ``old`` quoted it exactly as the file has it, so no byte changes outside
what ``new`` replaces. ``new``'s line endings become the file's
(:func:`~toolcards.workspace._text.detect_newline`).

Errors are :class:`~toolcards.errors.RetriableError` for the model: empty ``old``, ``old ==
new``, no match (quoting the closest region with line numbers, as untrusted output), several
matches without ``replace_all`` (their count and lines), an edit changing nothing. Nothing
here blocks or does I/O.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import accumulate
from operator import add

from toolcards.errors import RetriableError
from toolcards.workspace._text import (
    best_possible_ratio,
    closest_block,
    detect_newline,
    quote_file_text,
    quote_lines,
    to_newline,
)

__all__ = [
    "FUZZY_THRESHOLD",
    "STRATEGIES",
    "EditOutcome",
    "apply_edit",
]

STRATEGIES: tuple[str, ...] = (
    "exact",
    "line_endings",
    "trailing_whitespace",
    "indentation",
    "whitespace",
    "escapes",
    "fuzzy",
)
"""The strategy names, in the order they are tried."""

FUZZY_THRESHOLD = 0.85
"""Least similarity (0-1) of a run of lines for the ``fuzzy`` strategy to accept it."""

# The fuzzy prefilter (see _fuzzy_starts): anchor lines cover this share of old's characters,
# at most this many lines; per-line similarity below the floor counts as the floor; a run is
# scored in full when its estimate is within the slack of the threshold.
_ANCHOR_SHARE = 0.8
_ANCHOR_LIMIT = 12
_ANCHOR_FLOOR = 70.0
_ESTIMATE_SLACK = 5.0
_MAX_LISTED = 10

_ESCAPE = re.compile(r"""\\([ntr"'\\])""")
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


@dataclass(frozen=True, kw_only=True)
class EditOutcome:
    """The result of a successful edit."""

    text: str
    """The whole new content."""
    strategy: str
    """The strategy that matched (one of :data:`STRATEGIES`)."""
    replacements: int
    """How many places were replaced (1 unless ``replace_all``)."""
    first_line: int
    """1-based line of the first replaced place (the same in the old and new text)."""
    same_head: int = 0
    """Characters at the start that the edit left as they were (before the first place)."""
    same_head_lines: int = 0
    """Line breaks in those ``same_head`` characters."""
    same_tail: int = 0
    """Characters at the end that the edit left as they were (after the last place)."""


@dataclass(frozen=True, kw_only=True)
class _Match:
    start: int
    """Start of the span of the original text to replace."""
    end: int
    """End (exclusive) of that span."""
    replacement: str
    line: int
    """0-based line where the matched text starts."""
    lo: int
    """Start of the matched text, in characters or lines, to tell overlapping matches apart."""
    hi: int
    """End (exclusive) of the matched text, in the same unit as ``lo``."""
    score: float = 100.0
    """Similarity in percent (below 100 only for fuzzy matches)."""
    whole_lines: bool = False
    """``lo``/``hi`` count lines, and the span covers them whole."""
    places: int = 1
    """How many matched places this span stands for (adjacent deletions are merged)."""


class _Doc:
    """The original text and its line structure, computed only when a strategy needs it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.nl = detect_newline(text)

    @cached_property
    def parts(self) -> list[str]:
        return self.text.split("\n")

    @cached_property
    def count(self) -> int:
        """Number of lines (a final line ending does not start another line)."""
        parts = self.parts
        return len(parts) - 1 if parts[-1] == "" else len(parts)

    @cached_property
    def bodies(self) -> list[str]:
        """Each line without its ending; a ``"\\r"`` is part of the ending only before ``"\\n"``."""
        parts = self.parts
        if "\r" not in self.text:
            return parts
        return [p[:-1] if p.endswith("\r") else p for p in parts[:-1]] + [parts[-1]]

    @cached_property
    def starts(self) -> list[int]:
        """Offset of each line in the text; one extra entry past the end."""
        # Each line adds its length plus one for the "\n" split off it.
        return list(map(add, accumulate(map(len, self.parts), initial=0), itertools.count()))

    @cached_property
    def stripped(self) -> list[str]:
        return list(map(str.strip, self.bodies[: self.count]))

    def body_end(self, index: int) -> int:
        return self.starts[index] + len(self.bodies[index])

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1


def apply_edit(
    text: str,
    old: str,
    new: str,
    *,
    replace_all: bool = False,
    path: str | None = None,
) -> EditOutcome:
    """Replace ``old`` by ``new`` in ``text`` and return the outcome.

    ``old`` is found through the strategies listed in the module docstring. Without
    ``replace_all`` it must match exactly one place (overlapping occurrences count as
    several). With ``replace_all`` every non-overlapping match in the original text is
    replaced, left to right, so a ``new`` that contains ``old`` is fine. ``path`` only names
    the file in error messages.

    Raises :class:`~toolcards.errors.RetriableError` when ``old`` is empty, equals ``new``,
    is not found, matches several places without ``replace_all``, or when the edit would
    leave the text unchanged. Pure and non-blocking.
    """
    where = path or "the file"
    if not old:
        raise RetriableError(
            "old_string is empty. To create a file use workspace_write; to add text to a file, "
            "put a neighbouring line in old_string and repeat it in new_string with your addition."
        )
    if old == new:
        raise RetriableError(
            "old_string and new_string are identical, so the edit would change nothing. "
            "Put the text to replace in old_string and its replacement in new_string."
        )
    doc = _Doc(text)
    found = _search(doc, old, new)
    if found is None:
        raise RetriableError(_not_found_message(doc, old, where))
    strategy, matches = found
    if len(matches) > 1 and not replace_all:
        raise RetriableError(_ambiguous_message(strategy, matches, where))
    chosen = _non_overlapping(doc, matches) if replace_all else matches
    new_text = _splice(text, chosen)
    first_line = chosen[0].line + 1
    if new_text == text:
        raise RetriableError(
            f"The edit changes nothing: {where} already reads as new_string at line {first_line} "
            f"(matched by strategy {strategy}). Nothing was changed; read the file again if unsure."
        )
    replacements = sum(match.places for match in chosen)
    head = min(chosen, key=lambda m: m.start)
    # A whole-line deletion may start at the line break before its first line.
    head_lines = doc.line_of(head.start) if head.whole_lines else head.line
    return EditOutcome(
        text=new_text,
        strategy=strategy,
        replacements=replacements,
        first_line=first_line,
        same_head=head.start,
        same_head_lines=head_lines,
        same_tail=len(text) - max(match.end for match in chosen),
    )


def _search(doc: _Doc, old: str, new: str) -> tuple[str, list[_Match]] | None:
    """Run the strategy cascade; return the first strategy with matches and all its matches."""
    nl = doc.nl
    new_nl = to_newline(new, nl)
    matches = _exact(doc, old, new_nl)
    if matches:
        return "exact", matches
    matches = _line_endings(doc, old, new_nl)
    if matches:
        return "line_endings", matches
    old_lines, new_lines = _lines_of(old), _lines_of(new)
    loose = _loose(doc, old_lines, new_lines)
    if loose is not None:
        return loose
    unescaped_old = _ESCAPE.sub(_unescape_one, old)
    unescaped_new = new if "\n" in new else _ESCAPE.sub(_unescape_one, new)
    if unescaped_old not in (old, unescaped_new):
        matches = _exact(doc, unescaped_old, to_newline(unescaped_new, nl)) or _line_endings(
            doc, unescaped_old, to_newline(unescaped_new, nl)
        )
        if not matches:
            found = _loose(doc, _lines_of(unescaped_old), _lines_of(unescaped_new))
            matches = found[1] if found else []
        if matches:
            return "escapes", matches
        if "\n" not in old:
            # A single "line" full of literal \n was one text escaped twice: compare it unescaped.
            old_lines, new_lines = _lines_of(unescaped_old), _lines_of(unescaped_new)
    matches = _fuzzy(doc, old_lines, new_lines)
    if matches:
        return "fuzzy", matches
    return None


def _unescape_one(match: re.Match[str]) -> str:
    return _UNESCAPED[match.group(1)]


def _lines_of(text: str) -> list[str]:
    """Lines of ``old``/``new`` without endings; one final line ending is not a line; ``""`` is none."""
    if not text:
        return []
    return to_newline(text, "\n").removesuffix("\n").split("\n")


def _exact(doc: _Doc, old: str, replacement: str) -> list[_Match]:
    text = doc.text
    matches: list[_Match] = []
    line = 0
    counted_to = 0
    pos = text.find(old)
    while pos != -1:
        end = pos + len(old)
        if _splits_crlf(text, pos) or _splits_crlf(text, end):
            # Half of a "\r\n" is no place to cut; the line_endings strategy handles it.
            pos = text.find(old, pos + 1)
            continue
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        matches.append(_Match(start=pos, end=end, replacement=replacement, line=line, lo=pos, hi=end))
        # Overlapping occurrences count too: they make a single replacement ambiguous.
        pos = text.find(old, pos + 1)
    return matches


def _splits_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def _line_endings(doc: _Doc, old: str, replacement: str) -> list[_Match]:
    text = doc.text
    crlf_text = "\r" in text and "\r\n" in text
    old_unix = to_newline(old, "\n")
    if not crlf_text and old_unix == old:
        return []
    text_unix = to_newline(text, "\n") if crlf_text else text
    # text_unix.split("\n") == doc.bodies, so a line/column in text_unix maps onto doc.starts.
    unix_starts = list(accumulate((len(b) + 1 for b in doc.bodies), initial=0)) if crlf_text else doc.starts

    def original(offset: int) -> int:
        index = bisect_right(unix_starts, offset) - 1
        return doc.starts[index] + offset - unix_starts[index]

    matches: list[_Match] = []
    pos = text_unix.find(old_unix)
    while pos != -1:
        start, end = original(pos), original(pos + len(old_unix))
        line = doc.line_of(start)
        matches.append(_Match(start=start, end=end, replacement=replacement, line=line, lo=start, hi=end))
        pos = text_unix.find(old_unix, pos + 1)
    return matches


def _collapse(line: str) -> str:
    return " ".join(line.split())


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _common_indent(lines: Sequence[str]) -> str:
    indents = [_indent_of(line) for line in lines if line.strip()]
    if not indents:
        return ""
    # The common prefix of the smallest and largest strings is common to all of them.
    low, high = min(indents), max(indents)
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def _dedented(lines: Sequence[str]) -> list[str]:
    width = len(_common_indent(lines))
    return [line[width:].rstrip() if line.strip() else "" for line in lines]


def _reindent(lines: Sequence[str], old_indent: str, file_indent: str) -> list[str]:
    """Move ``lines`` (written at ``old_indent``) to ``file_indent``, keeping relative indentation."""
    if old_indent == file_indent:
        return list(lines)
    out: list[str] = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif line.startswith(old_indent):
            out.append(file_indent + line[len(old_indent) :])
        else:
            # Less indented than old's common indent: shift it by the same number of columns.
            lead = _indent_of(line)
            shift = len(file_indent) - len(old_indent)
            if shift >= 0:
                out.append(file_indent[:shift] + line)
            else:
                out.append(lead[min(-shift, len(lead)) :] + line[len(lead) :])
    return out


def _line_match(doc: _Doc, start: int, count: int, new_lines: Sequence[str], score: float = 100.0) -> _Match:
    """A match of whole lines ``start .. start+count-1`` replaced by ``new_lines``."""
    last = start + count - 1
    if new_lines:
        return _Match(
            start=doc.starts[start],
            end=doc.body_end(last),
            replacement=doc.nl.join(new_lines),
            line=start,
            lo=start,
            hi=start + count,
            score=score,
            whole_lines=True,
        )
    # Deleting whole lines takes one line ending with them: their own, or for the last line
    # of a text without a final newline, the one before them.
    if last + 1 < len(doc.parts):
        span_start, span_end = doc.starts[start], doc.starts[last + 1]
    else:
        span_start = doc.body_end(start - 1) if start > 0 else 0
        span_end = len(doc.text)
    return _Match(
        start=span_start,
        end=span_end,
        replacement="",
        line=start,
        lo=start,
        hi=start + count,
        score=score,
        whole_lines=True,
    )


def _reindented_match(
    doc: _Doc, start: int, old_lines: Sequence[str], new_lines: Sequence[str], score: float = 100.0
) -> _Match:
    """A whole-line match whose replacement takes the indentation of the matched lines."""
    window = doc.bodies[start : start + len(old_lines)]
    reindented = _reindent_like(new_lines, old_lines, window)
    return _line_match(doc, start, len(old_lines), _kept_as_found(reindented, old_lines, new_lines, window), score)


def _kept_as_found(
    replacement: Sequence[str], old_lines: Sequence[str], new_lines: Sequence[str], window: Sequence[str]
) -> list[str]:
    """``replacement`` (``new_lines`` made ready for the file) with every line that ``new``
    keeps exactly as ``old`` quoted it taken from the file as it is (``window``), so the
    whitespace a loose match overlooked (trailing spaces, tabs, inner runs) stays unchanged
    on lines the edit did not change."""
    if list(old_lines) == list(new_lines):
        return list(window)
    import difflib

    out = list(replacement)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, old_lo, old_hi, new_lo, _ in matcher.get_opcodes():
        if tag == "equal":
            out[new_lo : new_lo + old_hi - old_lo] = window[old_lo:old_hi]
    return out


def _reindent_like(new_lines: Sequence[str], old_lines: Sequence[str], window: Sequence[str]) -> list[str]:
    """Indent ``new_lines`` for the file, given the lines ``old_lines`` matched (``window``).

    When each indentation of ``old`` always stands for the same indentation in the file
    (four spaces for a tab, nothing for four spaces, an unindented first line copied from
    its first non-blank character), a line of ``new`` at one of those indentations takes its
    counterpart. When ``old`` lost the file's structure (all flat), a line of ``new``
    indented like the line of ``old`` at the same place takes that file line's indentation.
    Any other line is shifted by the difference of the common indentations.
    """
    mapping: dict[str, str] = {}
    consistent = True
    for old_line, file_line in zip(old_lines, window, strict=True):
        if old_line.strip() and file_line.strip():
            consistent = consistent and mapping.setdefault(_indent_of(old_line), _indent_of(file_line)) == (
                _indent_of(file_line)
            )
    old_common, file_common = _common_indent(old_lines), _common_indent(window)
    out: list[str] = []
    for row, line in enumerate(new_lines):
        lead = _indent_of(line)
        if not line.strip():
            out.append(line)
        elif consistent and lead in mapping:
            out.append(mapping[lead] + line[len(lead) :])
        elif (
            not consistent
            and row < len(old_lines)
            and old_lines[row].strip()
            and window[row].strip()
            and lead == _indent_of(old_lines[row])
        ):
            out.append(_indent_of(window[row]) + line[len(lead) :])
        else:
            out.extend(_reindent([line], old_common, file_common))
    return out


def _loose(doc: _Doc, old_lines: list[str], new_lines: list[str]) -> tuple[str, list[_Match]] | None:
    """Strategies 3-5: whole lines equal up to whitespace; the strictest level found wins."""
    count = len(old_lines)
    if not count or count > doc.count:
        return None
    collapsed_old = [_collapse(line) for line in old_lines]
    tokens = [(len(tok), -j, tok) for j, line in enumerate(collapsed_old) for tok in line.split(" ") if tok]
    if not tokens:
        return None
    _, neg_j, anchor = max(tokens)
    anchor_line = -neg_j
    # Every window that matches has the anchor token in its line anchor_line, so only
    # lines containing it need a closer look.
    text, starts = doc.text, doc.starts
    candidates: list[int] = []
    pos = text.find(anchor)
    while pos != -1:
        line = doc.line_of(pos)
        candidates.append(line - anchor_line)
        pos = text.find(anchor, starts[line + 1])
    bodies = doc.bodies
    by_level: dict[int, list[int]] = {}
    for start in candidates:
        if start < 0 or start + count > doc.count:
            continue
        window = bodies[start : start + count]
        if any(_collapse(w) != c for w, c in zip(window, collapsed_old, strict=True)):
            continue
        if all(w.rstrip() == o.rstrip() for w, o in zip(window, old_lines, strict=True)):
            level = 3
        elif _dedented(window) == _dedented(old_lines):
            level = 4
        else:
            level = 5
        by_level.setdefault(level, []).append(start)
    if not by_level:
        return None
    level = min(by_level)
    if level == 3:
        matches = [
            _line_match(
                doc, start, count, _kept_as_found(new_lines, old_lines, new_lines, doc.bodies[start : start + count])
            )
            for start in by_level[level]
        ]
    else:
        matches = [_reindented_match(doc, start, old_lines, new_lines) for start in by_level[level]]
    return STRATEGIES[level - 1], matches


def _fuzzy(doc: _Doc, old_lines: list[str], new_lines: list[str]) -> list[_Match]:
    """Strategy 7: runs of ``len(old_lines)`` lines at least FUZZY_THRESHOLD similar.

    Returns the best runs that do not overlap one another, best first on ties by position,
    then sorted by position.
    """
    count = len(old_lines)
    total = doc.count
    if not count or count > total:
        return []
    query_lines = [line.strip() for line in old_lines]
    query = "\n".join(query_lines)
    if not query.strip():
        return []
    stripped = doc.stripped
    if best_possible_ratio(len(query), sum(map(len, stripped)) + total) < FUZZY_THRESHOLD * 100:
        # No run of the file is long enough to be similar (an old_string far longer than the
        # file): say so without loading rapidfuzz, which costs ~0.1 s the first time.
        return []
    from rapidfuzz import fuzz

    starts = _fuzzy_starts(stripped, query_lines)
    cutoff = FUZZY_THRESHOLD * 100
    scored: list[tuple[float, int]] = []
    for start in starts:
        score = fuzz.ratio(query, "\n".join(stripped[start : start + count]), score_cutoff=cutoff)
        if score:
            scored.append((score, start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[tuple[float, int]] = []
    for score, start in scored:
        if all(abs(start - other) >= count for _, other in chosen):
            chosen.append((score, start))
    return [
        _reindented_match(doc, start, old_lines, new_lines, score)
        for score, start in sorted(chosen, key=lambda item: item[1])
    ]


def _fuzzy_starts(stripped: list[str], query_lines: list[str]) -> list[int]:
    """The runs worth scoring in full for the fuzzy strategy, by their first line.

    A run's similarity is close to the average of its lines' similarities to the lines of
    old, weighted by length. Each anchor line (the longest lines of old) is compared with
    every line of the file (one rapidfuzz call for them all); a line scoring below the floor
    counts as the floor, and a line that is not an anchor counts as identical. That gives an
    upper estimate for every run at once, and only runs whose estimate comes within the slack
    of the threshold are scored. When the anchors cover too little of old for the estimate
    to exclude anything, every run is scored.
    """
    count = len(query_lines)
    last = len(stripped) - count
    weights = [len(line) for line in query_lines]
    mass = sum(weights)
    anchors: list[int] = []
    covered = 0
    for j in sorted(range(count), key=lambda j: (-weights[j], j)):
        if not weights[j] or covered >= _ANCHOR_SHARE * mass or len(anchors) >= _ANCHOR_LIMIT:
            break
        anchors.append(j)
        covered += weights[j]
    base = _ANCHOR_FLOOR * covered + 100.0 * (mass - covered)
    need = (FUZZY_THRESHOLD * 100 - _ESTIMATE_SLACK) * mass
    if base >= need:
        return list(range(last + 1))
    # A run starting at `start` is credited weight * (score - floor) for each anchor j whose
    # line start + j scores at least the floor; it is scored when its credit reaches `least`.
    least = need - base
    return _credited_starts(stripped, query_lines, anchors, weights, least)


def _credited_starts(
    stripped: list[str], query_lines: list[str], anchors: list[int], weights: list[int], least: float
) -> list[int]:
    """:func:`_fuzzy_starts`'s credited runs: the starts whose credit reaches ``least``.

    Each anchor line ``j`` of old is compared with every line of the file in one rapidfuzz
    ``cdist`` (many lines at once, in an array); line ``i`` scoring at least the floor
    credits the run starting at ``i - j`` with ``weights[j] * (score - floor)``.
    """
    import numpy as np
    from rapidfuzz import fuzz, process

    count = len(query_lines)
    size = len(stripped)
    scores = process.cdist(
        [query_lines[j] for j in anchors], stripped, scorer=fuzz.ratio, score_cutoff=_ANCHOR_FLOOR, dtype=np.float64
    )
    # credit[start + count] for start in -count .. size-1.
    credit = np.zeros(size + count)
    for row, j in enumerate(anchors):
        gains = scores[row] - _ANCHOR_FLOOR
        gains[scores[row] < _ANCHOR_FLOOR] = 0.0  # below the floor cdist says 0: no credit
        credit[count - j : count - j + size] += weights[j] * gains
    return [int(start) for start in np.flatnonzero(credit[count : size + 1] >= least)]


def _non_overlapping(doc: _Doc, matches: list[_Match]) -> list[_Match]:
    """Keep matches left to right that do not overlap one kept before.

    Adjacent whole-line deletions become one, so deleting the last lines of a text without a
    final newline takes the line ending before the first of them, not one between them.
    """
    chosen: list[_Match] = []
    for match in sorted(matches, key=lambda m: m.lo):
        if chosen and match.lo < chosen[-1].hi:
            continue
        last = chosen[-1] if chosen else None
        if (
            last is not None
            and last.whole_lines
            and match.whole_lines
            and not last.replacement
            and not match.replacement
            and last.hi == match.lo
        ):
            merged = _line_match(doc, last.lo, match.hi - last.lo, [], last.score)
            chosen[-1] = replace(merged, places=last.places + 1)
        else:
            chosen.append(match)
    return chosen


def _splice(text: str, matches: list[_Match]) -> str:
    pieces: list[str] = []
    done = 0
    for match in sorted(matches, key=lambda m: m.start):
        # Deleting the last lines of a text reaches back for the line ending before them,
        # which a deletion just before may already have taken.
        start = max(match.start, done)
        pieces.append(text[done:start])
        pieces.append(match.replacement)
        done = max(done, match.end)
    pieces.append(text[done:])
    return "".join(pieces)


def _ambiguous_message(strategy: str, matches: list[_Match], where: str) -> str:
    places = sorted(matches, key=lambda m: m.line)
    if strategy == "fuzzy":
        listed = [f"{m.line + 1} ({m.score:.0f}% similar)" for m in places[:_MAX_LISTED]]
    else:
        listed = [str(m.line + 1) for m in places[:_MAX_LISTED]]
    more = f" and {len(places) - _MAX_LISTED} more" if len(places) > _MAX_LISTED else ""
    how = "exactly" if strategy == "exact" else f"by strategy {strategy}"
    return (
        f"old_string matches {len(places)} places in {where} ({how}), starting at lines "
        f"{', '.join(listed)}{more}. Add neighbouring lines to old_string so it matches exactly one "
        "place, or set replace_all to true to replace every one."
    )


def _not_found_message(doc: _Doc, old: str, where: str) -> str:
    if not doc.text:
        return f"old_string was not found: {where} is empty. Use workspace_write to give it content."
    tried = ", ".join(STRATEGIES[:-1])
    head = (
        f"old_string was not found in {where}, not even approximately (tried {tried}, and "
        f"fuzzy at {FUZZY_THRESHOLD:.0%} similarity)."
    )
    lines = doc.bodies[: doc.count]
    closest = closest_block(lines, _lines_of(old))
    if closest is None:
        return f"{head} Read the file again and copy the text to replace into old_string exactly."
    start, count, score = closest
    span = f"line {start + 1}" if count == 1 else f"lines {start + 1}-{start + count}"
    return (
        f"{head} The closest text is {span} ({score:.0f}% similar):\n"
        f"{quote_file_text(quote_lines(lines[start : start + count], start + 1))}\n"
        "Copy the current text of those lines into old_string exactly and retry."
    )
