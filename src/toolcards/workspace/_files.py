"""Files shown to a model: numbered pages of text and directory listings.

* :func:`read_page` shows one page of a text file in the style of ``cat -n`` without its
  padding: the number, a tab, then the line (``"1\\tfirst line"``), or the bare lines. It
  streams the file (:data:`~toolcards.workspace._tree.READ_CHUNK_BYTES` at a time), so the
  memory a page costs does not grow with the file: only the lines of the page are kept,
  each clipped past :data:`MAX_LINE_CHARS` characters (with a marker giving the number of
  characters cut), and collecting stops once the page is longer than the caller's budget.
  The whole file is still hashed on the way, so the read-before-write gate records what
  was read. A file smaller than one such read is read whole and paged at once (the same
  page, with no piecewise decoding). Lines are split on ``\\n``; a ``\\r`` before it (CRLF) is not shown; a leading
  UTF-8 byte-order mark is dropped. A file that is not text by the rule of
  :func:`~toolcards.workspace._text.file_text` (UTF-8 without a NUL byte) is refused as binary.
* :func:`page_of_text` takes the same page of a text that did not come from a file (a
  converted document), and :func:`render_page` turns a :class:`Page` into the text shown.
* :func:`list_directory` lists a directory of a :class:`~toolcards.workspace._tree.Tree`
  flat (``depth=1``) or as an ASCII tree, by handles.

:func:`read_bytes` reads a whole file at a path of the host (a document or an image to
convert): it opens a :class:`~toolcards.workspace._tree.Tree` on its directory, so it too
refuses named pipes and never follows a link out of that directory, and its messages name
the file by its name.
Everything here that takes a file blocks on disk I/O.
"""

from __future__ import annotations

import codecs
import hashlib
import operator
import os
import stat
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolcards.core._deadline import check_deadline
from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._kept import Kept, settled, stamp_of
from toolcards.workspace._listing import listing_of
from toolcards.workspace._models import content_digest
from toolcards.workspace._os_errors import kind_of
from toolcards.workspace._paths import SKIPPED_DIRS, display_name, plain_ascii
from toolcards.workspace._text import binary_error, file_text
from toolcards.workspace._tree import READ_CHUNK_BYTES, Directory, OpenFile, Tree, format_size

__all__ = [
    "MAX_COUNTED_MORE",
    "MAX_KEPT_PAGE_CHARS",
    "MAX_LINE_CHARS",
    "MAX_LIST_ENTRIES",
    "Page",
    "PageBuilder",
    "PageRead",
    "list_directory",
    "page_of_text",
    "read_bytes",
    "read_page",
    "render_page",
]

MAX_LINE_CHARS = 2000
"""Longer lines are clipped when shown."""

MAX_LIST_ENTRIES = 500
"""How many entries :func:`list_directory` shows by default (its ``limit``)."""

MAX_KEPT_PAGE_CHARS = 16 * 1024 * 1024
"""Pages of unchanged files kept per process, in characters of their lines and bytes of
their files (each page keeps its file's bytes for the read-before-write gate)."""

_KEEP_BYTES = 2 * 1024 * 1024
"""A file read by :func:`read_page` is kept whole (for the gate's diffs) up to this size."""

_utf8_decoder = codecs.getincrementaldecoder("utf-8")

_PREFIXES: list[str] = []
"""``"1\\t"``, ``"2\\t"`` ...: the start of each numbered line, made once (see :func:`_prefixes`)."""
_MAX_PREFIXES = 10_000
"""Line numbers whose prefix is kept (about 0.5 MB at most): past them a page's numbers are
formatted each time."""
_prefixes_lock = threading.Lock()


@dataclass(frozen=True, kw_only=True)
class Page:
    """A numbered page of a text: what :func:`render_page` shows."""

    lines: list[str]
    """The lines collected, long ones clipped; numbered (``"4\\ttext"``: the number and a tab)
    unless the page was taken with ``numbered=False``."""
    offset: int
    """The first line asked for (from 1)."""
    limit: int
    """How many lines were asked for."""
    end: int
    """The last line of the page: ``min(total, offset + limit - 1)``."""
    total: int
    """How many lines the text has."""
    clipped: bool
    """A collected line was longer than :data:`MAX_LINE_CHARS` and was clipped."""
    stopped: bool
    """Collecting stopped early, at the caller's ``max_chars``: ``lines`` ends before ``end``."""

    @property
    def whole(self) -> bool:
        """The page shows the whole text, unabridged."""
        return self.offset == 1 and self.end == self.total and not self.clipped and not self.stopped


@dataclass(frozen=True, kw_only=True)
class PageRead:
    """A page of a file, and what the read-before-write gate needs to know of the file."""

    page: Page
    """The page."""
    digest: str
    """``content_digest`` of the whole file as it was read."""
    data: bytes | None
    """The whole file when it is small (up to 2 MB), for the gate's diffs; else ``None``."""


class PageBuilder:
    """Collects one page of a text fed piece by piece (:meth:`feed`), keeping only that page.

    ``offset`` and ``limit`` choose the lines; with ``max_chars`` collecting stops once the
    collected lines hold more characters (lines are still counted). Each line starts with its
    number and a tab (``"12\\t"``: no padding, the fewest characters that stay unambiguous to
    strip), or with nothing when ``numbered`` is false. :meth:`finish` returns
    the :class:`Page`. Memory: the page's lines, each at most :data:`MAX_LINE_CHARS` + 1
    characters before numbering, whatever the pieces.
    """

    def __init__(self, offset: int, limit: int, max_chars: int | None, *, numbered: bool = True) -> None:
        self.offset = offset
        self.numbered = numbered
        self.last = offset - 1 + limit
        self.limit = limit
        self.max_chars = max_chars
        self.number = 1  # the line being read
        self.lines: list[str] = []
        self.chars = 0
        self.clipped = False
        self.stopped = False
        self.started = False  # a character other than a leading byte-order mark was seen
        self._bom_checked = False
        self.ends_with_newline = False
        self._parts: list[str] = []  # the start of the current line, at most MAX_LINE_CHARS + 1
        self._kept = 0
        self._length = 0  # characters of the current line so far
        self._last_char = ""

    def feed(self, text: str) -> None:
        if not self._bom_checked and text:
            self._bom_checked = True
            text = text.removeprefix("\ufeff")
        if not text:
            return
        self.started = True
        position, size = 0, len(text)
        while position < size:
            if self.number < self.offset:
                needed = self.offset - self.number
                newlines = text.count("\n", position)
                if newlines < needed:
                    self.number += newlines
                    break
                for _ in range(needed):
                    position = text.index("\n", position) + 1
                self.number += needed
            elif self.number > self.last or self.stopped:
                self.number += text.count("\n", position)
                break
            elif self._length:  # the rest of a line begun in an earlier piece
                newline = text.find("\n", position)
                end = size if newline < 0 else newline
                self._take(text, position, end)
                if newline < 0:
                    break
                self._close_line()
                self.number += 1
                position = newline + 1
            else:
                self._add_lines(text, position)
                break
        self.ends_with_newline = text.endswith("\n")

    def _add_lines(self, text: str, position: int) -> None:
        """Collect the whole lines of ``text`` from ``position`` on, as many as the page
        still wants, then count the rest; a last line without its newline is begun."""
        wanted = self.last - self.number + 1
        lines = (text[position:] if position else text).split("\n", wanted)
        rest = lines.pop()
        # The lines' characters, without a pass over them: each was followed by a newline.
        size = len(text) - position - len(rest) - len(lines)
        if len(lines) > 8 and self._add_plain_lines(text, position, lines, size):
            done = len(lines)
            lines_left: list[str] = []
        else:
            done = 0
            lines_left = lines
        for line in lines_left:
            done += 1
            body = line[:-1] if line.endswith("\r") else line
            if len(body) > MAX_LINE_CHARS:
                body = f"{body[:MAX_LINE_CHARS]}… [line clipped: {len(body) - MAX_LINE_CHARS} more characters]"
                self.clipped = True
            numbered = f"{self.number}\t{body}" if self.numbered else body
            self.lines.append(numbered)
            self.number += 1
            self.chars += len(numbered) + 1
            if self.max_chars is not None and self.chars - 1 > self.max_chars:
                self.stopped = True
                break
        if self.stopped or len(lines) == wanted:
            self.number += len(lines) - done + rest.count("\n")
        else:
            self._take(rest, 0, len(rest))

    def finish(self) -> Page:
        if not self.started:
            total = 0
        elif self.ends_with_newline:
            total = self.number - 1
        else:
            total = self.number
            if self.offset <= self.number <= self.last and not self.stopped:
                self._close_line()
        return Page(
            lines=self.lines,
            offset=self.offset,
            limit=self.limit,
            end=min(total, self.last),
            total=total,
            clipped=self.clipped,
            stopped=self.stopped,
        )

    def _add_plain_lines(self, text: str, position: int, lines: list[str], size: int) -> bool:
        """Collect ``lines`` (``size`` characters in all) at once when none needs care (no
        ``\\r``, none too long, all within the budget); return whether it did. The common case,
        in C loops."""
        last = self.number + len(lines) - 1
        prefix_chars = _prefix_chars(self.number, last) if self.numbered else 0
        if (
            (self.max_chars is not None and self.chars + size + prefix_chars + len(lines) > self.max_chars)
            or _has_long_line(text, position, position + size + len(lines))
            or text.find("\r", position, position + size + len(lines)) >= 0
        ):
            return False
        if self.numbered:
            self.lines.extend(map(operator.add, _prefixes(self.number, last), lines))
        else:
            self.lines.extend(lines)
        self.chars += size + prefix_chars + len(lines)
        self.number = last + 1
        return True

    def _take(self, text: str, start: int, end: int) -> None:
        if end <= start:
            return
        self._length += end - start
        self._last_char = text[end - 1]
        room = MAX_LINE_CHARS + 1 - self._kept
        if room > 0:
            piece = text[start : min(end, start + room)]
            self._parts.append(piece)
            self._kept += len(piece)

    def _close_line(self) -> None:
        content = "".join(self._parts)
        length = self._length - (1 if self._last_char == "\r" else 0)
        if length > MAX_LINE_CHARS:
            shown = f"{content[:MAX_LINE_CHARS]}… [line clipped: {length - MAX_LINE_CHARS} more characters]"
            self.clipped = True
        else:
            shown = content[:length]
        numbered = f"{self.number}\t{shown}" if self.numbered else shown
        self.lines.append(numbered)
        self.chars += len(numbered) + 1
        if self.max_chars is not None and self.chars - 1 > self.max_chars:
            self.stopped = True
        self._parts, self._kept, self._length, self._last_char = [], 0, 0, ""


def _prefixes(first: int, last: int) -> list[str]:
    """The prefixes of lines ``first`` .. ``last`` (``f"{number}\\t"``): numbering a page is
    then one concatenation per line instead of one formatting."""
    if last > _MAX_PREFIXES:
        return [f"{number}\t" for number in range(first, last + 1)]
    if last > len(_PREFIXES):
        with _prefixes_lock:  # one thread extends, in order
            start = len(_PREFIXES) + 1
            _PREFIXES.extend([f"{number}\t" for number in range(start, last + 1)])
    return _PREFIXES[first - 1 : last]


def _has_long_line(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a line longer than :data:`MAX_LINE_CHARS`.

    Hops from line start to line start, each hop to the last newline within
    ``MAX_LINE_CHARS + 1`` characters: a window without one is a line too long. A few C
    searches per 2,000 characters instead of a pass over every line in Python.
    """
    position = start
    while end - position > MAX_LINE_CHARS:
        newline = text.rfind("\n", position, position + MAX_LINE_CHARS + 1)
        if newline < 0:
            return True
        position = newline + 1
    return False


def _prefix_chars(first: int, last: int) -> int:
    """The characters of the prefixes of lines ``first`` .. ``last``, counted by digits."""
    total, digits, low = 0, 1, 1
    while low <= last:
        high = low * 10 - 1
        if high >= first:
            total += (min(high, last) - max(low, first) + 1) * (digits + 1)
        digits, low = digits + 1, high + 1
    return total


def _check_range(offset: int, limit: int) -> None:
    if offset < 1 or limit < 1:
        raise RetriableError(f"offset and limit must be at least 1 (got offset={offset}, limit={limit}).")


def render_page(page: Page, *, shown_as: str = "the file") -> str:
    """The lines of ``page``, followed, when lines remain after it, by a notice with
    the total and the ``offset`` that reads on. An empty text gives ``"(empty file)"``.

    Raises:
        RetriableError: ``offset`` is past the last line (the message gives the count).
    """
    if page.total == 0:
        if page.offset > 1:
            raise RetriableError(f"offset {page.offset} is past the end: {shown_as!r} is empty.")
        return "(empty file)"
    if page.offset > page.total:
        raise RetriableError(
            f"offset {page.offset} is past the end: {shown_as!r} has {page.total} "
            f"line{'' if page.total == 1 else 's'}. "
            f"Use an offset from 1 to {page.total}."
        )
    out = list(page.lines)
    if page.end < page.total:
        out.append(
            f"(showing lines {page.offset}-{page.end} of {page.total}; read again with offset={page.end + 1} "
            "to continue)"
        )
    return "\n".join(out)


def page_of_text(
    text: str, offset: int = 1, limit: int = 2000, *, max_chars: int | None = None, numbered: bool = True
) -> Page:
    """The :class:`Page` of ``text`` from line ``offset``, ``limit`` lines long (numbered unless
    ``numbered`` is false).

    Raises:
        RetriableError: ``offset`` < 1 or ``limit`` < 1.
    """
    _check_range(offset, limit)
    builder = PageBuilder(offset, limit, max_chars, numbered=numbered)
    builder.feed(text)
    return builder.finish()


_PAGES: Kept[PageRead] = Kept(MAX_KEPT_PAGE_CHARS)


def read_page(
    file: OpenFile, offset: int = 1, limit: int = 2000, *, max_chars: int | None = None, numbered: bool = True
) -> PageRead:
    """Lines ``offset`` .. ``offset + limit - 1`` of the open text file ``file``, streamed
    (numbered unless ``numbered`` is false).

    Only the page's lines are kept (each clipped at :data:`MAX_LINE_CHARS`); once they
    hold more than ``max_chars`` characters collecting stops (``Page.stopped``), while the
    rest of the file is still read to count its lines and hash it. A file that fits in one
    read (:data:`~toolcards.workspace._tree.READ_CHUNK_BYTES`) is read whole, then paged:
    the same page, without decoding and collecting it piece by piece; that page is kept
    while the file's change stamp holds (:mod:`toolcards.workspace._kept`), up to
    :data:`MAX_KEPT_PAGE_CHARS` in all, and a read of the same page of the unchanged file
    returns it without reading the file again.

    Raises:
        RetriableError: ``offset``/``limit`` below 1; the file is not UTF-8 text (see
            :func:`~toolcards.workspace._text.binary_error`) or changed while it was read.
    """
    _check_range(offset, limit)
    if file.size < READ_CHUNK_BYTES:
        status = file.status
        key = (status.st_dev, status.st_ino, offset, limit, max_chars, numbered)
        stamp = stamp_of(status)
        known = _PAGES.get(key, stamp)
        if known is not None:
            return known
        whole = _whole(file)
        page = page_of_text(file_text(whole, file.rel), offset, limit, max_chars=max_chars, numbered=numbered)
        read = PageRead(page=page, digest=content_digest(whole), data=whole)
        if file.stamped_ns is not None and settled(status, file.stamped_ns):
            _PAGES.put(key, stamp, read, len(whole) + sum(map(len, page.lines)))
        return read
    builder = PageBuilder(offset, limit, max_chars, numbered=numbered)
    decoder = _utf8_decoder()
    hasher = hashlib.sha256()
    kept: list[bytes] | None = [] if file.size <= _KEEP_BYTES else None
    kept_size = 0
    try:
        for block in file.chunks():
            hasher.update(block)
            if b"\x00" in block:
                raise binary_error(file.rel)
            if kept is not None:
                kept_size += len(block)
                if kept_size <= _KEEP_BYTES:
                    kept.append(block)
                else:
                    kept = None
            builder.feed(decoder.decode(block))
        builder.feed(decoder.decode(b"", final=True))
    except UnicodeDecodeError as exc:
        raise binary_error(file.rel) from exc
    data = None if kept is None else kept[0] if len(kept) == 1 else b"".join(kept)
    return PageRead(page=builder.finish(), digest=hasher.hexdigest(), data=data)


def _whole(file: OpenFile) -> bytes:
    """All of a file smaller than one read, refusing more than ``fstat`` said it holds (it grew
    meanwhile), so memory stays bounded by the size seen at open."""
    parts: list[bytes] = []
    total = 0
    for block in file.chunks():
        total += len(block)
        if total > file.size:
            raise RetriableError(f"{file.rel!r} changed while it was being read. Read it again.")
        parts.append(block)
    return parts[0] if len(parts) == 1 else b"".join(parts)


# -- listings ------------------------------------------------------------------------------------------


def list_directory(
    tree: Tree,
    path: str = "",
    depth: int = 1,
    *,
    offset: int = 0,
    limit: int = MAX_LIST_ENTRIES,
    sizes: bool = False,
    exclude: Callable[[str], bool] | None = None,
) -> str:
    """List the directory ``path`` of ``tree``: flat for ``depth=1``, else an ASCII tree.

    Directories come first, then files, each sorted case-insensitively; a directory ends
    with ``/``, a symlink with ``@`` (listed among the files, never followed), and a named
    pipe, socket or device says what it is (``"fifo (named pipe)"``). ``depth`` is how many
    levels to show (0 = all). The contents of :data:`SKIPPED_DIRS` are not listed: such a
    directory shows as ``.git/ (skipped)``. ``sizes`` adds each file's size; ``exclude``
    (given the entry's path relative to the listed directory) leaves entries out, and a
    directory left out is not entered.

    The entries are paged: ``offset`` entries are skipped, at most ``limit`` shown (each line
    of the listing is an entry), then a last line says how many more there are and the
    offset to list on with (``"N more — next offset K"``); at most :data:`MAX_COUNTED_MORE`
    more are counted. A tree page that starts inside a directory first repeats the lines of
    the directories its first entry is in, each ending in ``(continued)``: they are not
    entries of the page. A directory with more than
    :data:`~toolcards.workspace._tree.MAX_SCAN_ENTRIES` entries is listed from the first
    ones read, with a notice.

    A flat listing is one name per line. A tree starts with the listed directory
    (``./`` for the root) and draws each level with ``├── ``, ``└── `` and ``│   ``.

    Raises:
        RetriableError: ``path`` escapes the root, does not exist, or is a file;
            ``depth``, ``offset`` or ``limit`` is out of range.
    """
    if depth < 0:
        raise RetriableError(f"depth must be 0 (all levels) or more (got {depth}).")
    if offset < 0 or limit < 1:
        raise RetriableError(f"offset must be 0 or more and limit 1 or more (got offset={offset}, limit={limit}).")
    lines: list[str] = []
    notes: list[str] = []
    walk = _Walk(depth=depth, sizes=sizes, exclude=exclude, notes=notes, flat=depth == 1)
    seen = shown = more = 0
    with tree.directory(path) as directory:
        if depth != 1:
            lines.append("./" if directory.rel == "." else display_name(directory.rel) + "/")
        listed = walk.level(directory, "", 1)
        try:
            for block in listed:  # lists of lines: a page is taken a block at a time
                start, seen = seen, seen + len(block)
                if seen <= offset:
                    continue
                skip = max(0, offset - start)
                taken = max(0, min(limit - shown, len(block) - skip))
                if taken and not shown:
                    # Without them, the reader of a page that starts inside a directory
                    # could not tell which directory its first entries are in.
                    lines.extend(f"{line} (continued)" for line in walk.ancestors)
                lines.extend(block[skip : skip + taken])
                shown += taken
                more += len(block) - skip - taken
                if more >= MAX_COUNTED_MORE:
                    more = MAX_COUNTED_MORE
                    break
        finally:
            listed.close()  # closes the directories it still holds
    if not shown and not more:
        if seen and offset:
            entries = "1 entry" if seen == 1 else f"{seen} entries"
            raise RetriableError(f"offset {offset} is past the end: the listing has {entries}.")
        lines.append("(empty directory)")
    lines.extend(notes[:3])
    if more:  # the last line, where a model looks for how to go on
        counted = f"{more:,}" if more < MAX_COUNTED_MORE else f"at least {more:,}"
        lines.append(f"{counted} more — next offset {offset + shown}")
    return "\n".join(lines)


MAX_COUNTED_MORE = 100_000
"""Entries past a page :func:`list_directory` counts at most (then it says "at least")."""


@dataclass(kw_only=True)
class _Walk:
    """How one listing walks: what it shows of each entry and what it leaves out."""

    depth: int
    sizes: bool
    exclude: Callable[[str], bool] | None
    notes: list[str]
    flat: bool
    ancestors: list[str] = field(default_factory=list)
    """The tree lines of the directories the walk is in, below the listed one, outermost first."""

    def level(
        self, directory: Directory, indent: str, level: int, prefix: str = ""
    ) -> Generator[list[str], None, None]:
        """The lines of ``directory``'s entries (and, in a tree, of what is below them), in
        blocks: a flat listing's lines come a few hundred at a time."""
        try:
            names, kinds, more = listing_of(directory)
        except (RetriableError, ToolFailed) as exc:  # shown in place: the rest is still listed
            yield [f"{indent}({exc})"]
            return
        if more:
            self.notes.append(
                f"({display_name(directory.rel)!r} has more than {len(kinds):,} entries: only some are listed; "
                "use workspace_glob to find files in it)"
            )
        if self.exclude is not None:
            names = tuple(name for name in names if not self.exclude(prefix + name))
        for start in range(0, len(names), 256):
            check_deadline()
            block = names[start : start + 256]
            block_kinds = list(map(kinds.__getitem__, block))
            labels = _labels(block, block_kinds)
            if self.sizes:
                labels = [
                    label + _size_of(directory, name) if kind == stat.S_IFREG else label
                    for label, name, kind in zip(labels, block, block_kinds, strict=True)
                ]
            if self.flat:
                yield labels
                continue
            ends = start + len(block) == len(names)
            yield from self._branches(directory, block, block_kinds, labels, indent, level, prefix, ends)

    def _branches(
        self,
        directory: Directory,
        block: Sequence[str],
        block_kinds: list[int],
        labels: list[str],
        indent: str,
        level: int,
        prefix: str,
        ends: bool,
    ) -> Generator[list[str], None, None]:
        """The tree lines of the names ``block`` (whose last is the directory's last when
        ``ends``) and of what is below them, in blocks that end where a sub-directory's lines
        begin."""
        lines: list[str] = []
        for index, (name, kind, label) in enumerate(zip(block, block_kinds, labels, strict=True)):
            last = ends and index == len(block) - 1
            line = f"{indent}{'└── ' if last else '├── '}{label}"
            lines.append(line)
            if kind == stat.S_IFDIR and name not in SKIPPED_DIRS and (self.depth == 0 or level < self.depth):
                yield lines
                lines = []
                yield from self._inside(directory, name, line, indent + ("    " if last else "│   "), level, prefix)
        if lines:
            yield lines

    def _inside(
        self, directory: Directory, name: str, line: str, indent: str, level: int, prefix: str
    ) -> Generator[list[str], None, None]:
        """The tree lines below the sub-directory ``name`` of ``directory`` (whose own line is
        ``line``), taken while ``line`` is the last of :attr:`ancestors`."""
        self.ancestors.append(line)
        try:
            try:
                child = directory.child(name)
            except (RetriableError, ToolFailed) as exc:  # renamed or made unreadable meanwhile
                yield [f"{indent}({exc})"]
                return
            with child:
                yield from self.level(child, indent, level + 1, prefix + name + "/")
        finally:
            self.ancestors.pop()


def _size_of(directory: Directory, name: str) -> str:
    try:
        return f" ({format_size(os.lstat(name, dir_fd=directory.fd).st_size)})"
    except OSError:
        return ""


def _labels(names: Sequence[str], kinds: list[int]) -> list[str]:
    """What each name shows as (:func:`_label`); regular files with ASCII names, most
    entries, show as their names, taken in one pass."""
    if kinds.count(stat.S_IFREG) == len(kinds) and plain_ascii("".join(names)):
        return list(names)
    return list(map(_label, names, kinds))


def _label(name: str, kind: int) -> str:
    shown = display_name(name)
    if kind == stat.S_IFREG:  # most entries
        return shown
    if kind == stat.S_IFDIR:
        return shown + "/" + (" (skipped)" if name in SKIPPED_DIRS else "")
    if kind == 0:
        return shown
    if kind == stat.S_IFLNK:
        return shown + "@"
    return f"{shown} ({kind_of(kind).removeprefix('a ')})"


# -- the same for a path of the host ----------------------------------------------------------------------


def read_bytes(path: Path, *, max_bytes: int = 64 * 1024 * 1024, too_large: str = "Read a smaller file.") -> bytes:
    """The whole regular file at ``path`` (at most ``max_bytes``; messages name it by its name).

    Raises:
        RetriableError: it does not exist (the message suggests workspace_glob), is a
            directory (suggests workspace_list) or not a regular file, or is too large (the
            message ends with ``too_large``).
        ToolFailed: it cannot be read (permission denied...).
    """
    read = Tree(path.parent).read_bytes(path.name, max_bytes=max_bytes, too_large=too_large)
    assert read.data is not None
    return read.data
