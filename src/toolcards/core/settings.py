"""Process-wide locations, read from the environment when first needed.

``TOOLCARDS_WORKSPACES_ROOT`` (default ``./workspaces``) holds one directory per team
workspace, plus ``.toolcards/``, where toolcards keeps its own files (the state database,
caches) outside every team's tree. ``TOOLCARDS_STORE`` overrides the database location.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["internal_dir", "store_path", "workspaces_root"]


def workspaces_root() -> Path:
    """The directory that holds every team workspace (created on first use)."""
    root = Path(os.environ.get("TOOLCARDS_WORKSPACES_ROOT") or "workspaces").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def internal_dir() -> Path:
    """Where toolcards keeps its own files: never inside a team's tree."""
    path = workspaces_root() / ".toolcards"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_path() -> Path:
    """The default state database: ``TOOLCARDS_STORE``, else ``<root>/.toolcards/state.db``."""
    override = os.environ.get("TOOLCARDS_STORE")
    if override:
        path = Path(override).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    return internal_dir() / "state.db"
