"""Parse and apply GNU unified diffs in memory, all or nothing.

:func:`parse_patch` turns a patch into one :class:`FilePatch` per ``--- ``/``+++ `` pair;
:func:`apply_file_patch` applies one to a file's text (``None``: the file is deleted). Neither
touches the disk, so :func:`apply_patch` applies every file in memory and the caller writes
only when all succeeded.

Accepted: multi-file patches with any text between files (``diff --git``, a commit message);
``a/``/``b/`` prefixes, ``/dev/null`` for an added or deleted file, a tab-separated timestamp;
hunk headers with counts omitted or a bare ``@@`` (placed by its lines alone); ``\\ No newline
at end of file``; context lines whose leading space an editor stripped; and wrong counts when
the hunk's lines clearly run up to the next hunk, file or the end.

Each hunk, in order and never before the previous one's end, applies at its stated line
(shifted by earlier hunks) if its lines are there, else where they occur exactly once in the
rest of the file, then both again ignoring trailing whitespace. Several occurrences and none at
the stated line is an error listing them: a place is never guessed. Context lines keep the
file's text, added lines take its line ending, and a missing final newline stays missing
unless the patch's marker changes it.

Every error is a :class:`~toolcards.errors.RetriableError` naming the file, the hunk and what
did not match (the expected lines beside the closest text, as untrusted output). Nothing here
blocks or does I/O.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import overload

from toolcards.errors import RetriableError
from toolcards.workspace._text import closest_block, detect_newline, quote_file_text, quote_lines, split_lines

__all__ = ["MAX_PATCH_FILES", "MAX_PATCH_HUNKS", "FilePatch", "Hunk", "apply_file_patch", "apply_patch", "parse_patch"]

_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NUMBERED_HEADER = re.compile(r"@@+\s*[-+]")
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_HUNK_KINDS = (" ", "+", "-")
_MAX_LISTED = 10

_MAX_CLOSEST_PAIRS = 2_000_000
"""Hunk lines times file lines above which a mismatch does not look for the closest text."""

MAX_PATCH_HUNKS = 2_000
"""Hunks one patch may have in all: each may search its file, so their number bounds the time
a patch takes."""

MAX_PATCH_FILES = 1_000
"""File headers one patch may have. Each file is read, checked and written in one change;
a larger change is split into several patches."""


@dataclass(frozen=True)
class _LineStart:
    """A regular expression for the start of a line, compiled twice: to match at one line's
    start, and behind a line break, so that searching for the next such line starts from the
    literal ``"\\n"`` (a fast scan in C) rather than trying the expression at every character."""

    at: re.Pattern[str]
    after_break: re.Pattern[str]
    skip_without_cr: re.Pattern[str] | None = None
    """Where it has one: a run of lines that do not match, as one match, for a text without
    carriage returns (a search for the next matching line tries every line break)."""

    @classmethod
    def of(cls, expression: str, *, skip_without_cr: str | None = None) -> _LineStart:
        skip = None if skip_without_cr is None else re.compile(skip_without_cr)
        return cls(re.compile(expression), re.compile(f"\n(?:{expression})"), skip)


_HEADER_LINE = _LineStart.of(r"--- |\+\+\+ |@@")
"""A line the parser acts on between files."""
_NOT_HUNK_LINE = _LineStart.of(r"[^ +\-\\\r\n]|\r[^\n]|--- ")
"""A line that is neither empty nor starts with ``' '``, ``'+'``, ``'-'``, ``'\\'``, or that may be a file header."""
_CHANGE_OR_BOUNDARY = _LineStart.of(r"[+\-]|@@|diff ")
"""A changed line, or one that may start the next hunk or file."""
_NON_EMPTY_LINE = _LineStart.of(r"[^\r\n]|\r[^\n]", skip_without_cr=r"\n*")
"""A line with any character (in a text without carriage returns, a run of empty lines is ``\n*``)."""
_NOT_BLANK = _LineStart.of(r"[^\S\n]*\S")
"""A line with something besides whitespace."""
_NOT_MARKER = _LineStart.of(r"[^\\]|\n|\Z")
"""A line that is not a ``\\ No newline at end of file`` marker (an empty line included)."""


@dataclass(frozen=True, kw_only=True)
class Hunk:
    """One ``@@`` section of a file's patch."""

    number: int
    """1-based position of the hunk in its file's patch."""
    header: str
    """The ``@@`` line as written, for messages."""
    old_start: int | None
    """Stated first old line (1-based; for an old count of 0, the line after which to insert),
    or ``None`` for a bare ``@@``."""
    old_count: int | None
    """Stated number of old lines, or ``None`` for a bare ``@@``."""
    new_start: int | None
    """Stated first new line, or ``None`` for a bare ``@@``."""
    new_count: int | None
    """Stated number of new lines, or ``None`` for a bare ``@@``."""
    lines: tuple[tuple[str, str], ...]
    """``(kind, text)`` pairs in order: kind ``" "`` context, ``"-"`` removed, ``"+"`` added."""
    old_missing_newline: bool = False
    """The old side's last line is the end of a file without a final newline."""
    new_missing_newline: bool = False
    """The new side's last line ends the file without a final newline."""

    @property
    def old_lines(self) -> list[str]:
        """The context and removed lines: the text the hunk expects to find."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        """The context and added lines: the text the hunk leaves."""
        return [text for kind, text in self.lines if kind != "-"]


@dataclass(frozen=True, kw_only=True)
class FilePatch:
    """The changes a patch makes to one file."""

    old_path: str | None
    """Path on the ``---`` line without its ``a/`` prefix; ``None`` when the file is created."""
    new_path: str | None
    """Path on the ``+++`` line without its ``b/`` prefix; ``None`` when the file is deleted."""
    hunks: tuple[Hunk, ...]
    """The hunks, in order."""

    @property
    def path(self) -> str:
        """The file the patch is about: the new path, or the old one for a deletion."""
        path = self.new_path if self.new_path is not None else self.old_path
        if path is None:  # parse_patch never builds one
            raise AssertionError("a FilePatch needs an old or a new path")
        return path

    @property
    def is_creation(self) -> bool:
        """The patch creates the file (``--- /dev/null``)."""
        return self.old_path is None

    @property
    def is_deletion(self) -> bool:
        """The patch deletes the file (``+++ /dev/null``)."""
        return self.new_path is None

    @property
    def is_rename(self) -> bool:
        """The old and new paths differ and neither is ``/dev/null``."""
        return self.old_path is not None and self.new_path is not None and self.old_path != self.new_path


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified diff into one :class:`FilePatch` per file header, in order.

    Raises :class:`~toolcards.errors.RetriableError` for a malformed patch: no file header,
    a ``---`` line without its ``+++`` line, a hunk before any file header, a bad ``@@``
    header, a hunk without lines, a line inside a hunk that starts with none of ``' '``,
    ``'-'``, ``'+'``, ``'\\'``, a file with no hunks that neither creates nor deletes it, or
    more than :data:`MAX_PATCH_FILES` file headers. Pure and non-blocking.
    """
    return list(_file_patches(text, None))


def _file_patches(text: str, prepare: Callable[[FilePatch], int] | None) -> Iterator[FilePatch]:
    """Yield each file's patch as soon as it is parsed, so a caller can refuse file N before
    the rest is read.

    ``prepare(header)`` (the file patch without its hunks) runs before the file's hunks are
    read; it may raise to refuse the file, and returns how many lines the file has now: a
    hunk that expects more old lines than the file has by then cannot apply, and is refused
    as soon as it does, instead of being read to its end (``None``: no such bound).
    """
    lines = _PatchLines(text)
    files = 0
    hunks = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            files += 1
            if files > MAX_PATCH_FILES:
                raise RetriableError(
                    f"The patch has more than {MAX_PATCH_FILES:,} files: file {files:,} starts at line {index + 1}. "
                    f"Send at most {MAX_PATCH_FILES:,} files per patch, as several patches; nothing was changed."
                )
            header, index = _parse_file_header(lines, index)
            bound = prepare(header) if prepare is not None else None
            file_patch, index = _parse_file_hunks(lines, index, header, bound, MAX_PATCH_HUNKS - hunks)
            hunks += len(file_patch.hunks)
            yield file_patch
        elif line.startswith("@@"):
            raise RetriableError(
                f"Line {index + 1} of the patch is a hunk header ({line!r}) before any file header. "
                "Start each file with a '--- a/<path>' line and a '+++ b/<path>' line, then its hunks."
            )
        elif line.startswith("--- "):
            raise RetriableError(
                f"Line {index + 1} of the patch, {line!r}, is not followed by a '+++ b/<path>' line. "
                "Give every file both header lines, '--- a/<path>' then '+++ b/<path>'."
            )
        elif line.startswith("+++ "):
            raise RetriableError(
                f"Line {index + 1} of the patch, {line!r}, has no '--- a/<path>' line before it. "
                "Give every file both header lines, '--- a/<path>' then '+++ b/<path>'."
            )
        else:
            # Text between files (git's headers, a commit message) is skipped in one step.
            index = lines.next_matching(index + 1, _HEADER_LINE)
    if not files:
        raise RetriableError(
            "The patch has no file header. Write a unified diff: '--- a/<path>', '+++ b/<path>', then "
            "hunks starting with '@@ -<line>,<count> +<line>,<count> @@' and lines prefixed with ' ', '-' "
            "or '+'."
        )


def apply_file_patch(original: str | None, file_patch: FilePatch) -> str | None:
    """Apply one file's hunks to its current text ``original`` (``None``: the file is absent).

    Returns the new text, or ``None`` when the patch deletes the file. A created file gets
    ``"\\n"`` line endings; an existing one keeps its own. Raises
    :class:`~toolcards.errors.RetriableError` when a hunk does not apply (see the module
    docstring for where hunks are placed), when a creation meets an existing non-empty
    file, when a change or deletion meets an absent one, or when a deletion leaves lines.
    Pure and non-blocking.
    """
    path = file_patch.path
    _check_target(original, file_patch)
    if file_patch.is_creation:
        added: list[str] = []
        for hunk in file_patch.hunks:
            if hunk.old_lines:
                raise RetriableError(_creation_with_old_lines(path, hunk.number, hunk.header))
            added.extend(hunk.new_lines)
        if not added:
            return ""
        final = "" if file_patch.hunks[-1].new_missing_newline else "\n"
        return "\n".join(added) + final
    assert original is not None  # _check_target refused a change to an absent file
    result = _apply_hunks(original, file_patch)
    if file_patch.is_deletion:
        if result:
            left, total = len(split_lines(result)), len(split_lines(original))
            raise RetriableError(
                f"{path}: the patch deletes this file ('+++ /dev/null') but its hunks leave {left} of its "
                f"{total} line{'' if total == 1 else 's'}. A deletion's hunk must remove every line of the "
                "current file."
            )
        return None
    return result


def apply_patch(patch_text: str, read: Callable[[str], str | None]) -> dict[str, str | None]:
    """Parse ``patch_text`` and apply every file in memory; return what to write.

    ``read(path)`` returns a file's current text or ``None`` when it does not exist; it is
    called at most once per path, and may raise to refuse a path. Several file patches for
    one path apply in order. A rename reads the old path, and maps the old path to ``None``
    and the new one to the result. The result maps every touched path to its new text, or
    to ``None`` for a file to delete. Raises :class:`~toolcards.errors.RetriableError`
    before returning anything if any file fails, so the caller writes all or nothing.
    Blocks only as long as ``read`` does.
    """
    contents: dict[str, str | None] = {}

    def current(path: str) -> str | None:
        if path not in contents:
            contents[path] = read(path)
        return contents[path]

    def prepare(header: FilePatch) -> int:
        # Everything about the file that needs no hunk is checked before its hunks are read.
        source = header.old_path if header.old_path is not None else header.path
        if header.is_rename and header.new_path is not None and current(header.new_path) is not None:
            raise RetriableError(
                f"The patch renames {header.old_path} to {header.new_path}, but "
                f"{header.new_path} already exists. Pick a new path that is free."
            )
        original = current(source)
        _check_target(original, header)
        return _line_count(original or "")

    changed: dict[str, str | None] = {}
    for file_patch in _file_patches(patch_text, prepare):
        source = file_patch.old_path if file_patch.old_path is not None else file_patch.path
        result = apply_file_patch(current(source), file_patch)
        if file_patch.is_rename:
            contents[source] = changed[source] = None
        contents[file_patch.path] = changed[file_patch.path] = result
    return changed


def _check_target(original: str | None, file_patch: FilePatch) -> None:
    """Refuse a creation of a file with content, and a change or deletion of an absent file."""
    path = file_patch.path
    if file_patch.is_creation and original:
        lines = _line_count(original)
        raise RetriableError(
            f"{path}: the patch creates this file ('--- /dev/null') but it already exists with "
            f"{lines} line{'' if lines == 1 else 's'}. Write the patch against its current content, "
            f"with '--- a/{path}', instead."
        )
    if not file_patch.is_creation and original is None:
        raise RetriableError(
            f"{path} does not exist, so the patch cannot change it. To create it, use '--- /dev/null' "
            f"and '+++ b/{path}' with only '+' lines."
        )


def _creation_with_old_lines(path: str, number: int, header: str) -> str:
    return (
        f"{path}: hunk {number} ({header}) has context or '-' lines, but the patch "
        "creates the file ('--- /dev/null'), so every line must start with '+'."
    )


def _line_count(text: str) -> int:
    """The number of lines of ``text`` (``len(split_lines(text))``), counted in C."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class _PatchLines(Sequence[str]):
    """The lines of a patch without their endings (a ``"\\r"`` before ``"\\n"`` dropped; a final
    line ending starts no line), split only as far as the parser has looked.

    A malformed patch is refused at the line where it goes wrong, so refusing 4 MB of garbage
    that goes wrong at its first line costs that line, not splitting (and freeing) a million.
    Only ``len`` looks at the whole text, counting its line breaks in C.
    :meth:`next_matching` finds the next line of a kind with a regular expression over the
    text, so the scans that look ahead to the next hunk or file cost C time, not a Python
    step per line.
    """

    _BLOCK = 64 * 1024
    """Characters split at a time (at least one whole line)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: list[str] = []
        self._done = 0
        """Offset of the first character not split yet."""
        self._crlf = "\r" in text
        tail = text[text.rfind("\n") + 1 :]
        self._size = text.count("\n") + (0 if tail in ("", "\r") else 1)
        self._block_lines: list[int] = []
        """Index of the first line of each block split so far."""
        self._block_starts: list[int] = []
        """Offset of the first character of each block split so far."""
        self._block_offsets: dict[int, list[int]] = {}
        """Offsets of every line of a block, for the blocks :meth:`offset` was asked about."""

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, int) and 0 <= index < len(self._lines):
            return self._lines[index]  # the parser's usual case: a line already split
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        while index >= len(self._lines):
            self._split_more()
        return self._lines[index]

    def offset(self, index: int) -> int:
        """Offset in the text of the first character of line ``index`` (the text's length for
        ``len(self)``). Costs one pass over that line's block the first time it is asked."""
        if index >= self._size:
            return len(self._text)
        self[index]
        block = bisect_right(self._block_lines, index) - 1
        offsets = self._block_offsets.get(block)
        if offsets is None:
            start = self._block_starts[block]
            end = self._block_starts[block + 1] if block + 1 < len(self._block_starts) else self._done
            # Line k of the block starts after the k lines before it and their k line breaks.
            offsets = list(accumulate(map(len, self._text[start:end].split("\n")), initial=start))
            self._block_offsets[block] = offsets
        line = index - self._block_lines[block]
        return offsets[line] + line

    def next_matching(self, index: int, pattern: _LineStart) -> int:
        """Index of the first line from ``index`` on whose start ``pattern`` matches, or
        ``len(self)`` when none does."""
        if index >= self._size:
            return self._size
        text, start = self._text, self.offset(index)
        if pattern.at.match(text, start):
            return index
        if pattern.skip_without_cr is not None and not self._crlf:
            skipped = pattern.skip_without_cr.match(text, start)
            assert skipped is not None  # a run may be empty: it matches anywhere
            return min(index + text.count("\n", start, skipped.end()), self._size)
        match = pattern.after_break.search(text, start)
        if match is None:
            return self._size
        return min(index + 1 + text.count("\n", start, match.start()), self._size)

    def _split_more(self) -> None:
        text, start = self._text, self._done
        end = text.rfind("\n", start, start + self._BLOCK)
        if end < 0:
            end = text.find("\n", start + self._BLOCK)
        if end < 0:
            end = len(text)
        block = text[start:end].split("\n")
        if self._crlf:
            block = [line.removesuffix("\r") for line in block]
        self._block_lines.append(len(self._lines))
        self._block_starts.append(start)
        self._lines.extend(block[: self._size - len(self._lines)])
        self._done = end + 1


def _parse_file_header(lines: _PatchLines, index: int) -> tuple[FilePatch, int]:
    """The ``---``/``+++`` pair at ``lines[index]`` as a file patch without hunks, and the index after it."""
    old_path = _parse_path(lines[index][4:], "a/", index)
    new_path = _parse_path(lines[index + 1][4:], "b/", index + 1)
    if old_path is None and new_path is None:
        raise RetriableError(
            f"Lines {index + 1}-{index + 2} of the patch name /dev/null on both the '---' and '+++' "
            "lines. Name the file on at least one of them."
        )
    return FilePatch(old_path=old_path, new_path=new_path, hunks=()), index + 2


def _parse_file_hunks(
    lines: _PatchLines, index: int, header: FilePatch, file_lines: int | None, max_hunks: int
) -> tuple[FilePatch, int]:
    """Read the hunks after ``header``; ``file_lines`` bounds their old lines (see :func:`_file_patches`),
    ``max_hunks`` their number (what :data:`MAX_PATCH_HUNKS` leaves after the earlier files)."""
    label = header.path
    hunks: list[Hunk] = []
    room = file_lines
    """Lines the file will have when the next hunk applies: each hunk changes the count."""
    while True:
        # Blank lines between hunks are tolerated.
        ahead = lines.next_matching(index, _NOT_BLANK)
        if ahead >= len(lines) or not lines[ahead].startswith("@@"):
            break
        if len(hunks) >= max_hunks:
            raise RetriableError(
                f"The patch has more than {MAX_PATCH_HUNKS:,} hunks: the one at line {ahead + 1} is hunk "
                f"{len(hunks) + 1:,} of {label}. Send at most {MAX_PATCH_HUNKS:,} hunks per patch, as several "
                "patches, or merge neighbouring hunks into one; nothing was changed."
            )
        limit = (
            None
            if room is None
            else _OldLinesLimit(lines=room, creation=header.is_creation, after_hunks=len(hunks) > 0)
        )
        hunk, index = _parse_hunk(lines, ahead, label, len(hunks) + 1, limit)
        hunks.append(hunk)
        if room is not None:
            room += len(hunk.new_lines) - len(hunk.old_lines)
    if not hunks and not header.is_creation and not header.is_deletion:
        raise RetriableError(
            f"The patch for {label} has no hunks after its header lines. Add hunks starting with "
            "'@@ -<line>,<count> +<line>,<count> @@'."
        )
    return replace(header, hunks=tuple(hunks)), index


def _parse_path(raw: str, prefix: str, index: int) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if len(path) >= 2 and path.startswith('"') and path.endswith('"'):
        path = _unquote(path[1:-1])
    if path == "/dev/null":
        return None
    path = path.removeprefix(prefix)
    if not path:
        raise RetriableError(f"Line {index + 1} of the patch names no file. Write '--- a/<path>' and '+++ b/<path>'.")
    return path


def _unquote(quoted: str) -> str:
    """Undo git's C-style quoting of a path (``\\"``, ``\\\\``, ``\\t``, octal UTF-8 bytes)."""
    out = bytearray()
    index = 0
    while index < len(quoted):
        char = quoted[index]
        if char == "\\" and index + 1 < len(quoted):
            following = quoted[index + 1]
            octal = quoted[index + 1 : index + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8) & 0xFF)
                index += 4
                continue
            out += _C_ESCAPES.get(following, following).encode()
            index += 2
            continue
        out += char.encode()
        index += 1
    return out.decode("utf-8", errors="replace")


def _is_boundary(lines: _PatchLines, index: int, *, left: tuple[int, int] = (0, 0)) -> bool:
    """Whether ``lines[index]`` starts the next hunk or file, or the git text between files.

    ``left`` is how many old and new lines the hunk header still expects. While it expects
    some, a ``--- ``/``+++ `` pair could be a removed ``-- ...`` and an added ``++ ...`` line:
    it is a file header only when a hunk header follows it and the pair would not complete
    the counts exactly.
    """
    line = lines[index]
    if line.startswith(("@@", "diff ")):
        return True
    if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
        if left == (0, 0):
            return True
        return index + 2 < len(lines) and lines[index + 2].startswith("@@") and left != (1, 1)
    return False


def _runs_to_boundary(lines: _PatchLines, index: int) -> bool:
    """Whether hunk-like lines from ``index`` on run up to the next hunk, file or the end."""
    while True:
        index = lines.next_matching(index, _NOT_HUNK_LINE)
        if index >= len(lines) or _is_boundary(lines, index):
            return True
        if not lines[index].startswith("--- "):
            return False
        index += 1  # a removed line "-- ...", not a file header


@dataclass(frozen=True, kw_only=True)
class _OldLinesLimit:
    """How many old lines a hunk may have: the lines its file has when it applies."""

    lines: int
    creation: bool
    """The patch creates the file, so a hunk may have no old line at all."""
    after_hunks: bool
    """Earlier hunks of the file came first (and changed its line count)."""


def _parse_hunk(
    lines: _PatchLines, index: int, label: str, number: int, limit: _OldLinesLimit | None = None
) -> tuple[Hunk, int]:
    """Read the hunk whose header is ``lines[index]``; return it and the index after it."""
    header = lines[index]
    reader = _HunkReader(header, label, number, limit)
    index += 1
    total = len(lines)
    while index < total:
        if reader.counted:
            index = reader.take_counted(lines, index)
            if index >= total:
                break
        if lines[index].startswith("\\"):
            # A marker, wherever it is; the ones repeated after it say nothing more.
            reader.no_newline(lines[index], index)
            index = lines.next_matching(index + 1, _NOT_MARKER)
            continue
        if not reader.takes(lines, index):
            break
        index += 1
    return reader.hunk(), index


class _HunkReader:
    """The lines of one hunk as they are read, and how many its header still announces.

    A header's counts are trusted until they run out; lines that still look like the hunk's
    after that, up to the next hunk, file or the end, mean the header undercounted, and from
    then on the lines alone say where the hunk ends.
    """

    def __init__(self, header: str, label: str, number: int, limit: _OldLinesLimit | None = None) -> None:
        self.header, self.label, self.number = header, label, number
        self.old_start, self.old_count, self.new_start, self.new_count = _parse_header(header, label, number)
        self.counted = self.old_count is not None
        self.lines: list[tuple[str, str]] = []
        self.old_seen = self.new_seen = 0
        self.old_missing = self.new_missing = False
        self.limit = limit
        self.max_old = limit.lines if limit is not None else None
        self._blank_run_end = -1
        """End of the run of empty lines last looked past, and whether hunk lines follow it:
        every empty line of a run has the same answer, so a run is scanned once."""
        self._blank_run_followed = False

    def take_counted(self, lines: _PatchLines, index: int) -> int:
        """Add the plain hunk lines from ``index`` on while the header still announces lines;
        return the index of the first line not taken (anything else goes through :meth:`takes`).

        The fast path of :meth:`takes` for the lines of a header whose counts are right: a
        line that starts with ``' '`` or ``'+'``, or with ``'-'`` but not ``'--- '``, can be
        neither a boundary nor a marker while the counts still expect lines.
        """
        old_count, new_count = self.old_count or 0, self.new_count or 0
        old, new = self.old_seen, self.new_seen
        max_old = self.max_old if self.max_old is not None else old_count + len(lines)
        append = self.lines.append
        total = len(lines)
        try:
            while index < total and (old < old_count or new < new_count):
                line = lines[index]
                kind = line[:1]
                if kind == "+":
                    new += 1
                elif kind == " ":
                    old += 1
                    new += 1
                elif kind == "-" and not line.startswith("--- "):
                    old += 1
                else:
                    break
                append((kind, line[1:]))
                if old > max_old:
                    self.old_seen = old
                    raise RetriableError(self._too_long_message(index))
                index += 1
        finally:
            self.old_seen, self.new_seen = old, new
        return index

    def left(self) -> tuple[int, int]:
        """Old and new lines the header still announces; ``(0, 0)`` once it is not trusted."""
        if not self.counted:
            return 0, 0
        return max((self.old_count or 0) - self.old_seen, 0), max((self.new_count or 0) - self.new_seen, 0)

    def takes(self, lines: _PatchLines, index: int) -> bool:
        """Add ``lines[index]`` to the hunk and return ``True``, or ``False`` where the hunk ended.

        Raises :class:`~toolcards.errors.RetriableError` for a line inside the hunk that is no
        hunk line, or a ``\\`` marker right after the header.
        """
        line = lines[index]
        left = self.left()
        pending = left != (0, 0)
        if _is_boundary(lines, index, left=left):
            return False
        if line.startswith("\\"):
            self.no_newline(line, index)
            return True
        if self.counted and not pending:
            if not (line[:1] in _HUNK_KINDS and _runs_to_boundary(lines, index)):
                return False
            self.counted = False  # the header undercounts; the lines say where the hunk ends
        if not line:
            # An empty line is a context line whose space was stripped, when the counts
            # still need it or more hunk lines follow it; otherwise the hunk ended.
            if pending or (not self.counted and self._blank_followed(lines, index)):
                self._add(" ", "", index)
                return True
            return False
        if line[0] in _HUNK_KINDS:
            self._add(line[0], line[1:], index)
            return True
        if pending or (not self.counted and _more_changes_follow(lines, index)):
            raise RetriableError(self._stray_line_message(line, index, pending))
        return False

    def hunk(self) -> Hunk:
        """The hunk read; raises :class:`~toolcards.errors.RetriableError` when it has no lines."""
        if not self.lines:
            raise RetriableError(
                f"Hunk {self.number} ({self.header}) of {self.label} has no lines. Follow the header with the "
                "hunk's lines, each starting with ' ' (context), '-' (removed) or '+' (added)."
            )
        return Hunk(
            number=self.number,
            header=self.header,
            old_start=self.old_start,
            old_count=self.old_count,
            new_start=self.new_start,
            new_count=self.new_count,
            lines=tuple(self.lines),
            old_missing_newline=self.old_missing,
            new_missing_newline=self.new_missing,
        )

    def _add(self, kind: str, text: str, index: int) -> None:
        self.lines.append((kind, text))
        self.old_seen += kind != "+"
        self.new_seen += kind != "-"
        if self.max_old is not None and self.old_seen > self.max_old:
            raise RetriableError(self._too_long_message(index))

    def _blank_followed(self, lines: _PatchLines, index: int) -> bool:
        """:func:`_hunk_lines_follow` for the empty line at ``index``, once per run of them."""
        if index >= self._blank_run_end:
            self._blank_run_end = lines.next_matching(index, _NON_EMPTY_LINE)
            self._blank_run_followed = _hunk_lines_follow(lines, index, ahead=self._blank_run_end)
        return self._blank_run_followed

    def _too_long_message(self, index: int) -> str:
        """A hunk with more old lines than its file has when it applies: it cannot match."""
        assert self.limit is not None
        if self.limit.creation:
            return _creation_with_old_lines(self.label, self.number, self.header) + " Nothing was changed."
        now = " after the earlier hunks" if self.limit.after_hunks else ""
        lines = f"{self.limit.lines} line{'' if self.limit.lines == 1 else 's'}"
        announced = (
            f" Its header announces {self.old_count} old lines: end the hunk there, or fix the counts."
            if self.old_count is not None
            else ""
        )
        return (
            f"Line {index + 1} of the patch is old line {self.old_seen} of hunk {self.number} ({self.header}) "
            f"of {self.label}, but the file has {lines}{now}, so the hunk cannot apply.{announced} "
            "Its context (' ') and removed ('-') lines must be lines of the file. Nothing was changed."
        )

    def no_newline(self, line: str, index: int) -> None:
        """``\\ No newline at end of file``: the line before it ends its side(s) of the file."""
        if not self.lines:
            raise RetriableError(
                f"Line {index + 1} of the patch, {line!r}, comes right after the header of hunk "
                f"{self.number} ({self.header}) of {self.label}; it belongs after the line it concerns."
            )
        kind = self.lines[-1][0]
        self.old_missing = self.old_missing or kind != "+"
        self.new_missing = self.new_missing or kind != "-"

    def _stray_line_message(self, line: str, index: int, pending: bool) -> str:
        expected = (
            f"its header announces {self.old_count} old and {self.new_count} new lines and only "
            f"{self.old_seen} and {self.new_seen} came before it"
            if pending
            else "more '-' or '+' lines follow it"
        )
        return (
            f"Line {index + 1} of the patch, {line!r}, is inside hunk {self.number} ({self.header}) of "
            f"{self.label} ({expected}) but does not start with ' ', '-' or '+'. Start every context line "
            "with a space, and make the header's counts match the lines."
        )


def _parse_header(header: str, label: str, number: int) -> tuple[int | None, int | None, int | None, int | None]:
    """``(old_start, old_count, new_start, new_count)`` of a ``@@`` line; all ``None`` for a bare ``@@``."""
    match = _HEADER.match(header)
    if match:
        old_count = 1 if match[2] is None else int(match[2])
        new_count = 1 if match[4] is None else int(match[4])
        return int(match[1]), old_count, int(match[3]), new_count
    if _NUMBERED_HEADER.match(header):
        raise RetriableError(
            f"Hunk {number} of {label} has a malformed header, {header!r}. Write it as "
            "'@@ -<old line>,<old count> +<new line>,<new count> @@', or as a bare '@@' to place the "
            "hunk by its context lines alone."
        )
    return None, None, None, None


def _hunk_lines_follow(lines: _PatchLines, index: int, *, ahead: int | None = None) -> bool:
    """Whether hunk lines follow the empty lines from ``index`` on, before the next hunk or file
    (``ahead``: the first line that is not empty, when the caller found it already)."""
    if ahead is None:
        ahead = lines.next_matching(index, _NON_EMPTY_LINE)
    return ahead < len(lines) and lines[ahead][:1] in (*_HUNK_KINDS, "\\") and not _is_boundary(lines, ahead)


def _more_changes_follow(lines: _PatchLines, index: int) -> bool:
    """Whether '-' or '+' lines follow before the next hunk or file: a dropped change."""
    index = lines.next_matching(index + 1, _CHANGE_OR_BOUNDARY)
    return index < len(lines) and not _is_boundary(lines, index)


def _apply_hunks(original: str, file_patch: FilePatch) -> str:
    nl = detect_newline(original)
    bodies: list[str] = []
    endings: list[str] = []
    for line in split_lines(original):
        ending = "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""
        bodies.append(line[: len(line) - len(ending)])
        endings.append(ending)
    shift = 0
    floor = 0
    for hunk in file_patch.hunks:
        old = hunk.old_lines
        if hunk.old_start is None:
            base: int | None = None
        elif not old and hunk.old_count == 0:
            base = hunk.old_start
        else:
            base = max(hunk.old_start - 1, 0)
        expected = None if base is None else base + shift
        pos = _locate(bodies, hunk, expected, floor, file_patch.path)
        new_bodies: list[str] = []
        new_endings: list[str] = []
        cursor = pos
        for kind, text in hunk.lines:
            if kind == " ":
                new_bodies.append(bodies[cursor])
                new_endings.append(endings[cursor])
                cursor += 1
            elif kind == "-":
                cursor += 1
            else:
                new_bodies.append(text)
                new_endings.append(nl)
        at_end = pos + len(old) == len(bodies)
        had_final_newline = not endings or endings[-1] != ""
        bodies[pos : pos + len(old)] = new_bodies
        endings[pos : pos + len(old)] = new_endings
        end = pos + len(new_bodies)
        if at_end and bodies:
            if hunk.new_missing_newline:
                endings[-1] = ""
            elif hunk.old_missing_newline or had_final_newline:
                endings[-1] = endings[-1] or nl
            else:
                endings[-1] = ""
        # A line that was last, or kept as context from the last line, ends the file no more.
        for index in range(max(pos - 1, 0), min(end, len(bodies) - 1)):
            if not endings[index]:
                endings[index] = nl
        shift = (shift if base is None else pos - base) + len(new_bodies) - len(old)
        floor = end
    return "".join(body + ending for body, ending in zip(bodies, endings, strict=True))


def _occurrences(haystack: Sequence[str], needle: Sequence[str], floor: int) -> list[int]:
    """Every start at or after ``floor`` where ``needle``'s lines occur in ``haystack``.

    The usual hunk's first line is rare in its file, so the block is compared only where that
    line occurs. A file of repeated lines makes that quadratic (a 10,000-line block against a
    file of two alternating lines compared 50 M lines), so once the comparisons pass a linear
    budget the rest of the file is searched in linear time (:func:`_occurrences_linear`).
    """
    found: list[int] = []
    size = len(needle)
    last = len(haystack) - size
    first = needle[0]
    budget = _LINEAR_BUDGET * (len(haystack) + size)
    index = floor
    while index <= last:
        try:
            index = haystack.index(first, index, last + 1)
        except ValueError:
            break
        budget -= size
        if budget < 0:
            return found + _occurrences_linear(haystack, needle, index)
        if haystack[index : index + size] == needle:
            found.append(index)
        index += 1
    return found


_LINEAR_BUDGET = 4
"""Lines compared per line of file and block before :func:`_occurrences` turns linear."""


def _occurrences_linear(haystack: Sequence[str], needle: Sequence[str], floor: int) -> list[int]:
    """:func:`_occurrences` in time linear in the lines (Knuth-Morris-Pratt over line numbers).

    Each distinct line is numbered once, so a comparison is of two integers whatever the
    lines' lengths.
    """
    numbers: dict[str, int] = {}
    pattern = [numbers.setdefault(line, len(numbers)) for line in needle]
    size = len(pattern)
    # fallback[i]: the length of the longest proper prefix of pattern[: i + 1] that is also its suffix.
    fallback = [0] * size
    matched = 0
    for i in range(1, size):
        while matched and pattern[i] != pattern[matched]:
            matched = fallback[matched - 1]
        if pattern[i] == pattern[matched]:
            matched += 1
        fallback[i] = matched
    found: list[int] = []
    matched = 0
    absent = -1  # a line the block does not have matches no position of it
    for index in range(floor, len(haystack)):
        number = numbers.get(haystack[index], absent)
        while matched and number != pattern[matched]:
            matched = fallback[matched - 1]
        if number == pattern[matched]:
            matched += 1
            if matched == size:
                found.append(index - size + 1)
                matched = fallback[matched - 1]
    return found


def _locate(bodies: list[str], hunk: Hunk, expected: int | None, floor: int, path: str) -> int:
    """Return where the hunk's old lines start in ``bodies``; see the module docstring."""
    old = hunk.old_lines
    size = len(old)
    total = len(bodies)
    where = f"{path}: hunk {hunk.number} ({hunk.header})"
    if not size:
        if expected is None:
            raise RetriableError(
                f"{where} has only '+' lines and no line numbers, so it cannot be placed. Add context "
                "lines, or line numbers ('@@ -L,0 +M,N @@' inserts after line L)."
            )
        if not floor <= expected <= total:
            raise RetriableError(
                f"{where} inserts after line {expected}, but the file has {total} line{'' if total == 1 else 's'}"
                f"{f' and the previous hunk ends at line {floor}' if floor else ''}. Fix the line "
                "numbers or add context lines."
            )
        return expected
    last_start = total - size
    for loose in (False, True):
        if loose:
            haystack, needle = [body.rstrip() for body in bodies], [line.rstrip() for line in old]
        else:
            haystack, needle = bodies, old
        if expected is not None and floor <= expected <= last_start and haystack[expected : expected + size] == needle:
            return expected
        found = _occurrences(haystack, needle, floor)
        if hunk.old_missing_newline and last_start in found:
            found = [last_start]
        if len(found) == 1:
            return found[0]
        if found:
            listed = ", ".join(str(start + 1) for start in found[:_MAX_LISTED])
            more = f" and {len(found) - _MAX_LISTED} more" if len(found) > _MAX_LISTED else ""
            stated = "has no line numbers" if expected is None else f"does not match at its stated line {expected + 1}"
            raise RetriableError(
                f"{where} {stated}, and its {size} context and removed lines occur {len(found)} times "
                f"(starting at lines {listed}{more}). Add context lines to the hunk so it matches one "
                "place, or fix its line numbers, then send the whole patch again."
            )
    raise RetriableError(_mismatch_message(bodies, old, floor, where))


def _mismatch_message(bodies: list[str], old: list[str], floor: int, where: str) -> str:
    after = f" after the previous hunk (line {floor})" if floor else ""
    expected = "\n".join(f"  {line}" for line in old[:8])
    if len(old) > 8:
        expected += f"\n  ... {len(old) - 8} more line{'' if len(old) == 9 else 's'}"
    head = (
        f"{where} does not apply: its context and removed lines were not found in the file{after}.\n"
        f"The hunk expects:\n{expected}"
    )
    region = bodies[floor:] or bodies
    offset = floor if bodies[floor:] else 0
    if len(region) * len(old) > _MAX_CLOSEST_PAIRS:
        # Scoring every window of a long hunk against a long file takes seconds to minutes.
        return (
            f"{head}\nThe hunk has {len(old):,} context and removed lines and the file {len(region):,} lines"
            f"{after}, too many to search for the closest text. Read the file where the hunk belongs, copy its "
            "current lines into the hunk's context (' ') and removed ('-') lines and send the whole patch again."
        )
    closest = closest_block(region, old)
    if closest is None:
        return f"{head}\nThe file is empty. Send the whole patch again with hunks that match the file."
    start, count, score = closest
    start += offset
    actual = bodies[start : start + count]
    first_diff = next((j for j, (a, b) in enumerate(zip(old, actual, strict=False)) if a != b), None)
    quoted = quote_lines(actual, start + 1)
    detail = ""
    if first_diff is not None:
        file_line = start + first_diff + 1
        # The file's side of the difference is file text: it goes inside the envelope.
        quoted += f"\nline {file_line} exactly: {actual[first_diff][:500]!r}"
        detail = (
            f"\nThe first difference: the hunk's line {first_diff + 1} is {old[first_diff]!r}; the file's "
            f"line {file_line} is quoted above."
        )
    span = f"line {start + 1}" if count == 1 else f"lines {start + 1}-{start + count}"
    return (
        f"{head}\nThe closest text in the file is {span} ({score:.0f}% similar):\n"
        f"{quote_file_text(quoted)}{detail}\n"
        "Copy the file's current lines into the hunk's context (' ') and removed ('-') lines and send "
        "the whole patch again."
    )
