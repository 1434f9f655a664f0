"""Confining paths to a workspace root, and naming workspaces.

:data:`ESCAPE_MESSAGE` is the one message every path that leaves a tree gets: ``../x``, an
absolute path, a NUL byte, a symlink inside the tree that points outside, or a sibling of
the root whose name merely starts with the root's name (``team-11`` next to ``team-1``;
containment is decided on path components, never on string prefixes).

Paths are resolved and files opened through :class:`~toolcards.workspace._tree.Tree`, which
walks a path from a handle of the root one component at a time, so a directory swapped for a
symlink while a tool runs cannot lead it out; there is no second, name-based resolver.

The walks of the workspace (listing, glob, grep) never descend into
:data:`SKIPPED_DIRS` (the internals of version-control systems, and toolcards' own
``.toolcards``, which holds spilled outputs), unless a call names one in its path, and never
follow a symlink, so a link cannot lead a walk out of the tree or into a loop.

Workspace ids follow :func:`validate_workspace_id`, which lives in
:mod:`toolcards.fs._locations` (next to ``workspace_dir``, so every domain working on a
workspace tree agrees on the layout) and is re-exported here.

Nothing here blocks beyond a few ``stat`` calls.
"""

from __future__ import annotations

import json
from pathlib import Path

from toolcards.fs._locations import WORKSPACE_ID_PATTERN, validate_workspace_id

__all__ = [
    "ESCAPE_MESSAGE",
    "OWN_DIR",
    "SKIPPED_DIRS",
    "WORKSPACE_ID_PATTERN",
    "display_name",
    "plain_ascii",
    "relative",
    "unprintable_in",
    "validate_workspace_id",
]

ESCAPE_MESSAGE = "path escapes the workspace root — use a path relative to it"
"""The one message every refused path gets, followed by the offending path."""

OWN_DIR = ".toolcards"
"""toolcards' own folder at the top of a tree (spilled outputs): tools read it, never change it."""

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", OWN_DIR})
"""Directory names whose contents no walk lists, globs or searches, unless the walk starts
inside one (a call that names it in its path)."""


def relative(root: Path, path: Path) -> str:
    """The POSIX form of ``path`` relative to ``root`` (``"."`` for the root itself).

    Both must already be resolved the same way; this only strips the prefix.

    Raises:
        ValueError: ``path`` is not inside ``root`` (a programming error).
    """
    return path.relative_to(root).as_posix()


def display_name(name: str) -> str:
    """``name`` (a path from ``os`` functions) as valid UTF-8 text for a model to read.

    File names that are not valid UTF-8 reach Python with their bad bytes as lone
    surrogates, which cannot be encoded for a model; they become U+FFFD here. Characters
    that do not print (a newline, a tab, an escape, a bidirectional override) are shown as
    their JSON escapes (``\\n``, ``\\u001b``): raw, a name made by a command could end a
    line of a listing and forge the next one. Copied into a JSON argument, the escape names
    the file again.
    """
    if not name.isascii():
        name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if name.isprintable():  # most names: nothing to escape
        return name
    return "".join(char if char.isprintable() else json.dumps(char)[1:-1] for char in name)


_CONTROL_BYTES = bytes([*range(32), 127])


def plain_ascii(text: str) -> bool:
    """Whether ``text`` is ASCII without a control character: shown as it is by
    :func:`display_name`. Four times faster than ``str.isprintable`` on the joined names of
    a listing, which it checks in one pass."""
    return text.isascii() and len(text.encode().translate(None, _CONTROL_BYTES)) == len(text)


def unprintable_in(path: str) -> str | None:
    """The first character of ``path`` that does not print, or ``None`` (see :func:`display_name`)."""
    if path.isprintable():
        return None
    return next(char for char in path if not char.isprintable())
