"""A grep narrowed by the workspace index: only the files that may match are searched."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolcards.errors import ToolTimeout
from toolcards.workspace.glob import open_beneath
from toolcards.workspace.grep_found import Found
from toolcards.workspace.grep_pattern import CompiledPattern
from toolcards.workspace.grep_python import search_file
from toolcards.workspace.literals import analyse, text_properties
from toolcards.workspace.paths import SKIPPED_DIRS
from toolcards.workspace.ripgrep import search_rg
from toolcards.workspace.searched_text import text_as_searched
from toolcards.workspace.tree import Directory

if TYPE_CHECKING:
    from toolcards.workspace.index import WorkspaceIndex

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
    directory it does not walk (inside :data:`~toolcards.workspace.paths.SKIPPED_DIRS`, or
    below the root when its walk stopped at the depth limit), or when the candidates are
    too many to name. Candidates whose text Python's ``re`` surely reads as ripgrep does
    (:meth:`~toolcards.workspace.literals.PatternFacts.python_agrees`) are searched here,
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
            search_file(fd, rel, compiled, found=found)
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
                search_file(fd, rel, compiled, found=found)
            finally:
                os.close(fd)
        return True
    relative = sorted(rel[len(prefix) :] for rel in by_rg)
    search_rg(
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
