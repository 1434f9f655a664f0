"""A team's files: read, search and change them without losing anyone's work.

* :class:`WorkspaceTool` — the card: nineteen ``workspace_*`` tools, one field each
  (``<Param> | bool``), and ``read_only`` to offer only those that change nothing.
* :class:`Journal` — the tree's journal of changes in the team's store (who, when, which
  tool and task, the bytes before and after), read by ``workspace_history``,
  ``workspace_diff`` and ``workspace_undo``; :class:`JournalEntry` and :class:`FileChange`
  are its entries.
* :class:`WorkspaceActor` — one per tree (:func:`workspace_actor` finds or starts it,
  :func:`stop_workspace_actors` stops them): serializes every change. Its
  :class:`WorkspaceHub` (:func:`workspace_hub`) holds what the process's cards share about
  the tree: each agent's read records for the read-before-write gate (:class:`WriteGate`),
  the teams attached, and the actor, started at the first change.
* :class:`TreeLock` — the OS file lock that makes each change atomic across processes
  and hosts; :func:`probe_tree_locks` checks at start that locks work on the workspaces
  root.
* :class:`FileEdit` — one edit of ``workspace_multi_edit``; :class:`ReadRecord` — what an
  agent last read of a file.

The engines are modules of this package, imported by their module path: ``tree`` (a tree
reached only through directory handles: every file is opened, written, renamed, deleted
and listed there), ``os_errors`` (OS errors in words), ``paths``, ``files`` (streamed
numbered pages, listings), ``glob``, ``grep``, ``edit``, ``patch``, ``text``, ``documents``,
``images``. Importing the package loads pydantic and
pykka; markitdown, Pillow, rapidfuzz and pydantic-ai load when a capability needs them.
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
