"""The display text of a matching line: whole, or a window around its first match."""

from __future__ import annotations

from collections.abc import Iterable

from toolcards.workspace._grep_limits import MAX_GREP_LINE_CHARS

__all__ = ["CONTEXT_CHARS", "clip_line", "whole_line_text", "window_at", "window_text"]

CONTEXT_CHARS = 100
"""How many characters before the match a window of a long line starts."""


def clip_line(line: str, start: int) -> str:
    """The display text of a whole line whose first match starts at character ``start``.

    A line of at most :data:`MAX_GREP_LINE_CHARS` characters is shown whole; a longer one
    as that many characters from ``start - 100`` (or from its beginning when the match is
    nearer than that), with ``…`` where it is cut.
    """
    if line.startswith("\ufeff"):
        line, start = line[1:], max(0, start - 1)
    if len(line) <= MAX_GREP_LINE_CHARS:
        return line
    first = 0 if start <= CONTEXT_CHARS else start - CONTEXT_CHARS
    return window_text(line[first : first + MAX_GREP_LINE_CHARS + 1], first)


def window_text(window: str, start: int) -> str:
    """``window``, the line from character ``start`` on, with ``…`` where it is cut.

    ``window`` holds one character more than is shown when the line goes on.
    """
    if start == 0 and window.startswith("\ufeff"):
        window = window[1:]
    return ("…" if start else "") + window[:MAX_GREP_LINE_CHARS] + ("…" if len(window) > MAX_GREP_LINE_CHARS else "")


def whole_line_text(raw: bytes, target: int | None) -> str:
    """The display text of a whole line (UTF-8) whose first match starts at byte ``target``."""
    expected = raw.decode("utf-8", "replace")
    if len(expected) <= MAX_GREP_LINE_CHARS:
        return clip_line(expected, 0)
    return clip_line(expected, len(raw[:target].decode("utf-8", "replace")))


def window_at(pieces: Iterable[str], target: int | None, *, complete: bool) -> str | None:
    """The display text of a long line, given piece by piece, whose first match starts at UTF-8 byte ``target``.

    ``target`` None stands for the end of the line.

    ``complete`` says the pieces run to the end of the line; when they do not and end
    before the window is full, or when the line ends before ``target``, returns None.
    """
    before = ""  # the last CONTEXT_CHARS characters before the current piece
    chars = 0  # characters before the current piece
    consumed = 0  # their size in UTF-8
    window: str | None = None
    start = 0
    for piece in pieces:
        if window is None:
            encoded = piece.encode("utf-8", "surrogatepass")
            if target is None or consumed + len(encoded) <= target:
                consumed += len(encoded)
                chars += len(piece)
                before = (before + piece)[-CONTEXT_CHARS:]
                continue
            offset = len(encoded[: target - consumed].decode("utf-8", "ignore"))
            position = chars + offset
            start = 0 if position <= CONTEXT_CHARS else position - CONTEXT_CHARS
            head = before + piece[:offset]
            window = head[len(head) - (position - start) :] + piece[offset:]
        else:
            window += piece
        if len(window) > MAX_GREP_LINE_CHARS:
            return window_text(window, start)
    if window is None:
        if target is not None and consumed != target:
            return None
        start = 0 if chars <= CONTEXT_CHARS else chars - CONTEXT_CHARS
        window = before[len(before) - (chars - start) :]
    return window_text(window, start) if complete else None
