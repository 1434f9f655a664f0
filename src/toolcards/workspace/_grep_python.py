"""Searching open files with Python's ``re``, line by line, in bounded memory.

A line longer than about 65,536 characters is searched in overlapping windows and never held
whole, so a match there is found when it spans at most 4,096 characters.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from toolcards.workspace._glob import open_beneath, walk_files
from toolcards.workspace._grep_found import Found
from toolcards.workspace._grep_limits import MAX_GREP_LINE_CHARS
from toolcards.workspace._grep_lines import CONTEXT_CHARS, clip_line, window_text
from toolcards.workspace._grep_pattern import CompiledPattern
from toolcards.workspace._searched_text import decoded_chunks
from toolcards.workspace._tree import Directory, OpenFile

__all__ = ["Binary", "search_file", "search_python"]

_LONG_LINE_CHARS = 64 * 1024
"""Past this many characters without a line break, a line is searched in windows."""


_OVERLAP_CHARS = 4096
"""How far consecutive windows of a long line overlap: the longest match surely found there."""


class Binary(Exception):
    """The file holds a NUL character."""


def search_python(
    pattern: CompiledPattern, *, base: Directory | OpenFile, accepts: Callable[[str], bool] | None, found: Found
) -> None:
    if isinstance(base, OpenFile):
        if accepts is None or accepts(base.rel):
            search_file(base.fd, base.rel, pattern, found=found)
        return
    prefix = "" if base.rel == "." else base.rel + "/"
    for directory_fd, directory, entries in walk_files(base.fd):
        for entry in entries:
            rel = prefix + directory + entry.name
            if entry.is_symlink() or (accepts is not None and not accepts(rel)):
                continue
            try:
                fd = open_beneath(directory_fd, entry.name, directory=False)
            except OSError:
                continue
            try:
                search_file(fd, rel, pattern, found=found)
            finally:
                os.close(fd)


def search_file(fd: int, rel: str, pattern: CompiledPattern, *, found: Found) -> None:
    found.begin_file(rel)
    try:
        for number, shown in _scan(fd, pattern):
            found.add(number, shown)
    except (Binary, OSError):
        found.drop_file()
    else:
        found.end_file()


def _scan(fd: int, pattern: CompiledPattern) -> Iterator[tuple[int, str]]:
    """(line number, display text) of each matching line of an open file.

    Raises:
        Binary: the file holds a NUL character (found only as far as it was read).
    """
    regex = pattern.regex
    number = 1
    pending = ""  # the start of the current line, while it is shorter than _LONG_LINE_CHARS
    long_line: _LongLine | None = None
    for decoded in decoded_chunks(fd):
        if "\x00" in decoded:
            raise Binary
        chunk = decoded
        if long_line is not None:
            end = chunk.find("\n")
            if end < 0:
                long_line.feed(chunk)
                continue
            long_line.feed(chunk[:end])
            shown = long_line.finish()
            if shown is not None:
                yield number, shown
            long_line = None
            number += 1
            chunk = chunk[end + 1 :]
        text = pending + chunk if pending else chunk
        last = text.rfind("\n")
        if last < 0:
            pending = text
        else:
            lines = text[:last]
            # Without ^ or $ a search of many lines at once can only over-report (a line
            # break is no word character, like the ends of a line for \b), so it safely
            # skips runs of lines that cannot match.
            if pattern.line_anchored or regex.search(lines) is not None:
                for offset, line in enumerate(lines.split("\n")):
                    match = regex.search(line := line.removesuffix("\r"))
                    if match is not None:
                        yield number + offset, clip_line(line, match.start())
            number += lines.count("\n") + 1
            pending = text[last + 1 :]
        if len(pending) > _LONG_LINE_CHARS:
            long_line = _LongLine(pattern)
            long_line.feed(pending)
            pending = ""
    if long_line is not None:
        shown = long_line.finish()
        if shown is not None:
            yield number, shown
    elif pending:
        line = pending.removesuffix("\r")
        match = regex.search(line)
        if match is not None:
            yield number, clip_line(line, match.start())


class _LongLine:
    """Searches a line too long to hold whole, in overlapping windows, and keeps the window to show."""

    def __init__(self, pattern: CompiledPattern) -> None:
        self._regex = pattern.regex
        self._asserts = pattern.asserts
        self._buffer = ""
        self._base = 0  # index in the line of the buffer's first character
        self._position = 0  # index in the buffer where the next search starts
        self._start: int | None = None  # index in the line of the first character shown
        self._window = ""

    def feed(self, text: str) -> None:
        """The line's next characters."""
        if self._start is not None:
            # Two more than shown: one says whether the line goes on, one may be the "\r" of its break.
            self._window += text[: MAX_GREP_LINE_CHARS + 2 - len(self._window)]
            return
        self._buffer += text
        if len(self._buffer) >= _LONG_LINE_CHARS + _OVERLAP_CHARS:
            self._search(final=False)

    def finish(self) -> str | None:
        """The line ended: its display text, or None when it does not match."""
        if self._start is None:
            self._buffer = self._buffer.removesuffix("\r")
            self._search(final=True)
            if self._start is None:
                return None
        window = self._window
        if len(window) < MAX_GREP_LINE_CHARS + 2:
            window = window.removesuffix("\r")
        return window_text(window, self._start)

    def _search(self, *, final: bool) -> None:
        buffer = self._buffer
        end = len(buffer)
        if not final and buffer.endswith("\r"):
            end -= 1
        match = self._regex.search(buffer, self._position, end)
        # Where more of the line follows, a match that reaches the end of the window may
        # rest on an anchor ($, \b) that the next characters would fail.
        if match is not None and (final or not self._asserts or match.end() < end):
            position = self._base + match.start()
            self._start = 0 if position <= CONTEXT_CHARS else position - CONTEXT_CHARS
            self._window = buffer[self._start - self._base :][: MAX_GREP_LINE_CHARS + 2]
            self._buffer = ""
            return
        if final:
            return
        # A later match can only start in the last _OVERLAP_CHARS; keep those, with the
        # characters shown before a match and the one \b looks at.
        position = max(self._position, end - _OVERLAP_CHARS)
        cut = position - CONTEXT_CHARS - 1
        if cut > 0:
            self._buffer = buffer[cut:]
            self._base += cut
            position -= cut
        self._position = position
