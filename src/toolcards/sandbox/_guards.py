"""The check a command passes before it is spawned: its first word, against the allowlist.

The allowlist reads only the first word, so it is a usability filter (it tells the model
early which tools are expected), not a security boundary: ``bash -c '...'`` runs anything
the backend permits. Containment is the backend's job.

How the first word is found: words are read with the rules of ``shlex.split`` (POSIX
quoting and backslashes, split on whitespace), but only as far as the first word that is
not a ``NAME=value`` assignment (``FOO=1 pytest`` runs ``pytest``); a path is reduced to
its basename (``./.venv/bin/python`` counts as ``python``). Only the first simple command
is read: in ``make && psql`` only ``make`` is checked, and quoting after the first word is
left to the shell. Reading stops there, so the cost is linear in the words read, never in
the whole line (``shlex`` itself is quadratic in a token's length: a 2 MB word took over a
minute), and a line longer than :data:`MAX_COMMAND_CHARS` is refused before it is read.
A line holding what no argument of a process can hold (a NUL, a lone surrogate) is refused
too, before anything tries to start it.

The command's working directory is checked by :mod:`toolcards.sandbox._cwd`; a refusal from
either is a :class:`CommandRefused`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from toolcards.core._deadline import check_deadline

__all__ = [
    "MAX_COMMAND_CHARS",
    "CommandRefused",
    "check_allowed",
    "command_name",
]

MAX_COMMAND_CHARS = 65_536
"""Longest command line accepted, in characters. Longer scripts belong in a file the
command runs (``workspace_write`` it, then ``bash script.sh``); the kernel refuses a single
argument over 128 KiB anyway."""

# shlex's whitespace, and the runs the reader jumps over in one regex step each.
_WHITESPACE = " \t\r\n"
_BLANKS = re.compile(r"[ \t\r\n]*")
_PLAIN = re.compile(r"[^ \t\r\n'\"\\]+")
_QUOTE_OR_ESCAPE = re.compile(r'["\\]')

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

# A NUL ends a C string, and a lone surrogate has no bytes: exec cannot pass either.
_UNPASSABLE = re.compile(r"[\x00\ud800-\udfff]")


class CommandRefused(Exception):
    """A command that must not run; ``str(exc)`` is the message the model reads."""


def _words(cmd: str) -> Iterator[str]:
    """Words of ``cmd`` as ``shlex.split(cmd)`` gives them, read lazily and in linear time.

    Raises:
        ValueError: a word has an unclosed quote or ends in a lone backslash (the same
            messages as :mod:`shlex`).
    """
    i, end = 0, len(cmd)
    while True:
        i = _BLANKS.match(cmd, i).end()  # type: ignore[union-attr]  # matches the empty string
        if i >= end:
            return
        parts: list[str] = []
        while i < end and cmd[i] not in _WHITESPACE:
            check_deadline()
            char = cmd[i]
            if char == "'":
                close = cmd.find("'", i + 1)
                if close < 0:
                    raise ValueError("No closing quotation")
                parts.append(cmd[i + 1 : close])
                i = close + 1
            elif char == '"':
                i = _double_quoted(cmd, i + 1, parts)
            elif char == "\\":
                if i + 1 >= end:
                    raise ValueError("No escaped character")
                parts.append(cmd[i + 1])
                i += 2
            else:
                plain = _PLAIN.match(cmd, i)
                assert plain is not None
                parts.append(plain.group())
                i = plain.end()
        yield "".join(parts)


def _double_quoted(cmd: str, i: int, parts: list[str]) -> int:
    """Append the text of a double-quoted span starting after its quote; return the index
    after the closing quote. A backslash escapes only ``"`` and ``\\`` there, as in shlex."""
    end = len(cmd)
    while True:
        check_deadline()
        stop = _QUOTE_OR_ESCAPE.search(cmd, i)
        if stop is None:
            raise ValueError("No closing quotation")
        at = stop.start()
        parts.append(cmd[i:at])
        if cmd[at] == '"':
            return at + 1
        if at + 1 >= end:
            raise ValueError("No escaped character")
        escaped = cmd[at + 1]
        parts.append(escaped if escaped in '"\\' else "\\" + escaped)
        i = at + 2


def command_name(cmd: str) -> str:
    """The program a command line starts: first word after ``NAME=value`` prefixes, basename.

    Returns ``""`` for an empty command or one made only of assignments. Reads only up to
    that word, in time linear in what it reads.

    Raises:
        ValueError: the words read cannot be split (an unclosed quote).
    """
    for token in _words(cmd):
        if _ASSIGNMENT.match(token):
            continue
        return PurePosixPath(token).name or token
    return ""


def check_allowed(cmd: str, allowed: Iterable[str]) -> str | None:
    """``None`` when the command may run, else the message a model reads.

    An empty ``allowed`` allows every command. A command longer than
    :data:`MAX_COMMAND_CHARS` is refused unread, one holding a NUL or a lone surrogate
    (which no process argument can hold) before it is read. Never raises (but see
    :func:`~toolcards.core._deadline.check_deadline`: past a call's deadline it raises
    ``ToolTimeout``).
    """
    allowed = tuple(allowed)
    if len(cmd) > MAX_COMMAND_CHARS:
        return (
            f"SandboxError: The command is {len(cmd):,} characters long; the limit is {MAX_COMMAND_CHARS:,}. "
            "Write a long script to a file in the workspace and run that file instead."
        )
    unpassable = _UNPASSABLE.search(cmd)
    if unpassable is not None:
        return _unpassable(unpassable.group(), unpassable.start())
    try:
        name = command_name(cmd)
    except ValueError as exc:
        return f"CommandNotAllowedError: Could not read the command ({exc}): {cmd!r}. Check its quoting and retry."
    if not name:
        return "SandboxError: The command is empty. Pass the command line to run, e.g. 'pytest -q'."
    if not allowed or name in allowed:
        return None
    message = (
        f"CommandNotAllowedError: Command {name!r} is not in the allowed commands list. Allowed: [{', '.join(allowed)}]"
    )
    if name == "cd":
        message += ". To run in a subdirectory, pass it as the cwd argument instead of using cd."
    return message


def _unpassable(char: str, index: int) -> str:
    """The refusal of a command holding ``char`` at ``index``, which exec cannot pass on."""
    where = f"character {index + 1:,}"
    if char == "\x00":
        return (
            f"SandboxError: The command holds a NUL character ({where}), which no command line can carry; "
            "nothing was run. Remove it and retry (to write a NUL byte, use printf '\\0')."
        )
    return (
        f"SandboxError: The command is not valid text: {where} is the lone surrogate U+{ord(char):04X}, "
        "which no command line can carry; nothing was run. Remove it and retry."
    )
