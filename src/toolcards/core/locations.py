"""Process-wide locations, read from the environment when first needed.

``TOOLCARDS_WORKSPACES_ROOT`` (default ``./workspaces``) holds one directory per
workspace, ``<root>/<workspace_id>`` (:func:`workspace_dir`), plus ``.toolcards/``, where
toolcards keeps its own files (the state database, caches) outside every workspace tree.
Workspace ids never start with ``.``, so no workspace can be ``.toolcards``.
``TOOLCARDS_STORE`` overrides the database location.

Every domain that works on a workspace tree (the workspace files, the sandbox) finds it
through :func:`workspace_dir`, so they agree on the layout without importing each other.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from toolcards.errors import RetriableError

__all__ = [
    "WORKSPACE_ID_PATTERN",
    "WorkspaceId",
    "internal_dir",
    "store_location",
    "store_path",
    "validate_workspace_id",
    "workspace_dir",
    "workspaces_root",
]

WORKSPACE_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a workspace id may look like (it must also not start with ``.``)."""


def workspaces_root() -> Path:
    """The directory that holds every team workspace (created on first use)."""
    root = Path(os.environ.get("TOOLCARDS_WORKSPACES_ROOT") or "workspaces").expanduser().resolve()
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


def workspace_dir(workspace_id: str) -> Path:
    """The tree of workspace ``workspace_id``: ``<workspaces_root()>/<workspace_id>``.

    The directory is created on first use; the result is absolute with symlinks resolved.

    Raises:
        RetriableError: ``workspace_id`` is not a valid id (see :func:`validate_workspace_id`).
    """
    path = workspaces_root() / validate_workspace_id(workspace_id)
    path.mkdir(exist_ok=True)
    return path.resolve()


def internal_dir() -> Path:
    """Where toolcards keeps its own files: never inside a team's tree."""
    path = workspaces_root() / ".toolcards"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_location() -> str:
    """Where the team's state lives: ``TOOLCARDS_STORE`` as given, else the default file.

    A file path (SQLite), a ``postgresql://`` URL, or ``:memory:``; see
    :func:`toolcards.store.open_store`.
    """
    return os.environ.get("TOOLCARDS_STORE") or str(store_path())


def store_path() -> Path:
    """The SQLite state database: ``TOOLCARDS_STORE`` when it names a file, else
    ``<root>/.toolcards/state.db``. The file's directory is created."""
    override = os.environ.get("TOOLCARDS_STORE")
    if override and override != ":memory:" and ("://" not in override or override.startswith("sqlite://")):
        path = Path(override.removeprefix("sqlite://")).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    return internal_dir() / "state.db"
