"""``WorkspaceTool``: a team's files, for agents to read, search and change without losing work.

The card gives twenty capabilities, each a field ``<Param> | bool`` named like the tool the
model sees and exposed as a tool call and a command; ``workspace_mkdir`` and
``workspace_rmdir`` are off by default, ``workspace_export_git`` is a command only (it writes
outside the tree), and ``read_only=True`` drops every mutating tool. The table of tools, the
journal, the spill folder and the limits are described in ``docs/cards/workspace.md``.

**Where.** The tree is :func:`toolcards.fs._locations.workspace_dir` of ``workspace_id``
(the team id by default; teams sharing an id share a tree), under the root every command
finds (:mod:`toolcards.core._lookup`). Every path a model gives is resolved inside the tree
through its directory handles (:class:`~toolcards.workspace._tree.Tree`), so a directory
swapped for a symlink while a tool runs cannot lead outside; a path that leaves is refused
with :data:`~toolcards.workspace._paths.ESCAPE_MESSAGE`, and only regular files are read or
written (nothing blocks on a named pipe).

**No lost updates.** Every change goes through the tree's
:class:`~toolcards.workspace._actor.WorkspaceActor`, one at a time, and through the
read-before-write gate (:mod:`toolcards.workspace._gate`); writes and moves are atomic. The
agent is the card's :class:`~toolcards.core._observer.ActorToolObserver` ``address``.

**Untrusted output.** Reads, listings, globs, greps and views, and every file text inside
another result or error (a diff, a mismatch hint, a gate refusal), are wrapped as untrusted
output. Argument bounds live in :mod:`toolcards.workspace._models`, out of the schemas every
request pays for. Handlers block (disk I/O, actor asks), as every sync handler may.

**Spills** of any tool's over-budget output go to the tree's ``.toolcards/spill/``
(:mod:`toolcards.workspace._spill`). **Views** (``workspace.tree``, ``workspace.file(path)``,
``workspace.image(path)``: :mod:`toolcards.workspace._browse`) read through the same handles;
their version is a digest of the tree's entries, taken at most once per
:data:`TREE_SIGNATURE_MAX_AGE_S`, so a file a command wrote is seen too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.core._bounds import unlisted_bound, unlisted_range
from toolcards.core._card import ToolCard, capability, observer_hint
from toolcards.core._channels import Channels
from toolcards.core._conversation import current_conversation
from toolcards.core._deadline import check_deadline, remaining
from toolcards.core._hints import ToolHints
from toolcards.core._idempotency import current_call
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.core._services import SPILL_TO_WORKSPACE, WORKSPACE_COMMANDS
from toolcards.core._views import FileBytes, view
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.fs._locations import WorkspaceId, internal_dir, workspace_dir
from toolcards.vector._param import EmbeddingParam
from toolcards.workspace._actor import MAX_EDIT_BYTES, Sync, WorkspaceHub, WorkspaceProxy, workspace_hub
from toolcards.workspace._browse import image_bytes, preview_file, tree_listing, tree_signature
from toolcards.workspace._command_journal import claimed_task, journal_command
from toolcards.workspace._documents import DOCUMENT_SUFFIXES, MAX_DOCUMENT_BYTES, document_markdown, is_document
from toolcards.workspace._documents import TOO_LARGE_HINT as DOCUMENT_TOO_LARGE
from toolcards.workspace._file_search import DEFAULT_TOP_K, MAX_TOP_K, file_search
from toolcards.workspace._file_search import render as render_hits
from toolcards.workspace._files import MAX_LIST_ENTRIES, Page, list_directory, page_of_text, read_page, render_page
from toolcards.workspace._glob import MAX_GLOB_RESULTS, exclusion, glob
from toolcards.workspace._grep_limits import MAX_GREP_COLLECTED, MAX_GREP_RESULTS
from toolcards.workspace._history import render_diff, render_history
from toolcards.workspace._images import IMAGE_SUFFIXES, MAX_IMAGE_BYTES, image_for_model, is_image, require_image
from toolcards.workspace._images import TOO_LARGE_HINT as IMAGE_TOO_LARGE
from toolcards.workspace._info import path_info
from toolcards.workspace._journal import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_MB,
    ChangeContext,
    Journal,
    JournalSettings,
    member_filter,
)
from toolcards.workspace._models import (
    MAX_EDITS,
    MAX_PATCH_CHARS,
    EditString,
    FileContent,
    FileEdit,
    PatchText,
    Pattern,
    WorkspacePath,
    content_digest,
)
from toolcards.workspace._reservations import check_reservations
from toolcards.workspace._spill import (
    DEFAULT_SPILL_HOURS,
    DEFAULT_SPILL_MB,
    MemberSpillFolders,
    is_spill_path,
    spill_folder,
    spill_gone,
)
from toolcards.workspace._text import NotText, is_text
from toolcards.workspace._tree import OpenFile, Tree
from toolcards.workspace._tree_lock import probe_tree_locks

# grep, the search index, patches and undos are imported by the capabilities that use them, so
# a server whose agents only read never loads them.

__all__ = [
    "HISTORY_SCAN_INTERVAL_S",
    "READ_OUTPUT_BUDGET",
    "JournalParam",
    "WorkspaceDeleteParam",
    "WorkspaceDiffParam",
    "WorkspaceEditParam",
    "WorkspaceExportGitParam",
    "WorkspaceGlobParam",
    "WorkspaceGrepParam",
    "WorkspaceHistoryParam",
    "WorkspaceInfoParam",
    "WorkspaceListParam",
    "WorkspaceMkdirParam",
    "WorkspaceMoveParam",
    "WorkspaceMultiEditParam",
    "WorkspaceParam",
    "WorkspacePatchParam",
    "WorkspaceReadManyParam",
    "WorkspaceReadParam",
    "WorkspaceRmdirParam",
    "WorkspaceTool",
    "WorkspaceUndoParam",
    "WorkspaceViewParam",
    "WorkspaceWriteParam",
]

READ_OUTPUT_BUDGET = 60_000
"""Characters ``workspace_read`` returns at most by default (a param's ``output_budget``
overrides it); past that the page ends early, at a line, with the offset to read on."""

HISTORY_SCAN_INTERVAL_S = 1.0
"""``workspace_history`` scans the tree first (to list what changed outside the tools) when
this process has not scanned it for this long; sandboxed commands and undos always scan."""

TREE_SIGNATURE_MAX_AGE_S = 1.0
"""The tree's version (a walk of its entries) is taken again at most this often."""
COMPLETION_SCAN = 2000
"""Entries of one directory looked at when completing a path."""

_SERVES = frozenset({Channels.TOOL_CALL, Channels.COMMAND})
_CONVERTED_SUFFIXES = tuple(sorted(DOCUMENT_SUFFIXES | IMAGE_SUFFIXES))
"""What a document or an image ends with: a file ending otherwise is read as text."""
_MAX_VIEW_PATH = 4096
_NOTICE_ROOM = 200
_MAX_HISTORY = 500
_READ_LIMIT = 2000
"""Lines ``workspace_read`` reads by default."""

MAX_READ_MANY = 50
"""Paths one ``workspace_read_many`` call reads at most."""

AgentFilter = Annotated[str, Field(max_length=200, json_schema_extra=unlisted_bound)]
"""A member to filter the journal by (``@Bob``, ``Bob``), or ``outside`` without ``@`` for the
changes made without the tools (``@outside`` is a member of that name)."""

Offset = Annotated[int, Field(ge=0, le=100_000, json_schema_extra=unlisted_range)]
"""Entries of a listing to skip (the listing's last line gives the next one)."""

Limit = Annotated[int, Field(ge=1, le=10_000, json_schema_extra=unlisted_range)]
"""Entries of a listing to show at most."""

HostPath = Annotated[str, Field(min_length=1, max_length=4096, json_schema_extra=unlisted_bound)]
"""A directory of the host (not of the workspace)."""

MAX_LINES = 1_000_000_000
"""A read's ``limit`` or ``tail`` beyond this reads this many (no page shows more; a number past a
machine word failed deep inside the read)."""

SinceText = Annotated[str, Field(max_length=100, json_schema_extra=unlisted_bound)]
"""A change id, an ISO 8601 time or an age (``30m``, ``2h``, ``1d``)."""


class WorkspaceParam(BaseToolParam):
    """Configuration shared by every workspace capability: offered as a tool and a command."""

    expose: set[Channels] = {Channels.TOOL_CALL, Channels.COMMAND}


class WorkspaceReadParam(WorkspaceParam):
    """``workspace_read``. Its ``output_budget`` (default :data:`READ_OUTPUT_BUDGET`) ends a page early."""


class WorkspaceReadManyParam(WorkspaceParam):
    """``workspace_read_many``. Its ``output_budget`` (default :data:`READ_OUTPUT_BUDGET`) bounds
    each file's page; a longer answer is spilled (its head and tail shown)."""


class WorkspaceListParam(WorkspaceParam):
    """``workspace_list``."""


class WorkspaceGlobParam(WorkspaceParam):
    """``workspace_glob``."""


class WorkspaceInfoParam(WorkspaceParam):
    """``workspace_info``."""


class WorkspaceGrepParam(WorkspaceParam):
    """``workspace_grep``."""

    max_results: int = Field(default=MAX_GREP_RESULTS, ge=1, le=MAX_GREP_COLLECTED)
    """Matching lines shown at most, then a notice with the total. An answer longer than the
    output budget is spilled: kept whole in ``.toolcards/spill/``, its head and tail shown.
    Each line shown is read again from its file, within 64 MB a call, so with a large value
    lines far into large files may be left out (the answer counts them). Added in 0.3."""


class WorkspaceSearchParam(WorkspaceParam):
    """``workspace_search``. Added in 0.4."""

    embedding: EmbeddingParam | None = Field(default_factory=EmbeddingParam)
    """How chunks are embedded for search by meaning: the offline local model by default
    (the one the planning board and the knowledge graph use); ``None``: keywords only."""


class WorkspaceViewParam(WorkspaceParam):
    """``workspace_view``."""

    max_dimension: int = Field(default=1568, ge=16)
    """Images larger than this on their longest side are scaled down to it."""


class WorkspaceWriteParam(WorkspaceParam):
    """``workspace_write``."""


class WorkspaceEditParam(WorkspaceParam):
    """``workspace_edit``."""


class WorkspaceMultiEditParam(WorkspaceParam):
    """``workspace_multi_edit``."""


class WorkspacePatchParam(WorkspaceParam):
    """``workspace_patch``."""


class WorkspaceDeleteParam(WorkspaceParam):
    """``workspace_delete``."""


class WorkspaceMoveParam(WorkspaceParam):
    """``workspace_move``."""


class WorkspaceMkdirParam(WorkspaceParam):
    """``workspace_mkdir``."""


class WorkspaceRmdirParam(WorkspaceParam):
    """``workspace_rmdir``."""


class JournalParam(WorkspaceParam):
    """Configuration shared by the journal's capabilities: a tool call and a command (an
    orchestrator's, ``toolcards history`` and ``toolcards undo``); ``expose={Channels.COMMAND}``
    keeps a model from seeing them (their definitions cost about 290 tokens)."""

    expose: set[Channels] = {Channels.TOOL_CALL, Channels.COMMAND}


class WorkspaceHistoryParam(JournalParam):
    """``workspace_history``."""


class WorkspaceDiffParam(JournalParam):
    """``workspace_diff``."""


class WorkspaceUndoParam(JournalParam):
    """``workspace_undo``."""


class WorkspaceExportGitParam(JournalParam):
    """``workspace_export_git``: a command only by default (an orchestrator's, and
    ``toolcards history --export-git``), as it writes outside the tree. Added in 0.3."""

    expose: set[Channels] = {Channels.COMMAND}


class WorkspaceTool(ToolCard):
    """A tree of files a team's agents read, search and change without losing each other's work.

    The module docstring lists the tools.

    Args:
        read_only: Offer only the tools that change nothing.
        workspace_id: The tree to use (default: the team id); the same id in several
            teams shares one tree.
        disk_mb: The tree's disk quota for what these tools write: a change that would take
            the tree past it is refused (deleting stays possible). The sandbox enforces its
            own ``ExecLimits.disk_mb`` on commands; give both the same value. When cards on
            one tree disagree, the smallest applies.
        sync: How changes reach the disk. ``"normal"`` (default): each file is flushed
            before it is renamed into place, so after a power loss it holds its old or its
            new content, never a torn mix, though the last changes may be undone.
            ``"full"``: the directory is flushed too, so an acknowledged change survives a
            power loss (one more ``fsync`` per change). ``"off"``: nothing is flushed, which
            makes a write several times faster on most disks; a killed process still loses
            nothing, but after a power loss or an OS crash recent files may be lost or
            empty. When cards on one tree disagree, the safest applies. Added in 0.2.
        journal: Keep the tree's journal: every change (through these tools, by a
            sandboxed command, or from outside, noticed at the next scan) with who made it,
            when, with which tool, for which task, and the content before and after, in the
            team's store; ``workspace_history``, ``workspace_diff`` and ``workspace_undo``
            read it. The journal is kept when any card of the tree asks for it.
        journal_mb: Megabytes of history the journal keeps beyond the tree's current
            content; past it the oldest changes are dropped first. When cards on one tree
            disagree, the largest applies.
        journal_days: Days the journal keeps a change; the largest of the tree's cards applies.
        spill_mb: Size of the tree's spill folder, ``.toolcards/spill/``: any tool output
            longer than its budget is saved there whole (the model reads its head and tail,
            the path, and how to page or search it). The oldest spills are deleted first when
            the folder would hold more; spills count against ``disk_mb``. When cards on one
            tree disagree, the smallest applies. Added in 0.3.
        spill_hours: Spills older than this are deleted (the smallest of the cards on one
            tree applies). Added in 0.3.
    """

    kind: ClassVar[str] = "workspace"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    workspace_id: WorkspaceId | None = None
    disk_mb: int = Field(default=1024, ge=1)
    sync: Sync = "normal"
    journal: bool = True
    journal_mb: int = Field(default=DEFAULT_MAX_MB, ge=1)
    journal_days: float = Field(default=DEFAULT_MAX_AGE_DAYS, gt=0, allow_inf_nan=False)
    spill_mb: int = Field(default=DEFAULT_SPILL_MB, ge=1)
    spill_hours: float = Field(default=DEFAULT_SPILL_HOURS, gt=0)
    workspace_read: WorkspaceReadParam | bool = True
    workspace_read_many: WorkspaceReadManyParam | bool = True
    workspace_list: WorkspaceListParam | bool = True
    workspace_glob: WorkspaceGlobParam | bool = True
    workspace_grep: WorkspaceGrepParam | bool = True
    workspace_search: WorkspaceSearchParam | bool = True
    workspace_view: WorkspaceViewParam | bool = True
    workspace_info: WorkspaceInfoParam | bool = True
    workspace_write: WorkspaceWriteParam | bool = True
    workspace_edit: WorkspaceEditParam | bool = True
    workspace_multi_edit: WorkspaceMultiEditParam | bool = True
    workspace_patch: WorkspacePatchParam | bool = True
    workspace_delete: WorkspaceDeleteParam | bool = True
    workspace_move: WorkspaceMoveParam | bool = True
    workspace_mkdir: WorkspaceMkdirParam | bool = False
    workspace_rmdir: WorkspaceRmdirParam | bool = False
    workspace_history: WorkspaceHistoryParam | bool = True
    workspace_diff: WorkspaceDiffParam | bool = True
    workspace_undo: WorkspaceUndoParam | bool = True
    workspace_export_git: WorkspaceExportGitParam | bool = True

    _root: Path | None = PrivateAttr(default=None)
    _tree: Tree | None = PrivateAttr(default=None)
    _hub: WorkspaceHub | None = PrivateAttr(default=None)
    _team: tuple[str, Any] | None = PrivateAttr(default=None)
    _agent: str = PrivateAttr(default="")
    _member: str = PrivateAttr(default="")
    _handle: Any = PrivateAttr(default=None)
    _cache_dir: Path | None = PrivateAttr(default=None)
    _signature: tuple[float, str] = PrivateAttr(default=(float("-inf"), ""))

    # -- binding ------------------------------------------------------------------------------

    def on_bind(self, observer: Any) -> None:
        """Find the tree (creating it) and attach the team to its events; the tree's actor
        starts at the first change.

        Raises:
            WiringError: no ``workspace_id`` is set and the team id is not a valid one; or,
                for a card that may change files, file locks do not work on the workspaces
                root (several processes could not share it safely).
        """
        team_id: str = observer.team_id
        workspace_id = self.workspace_id or team_id
        try:
            root = workspace_dir(workspace_id)
        except RetriableError as exc:
            raise WiringError(
                f"WorkspaceTool: the team id {team_id!r} cannot name a workspace ({exc}). Set "
                "WorkspaceTool(workspace_id=...) to a valid id."
            ) from None
        if not self.read_only:
            # Refuse at bind (a server's start) rather than at the first write.
            problem = probe_tree_locks()
            if problem is not None:
                raise WiringError(f"WorkspaceTool: {problem}.")
        self._root = root
        self._tree = Tree(root)
        self._agent = str(observer.address)
        self._member = observer.address.handle
        self._handle = observer.team
        self._team = (team_id, observer.team.publish)
        self._hub = None
        self._workspace_hub()
        if self.journal:
            observer.team.provide(WORKSPACE_COMMANDS, functools.partial(journal_command, observer.team))
        # Outputs over any tool's budget, for this member, are kept in this tree.
        folder = spill_folder(root)
        folder.keep(self.spill_mb, self.spill_hours)
        if observer.team.service(SPILL_TO_WORKSPACE) is None:
            observer.team.provide(SPILL_TO_WORKSPACE, MemberSpillFolders())  # the first one provided stays
        spills = observer.team.service(SPILL_TO_WORKSPACE)
        if isinstance(spills, MemberSpillFolders):
            spills.add(self._member, folder)

    @property
    def tree(self) -> Tree:
        """The tree this card works on, reached through directory handles (after binding).

        Raises:
            WiringError: the card is not bound.
        """
        if self._tree is None:
            raise WiringError("WorkspaceTool is not bound. " + observer_hint("WorkspaceTool", "ActorToolObserver"))
        return self._tree

    @property
    def root(self) -> Path:
        """The tree this card works on (after binding).

        Raises:
            WiringError: the card is not bound.
        """
        if self._root is None:
            raise WiringError("WorkspaceTool is not bound. " + observer_hint("WorkspaceTool", "ActorToolObserver"))
        return self._root

    # -- reading --------------------------------------------------------------------------------

    @capability(
        "workspace_read",
        untrusted_output=True,
        output_budget=READ_OUTPUT_BUDGET,
        hints=ToolHints(title="Read file", completions={"path": "complete_path"}),
    )
    def read_file(
        self,
        path: WorkspacePath,
        offset: Annotated[int, Field(ge=1, json_schema_extra=unlisted_range)] = 1,
        limit: Annotated[int, Field(ge=1, json_schema_extra=unlisted_range)] = _READ_LIMIT,
        tail: Annotated[int | None, Field(ge=1, json_schema_extra=unlisted_range)] = None,
        line_numbers: bool = True,
    ) -> str:
        """Read a text file as numbered lines (PDF, DOCX, XLSX, PPTX as Markdown).

        Args:
            path: Relative to the workspace root.
            offset: First line, from 1.
            line_numbers: false: lines without 'N<tab>'.
        """
        if tail is not None and offset != 1:
            raise RetriableError(f"Pass either offset ({offset}) or tail ({tail}), not both.")
        if tail is not None and limit != _READ_LIMIT:
            raise RetriableError(f"tail ({tail}) is the number of lines read: pass it without limit ({limit}).")
        budget = self.param("workspace_read", WorkspaceReadParam).output_budget or READ_OUTPUT_BUDGET
        count = min(limit if tail is None else tail, MAX_LINES)
        read = self._read_page(path, offset, count, budget, tail=tail is not None, numbered=line_numbers)
        shown, full = _page_text(read.page, read.rel, budget)
        self._workspace_hub().record_read(self._agent, read.rel, read.data, full, read.digest, current_conversation())
        return shown

    @capability(
        "workspace_read_many",
        untrusted_output=True,
        output_budget=READ_OUTPUT_BUDGET,
        hints=ToolHints(title="Read files"),
    )
    def read_files(
        self,
        paths: Annotated[
            list[WorkspacePath], Field(min_length=1, max_length=MAX_READ_MANY, json_schema_extra=unlisted_bound)
        ],
    ) -> str:
        """Read several text files, each under a '==> path <==' header; a failed one says why."""
        budget = self.param("workspace_read_many", WorkspaceReadManyParam).output_budget or READ_OUTPUT_BUDGET
        parts: list[str] = []
        reads: list[tuple[_FileRead, bool]] = []
        for path in dict.fromkeys(paths):
            try:
                read = self._read_page(path, 1, _READ_LIMIT, budget)
            except (RetriableError, ToolFailed) as exc:
                parts.append(f"==> {path} <==\n({exc})")
                continue
            shown, full = _page_text(read.page, read.rel, budget)
            parts.append(f"==> {read.rel} <==\n{shown}")
            reads.append((read, full))
        answer = "\n\n".join(parts)
        # Past the budget the model sees the head and tail of the answer (the rest is spilled):
        # a file read so licenses a change of part of it, not an overwrite.
        shown_whole = len(answer) <= budget
        hub = self._workspace_hub()
        conversation = current_conversation()
        for read, full in reads:
            hub.record_read(self._agent, read.rel, read.data, full and shown_whole, read.digest, conversation)
        return answer

    def _read_page(
        self, path: str, offset: int, limit: int, budget: int, *, tail: bool = False, numbered: bool = True
    ) -> _FileRead:
        """One page of the text (or the converted document) at ``path``, its lines numbered
        unless ``numbered`` is false; with ``tail`` the last ``limit`` lines (the file is read
        twice: once to count them).

        A file that is not text (an image, a binary) is refused. The refusal is all any read
        can show of it, so it counts as this member's read for the write gate
        (:meth:`_saw_not_text`) and then names workspace_write as the way to replace it."""
        with self._open_file(path) as file:
            try:
                return self._page_of(file, offset, limit, budget, tail=tail, numbered=numbered)
            except NotText as refusal:
                whole = file.read_all(MAX_EDIT_BYTES, too_large="") if file.size <= MAX_EDIT_BYTES else None
                if whole is None or not self._saw_not_text(file.rel, whole):
                    raise
                raise NotText(f"{refusal} To replace it, call workspace_write with the new content.") from None

    def _page_of(
        self, file: OpenFile, offset: int, limit: int, budget: int, *, tail: bool, numbered: bool
    ) -> _FileRead:
        """What :meth:`_read_page` reads of the open ``file``."""
        rel = file.rel
        # Most files end in neither kind of suffix, and then need no path parsed to say so.
        name = PurePosixPath(rel) if rel.lower().endswith(_CONVERTED_SUFFIXES) else None
        if name is not None and is_document(name):
            source = file.read_all(MAX_DOCUMENT_BYTES, too_large=DOCUMENT_TOO_LARGE)
            text = document_markdown(source, name.suffix, self._cache(), shown_as=rel)
            if tail:
                offset = max(1, page_of_text(text, 1, 1, max_chars=0).total - limit + 1)
            page = page_of_text(text, offset, limit, max_chars=budget, numbered=numbered)
            return _FileRead(rel=rel, page=page, digest=content_digest(source), data=source)
        if name is not None and is_image(name):
            raise NotText(f"{rel!r} is an image, not text. Call workspace_view to look at it.")
        if tail:
            offset = max(1, read_page(file, 1, 1, max_chars=0).page.total - limit + 1)
        read = read_page(file, offset, limit, max_chars=budget, numbered=numbered)
        return _FileRead(rel=rel, page=read.page, digest=read.digest, data=read.data)

    def _saw_not_text(self, rel: str, data: bytes) -> bool:
        """Record for the write gate that this member has seen ``data``, the whole file ``rel``,
        when it is not text: no tool shows such a file as lines, so a read's refusal of it (or
        an image's view) is as much as a read can give, and workspace_write may then replace
        it (while nobody changes it). Returns whether it was recorded: never for text, whose
        overwrite needs a real read, nor for a file over :data:`MAX_EDIT_BYTES`, which no
        tool overwrites."""
        if len(data) > MAX_EDIT_BYTES or is_text(data):
            return False
        hub = self._workspace_hub()
        hub.record_read(self._agent, rel, None, True, content_digest(data), current_conversation())
        return True

    @capability("workspace_list", untrusted_output=True, hints=ToolHints(title="List directory"))
    def list_directory(
        self,
        path: WorkspacePath = "",
        depth: Annotated[int, Field(ge=0, json_schema_extra=unlisted_range)] = 1,
        offset: Offset | None = None,
        limit: Limit | None = None,
        sizes: bool | None = None,
        exclude: Pattern | None = None,
    ) -> str:
        """List a directory.

        Args:
            depth: Levels; 0 = all.
        """
        excluded = exclusion(exclude) if exclude and exclude.strip() else None
        return list_directory(
            self.tree,
            path,
            depth,
            offset=offset or 0,
            limit=limit or MAX_LIST_ENTRIES,
            sizes=bool(sizes),
            exclude=excluded,
        )

    @capability("workspace_glob", untrusted_output=True, hints=ToolHints(title="Find files"))
    def glob_files(
        self,
        pattern: Pattern,
        path: WorkspacePath = "",
        offset: Offset | None = None,
        limit: Limit | None = None,
        sizes: bool | None = None,
        exclude: Pattern | None = None,
    ) -> str:
        """Find files by glob, e.g. '**/*.py'; newest first.

        Args:
            exclude: Glob to leave out.
        """
        return glob(
            self.root,
            pattern,
            path,
            offset=offset or 0,
            limit=limit or MAX_GLOB_RESULTS,
            sizes=bool(sizes),
            exclude=exclude or "",
        )

    @capability("workspace_info", untrusted_output=True, hints=ToolHints(title="File info"))
    def path_info(self, path: WorkspacePath) -> str:
        """Size, times, kind, lines and type of a path."""
        return path_info(self.tree, path)

    @capability("workspace_grep", untrusted_output=True, hints=ToolHints(title="Grep files"))
    def grep_files(self, pattern: Pattern, path: WorkspacePath = "", include: Pattern = "") -> str:
        """Search file contents by regex; gives path:line: text.

        Args:
            pattern: Python regex, matched per line.
            include: Only these files, e.g. *.py
        """
        from toolcards.workspace._grep import grep
        from toolcards.workspace._index import workspace_index

        max_results = self.param("workspace_grep", WorkspaceGrepParam).max_results
        try:
            return grep(self.root, pattern, path, include, max_results=max_results, index=workspace_index(self.root))
        except RetriableError:
            self._check_spill_kept(path)
            raise

    @capability("workspace_search", untrusted_output=True, hints=ToolHints(title="Search files"))
    def search_files(
        self,
        query: Pattern,
        path_prefix: WorkspacePath | None = None,
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, json_schema_extra=_unlisted_range)] = DEFAULT_TOP_K,
    ) -> str:
        """Find passages in files by meaning and keywords."""
        prefix = "" if not path_prefix else self.tree.resolve(path_prefix)
        param = self.param("workspace_search", WorkspaceSearchParam)
        finder = file_search(
            self.root, cache_dir=self._cache(), embedding=param.embedding, use_embeddings=param.embedding is not None
        )
        hits, notes = finder.search(query, "" if prefix == "." else prefix, top_k)
        return render_hits(hits, notes, query)

    @capability("workspace_view", untrusted_output=True, hints=ToolHints(title="View image"))
    def view_image(self, path: WorkspacePath) -> Any:
        """View an image file."""
        from pydantic_ai.messages import BinaryContent

        require_image(PurePosixPath(path), shown_as=path)
        with self.tree.open_file(path) as file:
            source = file.read_all(MAX_IMAGE_BYTES, too_large=IMAGE_TOO_LARGE)
            rel = file.rel
        max_dimension = self.param("workspace_view", WorkspaceViewParam).max_dimension
        data, media_type = image_for_model(source, self._cache(), max_dimension, shown_as=rel)
        self._saw_not_text(rel, source)
        return BinaryContent(data=data, media_type=media_type)

    # -- changing ---------------------------------------------------------------------------------

    @capability("workspace_write", mutates=True, hints=ToolHints(title="Write file", destructive=True, idempotent=True))
    def write_file(self, path: WorkspacePath, content: FileContent) -> str:
        """Create or overwrite a file; overwriting needs a full read first."""
        return self._change(
            "workspace_write",
            [path],
            lambda context: self._actor_proxy().write(
                self._agent, path, content, context, conversation=current_conversation()
            ),
        )

    @capability("workspace_edit", mutates=True, hints=ToolHints(title="Edit file", destructive=True))
    def edit_file(
        self,
        path: WorkspacePath,
        old_string: EditString,
        new_string: EditString,
        replace_all: bool = False,
        dry_run: bool | None = None,
    ) -> str:
        """Replace old_string with new_string in a file read before; returns the diff.

        Args:
            old_string: Must be unique unless replace_all.
        """
        return self._change(
            "workspace_edit",
            [path],
            lambda context: self._actor_proxy().edit(
                self._agent,
                path,
                old_string,
                new_string,
                replace_all,
                context,
                bool(dry_run),
                conversation=current_conversation(),
            ),
            checked=not dry_run,
        )

    @capability("workspace_multi_edit", mutates=True, hints=ToolHints(title="Edit files", destructive=True))
    def multi_edit_files(
        self,
        edits: Annotated[list[FileEdit], Field(min_length=1, max_length=MAX_EDITS, json_schema_extra=unlisted_bound)],
        dry_run: bool | None = None,
    ) -> str:
        """Apply several replacements, across files, all or nothing; each file read before.

        Args:
            edits: Applied in order.
        """
        size = sum(len(edit.old_string) + len(edit.new_string) for edit in edits)
        if size > MAX_PATCH_CHARS:
            raise RetriableError(
                f"The edits hold {size:,} characters in all, more than {MAX_PATCH_CHARS:,}. Split them into "
                "several calls, or write the file whole."
            )
        return self._change(
            "workspace_multi_edit",
            [edit.path for edit in edits],
            lambda context: self._actor_proxy().multi_edit(
                self._agent, edits, context, bool(dry_run), conversation=current_conversation()
            ),
            checked=not dry_run,
        )

    @capability("workspace_patch", mutates=True, hints=ToolHints(title="Apply patch", destructive=True))
    def patch_files(self, patch_text: PatchText, dry_run: bool | None = None) -> str:
        """Apply a unified diff, all or nothing; changed files read before.

        Args:
            patch_text: '--- a/path' '+++ b/path' then '@@' hunks; /dev/null to add or delete a file.
        """
        from toolcards.workspace._patch import parse_patch

        paths = [path for change in parse_patch(patch_text) for path in (change.old_path, change.new_path) if path]
        return self._change(
            "workspace_patch",
            paths,
            lambda context: self._actor_proxy().patch(
                self._agent, patch_text, context, bool(dry_run), conversation=current_conversation()
            ),
            checked=not dry_run,
        )

    @capability(
        "workspace_delete", mutates=True, hints=ToolHints(title="Delete file", destructive=True, idempotent=True)
    )
    def delete_file(self, path: WorkspacePath) -> str:
        """Delete a file."""
        return self._change(
            "workspace_delete", [path], lambda context: self._actor_proxy().delete(self._agent, path, context)
        )

    @capability("workspace_move", mutates=True, hints=ToolHints(title="Move file", destructive=True))
    def move_path(self, source: WorkspacePath, destination: WorkspacePath, overwrite: bool = False) -> str:
        """Move or rename a file or directory.

        Args:
            overwrite: Replace an existing file (read it first).
        """
        return self._change(
            "workspace_move",
            [source, destination],
            lambda context: self._actor_proxy().move(
                self._agent, source, destination, overwrite, context, conversation=current_conversation()
            ),
        )

    @capability("workspace_mkdir", mutates=True, hints=ToolHints(title="Make directory", idempotent=True))
    def make_directory(self, path: WorkspacePath) -> str:
        """Create a directory and its parents."""
        return self._change(
            "workspace_mkdir", [path], lambda context: self._actor_proxy().mkdir(self._agent, path, context)
        )

    @capability(
        "workspace_rmdir",
        mutates=True,
        hints=ToolHints(title="Remove directory", destructive=True, idempotent=True),
    )
    def remove_directory(self, path: WorkspacePath, recursive: bool = False) -> str:
        """Remove a directory.

        Args:
            recursive: Also remove everything in it.
        """
        deadline = remaining()
        return self._change(
            "workspace_rmdir",
            [path],
            lambda context: self._actor_proxy().rmdir(self._agent, path, recursive, deadline, context),
        )

    # -- the journal ------------------------------------------------------------------------------

    @capability("workspace_history", untrusted_output=True, hints=ToolHints(title="Change history"))
    def show_history(
        self,
        path: WorkspacePath | None = None,
        agent: AgentFilter | None = None,
        task_id: int | None = None,
        limit: Annotated[int, Field(ge=1, le=_MAX_HISTORY)] = 20,
    ) -> str:
        """Workspace changes, newest first: id, time, who, tool, task, what changed.

        Args:
            path: A file or directory.
            agent: e.g. '@Bob'; 'outside' (no @) for changes made without the tools.
        """
        journal = self._journal()
        if journal.seconds_since_scan >= HISTORY_SCAN_INTERVAL_S:  # what changed outside the tools
            self.ask(self._actor_proxy().scan(), actor=self._actor_name)
        else:
            journal.refresh()  # what other processes recorded
        rel = self.tree.resolve(path) if path else None
        member = _member_filter(agent)
        entries = journal.history(path=rel, member=member, task_id=task_id, limit=limit)
        return render_history(entries, filtered=bool(path or agent or task_id is not None))

    @capability("workspace_diff", untrusted_output=True, hints=ToolHints(title="Show change"))
    def show_diff(self, change_id: int) -> str:
        """The unified diff of one change."""
        journal = self._journal()
        entry = journal.entry(change_id).public()
        digests = [
            digest
            for change in entry.files
            for digest, kept in ((change.before, change.before_kept), (change.after, change.after_kept))
            if digest and kept
        ]
        return render_diff(entry, journal.contents(digests))

    @capability("workspace_undo", mutates=True, hints=ToolHints(title="Undo changes", destructive=True))
    def undo_changes(
        self,
        change_id: int | None = None,
        path: WorkspacePath | None = None,
        agent: AgentFilter | None = None,
        task_id: int | None = None,
        since: SinceText | None = None,
        dry_run: bool = False,
    ) -> str:
        """Undo one change (default: your last) or all matching the filters; all or nothing, itself undoable.

        Args:
            path: Only this file or directory.
            agent: e.g. '@Bob'.
            since: A change id, an ISO time or an age like '2h'.
            dry_run: Only show what would change.
        """
        from toolcards.workspace._undo import UndoSelection

        self._journal()
        selection = UndoSelection(
            change_id=change_id,
            path=path,
            member=agent,
            task_id=task_id,
            since=since,
            caller=self._member,
        )
        return self._change(
            "workspace_undo",
            [path] if path else [],
            lambda context: self._actor_proxy().undo(self._agent, selection, dry_run, context),
            checked=not dry_run,
        )

    def complete_path(self, prefix: str) -> list[str]:
        """Paths in the tree starting with ``prefix`` (directories end in ``/``), for a client
        completing a path: the entries of ``prefix``'s directory, hidden ones only when asked."""
        folder, _, start = prefix.rpartition("/")
        try:
            with self.tree.directory(folder) as directory:
                entries, _ = directory.entries(limit=COMPLETION_SCAN)
        except (RetriableError, ToolFailed):
            return []
        found = [
            f"{folder}/{entry.name}" if folder else entry.name
            for entry in entries
            if entry.name.startswith(start) and (start.startswith(".") or not entry.name.startswith("."))
        ]
        kinds = {entry.name: entry.is_directory for entry in entries}
        return sorted(path + "/" if kinds[path.rpartition("/")[2]] else path for path in found)

    @capability("workspace_export_git")
    def export_git(self, dest: HostPath) -> str:
        """Export the journal as a git repository: one commit per change, authored by its member.

        Args:
            dest: A directory outside the workspace: a new or empty one, or a git repository.
        """
        from toolcards.workspace._git_export import export_git

        target = Path(dest).expanduser().absolute()
        if target == self.root or self.root in target.parents:
            raise RetriableError(f"{dest!r} is inside the workspace: export to a directory outside it.")
        return export_git(self._journal(), target)

    # -- views (read-only, for people looking at the team) ------------------------------------

    def tree_version(self) -> str:
        """A digest of the tree's entries (names, sizes, times), taken at most once a second."""
        import time

        taken, signature = self._signature
        now = time.monotonic()
        if now - taken >= TREE_SIGNATURE_MAX_AGE_S:
            signature = tree_signature(self.tree)
            self._signature = (now, signature)
        return signature

    @view("workspace.tree", version=tree_version)
    def tree_view(self) -> dict[str, Any]:
        """The workspace tree: directories, files and their sizes."""
        return {"root": self.root.name, **tree_listing(self.tree)}

    @view("workspace.file", version=tree_version)
    def file_view(self, path: str) -> dict[str, Any]:
        """A preview of one file: its text, or what kind of file it is."""
        return preview_file(self.tree, _view_path(path))

    @view("workspace.image", version=tree_version)
    def image_view(self, path: str) -> FileBytes:
        """One image file, as it is."""
        return image_bytes(self.tree, _view_path(path))

    # -- internals ----------------------------------------------------------------------------------

    def _change(
        self, tool: str, paths: list[str], send: Callable[[ChangeContext], Any], *, checked: bool = True
    ) -> str:
        """Check ``paths`` against other members' reservations
        (:mod:`toolcards.workspace._reservations`), then ``send(context)`` the change to the
        tree's actor and return its answer, with the reservations' warning if any. The
        context carries the tool, the member's claimed task (when the journal is on) and the
        call's idempotency key.

        A call cancelled by its caller, or past its deadline, by the time the change would be
        sent changes nothing (``CallCancelled``, ``ToolTimeout``): once the actor has it, the
        change is applied whole."""
        warning = check_reservations(self._handle, self._member, paths, tool=tool) if checked else ""
        task_id = claimed_task(self._handle, self._member) if self.journal else None
        context = ChangeContext(tool=tool, task_id=task_id, call=current_call())
        check_deadline()
        answer: str = self.ask(send(context), actor=self._actor_name)
        return f"{answer}\n{warning}" if warning else answer

    def _journal(self) -> Journal:
        journal = self._workspace_hub().journal
        if journal is None:
            raise RetriableError(
                "The workspace journal is off for this tree (journal=False on its cards), so it has no history."
            )
        return journal

    def _open_file(self, path: str) -> OpenFile:
        try:
            return self.tree.open_file(path)
        except RetriableError:
            self._check_spill_kept(path)
            raise

    def _check_spill_kept(self, path: str) -> None:
        """Say so when ``path``, which a call failed on, is a spilled output no longer kept."""
        if is_spill_path(path) and self.tree.kind(path) is None:
            raise spill_gone(path, spill_folder(self.root).max_hours) from None

    def _workspace_hub(self) -> WorkspaceHub:
        # After stop_workspace_actors the registry holds a new hub: attach to it again.
        hub = self._hub
        if hub is None or hub.retired:
            team_id, publish = self.bound(self._team)
            hub = workspace_hub(self.root, resolved=True)
            settings = (
                JournalSettings(max_bytes=self.journal_mb * 1024 * 1024, max_age_s=self.journal_days * 86_400)
                if self.journal
                else None
            )
            hub.attach(team_id, publish, self.disk_mb, self.sync, settings)
            self._hub = hub
        return hub

    def _cache(self) -> Path:
        # Found at the first document or image, not at bind: most cards never need it.
        if self._cache_dir is None:
            self._cache_dir = internal_dir() / "cache"
        return self._cache_dir

    def _actor_proxy(self) -> WorkspaceProxy:
        # The hub starts the actor at the first change and replaces a stopped one
        # (ActorRegistry.stop_all).
        return self._workspace_hub().actor()

    @property
    def _actor_name(self) -> str:
        return f"#WorkspaceActor:{self.root.name}"


def _member_filter(agent: str | None) -> str | None:
    """``agent`` as the journal names members (:func:`~toolcards.workspace._journal.member_filter`),
    or ``None`` for no filter."""
    if agent is None or not agent.strip():
        return None
    return member_filter(agent)


def _unlisted_range(schema: dict[str, Any]) -> None:
    """Drop a number's range from its JSON schema (validation keeps it): see
    :func:`~toolcards.core._bounds.unlisted_bound`."""
    schema.pop("minimum", None)
    schema.pop("maximum", None)


def _view_path(path: str) -> str:
    if not isinstance(path, str) or not path or len(path) > _MAX_VIEW_PATH:
        raise RetriableError("Give the path of a file in the workspace.")
    return path


@dataclass(frozen=True, kw_only=True)
class _FileRead:
    """A page of a file as a read shows it, and what the write gate records of the file."""

    rel: str
    page: Page
    digest: str
    data: bytes | None


def _page_text(page: Page, rel: str, budget: int) -> tuple[str, bool]:
    """``page`` as the model reads it, and whether that shows the whole file unabridged.

    A page longer than ``budget`` characters ends early at a line, with a notice giving the
    offset to read on.
    """
    shown = render_page(page, shown_as=rel)
    if len(shown) <= budget:
        return shown, page.whole
    room = max(budget - _NOTICE_ROOM, budget // 2)
    cut = shown.rfind("\n", 0, room)
    kept = shown[:cut] if cut > 0 else shown[:room]
    if cut > 0:  # whole lines kept, one text line each (numbered or not): count them
        last = page.offset + kept.count("\n")
        notice = (
            f"(showing lines {page.offset}-{last} of {page.total}: output limit reached; read again with "
            f"offset={last + 1} to continue)"
        )
    else:
        notice = "(output limit reached; read again with a smaller limit)"
    return f"{kept}\n{notice}", False
