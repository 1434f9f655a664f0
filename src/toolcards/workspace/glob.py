"""Finding files by name pattern in a workspace: :func:`glob`.

The pattern dialect, also used by grep's ``include``:

* ``*`` any run of characters within one path segment (dotfiles included), ``?`` one
  character, ``[abc]`` / ``[a-z]`` / ``[!abc]`` (or ``[^abc]``) a character class;
* ``**`` as a whole segment: any number of directories, zero included, so ``**/*.py``
  matches ``a.py`` and ``src/pkg/a.py``; a trailing ``**`` matches every file below;
* ``{py,ts}`` alternatives, nested as deep as needed (``*.{py,{ts,tsx}}``), expanded to at
  most :data:`MAX_EXPANSIONS` patterns; a brace without a comma is literal;
* matching is case-insensitive and anchored at the base directory: ``*.py`` matches only
  files directly in it (the result says so when nothing matches);
* no escapes; a pattern that is absolute or has a ``..`` segment is refused with
  :data:`~toolcards.workspace.paths.ESCAPE_MESSAGE`.

Only files are matched (a symlink is matched by its name and never followed); the walk
skips :data:`~toolcards.workspace.paths.SKIPPED_DIRS`. The tree is walked once, with
``os.scandir``, against one regular expression compiled from every expanded pattern.
Blocks for the walk: a few milliseconds per thousand files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from toolcards.errors import RetriableError
from toolcards.workspace.paths import ESCAPE_MESSAGE, SKIPPED_DIRS, display_name, relative, resolve_in_root

__all__ = [
    "MAX_EXPANSIONS",
    "MAX_GLOB_RESULTS",
    "check_glob",
    "expand_braces",
    "glob",
    "glob_regex",
]

MAX_GLOB_RESULTS = 100
"""How many paths :func:`glob` returns at most; a notice gives the total past that."""

MAX_EXPANSIONS = 1000
"""How many patterns one brace expression may expand to."""


def glob(root: Path, pattern: str, path: str = "") -> str:
    """List the files under ``root/path`` that match ``pattern``, newest first.

    Returns:
        One root-relative POSIX path per line, ordered by modification time (newest
        first) then by path; at most :data:`MAX_GLOB_RESULTS`, followed by a notice with
        the total when there are more. When nothing matches, a sentence saying so (with a
        hint to use ``**/`` when the pattern has no ``/``).

    Raises:
        RetriableError: the pattern or ``path`` escapes the root, ``path`` is not a
            directory, the pattern is empty or expands to too many alternatives.
    """
    real_root = resolve_in_root(root, "")
    base = resolve_in_root(root, path)
    if not pattern.strip():
        raise RetriableError("The glob pattern is empty: pass one such as '**/*.py'.")
    expanded = check_glob(pattern)
    if not base.is_dir():
        shown = path or "."
        if base.exists():
            raise RetriableError(f"{shown!r} is a file, not a directory: pass its directory as path.")
        raise RetriableError(f"Directory {shown!r} does not exist: call workspace_list to see what does.")
    regex = glob_regex(expanded)
    max_depth = None if any("**" in p.split("/") for p in _normalised(expanded)) else _max_segments(expanded)
    base_rel = relative(real_root, base)
    prefix = "" if base_rel == "." else base_rel + "/"
    found: list[tuple[int, str]] = []
    _walk(str(base), "", 1, max_depth=max_depth, regex=regex, found=found)
    if not found:
        where = path or "."
        hint = ""
        if "/" not in pattern and not pattern.startswith("**"):
            hint = f" Patterns are anchored at the base directory: use '**/{pattern}' to match at any depth."
        return f"No files match {pattern!r} under {where!r}.{hint}"
    found.sort(key=lambda item: (-item[0], item[1].split("/")))
    lines = [display_name(prefix + rel) for _, rel in found[:MAX_GLOB_RESULTS]]
    if len(found) > MAX_GLOB_RESULTS:
        lines.append(
            f"(showing {MAX_GLOB_RESULTS} of {len(found)} matching files, newest first; "
            "narrow the pattern or path to see the rest)"
        )
    return "\n".join(lines)


def check_glob(pattern: str) -> list[str]:
    """Validate ``pattern`` and return its brace expansion.

    Raises:
        RetriableError: the pattern contains a NUL byte, is absolute, or has a ``..``
            segment (:data:`~toolcards.workspace.paths.ESCAPE_MESSAGE`); or it expands to
            more than :data:`MAX_EXPANSIONS` patterns.
    """
    if "\x00" in pattern:
        raise RetriableError(f"{ESCAPE_MESSAGE} (got {pattern!r})")
    expanded = expand_braces(pattern)
    for item in expanded:
        if os.path.isabs(item) or item.startswith("\\") or ".." in item.split("/"):
            raise RetriableError(f"{ESCAPE_MESSAGE} (got {pattern!r})")
    return expanded


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives (nested too) into plain patterns, in order.

    Unbalanced braces and braces without a top-level comma stay literal. Duplicates are
    dropped.

    Raises:
        RetriableError: more than :data:`MAX_EXPANSIONS` patterns would result.
    """
    out: list[str] = []
    _expand(pattern, out, pattern)
    return list(dict.fromkeys(out))


def glob_regex(patterns: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive regular expression that fully matches what any pattern matches.

    ``patterns`` must be brace-free (see :func:`expand_braces`); use the result with
    ``fullmatch`` on POSIX paths relative to the base directory.
    """
    alternatives = [_translate(p) for p in _normalised(patterns)]
    return re.compile("|".join(f"(?:{a})" for a in alternatives) or "(?!)", re.IGNORECASE | re.DOTALL)


def _normalised(patterns: Iterable[str]) -> list[str]:
    out = []
    for pattern in patterns:
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        out.append("/".join(segments))
    return out


def _max_segments(patterns: Iterable[str]) -> int:
    return max((len(p.split("/")) for p in _normalised(patterns)), default=1)


def _expand(pattern: str, out: list[str], original: str) -> None:
    start = 0
    while True:
        i = pattern.find("{", start)
        if i < 0:
            break
        depth = 0
        commas: list[int] = []
        close = -1
        for j in range(i, len(pattern)):
            char = pattern[j]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    close = j
                    break
            elif char == "," and depth == 1:
                commas.append(j)
        if close < 0 or not commas:
            start = i + 1
            continue
        bounds = [i, *commas, close]
        prefix, suffix = pattern[:i], pattern[close + 1 :]
        for k in range(len(bounds) - 1):
            _expand(prefix + pattern[bounds[k] + 1 : bounds[k + 1]] + suffix, out, original)
        return
    if len(out) >= MAX_EXPANSIONS:
        raise RetriableError(
            f"The pattern {original!r} expands to more than {MAX_EXPANSIONS} alternatives: use fewer braces."
        )
    out.append(pattern)


def _translate(pattern: str) -> str:
    segments = pattern.split("/") if pattern else [""]
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]*/)*")
        else:
            parts.append(_translate_segment(segment) + ("" if last else "/"))
    return "".join(parts)


def _translate_segment(segment: str) -> str:
    out = []
    i = 0
    n = len(segment)
    while i < n:
        char = segment[i]
        if char == "*":
            while i + 1 < n and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            translated, i = _translate_class(segment, i)
            out.append(translated)
            continue
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


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


def _walk(
    directory: str,
    prefix: str,
    depth: int,
    *,
    max_depth: int | None,
    regex: re.Pattern[str],
    found: list[tuple[int, str]],
) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        rel = prefix + entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if entry.name not in SKIPPED_DIRS and (max_depth is None or depth < max_depth):
                _walk(entry.path, rel + "/", depth + 1, max_depth=max_depth, regex=regex, found=found)
        elif regex.fullmatch(rel):
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime_ns
            except OSError:
                continue
            found.append((mtime, rel))
