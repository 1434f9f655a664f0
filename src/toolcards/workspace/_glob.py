"""Finding files by name pattern in a workspace: :func:`glob`.

The pattern dialect, also used by grep's ``include``: ``*`` (within one segment, dotfiles
included), ``?``, character classes (``[a-z]``, ``[!abc]`` or ``[^abc]``), ``**`` as a whole
segment for any number of directories (``**/*.py`` matches ``a.py`` too), and nested ``{py,ts}``
alternatives (a brace without a comma or a closing brace is literal). Matching is
case-insensitive and anchored at the base directory; there are no escapes, and an absolute
pattern or a ``..`` segment is refused with :data:`~toolcards.workspace._paths.ESCAPE_MESSAGE`.

No pattern and no tree makes a call run or grow without bound: a pattern past
:data:`MAX_GLOB_CHARS`, :data:`MAX_BRACE_DEPTH`, :data:`MAX_EXPANSIONS` or
:data:`MAX_EXPANDED_CHARS` is refused before anything is expanded (the expansion's size is
computed from a linear parse); matching is linear in the path times the pattern, because each
``*`` but a segment's last, and each run between two ``**``, commits to the earliest place
where what follows matches (which finds a match whenever there is one). The walk opens each
directory relative to its parent's descriptor without following symlinks (so a swapped
directory cannot lead out), descends at most :data:`MAX_WALK_DEPTH` levels, matches regular
files and symlinks by name, skips pipes, sockets and devices unopened, keeps only the
:data:`MAX_GLOB_RESULTS` newest matches, and checks the call's deadline
(:func:`~toolcards.core._deadline.check_deadline`). It blocks on disk I/O.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from toolcards.core._deadline import check_deadline
from toolcards.errors import RetriableError
from toolcards.workspace._paths import ESCAPE_MESSAGE, SKIPPED_DIRS, display_name
from toolcards.workspace._tree import Tree, format_size

__all__ = [
    "MAX_BRACE_DEPTH",
    "MAX_EXPANDED_CHARS",
    "MAX_EXPANSIONS",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_RESULTS",
    "MAX_WALK_DEPTH",
    "check_glob",
    "exclusion",
    "expand_braces",
    "glob",
    "glob_regex",
    "open_beneath",
    "walk_files",
]

MAX_GLOB_RESULTS = 100
"""How many paths :func:`glob` shows by default (its ``limit``); a last line gives how many more."""

MAX_GLOB_CHARS = 1_000
"""The longest pattern accepted (glob patterns and grep's ``include``)."""

MAX_BRACE_DEPTH = 10
"""How deep ``{...,...}`` alternatives may nest."""

MAX_EXPANSIONS = 1000
"""How many patterns one brace expression may expand to."""

MAX_EXPANDED_CHARS = 20_000
"""How many characters all the patterns a brace expression expands to may have together."""

MAX_WALK_DEPTH = 64
"""How many directory levels below the base a walk descends (files directly in it are level 1)."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


def glob(
    root: Path,
    pattern: str,
    path: str = "",
    *,
    offset: int = 0,
    limit: int = MAX_GLOB_RESULTS,
    sizes: bool = False,
    exclude: str = "",
) -> str:
    """List the files under ``root/path`` that match ``pattern``, newest first.

    Args:
        offset: how many of the matches (newest first) to skip.
        limit: how many to show at most.
        sizes: add each file's size.
        exclude: leave out the paths this pattern (:func:`exclusion`) matches.

    Returns:
        One root-relative POSIX path per line, ordered by modification time (newest
        first) then by path; at most ``limit``, followed, when there are more, by a line
        giving how many and the offset to list on with (``"N more — next offset K"``).
        When nothing matches, a sentence saying so (with a hint to use ``**/`` when the
        pattern has no ``/``); when files match but ``exclude`` leaves out all of them, a
        sentence saying how many it left out.

    Raises:
        RetriableError: the pattern or ``path`` escapes the root, ``path`` is not a
            directory, the pattern is empty or past one of the limits in the module
            docstring; ``offset`` or ``limit`` is out of range.
        ToolTimeout: the call's deadline passed during the walk.
    """
    tree = Tree(root)
    kind = tree.kind(path)
    if not pattern.strip():
        raise RetriableError("The glob pattern is empty: pass one such as '**/*.py'.")
    if offset < 0 or limit < 1:
        raise RetriableError(f"offset must be 0 or more and limit 1 or more (got offset={offset}, limit={limit}).")
    expanded = check_glob(pattern)
    excluded = exclusion(exclude) if exclude.strip() else None
    if kind != stat.S_IFDIR:
        raise _not_a_directory(kind, path)
    regex = glob_regex(expanded)
    normalised = _normalised(expanded)
    max_depth = MAX_WALK_DEPTH
    if not any("**" in p.split("/") for p in normalised):
        max_depth = min(max_depth, _max_segments(normalised))
    kept = offset + limit
    with tree.directory(path) as base:
        prefix = "" if base.rel == "." else base.rel + "/"
        newest, total = _newest_matches(base.fd, regex, excluded, max_depth=max_depth, kept=kept)
        # Walked again only for an empty answer: the model must learn whether to change
        # the pattern or the exclusion.
        left_out = 0
        if not total and excluded is not None:
            _, left_out = _newest_matches(base.fd, regex, None, max_depth=max_depth, kept=0)
    if left_out:
        files, them = ("1 file matches", "it") if left_out == 1 else (f"{left_out:,} files match", "them")
        return (
            f"{files} {pattern!r} under {path or '.'!r}, but exclude {exclude!r} leaves "
            f"{'' if left_out == 1 else 'all of '}{them} out. Change or drop exclude to list {them}."
        )
    if not total:
        hint = ""
        if "/" not in pattern and not pattern.startswith("**"):
            hint = f" Patterns are anchored at the base directory: use '**/{pattern}' to match at any depth."
        return f"No files match {pattern!r} under {path or '.'!r}.{hint}"
    if offset >= total:
        files = "1 file matches" if total == 1 else f"{total} files match"
        raise RetriableError(f"offset {offset} is past the end: {files}.")
    newest.sort()
    page = newest[offset:kept]
    lines = [display_name(prefix + rel) + (f" ({format_size(size)})" if sizes else "") for _, _, rel, size in page]
    if total > offset + len(page):
        lines.append(f"{total - offset - len(page):,} more — next offset {offset + len(page)}")
    return "\n".join(lines)


def _not_a_directory(kind: int | None, path: str) -> RetriableError:
    """The refusal of a base path that is missing (``kind`` None), a file or a special file."""
    shown = path or "."
    if kind is None:
        return RetriableError(f"Directory {shown!r} does not exist: call workspace_list to see what does.")
    if kind == stat.S_IFREG:
        return RetriableError(f"{shown!r} is a file, not a directory: pass its directory as path.")
    return RetriableError(f"{shown!r} is not a directory (a FIFO, socket or device): pass a directory as path.")


_Match = tuple[int, list[str], str, int]
"""A matching file as :func:`glob` sorts it: minus its mtime, its path's segments, its path, its size."""


def _newest_matches(
    base_fd: int,
    regex: re.Pattern[str],
    excluded: Callable[[str], bool] | None,
    *,
    max_depth: int,
    kept: int,
) -> tuple[list[_Match], int]:
    """The ``kept`` newest files under ``base_fd`` that ``regex`` matches (unsorted), and how many match."""
    newest: list[_Match] = []
    total = 0
    left_out: dict[str, bool] = {}
    for _, directory, entries in walk_files(base_fd, max_depth=max_depth):
        if excluded is not None and _inside_excluded(directory, excluded, left_out):
            continue
        for entry in entries:
            rel = directory + entry.name
            if regex.fullmatch(rel) is None or (excluded is not None and excluded(rel)):
                continue
            try:
                status = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += 1
            newest.append((-status.st_mtime_ns, rel.split("/"), rel, status.st_size))
        if len(newest) > 2 * kept:
            newest.sort()
            del newest[kept:]
    return newest, total


def exclusion(pattern: str) -> Callable[[str], bool]:
    """Whether a path (relative to the base directory) is left out by ``pattern``.

    ``pattern`` is in the dialect of the module docstring, ``{a,b}`` for several. An
    alternative without ``/`` is matched against the last name of the path, so
    ``node_modules`` or ``*.pyc`` leave those out at any depth; one with ``/`` is matched
    against the whole path, anchored at the base directory.

    Raises:
        RetriableError: as :func:`check_glob`.
    """
    expanded = check_glob(pattern)
    names = [item for item in expanded if "/" not in item.strip("/")]
    paths = [item for item in expanded if "/" in item.strip("/")]
    by_name = glob_regex([item.strip("/") for item in names]) if names else None
    by_path = glob_regex(paths) if paths else None

    def excluded(rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return (by_name is not None and by_name.fullmatch(name) is not None) or (
            by_path is not None and by_path.fullmatch(rel) is not None
        )

    return excluded


def _inside_excluded(directory: str, excluded: Callable[[str], bool], known: dict[str, bool]) -> bool:
    """Whether ``directory`` (``""`` or ending in ``/``) or one above it is left out."""
    if not directory:
        return False
    found = known.get(directory)
    if found is None:
        path = directory[:-1]
        parent = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        found = known[directory] = excluded(path) or _inside_excluded(parent, excluded, known)
    return found


def check_glob(pattern: str) -> list[str]:
    """Validate ``pattern`` and return its brace expansion.

    Raises:
        RetriableError: the pattern contains a NUL byte, is absolute, or has a ``..``
            segment (:data:`~toolcards.workspace._paths.ESCAPE_MESSAGE`); or it is past
            one of the limits in the module docstring.
    """
    if "\x00" in pattern:
        raise RetriableError(f"{ESCAPE_MESSAGE} (got {_shown(pattern)})")
    expanded = expand_braces(pattern)
    for item in expanded:
        if os.path.isabs(item) or item.startswith("\\") or ".." in item.split("/"):
            raise RetriableError(f"{ESCAPE_MESSAGE} (got {_shown(pattern)})")
    return expanded


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives (nested too) into plain patterns, in order.

    The leftmost alternatives vary slowest: ``{a,b}{1,2}`` gives ``a1 a2 b1 b2``.
    Unbalanced braces and braces without a top-level comma stay literal. Duplicates are
    dropped. Takes time linear in the pattern plus the size of the result.

    Raises:
        RetriableError: the pattern is longer than :data:`MAX_GLOB_CHARS`, nests braces
            deeper than :data:`MAX_BRACE_DEPTH`, or would expand to more than
            :data:`MAX_EXPANSIONS` patterns or :data:`MAX_EXPANDED_CHARS` characters.
    """
    if len(pattern) > MAX_GLOB_CHARS:
        raise RetriableError(
            f"The pattern is {len(pattern):,} characters long; at most {MAX_GLOB_CHARS:,} are accepted. "
            "Use a shorter pattern, or narrow the search with path."
        )
    tree = _parse_braces(pattern)
    count, chars = _expansion_size(tree)
    if count > MAX_EXPANSIONS:
        raise RetriableError(
            f"The pattern {_shown(pattern)} expands to more than {MAX_EXPANSIONS} alternatives: use fewer braces."
        )
    if chars > MAX_EXPANDED_CHARS:
        raise RetriableError(
            f"The pattern {_shown(pattern)} expands to more than {MAX_EXPANDED_CHARS:,} characters of "
            "patterns: use fewer or shorter alternatives."
        )
    return list(dict.fromkeys(_expand(tree)))


def glob_regex(patterns: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive regular expression that fully matches what any pattern matches.

    ``patterns`` must be brace-free (see :func:`expand_braces`); use the result with
    ``fullmatch`` on POSIX paths relative to the base directory. Compiled expressions are
    cached.

    Raises:
        RetriableError: a character class has a range that runs backwards (``[z-a]``).
    """
    return _compiled(tuple(_normalised(patterns)))


def open_beneath(root_fd: int, rel: str, *, directory: bool) -> int:
    """Open ``rel``, a POSIX path relative to the directory ``root_fd``, without following symlinks.

    Every component is opened relative to the descriptor of the one before it, with
    ``O_NOFOLLOW``, so neither a symlink nor a directory swapped for one while this runs
    leads outside ``root_fd``. ``""`` and ``"."`` name ``root_fd`` itself.

    Returns:
        A new descriptor (the caller closes it): of a directory when ``directory``, else
        of a regular file, opened non-blocking so that a FIFO put in its place cannot
        block the open.

    Raises:
        OSError: a component is missing (``ENOENT``), is a symlink (``ELOOP``) or is not a
            directory (``ENOTDIR``); ``rel`` has a ``..`` segment or, for a file, names
            something that is not a regular file (``EINVAL``).
    """
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EINVAL, "path has a '..' segment", rel)
    if not parts:
        if not directory:
            raise OSError(errno.EINVAL, "not a regular file", rel)
        return os.dup(root_fd)
    fd = root_fd
    try:
        for part in parts[:-1]:
            parent, fd = fd, os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            if parent != root_fd:
                os.close(parent)
        last = os.open(parts[-1], _DIRECTORY_FLAGS if directory else _FILE_FLAGS, dir_fd=fd)
    finally:
        if fd != root_fd:
            os.close(fd)
    if not directory:
        try:
            regular = stat.S_ISREG(os.fstat(last).st_mode)
        except OSError:
            os.close(last)
            raise
        if not regular:
            os.close(last)
            raise OSError(errno.EINVAL, "not a regular file", rel)
    return last


def walk_files(base_fd: int, *, max_depth: int = MAX_WALK_DEPTH) -> Iterator[tuple[int, str, list[os.DirEntry[str]]]]:
    """The regular files and symlinks under the directory ``base_fd``, depth first, in batches.

    Yields ``(directory descriptor, its path relative to the base ("" or ending in "/"),
    entries)``, at most 1,024 entries at a time; the descriptor stays open until the
    generator resumes, so an entry can be opened or ``stat``-ed relative to it.
    Directories are opened relative to their parent without following symlinks;
    :data:`~toolcards.workspace._paths.SKIPPED_DIRS` and levels past ``max_depth`` are not
    entered; FIFOs, sockets and devices are skipped unopened; unreadable directories are
    skipped. At most two descriptors per level are open at once. ``base_fd`` is the
    caller's and stays open.

    Raises:
        ToolTimeout: the call's deadline passed (checked for every directory and batch).
    """
    # Each frame: a directory's descriptor, the scan of its entries (left where a
    # subdirectory was entered), its relative path and its depth.
    stack: list[tuple[int, Iterator[os.DirEntry[str]], str, int]] = []

    def enter(fd: int, prefix: str, depth: int) -> None:
        try:
            entries = os.scandir(fd)
        except OSError:
            os.close(fd)
            return
        stack.append((fd, entries, prefix, depth))
        check_deadline()

    enter(os.dup(base_fd), "", 1)
    try:
        while stack:
            fd, entries, prefix, depth = stack[-1]
            batch: list[os.DirEntry[str]] = []
            child, child_name = -1, ""
            done = False
            try:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if depth < max_depth and entry.name not in SKIPPED_DIRS:
                                child, child_name = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=fd), entry.name
                                break
                        elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                            batch.append(entry)
                            if len(batch) >= 1024:
                                break
                    except OSError:
                        continue
                else:
                    done = True
            except OSError:
                done = True
            if batch:
                yield fd, prefix, batch
            if done:
                stack.pop()
                _close(fd, entries)
            elif child >= 0:
                enter(child, prefix + child_name + "/", depth + 1)
            else:
                check_deadline()
    finally:
        for fd, entries, _, _ in stack:
            _close(fd, entries)


# -- limits and brace expansion --------------------------------------------------------


def _shown(pattern: str) -> str:
    """``pattern`` quoted for a message, its middle elided when long."""
    if len(pattern) <= 120:
        return repr(pattern)
    return f"{pattern[:80]!r}…({len(pattern):,} characters)"


@dataclass
class _Group:
    """An active brace group: ``{`` with a matching ``}`` and at least one comma of its own."""

    alternatives: list[list[str | _Group]] = field(default_factory=lambda: [[]])


def _parse_braces(pattern: str) -> list[str | _Group]:
    """The pattern as a sequence of literal text and brace groups, in two linear passes."""
    # Pass 1: pair every brace (the way depth counting from each "{" would) and give
    # each comma to the innermost open brace.
    close_of: dict[int, int] = {}
    comma_owner: dict[int, int] = {}
    owners: set[int] = set()
    open_braces: list[int] = []
    for index, char in enumerate(pattern):
        if char == "{":
            open_braces.append(index)
        elif char == "}":
            if open_braces:
                close_of[open_braces.pop()] = index
        elif char == "," and open_braces:
            comma_owner[index] = open_braces[-1]
            owners.add(open_braces[-1])
    active = {opening for opening in close_of if opening in owners}
    # Pass 2: build the tree; braces that are not active are literal text.
    top: list[str | _Group] = []
    frames: list[tuple[int, _Group]] = []
    current = top
    literal: list[str] = []

    def flush() -> None:
        if literal:
            current.append("".join(literal))
            literal.clear()

    for index, char in enumerate(pattern):
        if char == "{" and index in active:
            if len(frames) >= MAX_BRACE_DEPTH:
                raise RetriableError(
                    f"The pattern {_shown(pattern)} nests braces more than {MAX_BRACE_DEPTH} deep: flatten them."
                )
            flush()
            group = _Group()
            current.append(group)
            frames.append((index, group))
            current = group.alternatives[-1]
        elif frames and char == "," and comma_owner.get(index) == frames[-1][0]:
            flush()
            group = frames[-1][1]
            group.alternatives.append([])
            current = group.alternatives[-1]
        elif frames and char == "}" and close_of[frames[-1][0]] == index:
            flush()
            frames.pop()
            current = frames[-1][1].alternatives[-1] if frames else top
        else:
            literal.append(char)
    flush()
    return top


def _expansion_size(sequence: list[str | _Group]) -> tuple[int, int]:
    """(how many patterns, how many characters in all) ``sequence`` expands to."""
    count, chars = 1, 0
    for part in sequence:
        if isinstance(part, str):
            part_count, part_chars = 1, len(part)
        else:
            part_count = part_chars = 0
            for alternative in part.alternatives:
                alt_count, alt_chars = _expansion_size(alternative)
                part_count += alt_count
                part_chars += alt_chars
        count, chars = count * part_count, chars * part_count + part_chars * count
    return count, chars


def _expand(sequence: list[str | _Group]) -> list[str]:
    results = [""]
    for part in sequence:
        check_deadline()
        if isinstance(part, str):
            results = [result + part for result in results]
        else:
            options = [option for alternative in part.alternatives for option in _expand(alternative)]
            results = [result + option for result in results for option in options]
    return results


# -- matching ---------------------------------------------------------------------------


def _normalised(patterns: Iterable[str]) -> list[str]:
    out = []
    for pattern in patterns:
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        out.append("/".join(segments))
    return out


def _max_segments(patterns: Iterable[str]) -> int:
    return max((len(p.split("/")) for p in patterns), default=1)


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = [_translate(p) for p in patterns]
    try:
        return re.compile("|".join(f"(?:{a})" for a in alternatives) or "(?!)", re.IGNORECASE | re.DOTALL)
    except re.error as exc:
        raise RetriableError(
            f"The pattern has an invalid character class ({exc}): write ranges low to high, such as [a-z]."
        ) from exc


def _translate(pattern: str) -> str:
    """A regular expression for one brace-free, normalised pattern (see the module docstring)."""
    segments: list[str] = []
    for segment in pattern.split("/") if pattern else [""]:
        if not (segment == "**" and segments and segments[-1] == "**"):
            segments.append(segment)
    # Split into runs of ordinary segments separated by "**": the first run is anchored
    # at the start; a run between two "**" takes its earliest place (an atomic group),
    # the last one backtracks over the one "**" before it to end where the path ends.
    runs: list[list[str]] = [[]]
    for segment in segments:
        if segment == "**":
            runs.append([])
        else:
            runs[-1].append(_translate_segment(segment))
    regex = "/".join(runs[0])
    need_slash = bool(runs[0])
    for index, run in enumerate(runs[1:], 1):
        lead = "/" if need_slash else ""
        if index < len(runs) - 1:
            # The run's own trailing "/" is inside the group, so the earliest place taken
            # is one where its last segment ends at a segment boundary.
            regex += lead + "(?>(?:[^/]*/)*?" + "/".join(run) + "/)"
            need_slash = False
        elif run:
            regex += lead + "(?:[^/]*/)*" + "/".join(run)
        else:
            regex += lead + ".*"
    return regex


def _translate_segment(segment: str) -> str:
    """A regular expression for one segment: ``*`` runs but the last commit to their earliest match."""
    runs: list[list[str]] = [[]]
    i = 0
    n = len(segment)
    while i < n:
        char = segment[i]
        if char == "*":
            runs.append([])
        elif char == "?":
            runs[-1].append("[^/]")
        elif char == "[":
            translated, i = _translate_class(segment, i)
            runs[-1].append(translated)
            continue
        else:
            runs[-1].append(re.escape(char))
        i += 1
    if len(runs) == 1:
        return "".join(runs[0])
    middle = "".join(f"(?>[^/]*?{''.join(run)})" for run in runs[1:-1] if run)
    return "".join(runs[0]) + middle + "[^/]*" + "".join(runs[-1])


def _translate_class(segment: str, start: int) -> tuple[str, int]:
    """Translate the class opening at ``start``; return it and the index after it."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    first = i
    # A ']' right after the opening (or after the negation) is a member, as in shells.
    if i < len(segment) and segment[i] == "]":
        i += 1
    close = segment.find("]", i)
    if close < 0:
        return re.escape("["), start + 1
    members = []
    for char in segment[first:close]:
        members.append("-" if char == "-" else re.escape(char))
    body = "".join(members)
    return ("[^/" + body + "]" if negate else "[" + body + "]"), close + 1


# -- walking ------------------------------------------------------------------------------


def _close(fd: int, entries: Iterator[os.DirEntry[str]]) -> None:
    close = getattr(entries, "close", None)
    if close is not None:
        close()
    os.close(fd)
