"""A grep pattern: Python's regular expression, checked and written out in ripgrep's syntax.

The tool's contract is Python's syntax, and ripgrep reads Rust's: the pattern is parsed by
``re`` itself and its parse tree written back out construct by construct, so ripgrep runs
exactly what Python read, or the pattern is refused with the construct named (see
:mod:`toolcards.workspace._grep` for what is not supported, and ``docs/architecture.md`` for
why the private ``re._parser`` is used rather than ripgrep's PCRE2 engine).
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from typing import Any, NamedTuple

from toolcards.errors import RetriableError
from toolcards.workspace._grep_limits import MAX_GREP_PATTERN_CHARS

__all__ = ["CompiledPattern", "compile_pattern"]

# re._parser is private; its tree is stable across 3.11-3.13 and it is the only way to
# know exactly how Python read the pattern. Anything unexpected is refused, not guessed.
# Both modules are loaded by ``re`` itself, so this costs nothing.
_sre_parser: Any = importlib.import_module("re._parser")


_sre: Any = importlib.import_module("re._constants")


_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.MULTILINE, "m"))


class CompiledPattern(NamedTuple):
    """A pattern checked and prepared for ripgrep and ``re``."""

    rust: str
    """The pattern in ripgrep's syntax."""
    regex: re.Pattern[str]
    """The pattern compiled by ``re``."""
    line_anchored: bool
    """It has ``^``, ``$``, ``\\A`` or ``\\Z``: it must be searched line by line."""


@functools.lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> CompiledPattern:
    # Kept per pattern: parsing and rewriting it costs as much as reading a few dozen files.
    if not pattern:
        raise RetriableError("The search pattern is empty: pass a regular expression such as 'def main'.")
    if len(pattern) > MAX_GREP_PATTERN_CHARS:
        raise RetriableError(
            f"The pattern is {len(pattern):,} characters long; at most {MAX_GREP_PATTERN_CHARS:,} are accepted. "
            "Search for a shorter, more specific pattern."
        )
    if "\x00" in pattern:
        raise RetriableError(f"The pattern {pattern!r} contains a NUL byte: remove it.")
    try:
        # Python warns (FutureWarning) where a class like [[:alpha:]] or [a--b] would mean
        # something else in other engines, ripgrep included: such a pattern is refused.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled = re.compile(pattern)
            tree = _sre_parser.parse(pattern, 0)
    except (re.error, FutureWarning, OverflowError) as exc:
        raise RetriableError(
            f"Invalid regular expression {pattern!r}: {exc}. Fix it (escape literal characters such as "
            "( [ { . * + ? with a backslash) and retry."
        ) from exc
    except RecursionError:
        raise _too_deep(pattern) from None
    flags = tree.state.flags
    if flags & re.ASCII:
        raise _unsupported(pattern, "the (?a) ASCII flag", _ASCII_FIX)
    writer = _RustWriter(pattern)
    try:
        body = writer.sequence(list(tree))
    except RecursionError:
        raise _too_deep(pattern) from None
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)
    rust = f"(?{letters}){body}" if letters else body
    return CompiledPattern(rust, compiled, line_anchored=writer.line_anchored)


_ASCII_FIX = "Spell the class out instead, such as [A-Za-z0-9_] for \\w."


def _too_deep(pattern: str) -> RetriableError:
    return RetriableError(f"The pattern {pattern!r} nests groups too deeply to compile: flatten it and retry.")


def _unsupported(
    pattern: str,
    what: str,
    fix: str = "Rewrite it without lookaround, backreferences, atomic groups or possessive quantifiers.",
) -> RetriableError:
    return RetriableError(f"The pattern {pattern!r} uses {what}, which grep does not support. {fix}")


class _RustWriter:
    """Writes a Python parse tree back out in ripgrep's regex syntax."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.line_anchored = False

    def sequence(self, items: list[tuple[Any, Any]]) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op: Any, av: Any) -> str:
        c = _sre
        if op is c.LITERAL:
            return self.literal(av)
        if op is c.NOT_LITERAL:
            return f"[^{self.literal(av)}]"
        if op is c.ANY:
            return "."
        if op is c.IN:
            return self.charset(av)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, sub = av
            body = self.sequence(list(sub))
            if not self._atomic(list(sub)):
                body = f"(?:{body})"
            if high is c.MAXREPEAT or high == c.MAXREPEAT:
                count = {0: "*", 1: "+"}.get(low, f"{{{low},}}")
            elif (low, high) == (0, 1):
                count = "?"
            elif low == high:
                count = f"{{{low}}}"
            else:
                count = f"{{{low},{high}}}"
            return body + count + ("?" if op is c.MIN_REPEAT else "")
        if op is c.SUBPATTERN:
            _group, add, remove, sub = av
            if (add | remove) & re.ASCII:
                raise _unsupported(self.pattern, "the (?a) ASCII flag", _ASCII_FIX)
            on = "".join(letter for flag, letter in _FLAG_LETTERS if add & flag)
            off = "".join(letter for flag, letter in _FLAG_LETTERS if remove & flag)
            flags = on + (f"-{off}" if off else "")
            return f"(?{flags}:{self.sequence(list(sub))})"
        if op is c.BRANCH:
            return "(?:" + "|".join(self.sequence(list(alt)) for alt in av[1]) + ")"
        if op is c.AT:
            self.line_anchored = self.line_anchored or av not in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY)
            return {
                c.AT_BEGINNING: "^",
                c.AT_BEGINNING_STRING: "^",
                c.AT_END: "$",
                c.AT_END_STRING: "$",
                c.AT_BOUNDARY: r"\b",
                c.AT_NON_BOUNDARY: r"\B",
            }[av]
        names = {
            c.ASSERT: "lookaround",
            c.ASSERT_NOT: "lookaround",
            c.GROUPREF: "a backreference",
            c.GROUPREF_EXISTS: "a conditional group",
            c.ATOMIC_GROUP: "an atomic group",
            c.POSSESSIVE_REPEAT: "a possessive quantifier",
        }
        raise _unsupported(self.pattern, names.get(op, str(op).lower()))

    def charset(self, items: list[tuple[Any, Any]]) -> str:
        c = _sre
        out = []
        for op, av in items:
            if op is c.NEGATE:
                out.append("^")
            elif op is c.LITERAL:
                out.append(self.literal(av))
            elif op is c.RANGE:
                out.append(f"{self.literal(av[0])}-{self.literal(av[1])}")
            elif op is c.CATEGORY:
                out.append(
                    {
                        c.CATEGORY_DIGIT: r"\d",
                        c.CATEGORY_NOT_DIGIT: r"\D",
                        c.CATEGORY_SPACE: r"\s",
                        c.CATEGORY_NOT_SPACE: r"\S",
                        c.CATEGORY_WORD: r"\w",
                        c.CATEGORY_NOT_WORD: r"\W",
                    }[av]
                )
            else:
                raise _unsupported(self.pattern, str(op).lower())
        return "[" + "".join(out) + "]"

    def literal(self, code: int) -> str:
        if code in (10, 13):
            raise RetriableError(
                f"The pattern {self.pattern!r} contains a line break (\\n or \\r); grep matches within "
                "single lines. Search for the text on one line, or use $ for the end of a line."
            )
        char = chr(code)
        if char.isascii() and (char.isalnum() or char == "_"):
            return char
        return f"\\x{{{code:X}}}"

    @staticmethod
    def _atomic(items: list[tuple[Any, Any]]) -> bool:
        c = _sre
        return len(items) == 1 and items[0][0] in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.SUBPATTERN)
