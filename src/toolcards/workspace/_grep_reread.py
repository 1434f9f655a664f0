"""The lines ripgrep reported, read again from the tree before they are shown.

ripgrep opens what lies below the base by name and follows a directory swapped for a symlink
at that moment, so each line shown is read again through descriptors opened beneath the root
without following symlinks, and shown only if the tree holds it there. Each file and
directory is opened once per call, and a file's lines, which come in line order, are found
in one forward pass over it: at ripgrep's byte offsets, else by counting its lines from its
start. Past each file's first 64 KB, what is read counts against :data:`REREAD_BYTES`.
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from toolcards.core._deadline import check_deadline
from toolcards.workspace._grep_found import Found, RgRecord
from toolcards.workspace._grep_lines import whole_line_text, window_at
from toolcards.workspace._ripgrep import RG_MAX_COLUMNS
from toolcards.workspace._searched_text import CHUNK_BYTES, Budget, BudgetSpent, decoded_chunks

__all__ = ["REREAD_BYTES", "Rendered", "render_found"]

REREAD_BYTES = 64 * 1024 * 1024
"""How much of the files one call may read, past each file's first 64 KB, to find ripgrep's lines again.

The first 64 KB are not counted: at most one such read per file shown, and most lines
shown lie there.
"""


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


_PREVIEW_NOTE = re.compile(rb" \[\.\.\. (?:\d+ more match(?:es)?|omitted end of long line)\]\r?$")


class Rendered(NamedTuple):
    """The lines to show, and why the others ripgrep reported are not shown."""

    lines: list[tuple[str, int, str]]
    """(root-relative path, line number, display text), in output order."""
    unread: int
    """Lines left out because :data:`REREAD_BYTES` was spent before they could be read again.

    They are counted in :attr:`Found.left_out` too, with those the tree did not hold.
    """


def render_found(found: Found, root_fd: int) -> Rendered:
    """The lines to show, as display text; ripgrep's lines are read again (see :func:`_rg_shown`).

    Each line ripgrep reported that is not shown adds one to ``found.left_out``.
    """
    budget = Budget(REREAD_BYTES)
    opener = _Reopener(root_fd, budget)
    shown = []
    unread = 0
    try:
        for rel, number, line in found.best():
            if isinstance(line, str):
                text: str | None = line
            else:
                file = opener.file(rel)
                try:
                    text = None if file is None else _rg_shown(line, number, file)
                except BudgetSpent:
                    unread += 1
                    text = None
            if text is None:
                found.left_out += 1
            else:
                shown.append((rel, number, text))
    finally:
        opener.close()
    return Rendered(shown, unread)


class _Reopener:
    """Opens files of the tree again, beneath its root and without following symlinks.

    Directory descriptors are kept for the call (at most 256), as the lines shown often
    share directories; the last file is kept open until another file is asked for, as the
    lines shown come file by file.
    """

    def __init__(self, root_fd: int, budget: Budget) -> None:
        self._root_fd = root_fd
        self._budget = budget
        self._directories: dict[str, int | None] = {}
        self._rel: str | None = None
        self._file: _Reread | None = None

    def file(self, rel: str) -> _Reread | None:
        """The regular file ``rel`` opened again, or None."""
        if rel == self._rel:
            return self._file
        self._close_file()
        self._rel = rel
        fd = self._open(rel)
        if fd is None:
            return None
        try:
            self._file = _Reread(fd, self._budget)
        except OSError:
            os.close(fd)
        return self._file

    def close(self) -> None:
        self._close_file()
        self._close_directories()

    def _close_file(self) -> None:
        if self._file is not None:
            os.close(self._file.fd)
        self._rel = self._file = None

    def _close_directories(self) -> None:
        for fd in self._directories.values():
            if fd is not None:
                os.close(fd)
        self._directories.clear()

    def _open(self, rel: str) -> int | None:
        directory, _, name = rel.rpartition("/")
        directory_fd = self._directory(directory)
        if directory_fd is None or name in ("", ".", ".."):
            return None
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=directory_fd)
        except OSError:
            return None
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
        except OSError:
            pass
        os.close(fd)
        return None

    def _directory(self, rel: str) -> int | None:
        if not rel:
            return self._root_fd
        found = self._directories.get(rel, -1)
        if found != -1:
            return found
        if len(self._directories) >= 256:
            self._close_directories()
        parent, _, name = rel.rpartition("/")
        parent_fd = self._directory(parent)
        fd = None
        if parent_fd is not None and name not in ("", ".", ".."):
            try:
                fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent_fd)
            except OSError:
                fd = None
        self._directories[rel] = fd
        return fd


def _rg_shown(record: RgRecord, number: int, file: _Reread) -> str | None:
    """The display text of a line ripgrep printed, once read again from the tree (see :func:`clip_line`).

    ripgrep opens what lies below the base by name, so a directory swapped for a symlink
    meanwhile could have shown it a file outside the tree. Each line shown is therefore
    read again from ``file``, opened by :class:`_Reopener`, and shown only if the tree
    holds it there.

    Returns None when it does not (the file changed, or the line came from outside).

    Raises:
        BudgetSpent: checking the line needed more than what is left of :data:`REREAD_BYTES`.
    """
    printed, second, third = record
    # ripgrep prints each line with its line break, and gives a last line without one "\r\n"
    # under --crlf: one "\r" comes off either way. What is left is the line as it reads it,
    # a last line's own final "\r" included (see _Reread.whole_line).
    printed = printed.removesuffix(b"\r")
    column, offset = (0, int(second)) if third is None else (int(second), int(third))
    target = column - 1 if column else None  # no column: an empty match at the end of the line
    preview = len(printed) > RG_MAX_COLUMNS
    # The usual case: the bytes already read hold at ripgrep's offset exactly what it printed.
    if not preview and file.whole_line(offset) == printed:
        return whole_line_text(printed, target)
    raw = _PREVIEW_NOTE.sub(b"", printed) if preview else printed
    expected = raw.decode("utf-8", "replace")
    if preview:
        expected = expected[:-1]  # its last character may be cut in the middle
    try:
        for pieces, counted in _rereads(file, number, offset):
            head = ""
            rest = iter(pieces)
            for piece in rest:
                head += piece
                if len(head) > len(expected):
                    break
            if head[: len(expected)] != expected or (not preview and len(head) != len(expected)):
                continue
            if counted:
                file.offsets_shifted()
            if preview:
                return window_at(itertools.chain([head], rest), target, complete=True)
            return whole_line_text(raw, target)
    except OSError:
        return None
    return None


def _rereads(file: _Reread, number: int, offset: int) -> Iterator[tuple[Iterable[str], bool]]:
    """Ways to read line ``number`` of ``file`` again, piece by piece, cheapest first, each
    with whether it counted lines.

    ripgrep's offset is where the line starts unless the file is UTF-16 or has invalid
    UTF-8 before it (ripgrep counts transcoded bytes); failing that, the file's lines are
    counted from its start.
    """
    at_offset = file.line_at(offset)
    if at_offset is not None:
        yield at_offset, False
    numbered = file.line_numbered(number)
    if numbered is not None:
        yield numbered, True


class _Reread:
    """A file of the tree opened again, read forward once for all the lines shown from it.

    Its lines are asked for in line order, so the bytes read last (the window) often hold
    the next one, and otherwise it lies further on: reading by offset goes forward through
    the file once, skipping what lies between lines, and counting lines
    (:class:`_Counted`) reads it once more from its start, only as far as needed. Memory
    stays bounded whatever the file holds: a window, and one decoded chunk.
    """

    def __init__(self, fd: int, budget: Budget) -> None:
        self.fd = fd
        self._budget = budget
        self._start = 0
        self._window = os.pread(fd, CHUNK_BYTES, 0)  # not counted (see REREAD_BYTES)
        # ripgrep's offsets count the bytes it transcoded from UTF-16, and start after a UTF-8
        # byte-order mark, or two (see decoded_chunks).
        self._by_offset = not self._window.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        self._bom = 0
        if self._window.startswith(codecs.BOM_UTF8):
            self._bom = 6 if self._window.startswith(codecs.BOM_UTF8 * 2) else 3
        self._counted: _Counted | None = None

    def offsets_shifted(self) -> None:
        """Read the following lines by counting only: one was found by its number but not
        at its offset, so what lies before it (invalid UTF-8, which ripgrep counts
        transcoded) puts every later offset off as well."""
        self._by_offset = False

    def whole_line(self, offset: int) -> bytes | None:
        """The bytes of the line starting at ripgrep's ``offset``, without its terminator
        (``\\n`` or ``\\r\\n``; a last line without ``\\n`` keeps a final ``\\r``), if it
        lies whole in the window; reads nothing.

        None when offsets do not match the file's bytes, ``offset`` is not the start of a
        line there, or the line may go on past the window.
        """
        if not self._by_offset:
            return None
        window = self._window
        position = offset + self._bom - self._start
        if position < 0 or position >= len(window) or (offset and (position == 0 or window[position - 1] != 0x0A)):
            return None
        end = window.find(b"\n", position)
        if end < 0:
            if len(window) == CHUNK_BYTES:  # the line may go on past what was read
                return None
            return window[position:]
        return window[position:end].removesuffix(b"\r")

    def line_at(self, offset: int) -> Iterator[str] | None:
        """The text of the line starting at ripgrep's byte ``offset``, piece by piece, or
        None when offsets do not match the file's bytes or no line starts there."""
        if not self._by_offset:
            return None
        position = offset + self._bom
        if offset and not (self._holds(position - 1) and self._window[position - 1 - self._start] == 0x0A):
            return None
        if not self._holds(position):
            return None
        decoded = codecs.iterdecode(self._bytes_from(position), "utf-8", "replace")
        return _line_end(decoded)

    def line_numbered(self, number: int) -> Iterator[str] | None:
        """The text of line ``number`` (from 1), piece by piece, as ripgrep decodes the
        file; None when the file has fewer lines."""
        if self._counted is None or not self._counted.reaches(number):
            os.lseek(self.fd, 0, os.SEEK_SET)
            self._counted = _Counted(decoded_chunks(self.fd, self._budget))
        return self._counted.line(number)

    def _holds(self, position: int) -> bool:
        """Whether the window holds the byte at ``position``, once read from there if it did not."""
        if not self._start <= position < self._start + len(self._window):
            self._read(position)
        return self._start <= position < self._start + len(self._window)

    def _bytes_from(self, position: int) -> Iterator[bytes]:
        """The file's bytes from ``position`` (which the window holds) to the end of that line."""
        piece = self._window[position - self._start :]
        while piece:
            end = piece.find(b"\n")
            if end >= 0:
                yield piece[: end + 1]
                return
            yield piece
            self._read(self._start + len(self._window))
            piece = self._window

    def _read(self, position: int) -> None:
        check_deadline()
        data = os.pread(self.fd, CHUNK_BYTES, position)
        self._budget.spend(len(data))
        self._start, self._window = position, data


class _Counted:
    """A file's decoded text read forward from its start, its lines counted as they pass.

    A line asked for is reached by going on from where the last one left off; once the
    budget is spent, every further line raises :class:`BudgetSpent` (the text was not
    read to its end, so a line missing from it proves nothing).
    """

    def __init__(self, chunks: Iterator[str]) -> None:
        self._chunks = chunks
        self._text = ""
        self._at = 0  # where in _text the next character to read is
        self._breaks = 0  # line breaks in _text from _at on
        self._line = 1  # the line _at lies in
        self._started = False  # whether some of that line was read already
        self._spent = False

    def reaches(self, number: int) -> bool:
        """Whether line ``number`` lies ahead, so that it can be read without starting over."""
        return number > self._line or (number == self._line and not self._started)

    def line(self, number: int) -> Iterator[str] | None:
        """The text of line ``number``, which lies ahead (see :meth:`reaches`), piece by piece,
        without its line break; None when the text ends before it."""
        if self._spent:
            raise BudgetSpent
        breaks = number - self._line
        while breaks:
            if breaks > self._breaks:  # the line lies past this chunk: pass it whole
                breaks -= self._breaks
                self._line += self._breaks
                if not self._next_chunk():
                    return None
                continue
            self._at = self._text.index("\n", self._at) + 1
            self._breaks -= 1
            self._line += 1
            breaks -= 1
        self._started = False
        while self._at >= len(self._text):
            if not self._next_chunk():
                return None
        self._started = True
        return self._pieces()

    def _pieces(self) -> Iterator[str]:
        """The current line from the cursor on, up to its line break (excluded, with its ``\\r``)
        or the end of the text.

        The cursor moves before each piece is given, so a reader may stop at any piece.
        """
        held = ""
        while True:
            end = self._text.find("\n", self._at)
            if end >= 0:
                piece = held + self._text[self._at : end]
                self._at = end + 1
                self._breaks -= 1
                self._line += 1
                self._started = False
                yield piece.removesuffix("\r")
                return
            piece = held + self._text[self._at :]
            self._at = len(self._text)
            # A final "\r" may be half of the line break: hold it until the next piece. At
            # the end of the file it is part of the line, as ripgrep reads it.
            held = "\r" if piece.endswith("\r") else ""
            yield piece[: len(piece) - len(held)]
            if not self._next_chunk():
                if held:
                    yield held
                return

    def _next_chunk(self) -> bool:
        """Go on to the next chunk of text; False at the end of the text."""
        try:
            text = next(self._chunks, None)
        except BudgetSpent:
            self._spent = True
            raise
        if text is None:
            return False
        self._text, self._at, self._breaks = text, 0, text.count("\n")
        return True


def _line_end(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` of text up to the first line break (excluded, with its ``\\r``), or to
    their end (a final ``\\r`` kept, as ripgrep keeps it in a last line without ``\\n``)."""
    held = ""
    for chunk in chunks:
        end = chunk.find("\n")
        piece = held + (chunk if end < 0 else chunk[:end])
        if end >= 0:
            yield piece.removesuffix("\r")
            return
        # A final "\r" may be half of the line break: hold it until the next piece.
        held = "\r" if piece.endswith("\r") else ""
        yield piece[: len(piece) - len(held)]
    if held:
        yield held
