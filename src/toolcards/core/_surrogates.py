"""Strings that are not text: lone UTF-16 surrogates, found where they come in, escaped where
they go out.

JSON may spell a character as ``\\ud800``, a UTF-16 surrogate, which is half of a pair;
``json.loads`` turns a lone one (and, from bytes, the CESU-8 bytes ``ED A0 80``) into a Python
``str`` that holds it. Such a string is valid JSON syntax and a valid ``str``, but not Unicode
text: encoding it as UTF-8 fails, so it breaks whatever writes it later (a JSON-RPC answer
that echoes it, a store row, a file name, a tokenizer), far from where it came in, and usually
as an exception nobody can act on. So:

* where outside input comes in (a tool call's arguments, :mod:`toolcards.core._schema`; a
  request's parameters, :mod:`toolcards.server._connection`), :func:`find_surrogate` finds the
  first such string, and the input is refused naming where it is;
* where something is written out that must never fail for one bad string (a JSON-RPC frame,
  the team's event log), :func:`escape_surrogates` writes each surrogate as its six-character
  escape (``\\ud800`` for U+D800), so the text says what was there.

Finding costs one ``str.isascii()`` per string (a C loop, a few nanoseconds for ordinary
arguments); only a string that is not ASCII is encoded to find out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Surrogate", "escape_surrogates", "find_surrogate"]

_CONTAINERS = (list, tuple, set, frozenset)
_NESTED = (Mapping, list, tuple, set, frozenset)
_PLAIN = frozenset({int, float, bool, type(None), dict, list})
"""Types known not to be strings nor other containers than dict and list: no isinstance asked."""


@dataclass(frozen=True, slots=True)
class Surrogate:
    """Where a string holding a lone surrogate was found."""

    path: tuple[str | int, ...]
    """The keys and list indexes leading to the string, from the top (``("tasks", 0, "title")``)."""
    in_key: bool
    """The string is a key of the mapping at :attr:`path`, not a value."""
    position: int
    """The surrogate's index in the string."""
    code: int
    """The surrogate's code point (0xD800 to 0xDFFF)."""

    def where(self, top: str = "") -> str:
        """The place as a model writes it: ``tasks[0].title``, ``a key of tasks[0]``; ``top``
        prefixes a path (``params.uri``) and names the place of an empty one."""
        text = top
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
        if self.in_key:
            return f"a key of `{text}`" if text else "a parameter name"
        return f"`{text}`"

    def describe(self, top: str = "") -> str:
        """What was found, as a clause: "`member` holds an unpaired UTF-16 surrogate (\\ud800 at
        position 2), which is not text"."""
        return (
            f"{self.where(top)} holds an unpaired UTF-16 surrogate (\\u{self.code:04x} at position "
            f"{self.position}), which is not text"
        )


def find_surrogate(value: Any) -> Surrogate | None:
    """The first string in ``value`` (a string, or mappings and lists of them at any depth,
    keys included) that holds a lone surrogate; ``None`` when every string is text.

    Objects other than strings, mappings, lists, tuples and sets are not looked into.
    """
    if isinstance(value, str):
        found = None if value.isascii() else _position(value)
        return None if found is None else Surrogate((), False, found, ord(value[found]))
    # Paths cost a tuple per container: only a value that holds a surrogate is walked again
    # to say where.
    return _located(value) if _holds_surrogate(value) else None


def _holds_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        # Exact types first: JSON gives dicts, lists and strings, and an ABC check costs more
        # than the rest of a string's visit.
        kind = type(node)
        if kind is dict or (kind is not list and isinstance(node, Mapping)):
            items: Any = node.items()
        elif kind is list or isinstance(node, _CONTAINERS):
            items = enumerate(node)
        else:
            continue
        for key, item in items:
            if type(key) is str and not key.isascii() and _position(key) is not None:
                return True
            kind = type(item)
            if kind is str or (kind not in _PLAIN and isinstance(item, str)):
                if not item.isascii() and _position(item) is not None:
                    return True
            elif kind is dict or kind is list or (kind not in _PLAIN and isinstance(item, _NESTED)):
                stack.append(item)
    return False


def _located(value: Any) -> Surrogate | None:
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, _CONTAINERS):
            items = enumerate(node)
        else:
            continue
        for key, item in items:
            if isinstance(key, str):
                found = _position(key)
                if found is not None:
                    return Surrogate(path, True, found, ord(key[found]))
            if isinstance(item, str):
                found = _position(item)
                if found is not None:
                    return Surrogate((*path, key), False, found, ord(item[found]))
            elif isinstance(item, _NESTED):
                stack.append(((*path, key), item))
    return None


def escape_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys included) written as its escape
    text (``\\ud800``); ``value`` itself when it holds none (what that costs is what finding costs). In a
    copy, mappings are dicts and tuples and sets lists: the result is for a JSON encoder."""
    if isinstance(value, str):
        return value if value.isascii() or _position(value) is None else _escaped(value)
    return _escaped_copy(value) if _holds_surrogate(value) else value


def _escaped_copy(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else _escaped(value)
    if isinstance(value, Mapping):
        return {_escaped_copy(key): _escaped_copy(item) for key, item in value.items()}
    if isinstance(value, _CONTAINERS):
        return [_escaped_copy(item) for item in value]
    return value


def _position(text: str) -> int | None:
    # Encoding is the fastest test CPython has (a regular expression scans 2 to 6 times slower).
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _escaped(text: str) -> str:
    # backslashreplace writes a surrogate as its escape, and leaves every other character be.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
