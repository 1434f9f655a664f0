"""Process-wide locations: the workspaces root, the workspace trees in it, the store.

Where the root and the store are is decided by the lookup of :mod:`toolcards.core._lookup`
(``--store``/``--root`` or :func:`~toolcards.core._lookup.use_locations`, then
``TOOLCARDS_STORE``/``TOOLCARDS_WORKSPACES_ROOT``, then a ``toolcards.toml``, then a legacy
``./workspaces``, then the per-user data directory). The root holds one directory per
workspace, ``<root>/<workspace_id>`` (:func:`workspace_dir`), plus ``.toolcards/``, where
toolcards keeps its own files (the state database by default, caches, locks) outside every
workspace tree. Workspace ids never start with ``.``, so no workspace can be ``.toolcards``.

Every domain that works on a workspace tree (the workspace files, the sandbox) finds it
through :func:`workspace_dir`, so they agree on the layout without importing each other.
A directory elsewhere (an MCP client's root) is given a workspace id with
:func:`mount_workspace`; :func:`workspace_dir` then answers that directory for it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from toolcards.core._lookup import default_store_of, locate
from toolcards.errors import RetriableError

__all__ = [
    "WORKSPACE_ID_PATTERN",
    "WorkspaceId",
    "internal_dir",
    "is_mounted",
    "mount_workspace",
    "store_location",
    "store_path",
    "validate_workspace_id",
    "workspace_dir",
    "workspaces_root",
]

WORKSPACE_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a workspace id may look like (it must also not start with ``.``)."""


def workspaces_root() -> Path:
    """The directory that holds every team workspace (created on first use).

    Found by :func:`toolcards.core._lookup.locate` (resolved once per explicit choice,
    environment and working directory); later calls only check that it is still a
    directory, and make it again if it is gone.

    Raises:
        WiringError: the lookup failed (an unreadable ``toolcards.toml``, no home directory).
    """
    root = locate().root
    if not os.path.isdir(root):
        root.mkdir(parents=True, exist_ok=True)
    return root


def validate_workspace_id(workspace_id: str) -> str:
    """Check that ``workspace_id`` can name a workspace directory, and return it.

    Allowed: 1 to 128 of ``A-Z a-z 0-9 . _ -``, not starting with ``.`` (names starting
    with a dot, including ``.`` and ``..``, are reserved for toolcards' internal files).

    Raises:
        RetriableError: the id breaks these rules; the message quotes it and says why.
    """
    if not WORKSPACE_ID_PATTERN.fullmatch(workspace_id):
        raise RetriableError(f"Invalid workspace id {workspace_id!r}: use 1 to 128 letters, digits, '.', '_' or '-'.")
    if workspace_id.startswith("."):
        raise RetriableError(
            f"Invalid workspace id {workspace_id!r}: ids starting with '.' are reserved; "
            "start it with a letter or digit."
        )
    return workspace_id


def _checked_id(value: str) -> str:
    try:
        return validate_workspace_id(value)
    except RetriableError as exc:
        raise ValueError(str(exc)) from None


WorkspaceId = Annotated[str, AfterValidator(_checked_id)]
"""A workspace id on a card: checked when the card is built (see :func:`validate_workspace_id`)."""


_mounts: dict[str, Path] = {}
"""Workspace ids given to directories outside the workspaces root (:func:`mount_workspace`)."""


def mount_workspace(directory: str | Path, *, label: str = "") -> str:
    """A workspace id for ``directory``, an existing directory outside the workspaces root
    (an MCP client's root). The same directory always gets the same id.

    The id is ``root-<label or the directory's name>-<8 hex digits of its path>``; cards
    given it (``workspace_id``) work in ``directory``, contained in it as in any tree.

    Raises:
        RetriableError: ``directory`` is not an existing directory, holds toolcards' own
            files, or is one no workspace may be (see :func:`_unsafe_mount`).
    """
    import hashlib

    path = Path(directory).expanduser()
    if not path.is_absolute() or not path.is_dir():
        raise RetriableError(f"{str(directory)!r} is not an existing directory given by its absolute path.")
    path = path.resolve()
    unsafe = _unsafe_mount(path)
    if unsafe:
        raise RetriableError(
            f"{str(path)!r} is {unsafe}: a workspace given from outside must be a project's directory, "
            "not one whose files the system or the user's settings depend on."
        )
    internal = internal_dir(create=False).resolve()
    if internal == path or path in internal.parents:
        raise RetriableError(f"{str(path)!r} holds toolcards' own files ({internal}); it cannot be a workspace.")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", label or path.name).strip("-._")[:60] or "dir"
    digest = hashlib.blake2b(str(path).encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()
    workspace_id = f"root-{stem}-{digest}"
    _mounts[workspace_id] = path
    return workspace_id


_SYSTEM_DIRS = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin", "sys", "usr"}
)
"""Top-level directories of the operating system: nothing in them is mounted."""


def _unsafe_mount(path: Path) -> str | None:
    """Why ``path`` (absolute, resolved) must not become a workspace, or ``None``.

    A mounted tree is listed, read, journaled whole (its files' contents go into the team's
    store) and, when writable, changed by tools and commands. So the file system's root, a
    top-level directory, the system's own directories, a home directory or what holds it,
    and the dot-directories of a home (``~/.ssh``, ``~/.aws``, ``~/.config``: keys and
    settings) are refused; a project anywhere else, including inside a home, is not.
    """
    parts = path.parts
    if len(parts) <= 2:
        return "the file system's root" if len(parts) == 1 else "a top-level directory"
    if parts[1] in _SYSTEM_DIRS:
        return "a system directory"
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):  # no home directory known: nothing more to refuse
        return None
    if path == home or path in home.parents:
        return "a home directory" if path == home else "a directory holding a home directory"
    if path.is_relative_to(home) and path.relative_to(home).parts[0].startswith("."):
        return "a home directory's settings"
    return None


def is_mounted(workspace_id: str) -> bool:
    """Whether ``workspace_id`` names a directory given by :func:`mount_workspace`."""
    return workspace_id in _mounts


def workspace_dir(workspace_id: str) -> Path:
    """The tree of workspace ``workspace_id``: ``<workspaces_root()>/<workspace_id>``, or the
    directory :func:`mount_workspace` gave that id.

    The directory is created on first use; the result is absolute with symlinks resolved.

    Raises:
        RetriableError: ``workspace_id`` is not a valid id (see :func:`validate_workspace_id`).
    """
    mounted = _mounts.get(workspace_id)
    if mounted is not None:
        return mounted
    path = workspaces_root() / validate_workspace_id(workspace_id)
    try:
        os.mkdir(path)
    except FileExistsError:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return path  # a directory, not a link, in a resolved root: resolved already
        path.mkdir(exist_ok=True)  # a link to a directory, or the error mkdir gives for a file
        return path.resolve()
    return path  # made just now, in a resolved root


def internal_dir(*, create: bool = True) -> Path:
    """Where toolcards keeps its own files: never inside a team's tree.

    Made if missing, unless ``create`` is false (for a caller that makes what it needs in it
    itself, or only names it).
    """
    path = workspaces_root() / ".toolcards"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def store_location() -> str:
    """Where the team's state lives, as :func:`toolcards.core._lookup.locate` finds it.

    A file path (SQLite, absolute), a ``postgresql://`` URL, or ``:memory:``; see
    :func:`toolcards.store.open_store`. Nothing is created.

    Raises:
        WiringError: the lookup failed (an unreadable ``toolcards.toml``, no home directory).
    """
    return locate().store


def store_path() -> Path:
    """The SQLite state database: the store's file when the lookup names one, else
    ``<root>/.toolcards/state.db``.

    The default's directory is created (with the workspaces root). The directory of a file
    named by ``--store``, ``TOOLCARDS_STORE`` or a ``toolcards.toml`` is not: the store
    refuses to open in a directory that does not exist, because a mistyped path would
    otherwise start an empty team somewhere new.

    Raises:
        OSError: the default directory cannot be created.
        WiringError: the lookup failed.
    """
    lookup = locate()
    named = lookup.store_file
    if named is not None and str(named) != default_store_of(lookup.root):
        return named
    return internal_dir() / "state.db"
