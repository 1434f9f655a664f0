"""A team's files: read, search and change them without losing anyone's work.

:class:`WorkspaceTool` is the card (``docs/cards/workspace.md``). :class:`Journal` records the
tree's changes (:class:`JournalEntry`, :class:`FileChange`). :class:`WorkspaceActor`, one per
tree (:func:`workspace_actor`, :func:`stop_workspace_actors`), serializes every change; its
:class:`WorkspaceHub` (:func:`workspace_hub`) holds the read-before-write gate
(:class:`WriteGate`, :class:`ReadRecord`). :class:`TreeLock` makes each change atomic across
processes and hosts (:func:`probe_tree_locks` checks the root). :class:`FileEdit` is one edit
of ``workspace_multi_edit``. Importing the package loads pydantic and pykka; markitdown,
Pillow, rapidfuzz and pydantic-ai load when a capability needs them.
"""

from __future__ import annotations

from toolcards.workspace._actor import (
    WorkspaceActor,
    WorkspaceHub,
    WorkspaceProxy,
    stop_workspace_actors,
    workspace_actor,
)
from toolcards.workspace._journal import Journal, JournalSettings
from toolcards.workspace._models import FileChange, FileEdit, JournalEntry, ReadRecord
from toolcards.workspace._tool import (
    JournalParam,
    WorkspaceDeleteParam,
    WorkspaceDiffParam,
    WorkspaceEditParam,
    WorkspaceExportGitParam,
    WorkspaceGlobParam,
    WorkspaceGrepParam,
    WorkspaceHistoryParam,
    WorkspaceInfoParam,
    WorkspaceListParam,
    WorkspaceMkdirParam,
    WorkspaceMoveParam,
    WorkspaceMultiEditParam,
    WorkspaceParam,
    WorkspacePatchParam,
    WorkspaceReadManyParam,
    WorkspaceReadParam,
    WorkspaceRmdirParam,
    WorkspaceTool,
    WorkspaceUndoParam,
    WorkspaceViewParam,
    WorkspaceWriteParam,
)
from toolcards.workspace._tree_lock import TreeLock, probe_tree_locks

__all__ = [
    "FileChange",
    "FileEdit",
    "Journal",
    "JournalEntry",
    "JournalParam",
    "JournalSettings",
    "ReadRecord",
    "TreeLock",
    "WorkspaceActor",
    "WorkspaceDeleteParam",
    "WorkspaceDiffParam",
    "WorkspaceEditParam",
    "WorkspaceExportGitParam",
    "WorkspaceGlobParam",
    "WorkspaceGrepParam",
    "WorkspaceHistoryParam",
    "WorkspaceHub",
    "WorkspaceInfoParam",
    "WorkspaceListParam",
    "WorkspaceMkdirParam",
    "WorkspaceMoveParam",
    "WorkspaceMultiEditParam",
    "WorkspaceParam",
    "WorkspacePatchParam",
    "WorkspaceProxy",
    "WorkspaceReadManyParam",
    "WorkspaceReadParam",
    "WorkspaceRmdirParam",
    "WorkspaceTool",
    "WorkspaceUndoParam",
    "WorkspaceViewParam",
    "WorkspaceWriteParam",
    "probe_tree_locks",
    "stop_workspace_actors",
    "workspace_actor",
]
