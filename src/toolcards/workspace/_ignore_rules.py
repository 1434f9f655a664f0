"""Which files of a workspace its ignore files (``.gitignore``, ``.ignore``) leave out.

:class:`IgnoreRules` reads the ignore files found in a tree, each applying to its own
directory and below, with git's matching rules (``pathspec``'s ``GitIgnoreSpec``: negation,
anchoring, ``**``, directory-only patterns). As in git and ripgrep, a deeper file's rules
win over a shallower one's, ``.ignore`` wins over ``.gitignore`` in the same directory, and
a file below an ignored directory stays ignored whatever a deeper rule says. Without the
``pathspec`` package installed nothing is ignored.

The workspace index uses the answer to leave files out of what it indexes and out of
:func:`~toolcards.workspace.search.workspace_search`; ``workspace_grep`` still searches
them (through ripgrep), so an ignore file never changes a grep's answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["IGNORE_FILE_NAMES", "IgnoreRules", "read_small_text"]

IGNORE_FILE_NAMES = (".gitignore", ".ignore")
"""Ignore files read, weakest first: within one directory, ``.ignore`` wins."""

_MAX_IGNORE_FILE_BYTES = 1024 * 1024
"""A larger ignore file is not read (its rules are left out)."""


class IgnoreRules:
    """The rules of a tree's ignore files, by the directory each applies to."""

    def __init__(self, specs: dict[str, Any]) -> None:
        """``specs``: a compiled spec per root-relative directory (``""`` the root)."""
        self._specs = specs

    @classmethod
    def read(cls, rels: Iterable[str], read_text: Callable[[str], str | None]) -> IgnoreRules:
        """The rules of the ignore files among ``rels`` (root-relative paths of files),
        each read with ``read_text`` (None: unreadable, left out)."""
        from pathspec import GitIgnoreSpec

        lines_by_directory: dict[str, list[str]] = {}
        found = sorted(
            (rel for rel in rels if rel.rpartition("/")[2] in IGNORE_FILE_NAMES),
            key=lambda rel: (rel.rpartition("/")[0], IGNORE_FILE_NAMES.index(rel.rpartition("/")[2])),
        )
        for rel in found:
            text = read_text(rel)
            if text is not None:
                lines_by_directory.setdefault(rel.rpartition("/")[0], []).extend(text.splitlines())
        specs = {}
        for directory, lines in lines_by_directory.items():
            try:
                specs[directory] = GitIgnoreSpec.from_lines(lines)
            except Exception:
                continue
        return cls(specs)

    @staticmethod
    def is_ignore_file(rel: str) -> bool:
        """Whether ``rel`` is an ignore file (a change to it changes the rules)."""
        return rel.rpartition("/")[2] in IGNORE_FILE_NAMES

    def ignores(self, rel: str) -> bool:
        """Whether the file ``rel`` (root-relative) is left out by the rules."""
        if not self._specs:
            return False
        parts = rel.split("/")
        # A directory that is ignored hides everything below it.
        for depth in range(1, len(parts)):
            if self._decided(parts, depth, directory=True):
                return True
        return self._decided(parts, len(parts), directory=False)

    def _decided(self, parts: list[str], depth: int, *, directory: bool) -> bool:
        """Whether ``parts[:depth]`` is ignored by the deepest rule that speaks of it."""
        for level in range(depth - 1, -1, -1):
            spec = self._specs.get("/".join(parts[:level]))
            if spec is None:
                continue
            relative = "/".join(parts[level:depth]) + ("/" if directory else "")
            result = spec.check_file(relative)
            if result.include is not None:
                return bool(result.include)
        return False


def read_small_text(root_fd: int, rel: str, open_file: Callable[[int, str], int]) -> str | None:
    """The text of the small file ``rel`` (None when it cannot be read or is too large)."""
    try:
        fd = open_file(root_fd, rel)
    except OSError:
        return None
    try:
        data = os.read(fd, _MAX_IGNORE_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > _MAX_IGNORE_FILE_BYTES:
        return None
    return data.decode("utf-8", "replace")
