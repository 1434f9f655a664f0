"""A grep narrowed by the workspace index: only the files that may match are searched."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolcards.errors import ToolTimeout
from toolcards.workspace._glob import open_beneath
from toolcards.workspace._grep_found import Found
from toolcards.workspace._grep_lines import clip_line
from toolcards.workspace._grep_pattern import CompiledPattern
from toolcards.workspace._literals import PatternFacts, analyse, text_properties
from toolcards.workspace._paths import SKIPPED_DIRS
from toolcards.workspace._ripgrep import search_rg
from toolcards.workspace._searched_text import text_as_searched
from toolcards.workspace._tree import Directory

if TYPE_CHECKING:
    from toolcards.workspace._index import Candidates, WorkspaceIndex

_log = logging.getLogger(__name__)

__all__ = ["search_indexed"]

_MAX_LISTED_BYTES = 256 * 1024
"""Most bytes of file names handed to ripgrep at once; more candidates search the whole base."""


_MAX_LISTED_FRACTION = 0.5
"""Past this fraction of the indexed files as candidates, ripgrep searches the whole base."""


_PYTHON_FILE_BYTES = 1024 * 1024
"""A larger candidate is left to ripgrep."""


_MAX_PYTHON_FILES = 48
"""Past this many candidates ``re`` could confirm, ripgrep confirms them all (one process)."""


def search_indexed(
    index: WorkspaceIndex,
    compiled: CompiledPattern,
    *,
    rg: str,
    base: Directory,
    named: str,
    accepts: Callable[[str], bool] | None,
    found: Found,
) -> bool:
    """Search only the files ``index`` says may match; False when it cannot narrow this search.

    It cannot before its first build, for a pattern without required trigrams, under a
    directory it does not walk (inside :data:`~toolcards.workspace._paths.SKIPPED_DIRS`, or
    below the root when its walk stopped at the depth limit), or when the candidates are
    too many to name. Candidates whose text Python's ``re`` surely reads as ripgrep does
    (:meth:`~toolcards.workspace._literals.PatternFacts.python_agrees`) are searched here,
    at most :data:`_MAX_PYTHON_FILES` of them, the others by ripgrep, all into one ``found``.
    """
    if not index.ensure_started():
        return False
    facts = analyse(compiled.rust)
    below = "" if base.rel in ("", ".") else base.rel
    if facts.query.is_true or any(part in SKIPPED_DIRS for part in below.split("/")):
        return False
    candidates = _candidates(index, facts, below, named)
    if candidates is None or (below and index.truncated):
        return False
    if len(candidates.files) > _MAX_LISTED_FRACTION * index.status().files_total:
        return False  # most files may match: ripgrep's own walk is as quick
    files = [rel for rel in candidates.files if accepts is None or accepts(rel)]
    if sum(len(rel) + 3 for rel in files) > _MAX_LISTED_BYTES:
        return False  # too many names for one command line
    likely = _likely_agreeing(files, candidates, facts)
    if len(likely) > _MAX_PYTHON_FILES:
        likely = []  # one ripgrep over many files is quicker than reading each here
    prefix = f"{below}/" if below else ""
    chosen = set(likely)
    by_rg = [rel for rel in files if rel not in chosen]
    by_rg += _search_with_re(base, prefix, likely, compiled, facts, found)
    if by_rg:
        search_rg(
            rg,
            rust_pattern=compiled.rust,
            base=base,
            named=os.path.join(named, base.rel),
            include="",
            accepts=accepts,
            found=found,
            files=sorted(rel[len(prefix) :] for rel in by_rg),
        )
    return True


def _candidates(index: WorkspaceIndex, facts: PatternFacts, below: str, named: str) -> Candidates | None:
    """The index's candidates for ``facts`` under ``below``, or None when the index failed (it is then dropped)."""
    try:
        index.refresh()
        return index.candidates(facts.query, below)
    except ToolTimeout:
        raise
    except Exception:  # an index that fails is dropped and built again, never trusted
        _log.exception("the workspace index of %s failed; searching without it while it is rebuilt", named)
        index.close()
        return None


def _likely_agreeing(files: list[str], candidates: Candidates, facts: PatternFacts) -> list[str]:
    """The ``files`` on whose text, as the index last saw it, ``re`` likely answers as ripgrep does."""
    agree_ascii = facts.python_agrees(ascii_text=True, irregular=False, long_line=False)
    agree_plain = facts.python_agrees(ascii_text=False, irregular=False, long_line=False)
    return [
        rel
        for rel in files
        if rel in candidates.unsure
        or (rel in candidates.simple and agree_ascii)
        or (rel in candidates.plain and agree_plain)
    ]


def _search_with_re(
    base: Directory, prefix: str, files: list[str], compiled: CompiledPattern, facts: PatternFacts, found: Found
) -> list[str]:
    """Search ``files`` (root-relative, below ``base`` at ``prefix``) with ``re``.

    A file whose text (as read now, not as the index saw it) ``re`` may read otherwise than
    ripgrep, or that is larger than :data:`_PYTHON_FILE_BYTES`, is not searched but returned,
    for ripgrep.
    """
    left: list[str] = []
    for rel in files:
        try:
            fd = open_beneath(base.fd, rel[len(prefix) :], directory=False)
        except OSError:
            continue
        try:
            text = text_as_searched(fd, _PYTHON_FILE_BYTES)
        except OSError:
            continue
        finally:
            os.close(fd)
        if text is None or not facts.python_agrees(**text_properties(text)._asdict()):
            left.append(rel)
        elif "\x00" not in text:  # a NUL makes the file binary: skipped, as ripgrep skips it
            _search_text(text, rel, compiled, found)
    return left


def _search_text(text: str, rel: str, compiled: CompiledPattern, found: Found) -> None:
    """Report the lines of ``text`` (a whole file as grep reads it) that ``compiled`` matches."""
    regex = compiled.regex
    # Without ^ or $ a search of all lines at once can only over-report (a line break is no
    # word character, like the ends of a line for \b), so one search rules out most files.
    if not compiled.line_anchored and regex.search(text) is None:
        return
    found.begin_file(rel)
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # the break that ends the last line starts no line
    for number, line in enumerate(lines, 1):
        match = regex.search(line := line.removesuffix("\r"))
        if match is not None:
            found.add(number, clip_line(line, match.start()))
    found.end_file()
