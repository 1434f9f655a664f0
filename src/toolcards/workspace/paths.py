"""Confining paths to a workspace root, and naming workspaces.

:data:`ESCAPE_MESSAGE` is the one message every path that leaves a tree gets: ``../x``, an
absolute path, a NUL byte, a symlink inside the tree that points outside, or a sibling of
the root whose name merely starts with the root's name (``team-11`` next to ``team-1``;
containment is decided on path components, never on string prefixes).

Files are opened through :class:`~toolcards.workspace.tree.Tree`, which walks a path from a
handle of the root one component at a time, so a directory swapped for a symlink while a
tool runs cannot lead it out. :func:`resolve_in_root` checks a path by name instead
(``realpath``): it says where a path leads at the moment it is called, and nothing opened
later by the name it returns is protected against such a swap; use it only to name or
display paths, never to open them.

The walks of the workspace (listing, glob, grep) never descend into
:data:`SKIPPED_DIRS` (the internals of version-control systems, and toolcards' own
``.toolcards``, which holds spilled outputs), unless a call names one in its path, and never
follow a symlink, so a link cannot lead a walk out of the tree or into a loop.

Workspace ids follow :func:`validate_workspace_id`, which lives in
:mod:`toolcards.core.locations` (next to ``workspace_dir``, so every domain working on a
workspace tree agrees on the layout) and is re-exported here.

Nothing here blocks beyond a few ``stat`` calls.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolcards.core.locations import WORKSPACE_ID_PATTERN, validate_workspace_id
from toolcards.errors import RetriableError

__all__ = [
    "ESCAPE_MESSAGE",
    "SKIPPED_DIRS",
    "WORKSPACE_ID_PATTERN",
    "display_name",
    "relative",
    "resolve_in_root",
    "validate_workspace_id",
]

ESCAPE_MESSAGE = "path escapes the workspace root — use a path relative to it"
"""The one message every refused path gets, followed by the offending path."""

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".toolcards"})
"""Directory names whose contents no walk lists, globs or searches, unless the walk starts
inside one (a call that names it in its path)."""


def resolve_in_root(root: Path, path: str) -> Path:
    """Resolve ``path`` (relative to ``root``) to an absolute path inside the root.

    Symlinks are followed, so the result is the real location; it need not exist.
    ``""`` and ``"."`` name the root itself.

    Returns:
        The resolved absolute path, equal to the resolved root or below it.

    Raises:
        RetriableError: the path is absolute, contains a NUL byte, or resolves outside
            the root (through ``..`` or a symlink); the message is :data:`ESCAPE_MESSAGE`
            followed by the path as given.
    """
    if "\x00" in path or os.path.isabs(path) or path.startswith("\\"):
        raise _escape(path)
    real_root = Path(os.path.realpath(root))
    # os.path.realpath in non-strict mode neither raises on a missing file nor on a
    # symlink loop (Path.resolve raises RuntimeError for the latter).
    candidate = Path(os.path.realpath(real_root / path))
    if candidate != real_root and not candidate.is_relative_to(real_root):
        raise _escape(path)
    return candidate


def relative(root: Path, path: Path) -> str:
    """The POSIX form of ``path`` relative to ``root`` (``"."`` for the root itself).

    Both must already be resolved the same way (as :func:`resolve_in_root` returns them);
    this only strips the prefix.

    Raises:
        ValueError: ``path`` is not inside ``root`` (a programming error).
    """
    return path.relative_to(root).as_posix()


def display_name(name: str) -> str:
    """``name`` (a path from ``os`` functions) as valid UTF-8 text for a model to read.

    File names that are not valid UTF-8 reach Python with their bad bytes as lone
    surrogates, which cannot be encoded for a model; they become U+FFFD here.
    """
    if name.isascii():  # most names: nothing to replace, and no round trip through bytes
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _escape(path: str) -> RetriableError:
    return RetriableError(f"{ESCAPE_MESSAGE} (got {path!r})")
