"""The workspace's data: what a model sends for a multi-file edit, and what the write gate
remembers about each agent's reads.

* :class:`FileEdit` — one find-and-replace of ``workspace_multi_edit``, as the model writes it.
* :class:`ReadRecord` — what one agent last read of one file: the hash of the bytes it
  read, whether it saw the whole file, and in which conversation and when it learned them.
* :func:`content_digest` — the hash both are compared with.
* :class:`JournalEntry` and :class:`FileChange` — one change of the tree as the journal
  recorded it (:mod:`toolcards.workspace._journal`).
* The argument bounds of the workspace tools (:data:`MAX_PATH_CHARS`...) and the annotated
  string types that enforce them (:data:`WorkspacePath`...).

Plain pydantic data and one hash function: nothing here imports pykka or touches the disk.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from toolcards.core._bounds import unlisted_bound

__all__ = [
    "DIRECTORY",
    "MAX_CONTENT_CHARS",
    "MAX_EDITS",
    "MAX_EDIT_STRING_CHARS",
    "MAX_PATCH_CHARS",
    "MAX_PATH_CHARS",
    "MAX_PATTERN_CHARS",
    "EditString",
    "FileChange",
    "FileContent",
    "FileEdit",
    "JournalEntry",
    "PatchText",
    "Pattern",
    "ReadRecord",
    "WorkspacePath",
    "content_digest",
]

MAX_PATH_CHARS = 4096
"""Characters of a path argument at most (Linux's ``PATH_MAX``)."""

MAX_CONTENT_CHARS = 4 * 1024 * 1024
"""Characters of ``workspace_write``'s content at most."""

MAX_EDIT_STRING_CHARS = 1024 * 1024
"""Characters of an edit's ``old_string`` or ``new_string`` at most."""

MAX_PATCH_CHARS = 4 * 1024 * 1024
"""Characters of a patch at most; also the total of a multi-edit's strings."""

MAX_PATTERN_CHARS = 1000
"""Characters of a glob or grep pattern, or of grep's ``include``, at most."""

MAX_EDITS = 200
"""Edits one ``workspace_multi_edit`` call may carry."""


WorkspacePath = Annotated[str, Field(max_length=MAX_PATH_CHARS, json_schema_extra=unlisted_bound)]
"""A path argument: at most :data:`MAX_PATH_CHARS` characters."""

FileContent = Annotated[str, Field(max_length=MAX_CONTENT_CHARS, json_schema_extra=unlisted_bound)]
"""A file's whole new content: at most :data:`MAX_CONTENT_CHARS` characters."""

EditString = Annotated[str, Field(max_length=MAX_EDIT_STRING_CHARS, json_schema_extra=unlisted_bound)]
"""An edit's ``old_string`` or ``new_string``: at most :data:`MAX_EDIT_STRING_CHARS` characters."""

PatchText = Annotated[str, Field(max_length=MAX_PATCH_CHARS, json_schema_extra=unlisted_bound)]
"""A unified diff: at most :data:`MAX_PATCH_CHARS` characters."""

Pattern = Annotated[str, Field(max_length=MAX_PATTERN_CHARS, json_schema_extra=unlisted_bound)]
"""A glob or regex pattern (or grep's ``include``): at most :data:`MAX_PATTERN_CHARS` characters."""


DIRECTORY = "directory"
"""What :attr:`FileChange.before` and :attr:`FileChange.after` say for a directory."""


def content_digest(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex characters: how the gate tells two versions apart."""
    return hashlib.sha256(data).hexdigest()


def _without_description(schema: dict[str, Any]) -> None:
    # pydantic puts a model's docstring in its JSON schema; a model pays for every word of a
    # schema on every request, and the tool's own description already says what this is.
    schema.pop("description", None)


class FileEdit(BaseModel):
    """One find-and-replace in ``workspace_multi_edit``: in ``path``, replace ``old_string``
    by ``new_string`` (every occurrence with ``replace_all``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_without_description)

    path: WorkspacePath
    old_string: EditString = Field(description="Unique unless replace_all.")
    new_string: EditString
    replace_all: bool = False


class ReadRecord(BaseModel):
    """What one agent last read of one file (or last wrote to it, which counts as reading)."""

    model_config = ConfigDict(frozen=True)

    digest: str
    """:func:`content_digest` of the file bytes the agent read or wrote."""
    full: bool
    """The agent saw the whole file; a page read (an ``offset``/``limit`` that did not reach
    every line, or output cut to its budget) licenses anchored edits, not overwrites."""
    learned_in: str | None = None
    """The conversation (:class:`~toolcards.core._conversation.Conversation` id) whose read or
    write first gave the agent this version; ``None``: a call made without one."""
    learned_at: int = 0
    """When, as a :func:`~toolcards.core._conversation.moment`: another conversation of the
    agent that began before then has not seen this version unless it read or wrote it too."""


class FileChange(BaseModel):
    """One path's part of a :class:`JournalEntry`: what was there before and after."""

    model_config = ConfigDict(frozen=True)

    path: str
    """Where, relative to the workspace root."""
    before: str | None
    """The file's :func:`content_digest` before the change, :data:`DIRECTORY` for a directory,
    ``None`` when nothing was there."""
    after: str | None
    """The same after the change (``None``: it was deleted)."""
    before_mode: int | None = None
    """Permission bits before, when the change knew them."""
    after_mode: int | None = None
    """Permission bits after, when the change knew them (``None``: as the file system made them)."""
    before_kept: bool = True
    """Whether the journal kept the content before (files over its size limit are recorded
    by digest alone, and cannot be restored)."""
    after_kept: bool = True
    """Whether the journal kept the content after."""


class JournalEntry(BaseModel):
    """One change of a workspace tree, as the journal recorded it."""

    model_config = ConfigDict(frozen=True)

    id: int
    """The change id, from 1, in the order changes were committed (``workspace_diff``,
    ``workspace_undo``)."""
    at: float
    """When it was recorded, in seconds since the epoch."""
    member: str
    """Who made it, ``@Name``; ``""`` for a change made outside the tools."""
    team: str
    """The team of :attr:`member` (``""`` outside the tools)."""
    tool: str
    """What made it: a workspace tool, ``exec_command`` (a sandboxed command), or ``outside``
    (noticed by a scan, made by something else)."""
    task_id: int | None = None
    """The task :attr:`member` held a claim on, if any."""
    files: tuple[FileChange, ...]
    """The paths it changed."""
    summary: str
    """One line saying what it did."""
    command: str | None = None
    """The command line, for ``exec_command``."""
    undoes: tuple[int, ...] = ()
    """For an undo: the changes it undid."""
