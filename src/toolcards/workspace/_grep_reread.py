"""The lines ripgrep reported, read again from the tree before they are shown.

ripgrep opens what lies below the base by name and follows a directory swapped for a symlink
at that moment, so each line shown is read again through descriptors opened beneath the root
without following symlinks (each file and directory once per call; at ripgrep's byte offset,
else from the file's start, within a budget per call) and shown only if the tree holds it
there.
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from toolcards.workspace._grep_found import Found, RgRecord
from toolcards.workspace._grep_lines import whole_line_text, window_at
from toolcards.workspace._ripgrep import RG_MAX_COLUMNS
from toolcards.workspace._searched_text import CHUNK_BYTES, Budget, BudgetSpent, decoded_chunks, decoded_from

__all__ = ["render_found"]

_REREAD_BYTES = 64 * 1024 * 1024
"""How much of the files one call may read from their start to find ripgrep's lines again."""


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


_PREVIEW_NOTE = re.compile(rb" \[\.\.\. (?:\d+ more match(?:es)?|omitted end of long line)\]\r?$")


class _Reopener:
    """Opens files of the tree again, beneath its root and without following symlinks.

    Directory descriptors are kept for the call (at most 256), as the lines shown often
    share directories; the last file's descriptor and first 64 KB are kept until another
    file is asked for, as the lines shown come file by file.
    """

    def __init__(self, root_fd: int) -> None:
        self._root_fd = root_fd
        self._directories: dict[str, int | None] = {}
        self._rel: str | None = None
        self._file: _Reopened | None = None

    def file(self, rel: str) -> _Reopened | None:
        """The regular file ``rel`` opened again with its first 64 KB, or None."""
        if rel == self._rel:
            return self._file
        self._close_file()
        self._rel = rel
        fd = self._open(rel)
        if fd is None:
            return None
        try:
            self._file = _Reopened(fd, os.pread(fd, CHUNK_BYTES, 0))
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


class _Reopened(NamedTuple):
    """A file of the tree opened again for the lines shown from it."""

    fd: int
    head: bytes
    """Its first 64 KB, read once for all its lines (most lines shown lie there)."""


def _rg_shown(record: RgRecord, number: int, file: _Reopened, budget: Budget) -> str | None:
    """The display text of a line ripgrep printed, once read again from the tree (see :func:`clip_line`).

    ripgrep opens what lies below the base by name, so a directory swapped for a symlink
    meanwhile could have shown it a file outside the tree. Each line shown is therefore
    read again from ``file``, opened by :class:`_Reopener`, and shown only if the tree
    holds it there.

    Returns None when it does not (the file changed, or the line came from outside).
    """
    printed, second, third = record
    printed = printed.removesuffix(b"\r")
    column, offset = (0, int(second)) if third is None else (int(second), int(third))
    target = column - 1 if column else None  # no column: an empty match at the end of the line
    preview = len(printed) > RG_MAX_COLUMNS
    # The usual case: the file holds at ripgrep's offset exactly the bytes it printed.
    if not preview and _line_at(file.head, offset) == printed:
        return whole_line_text(printed, target)
    raw = _PREVIEW_NOTE.sub(b"", printed) if preview else printed
    expected = raw.decode("utf-8", "replace")
    if preview:
        expected = expected[:-1]  # its last character may be cut in the middle
    try:
        for pieces in _rereads(file, number, offset, budget):
            head = ""
            rest = iter(pieces)
            for piece in rest:
                head += piece
                if len(head) > len(expected):
                    break
            if head[: len(expected)] != expected or (not preview and len(head) != len(expected)):
                continue
            if preview:
                return window_at(itertools.chain([head], rest), target, complete=True)
            return whole_line_text(raw, target)
    except (OSError, BudgetSpent):
        return None
    return None


def _line_at(head: bytes, offset: int) -> bytes | None:
    """The bytes of the line starting at ripgrep's ``offset``, if it lies whole in ``head``.

    ``head`` is the file's first 64 KB; the line is given without its terminator. None
    when the file is UTF-16 (ripgrep's offsets count transcoded bytes) or ``offset`` is
    not the start of a line there.
    """
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    position = offset + (3 if head.startswith(codecs.BOM_UTF8) else 0)
    if position > len(head) or (offset and head[position - 1] != 0x0A):
        return None
    end = head.find(b"\n", position)
    if end < 0:
        if len(head) == CHUNK_BYTES:  # the line may go on past what was read
            return None
        end = len(head)
    return head[position:end].removesuffix(b"\r")


def _rereads(file: _Reopened, number: int, offset: int, budget: Budget) -> Iterator[Iterable[str]]:
    """Ways to read line ``number`` of an open file again, piece by piece, cheapest first.

    ripgrep's offset is where the line starts unless the file is UTF-16 or has invalid
    UTF-8 before it (ripgrep counts transcoded bytes); failing that, the file is read
    from its start. Reading past the first 64 KB of the file spends ``budget``.
    """
    fd, head = file
    if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        position = offset + (3 if head.startswith(codecs.BOM_UTF8) else 0)
        before = head[position - 1 : position] if position <= len(head) else os.pread(fd, 1, position - 1)
        if offset == 0 or before == b"\n":
            end = head.find(b"\n", position)
            if end >= 0 or len(head) < CHUNK_BYTES:
                line = head[position : end if end >= 0 else len(head)]
                yield [line.decode("utf-8", "replace").removesuffix("\r")]
            else:
                os.lseek(fd, position, os.SEEK_SET)
                yield _line_end(decoded_from(fd, "utf-8", budget))
    os.lseek(fd, 0, os.SEEK_SET)
    yield _line_end(_skip_lines(decoded_chunks(fd, budget), number - 1))


def _skip_lines(chunks: Iterable[str], count: int) -> Iterator[str]:
    """``chunks`` of text from after its first ``count`` line breaks on."""
    for decoded in chunks:
        chunk = decoded
        if count:
            breaks = chunk.count("\n")
            if breaks < count:
                count -= breaks
                continue
            index = -1
            for _ in range(count):
                index = chunk.find("\n", index + 1)
            count = 0
            chunk = chunk[index + 1 :]
        yield chunk


def _line_end(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` of text up to the first line break (excluded, with its ``\\r``)."""
    held = ""
    for chunk in chunks:
        end = chunk.find("\n")
        piece = held + (chunk if end < 0 else chunk[:end])
        if end >= 0:
            yield piece.removesuffix("\r")
            return
        # A final "\r" may be half of the line break: hold it until the next piece. At
        # the end of the file it is dropped, as a search with ``re`` drops it.
        held = "\r" if piece.endswith("\r") else ""
        yield piece[: len(piece) - len(held)]


def render_found(found: Found, root_fd: int) -> list[tuple[str, int, str]]:
    """The lines to show, as display text; ripgrep's lines are read again (see :func:`_rg_shown`)."""
    budget = Budget(_REREAD_BYTES)
    opener = _Reopener(root_fd)
    shown = []
    try:
        for rel, number, line in found.best():
            if isinstance(line, str):
                text: str | None = line
            else:
                file = opener.file(rel)
                text = None if file is None else _rg_shown(line, number, file, budget)
            if text is None:
                found.left_out += 1
            else:
                shown.append((rel, number, text))
    finally:
        opener.close()
    return shown
