"""What a grep pattern tells the index: the trigrams every matching line holds, and where
Python's ``re`` surely agrees with ripgrep.

:func:`analyse` reads the pattern as :mod:`toolcards.workspace._grep` hands it to ripgrep (its
own rewrite: escaped literals, bracket classes, ``(?:...)`` and ``(?flags:...)`` groups,
``|``, quantifiers, ``^ $ \\b \\B`` and ``.``), a syntax small enough to parse here without
``re``'s private parser. Anything else makes the analysis give up (no trigram, not safe for
Python), which is always a correct answer.

**Trigrams.** A literal run every match contains gives its bytes' trigrams, ASCII lower-cased
as the index folds them; small alternatives are multiplied out (``colou?r``), larger ones end
the run. Under ``(?i)`` only ASCII letters other than ``k`` and ``s`` are used (Unicode folds
U+212A and U+017F to them), and U+FFFD never is. A pattern needing no trigram (``.``, ``ab``)
is not narrowed.

**Python's ``re`` instead of ripgrep** (:meth:`PatternFacts.python_agrees`) only when the
pattern cannot backtrack far (no unbounded repetition, at most :data:`MAX_PYTHON_PATHS` paths,
matches of at most :data:`MAX_PYTHON_MATCH_CHARS`), when ``\\d \\s \\w \\b`` or ``(?i)`` meet
an all-ASCII file (each engine has its own Unicode tables; on ASCII they differ only on
U+001C–U+001F, which Python's ``\\s`` matches: a file holding one counts as not ASCII), and
when ``.``, negated classes, categories and anchors meet a file with no lone ``\\r`` and no
U+FFFD (ripgrep ``--crlf`` and ``re`` treat those differently). Everything else goes to
ripgrep, over the candidates only.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "LONG_LINE_CHARS",
    "MAX_PYTHON_MATCH_CHARS",
    "MAX_PYTHON_PATHS",
    "TRUE",
    "PatternFacts",
    "Query",
    "TextProperties",
    "analyse",
    "text_properties",
    "trigram_codes_of",
]

MAX_PYTHON_PATHS = 256
"""Most ways through a pattern (alternatives times optional parts) for ``re`` to confirm it."""

MAX_PYTHON_MATCH_CHARS = 2048
"""Longest match a pattern may have for ``re`` to confirm it."""

_MAX_STRINGS = 16
"""Most alternative strings a literal run is followed as; more end the run."""

_MAX_STRING_BYTES = 256
"""Longest string a run is followed as; a longer one is ended (its trigrams are kept)."""

_MAX_CLASS_CHARS = 8
"""Largest class taken as a set of literals (``[ab]``); larger ones end the run."""

_UNKNOWN_UNDER_FOLD = frozenset("ks")
"""ASCII letters that Unicode case folding joins with a non-ASCII letter (K U+212A, ſ U+017F)."""


class Query(NamedTuple):
    """A condition on a file's trigrams: all of ``trigrams`` and every sub-query (``AND``),
    or any of them (``OR``)."""

    any_of: bool
    """False: every part must hold (AND); True: one is enough (OR)."""
    trigrams: frozenset[int]
    """Trigram codes (:func:`trigram_codes_of`)."""
    parts: tuple[Query, ...]
    """Sub-queries."""

    @property
    def is_true(self) -> bool:
        """Whether every file satisfies it (an AND of nothing)."""
        return not self.any_of and not self.trigrams and not self.parts


TRUE = Query(False, frozenset(), ())
"""The query every file satisfies: the pattern gives no trigram."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PatternFacts:
    """What :func:`analyse` found in one pattern."""

    query: Query
    """Trigrams a line must hold to match (:data:`TRUE` when there is nothing to narrow on)."""
    python_safe: bool
    """``re`` cannot backtrack far on it (see the module docstring)."""
    unicode_tables: bool
    """It uses ``\\d \\s \\w \\b`` or their negations, or ``(?i)``."""
    any_char: bool
    """It uses ``.``, a negated class, a category or an anchor: what ripgrep and ``re`` treat
    differently at a lone ``\\r`` or a U+FFFD."""

    def python_agrees(self, *, ascii_text: bool, irregular: bool, long_line: bool) -> bool:
        """Whether ``re`` gives ripgrep's answer on a file with these properties.

        ``irregular``: the file's text has a lone ``\\r`` or a U+FFFD; ``long_line``: a line
        too long for ``re`` to be trusted with (it is left to ripgrep).
        """
        if not self.python_safe or long_line:
            return False
        if self.unicode_tables and not ascii_text:
            return False
        return not (self.any_char and irregular)


LONG_LINE_CHARS = 64 * 1024
"""A line longer than this is searched by ripgrep, never by Python's ``re``."""


class TextProperties(NamedTuple):
    """What :meth:`PatternFacts.python_agrees` asks of a file's text."""

    ascii_text: bool
    """It is ASCII and holds none of U+001C–U+001F, where the engines' tables for ``\\d \\s \\w
    \\b`` and ``(?i)`` agree (Python's ``\\s`` matches those four separators, ripgrep's does not)."""
    irregular: bool
    """It holds a lone ``\\r`` or a U+FFFD."""
    long_line: bool
    """A line is longer than :data:`LONG_LINE_CHARS`."""


_TABLES_DIFFER = re.compile("[\x1c-\x1f]")
"""ASCII characters the engines' tables disagree on: Python's ``\\s`` matches them, ripgrep's
(Unicode White_Space) does not. Every other ASCII character is in the same classes in both."""


def text_properties(text: str) -> TextProperties:
    """The properties of ``text`` (as grep reads it) that decide which engine may search it."""
    irregular = "\ufffd" in text or ("\r" in text and text.count("\r") != text.count("\r\n"))
    long_line = len(text) > LONG_LINE_CHARS and max(len(line) for line in text.split("\n")) > LONG_LINE_CHARS
    return TextProperties(text.isascii() and _TABLES_DIFFER.search(text) is None, irregular, long_line)


def trigram_codes_of(data: bytes) -> set[int]:
    """The trigram codes of ``data`` (already lower-cased): ``b0 << 16 | b1 << 8 | b2`` for each
    3-byte window."""
    return {(data[i] << 16) | (data[i + 1] << 8) | data[i + 2] for i in range(len(data) - 2)}


@functools.lru_cache(maxsize=256)
def analyse(rust_pattern: str) -> PatternFacts:
    """The facts of a pattern in ripgrep's syntax, as :mod:`toolcards.workspace._grep` writes it.

    Never raises: a pattern it cannot read gives :data:`TRUE` and ``python_safe=False``.
    """
    try:
        node = _Parser(rust_pattern).parse()
    except _Unreadable:
        return PatternFacts(query=TRUE, python_safe=False, unicode_tables=True, any_char=True)
    info = _info(node)
    query = _simplified(info.query)
    paths, longest = _extent(node)
    return PatternFacts(
        query=query,
        python_safe=paths <= MAX_PYTHON_PATHS and longest <= MAX_PYTHON_MATCH_CHARS and not _folded_non_ascii(node),
        unicode_tables=_uses_unicode_tables(node),
        any_char=_uses_any_char(node),
    )


# -- the syntax tree --------------------------------------------------------------------------


class _Unreadable(Exception):
    """The pattern holds something this parser does not know: give up, soundly."""


@dataclass(frozen=True, slots=True)
class _Literal:
    char: str
    fold: bool


@dataclass(frozen=True, slots=True)
class _Class:
    chars: frozenset[str] | None
    """Its characters when it is a small set of them, else None."""
    fold: bool
    categories: bool
    """It holds ``\\d \\s \\w`` or a negation of one."""
    negated: bool
    ascii: bool
    """Every character and range in it is ASCII."""


@dataclass(frozen=True, slots=True)
class _Any:
    pass


@dataclass(frozen=True, slots=True)
class _Assertion:
    word: bool
    """``\\b``/``\\B`` (true) or ``^``/``$`` (false)."""


@dataclass(frozen=True, slots=True)
class _Sequence:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Alternation:
    branches: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Repeat:
    item: _Node
    low: int
    high: int | None
    """None: unbounded."""


_Node = _Literal | _Class | _Any | _Assertion | _Sequence | _Alternation | _Repeat

_CATEGORIES = frozenset("dDsSwW")


class _Parser:
    """Recursive descent over the syntax :mod:`toolcards.workspace._grep` writes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def parse(self) -> _Node:
        fold = False
        if self.text.startswith("(?") and (end := self.text.find(")")) > 0 and ":" not in self.text[2:end]:
            fold = self._flags(self.text[2:end], fold)
            self.at = end + 1
        node = self._alternation(fold)
        if self.at != len(self.text):
            raise _Unreadable
        return node

    def _peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def _take(self, expected: str) -> None:
        if not self.text.startswith(expected, self.at):
            raise _Unreadable
        self.at += len(expected)

    def _alternation(self, fold: bool) -> _Node:
        branches = [self._sequence(fold)]
        while self._peek() == "|":
            self.at += 1
            branches.append(self._sequence(fold))
        return branches[0] if len(branches) == 1 else _Alternation(tuple(branches))

    def _sequence(self, fold: bool) -> _Node:
        items: list[_Node] = []
        while self._peek() not in ("", "|", ")"):
            items.append(self._repeated(self._atom(fold)))
        return items[0] if len(items) == 1 else _Sequence(tuple(items))

    def _repeated(self, node: _Node) -> _Node:
        while True:
            char = self._peek()
            if char in ("*", "+", "?"):
                self.at += 1
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            elif char == "{":
                end = self.text.find("}", self.at)
                if end < 0:
                    raise _Unreadable
                low, high = _counts(self.text[self.at + 1 : end])
                self.at = end + 1
            else:
                return node
            if self._peek() == "?":  # lazy: the same strings match
                self.at += 1
            node = _Repeat(node, low, high)

    def _atom(self, fold: bool) -> _Node:
        char = self._peek()
        if char == "(":
            return self._group(fold)
        if char == "[":
            return self._class(fold)
        if char == ".":
            self.at += 1
            return _Any()
        if char in ("^", "$"):
            self.at += 1
            return _Assertion(word=False)
        if char == "\\":
            escaped = self.text[self.at + 1 : self.at + 2]
            if escaped in ("b", "B"):
                self.at += 2
                return _Assertion(word=True)
            if escaped in _CATEGORIES:
                self.at += 2
                return _Class(None, fold, categories=True, negated=escaped.isupper(), ascii=True)
            return _Literal(self._escaped_char(), fold)
        if char.isascii() and (char.isalnum() or char == "_"):
            self.at += 1
            return _Literal(char, fold)
        raise _Unreadable

    def _group(self, fold: bool) -> _Node:
        self._take("(")
        inner = fold
        if self._peek() == "?":
            end = self.text.find(":", self.at)
            if end < 0:
                raise _Unreadable
            inner = self._flags(self.text[self.at + 1 : end], fold)
            self.at = end + 1
        node = self._alternation(inner)
        self._take(")")
        return node

    @staticmethod
    def _flags(letters: str, fold: bool) -> bool:
        on, _, off = letters.partition("-")
        if set(on + off) - set("ism"):
            raise _Unreadable
        if "i" in on:
            fold = True
        if "i" in off:
            fold = False
        return fold

    def _class(self, fold: bool) -> _Node:
        self._take("[")
        negated = self._peek() == "^"
        if negated:
            self.at += 1
        chars: set[str] = set()
        categories = False
        countable = True
        ascii = True
        while self._peek() != "]":
            if not self._peek():
                raise _Unreadable
            if self._peek() == "\\" and self.text[self.at + 1 : self.at + 2] in _CATEGORIES:
                self.at += 2
                categories = True
                continue
            first = self._class_char()
            ascii = ascii and first.isascii()
            if self._peek() == "-":
                self.at += 1
                last = self._class_char()
                ascii = ascii and last.isascii()
                if ord(last) - ord(first) >= _MAX_CLASS_CHARS:
                    countable = False
                    continue
                chars.update(chr(code) for code in range(ord(first), ord(last) + 1))
            else:
                chars.add(first)
        self.at += 1
        small = countable and not categories and not negated and len(chars) <= _MAX_CLASS_CHARS
        return _Class(frozenset(chars) if small else None, fold, categories=categories, negated=negated, ascii=ascii)

    def _class_char(self) -> str:
        char = self._peek()
        if char == "\\":
            return self._escaped_char()
        if char.isascii() and (char.isalnum() or char == "_"):
            self.at += 1
            return char
        raise _Unreadable

    def _escaped_char(self) -> str:
        self._take("\\x{")
        end = self.text.find("}", self.at)
        if end < 0:
            raise _Unreadable
        try:
            code = int(self.text[self.at : end], 16)
            char = chr(code)
        except (ValueError, OverflowError):
            raise _Unreadable from None
        self.at = end + 1
        return char


def _counts(inside: str) -> tuple[int, int | None]:
    low, comma, high = inside.partition(",")
    try:
        if not comma:
            return int(low), int(low)
        return int(low), (int(high) if high else None)
    except ValueError:
        raise _Unreadable from None


# -- trigram queries ----------------------------------------------------------------------------


class _Info(NamedTuple):
    exact: frozenset[bytes] | None
    """When known and small: every match is one of these strings (as the index spells them)."""
    query: Query
    """What every line holding a match satisfies."""


def _literal_bytes(char: str, fold: bool) -> bytes | None:
    """``char`` as the index spells it, or None when the index cannot say where it is."""
    if char == "\ufffd" or 0xD800 <= ord(char) <= 0xDFFF:
        return None
    if fold:
        if not char.isascii() or char.lower() in _UNKNOWN_UNDER_FOLD:
            return None
        return char.lower().encode("ascii")
    return char.encode("utf-8").lower()  # bytes.lower() folds ASCII only, like the index


def _info(node: _Node) -> _Info:
    if isinstance(node, _Literal):
        spelled = _literal_bytes(node.char, node.fold)
        return _Info(None, TRUE) if spelled is None else _exact(frozenset({spelled}))
    if isinstance(node, _Class):
        if node.chars is None:
            return _Info(None, TRUE)
        spellings = [_literal_bytes(char, node.fold) for char in node.chars]
        if any(spelled is None for spelled in spellings):
            return _Info(None, TRUE)
        return _exact(frozenset(spelled for spelled in spellings if spelled is not None))
    if isinstance(node, _Assertion):
        return _exact(frozenset({b""}))
    if isinstance(node, _Any):
        return _Info(None, TRUE)
    if isinstance(node, _Sequence):
        return _sequence_info(node.items)
    if isinstance(node, _Alternation):
        infos = [_info(branch) for branch in node.branches]
        union: set[bytes] = set()
        for info in infos:
            if info.exact is None:
                break
            union |= info.exact
        else:
            if len(union) <= _MAX_STRINGS:
                return _exact(frozenset(union))
        return _Info(None, _any_of([info.query for info in infos]))
    return _repeat_info(node)


def _sequence_info(items: tuple[_Node, ...]) -> _Info:
    parts: list[Query] = []
    run: frozenset[bytes] = frozenset({b""})
    whole = True  # every item so far joined the run
    for item in items:
        info = _info(item)
        if info.exact is not None:
            joined = frozenset(a + b for a in run for b in info.exact)
            if len(joined) <= _MAX_STRINGS and all(len(s) <= _MAX_STRING_BYTES for s in joined):
                run = joined
                continue
            parts.append(_query_of(run))
            run = info.exact
        else:
            parts.append(_query_of(run))
            parts.append(info.query)
            run = frozenset({b""})
        whole = False
    if whole:
        return _exact(run)
    parts.append(_query_of(run))
    return _Info(None, _all_of(parts))


def _repeat_info(node: _Repeat) -> _Info:
    info = _info(node.item)
    if info.exact is not None:
        if (node.low, node.high) == (0, 1) and len(info.exact) < _MAX_STRINGS:
            return _exact(info.exact | {b""})
        if node.low == node.high and node.low <= 4 and len(info.exact) ** node.low <= _MAX_STRINGS:
            strings = frozenset({b""})
            for _ in range(node.low):
                strings = frozenset(a + b for a in strings for b in info.exact)
            if all(len(s) <= _MAX_STRING_BYTES for s in strings):
                return _exact(strings)
    if node.low >= 1:
        return _Info(None, info.query)
    return _Info(None, TRUE)


def _exact(strings: frozenset[bytes]) -> _Info:
    return _Info(strings, _query_of(strings))


def _query_of(strings: frozenset[bytes]) -> Query:
    """Lines holding one of ``strings``: an OR of each string's trigrams (TRUE if one is too short)."""
    alternatives = []
    for string in strings:
        if len(string) < 3:
            return TRUE
        alternatives.append(Query(False, frozenset(trigram_codes_of(string)), ()))
    return _any_of(alternatives)


def _all_of(parts: list[Query]) -> Query:
    trigrams: set[int] = set()
    subs: list[Query] = []
    for part in parts:
        if part.is_true:
            continue
        if not part.any_of:
            trigrams |= part.trigrams
            subs.extend(part.parts)
        else:
            subs.append(part)
    return Query(False, frozenset(trigrams), tuple(subs))


def _any_of(parts: list[Query]) -> Query:
    if not parts or any(part.is_true for part in parts):
        return TRUE
    if len(parts) == 1:
        return parts[0]
    return Query(True, frozenset(), tuple(parts))


def _simplified(query: Query) -> Query:
    """``query`` with one-part ORs and ANDs opened, duplicate sub-queries dropped."""
    if query.any_of:
        parts = tuple(dict.fromkeys(_simplified(part) for part in query.parts))
        return parts[0] if len(parts) == 1 else Query(True, frozenset(), parts)
    return _all_of([Query(False, query.trigrams, ()), *(_simplified(part) for part in query.parts)])


# -- what Python's re can be trusted with ---------------------------------------------------

_INFINITE = 1 << 62


def _extent(node: _Node) -> tuple[int, int]:
    """(ways through ``node``, its longest match in characters), each capped at a large number."""
    if isinstance(node, _Literal | _Class | _Any):
        return 1, 1
    if isinstance(node, _Assertion):
        return 1, 0
    if isinstance(node, _Sequence):
        paths, longest = 1, 0
        for item in node.items:
            item_paths, item_longest = _extent(item)
            paths, longest = min(_INFINITE, paths * item_paths), min(_INFINITE, longest + item_longest)
        return paths, longest
    if isinstance(node, _Alternation):
        extents = [_extent(branch) for branch in node.branches]
        return min(_INFINITE, sum(p for p, _ in extents)), max(length for _, length in extents)
    if node.high is None:
        return _INFINITE, _INFINITE
    item_paths, item_longest = _extent(node.item)
    if node.high > 64:
        return _INFINITE, _INFINITE
    total = sum(min(_INFINITE, item_paths**count) for count in range(node.low, node.high + 1))
    return min(_INFINITE, total), min(_INFINITE, item_longest * node.high)


def _children(node: _Node) -> tuple[_Node, ...]:
    if isinstance(node, _Sequence):
        return node.items
    if isinstance(node, _Alternation):
        return node.branches
    if isinstance(node, _Repeat):
        return (node.item,)
    return ()


def _walk(node: _Node) -> list[_Node]:
    found = [node]
    for child in _children(node):
        found.extend(_walk(child))
    return found


def _uses_unicode_tables(node: _Node) -> bool:
    for item in _walk(node):
        if isinstance(item, _Class) and (item.categories or item.fold):
            return True
        if isinstance(item, _Assertion) and item.word:
            return True
        if isinstance(item, _Literal) and item.fold:
            return True
    return False


def _uses_any_char(node: _Node) -> bool:
    for item in _walk(node):
        if isinstance(item, _Any | _Assertion):
            return True
        if isinstance(item, _Class) and (item.negated or item.categories):
            return True
    return False


def _folded_non_ascii(node: _Node) -> bool:
    """``(?i)`` on a non-ASCII character: the engines' case folds may differ even on ASCII text."""
    for item in _walk(node):
        if isinstance(item, _Literal) and item.fold and not item.char.isascii():
            return True
        if isinstance(item, _Class) and item.fold and not item.ascii:
            return True
    return False
