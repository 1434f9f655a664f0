"""A grep narrowed by the workspace index: only the files that may match are searched."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolcards.errors import ToolTimeout
from toolcards.workspace._glob import open_beneath
from toolcards.workspace._grep_found import Found
from toolcards.workspace._grep_pattern import CompiledPattern
from toolcards.workspace._grep_python import search_file
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
    rg: str | None,
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
    the others by ripgrep (or the Python engine without it), all into one ``found``.
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
    if rg is not None and len(candidates.files) > _MAX_LISTED_FRACTION * index.status().files_total:
        return False  # most files may match: ripgrep's own walk is as quick
    files = [rel for rel in candidates.files if accepts is None or accepts(rel)]
    if rg is not None and sum(len(rel) + 3 for rel in files) > _MAX_LISTED_BYTES:
        return False  # too many names for one command line
    likely = _likely_agreeing(files, candidates, facts)
    if rg is not None and len(likely) > _MAX_PYTHON_FILES:
        likely = []  # one ripgrep over many files is quicker than reading each here
    prefix = f"{below}/" if below else ""
    chosen = set(likely)
    by_rg = [rel for rel in files if rel not in chosen]
    by_rg += _search_with_re(base, prefix, likely, compiled, facts if rg is not None else None, found)
    if by_rg and rg is None:
        _search_with_re(base, prefix, by_rg, compiled, None, found)
    elif by_rg and rg is not None:
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
    base: Directory,
    prefix: str,
    files: list[str],
    compiled: CompiledPattern,
    facts: PatternFacts | None,
    found: Found,
) -> list[str]:
    """Search ``files`` (root-relative, below ``base`` at ``prefix``) with ``re``.

    With ``facts``, a file whose text (as read now, not as the index saw it) ``re`` may read
    otherwise than ripgrep is not searched but returned, for ripgrep.
    """
    left: list[str] = []
    for rel in files:
        try:
            fd = open_beneath(base.fd, rel[len(prefix) :], directory=False)
        except OSError:
            continue
        try:
            if facts is not None:
                text = text_as_searched(fd, _PYTHON_FILE_BYTES)
                if text is None or not facts.python_agrees(**text_properties(text)._asdict()):
                    left.append(rel)
                    continue
                os.lseek(fd, 0, os.SEEK_SET)
            search_file(fd, rel, compiled, found=found)
        finally:
            os.close(fd)
    return left
