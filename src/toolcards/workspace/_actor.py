"""``WorkspaceActor``: the one place a workspace tree is changed.

One actor per tree, whatever the number of teams using it (``workspace_id="shared"``), so
actors are not team tool actors. :func:`workspace_hub` keeps a process-wide, locked registry
of :class:`WorkspaceHub` objects keyed by the tree's resolved path. A hub holds what the
process's cards share about the tree (the write gate, the teams attached, the durability they
asked for) and the actor, started at the first change and replaced when found stopped.

**What it does.** One message at a time, so every mutation runs alone, holding the tree's
:class:`~toolcards.workspace._tree_lock.TreeLock` (an OS file lock, so it is atomic across
processes and hosts too): read the current bytes, check the read-before-write gate
(:class:`~toolcards.workspace._gate.WriteGate`), compute the new content in memory, write it
atomically with :meth:`~toolcards.workspace._tree.Tree.write_bytes`, update the writer's read
record. Only regular files are changed, so nothing can block the actor. Files over
:data:`MAX_EDIT_BYTES` are refused (they would be loaded whole), and one change loads at most
:data:`MAX_CHANGE_BYTES`. Reads run in the caller's thread and record themselves in the gate
(:meth:`WorkspaceHub.record_read`) before they return, sending the actor no message.

**Durability** is the safest ``sync`` the attached cards asked for (:data:`Sync`; the modes
are described in ``docs/cards/workspace.md``). **All or nothing:** a multi-edit or patch
passes the gate for every file before writing any; if a write then fails, the files already
written are restored and the error says so. Diffs are file text, so they are clipped and
quoted as untrusted output (:func:`~toolcards.workspace._text.quote_file_text`). Each change
publishes one :class:`~toolcards.core._events.StateChanged` (source ``#WorkspaceActor:<tree>``)
to every team attached with :meth:`WorkspaceActor.attach`.

**State and shutdown.** Read records and cached versions are in memory and per process: after
a restart agents are asked to read again (safe), and a refusal caused by another process
cannot name its writer. The actor's thread is a daemon holding no unsaved state (every write
is on disk before its ask returns), so a process may exit without stopping it; the tree lock's
file closes in ``on_stop`` or with the process. :func:`stop_workspace_actors` and
``pykka.ActorRegistry.stop_all()`` stop the actors; ``ActorSystem.stop()`` does not, because a
tree may outlive the teams of one system.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._caller_runs import CallerRunsActor
from toolcards.core._conversation import Conversation
from toolcards.core._deadline import deadline_after
from toolcards.core._events import StateChanged
from toolcards.errors import OutcomeUnknown, RetriableError, StoreError, ToolFailed
from toolcards.fs._tree_usage import MIB, workspace_usage
from toolcards.workspace._gate import WriteGate
from toolcards.workspace._journal import (
    MAX_KEPT_BYTES,
    Author,
    ChangeContext,
    Journal,
    JournalSettings,
    PathChange,
    Prepared,
    RunningCommand,
)
from toolcards.workspace._models import DIRECTORY, FileEdit, ReadRecord, content_digest
from toolcards.workspace._os_errors import Doing, file_error, kind_of, not_regular_error
from toolcards.workspace._paths import display_name, unprintable_in
from toolcards.workspace._text import (
    NotText,
    change_diff,
    detect_newline,
    file_text,
    is_text,
    quote_file_text,
    to_newline,
    unified_diff,
)
from toolcards.workspace._tree import FileBytes, Tree, format_size
from toolcards.workspace._tree_lock import TreeLock

if TYPE_CHECKING:
    from toolcards.workspace._undo import UndoSelection

# Edits, patches, undos and the search index are imported by the calls that need them, so a
# server whose agents only read never loads them.

__all__ = [
    "CHANGE_DIFF_CHARS",
    "CHANGE_DIFF_LINES",
    "DRY_RUN",
    "MAX_CHANGE_BYTES",
    "MAX_EDIT_BYTES",
    "Sync",
    "WorkspaceActor",
    "WorkspaceHub",
    "WorkspaceProxy",
    "existing_hub",
    "stop_workspace_actors",
    "workspace_actor",
    "workspace_hub",
]

logger = logging.getLogger(__name__)

CHANGE_DIFF_LINES = 200
"""Lines of diff an edit or multi-edit result shows at most."""

CHANGE_DIFF_CHARS = 12_000
"""Characters of diff an edit or multi-edit result shows at most (lines are clipped too)."""

MAX_EDIT_BYTES = 16 * 1024 * 1024
"""Files larger than this are not changed by the workspace tools (they are loaded whole)."""

MAX_CHANGE_BYTES = 64 * 1024 * 1024
"""Bytes of files one change (a multi-edit, a patch) may load in all."""

Sync = Literal["off", "normal", "full"]
"""How changes reach the disk: see "Durability" in the module docstring."""

_SYNC_ORDER: tuple[Sync, ...] = ("off", "normal", "full")
_SYNC_FLAGS: dict[Sync, tuple[bool, bool]] = {"off": (False, False), "normal": (True, False), "full": (True, True)}
"""(flush each file, flush its directory) for each :data:`Sync`."""

DRY_RUN = "Dry run: nothing was changed."
"""The first words of a dry run's answer."""

_TOO_LARGE_HINT = "Change it with a command, or delete it with workspace_delete and write it anew; nothing was changed."


@dataclass(frozen=True, kw_only=True)
class _Change:
    """One file's part of a commit."""

    path: str
    """Its canonical root-relative path, as the tree resolved it and records name it."""
    before: bytes | None
    """Its bytes before the commit (``None``: it did not exist)."""
    after: bytes | None
    """Its bytes after the commit (``None``: it is deleted)."""
    mode: int | None
    """Its permission bits before the commit, to restore a deleted file with."""
    full: bool | None
    """What the writer knows of it afterwards (see ``WriteGate.record_write``)."""
    before_digest: str | None = None
    """The digest of ``before`` when the gate has just checked it (not hashed again)."""


class WorkspaceActor(CallerRunsActor):
    """Serializes every change to one workspace tree and keeps each agent's read records.

    Every public method runs one message at a time, under the actor's lock (on its thread or
    on a waiting caller's: :class:`~toolcards.actors._caller_runs.CallerRunsActor`). Mutations block
    the actor for their disk I/O (an ``fsync`` per file written) and, for edits, the
    engine's search (about a millisecond for a fuzzy edit in a 2,000-line file); each runs
    holding :attr:`tree_lock`, so it also waits while another process changes the tree
    (up to :data:`~toolcards.workspace._tree_lock.LOCK_TIMEOUT_S`, then ``ToolFailed``). They
    return a short text for the model, and raise :class:`~toolcards.errors.RetriableError`
    for anything the model can fix (a path outside the tree, a gate refusal, an edit that
    does not match) and :class:`~toolcards.errors.ToolFailed` for disk failures. Nothing
    is written when they raise, except where a rollback itself failed (the message then
    names the files to check).

    ``agent`` arguments identify the agent for the gate (the card passes
    ``str(observer.address)``), and ``conversation`` arguments the run or session of the call
    (:mod:`toolcards.core._conversation`; the card passes the call's, ``None`` when it has none).
    """

    use_daemon_thread = True

    def __init__(self, root: Path, hub: WorkspaceHub | None = None) -> None:
        super().__init__()
        self.root = Path(os.path.realpath(root))
        self.name = f"#WorkspaceActor:{self.root.name}"
        self.tree = Tree(self.root)
        self.hub = hub if hub is not None else WorkspaceHub(self.root)
        """Where the gate, the attached teams and the durability setting are kept."""
        self.tree_lock = TreeLock(self.root)
        self._usage = workspace_usage(self.root)
        self._seq = 0
        self._loaded = 0

    @property
    def gate(self) -> WriteGate:
        """The tree's read-before-write gate (the hub's)."""
        return self.hub.gate

    def on_stop(self) -> None:
        """Close the tree's lock file (on the actor's thread, after the last message)."""
        self.tree_lock.close()

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """Close the tree's lock file when the actor dies of an unhandled error."""
        self.tree_lock.close()

    # -- teams and reads ----------------------------------------------------------------------

    def attach(self, team_id: str, publish: Callable[[Any], None], disk_mb: int | None = None) -> None:
        """Publish this tree's changes to team ``team_id`` with ``publish(event)`` (idempotent).

        ``disk_mb`` is the attaching card's quota for the tree; the smallest one attached applies.
        Cards attach through their :class:`WorkspaceHub` instead, without a message.
        """
        self.hub.attach(team_id, publish, disk_mb)

    def record_read(
        self,
        agent: str,
        path: str,
        data: bytes | None,
        full: bool,
        digest: str | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        """Remember that ``agent`` read ``data`` as the content of ``path`` (root-relative).

        ``data`` may be ``None`` for a file too large to hold (then ``digest`` is required).
        Cards call :meth:`WorkspaceHub.record_read` instead, in their own thread.
        """
        self.hub.record_read(agent, path, data, full, digest, conversation)

    def record_of(self, agent: str, path: str) -> ReadRecord | None:
        """What ``agent`` last read or wrote of ``path`` (root-relative), if remembered."""
        return self.gate.record_of(agent, path)

    # -- mutations ------------------------------------------------------------------------------

    def write(
        self,
        agent: str,
        path: str,
        content: str,
        context: ChangeContext | None = None,
        conversation: Conversation | None = None,
    ) -> str:
        """Create ``path`` or overwrite it with ``content``.

        An existing text file keeps its line endings (CRLF stays CRLF), its UTF-8
        byte-order mark and its permissions. Overwriting needs a full, current read.
        ``context`` says which tool, task and call the change is journaled for (every
        mutation takes one; see :class:`~toolcards.workspace._journal.ChangeContext`).

        Returns one line saying what was done.
        """
        with self._changing(context, "workspace_write") as replayed:
            if replayed is not None:
                return replayed
            if path.endswith("/"):
                # The slash says a directory is meant; writing a file of that name instead
                # would block every later write under it.
                raise RetriableError(
                    f"'{display_name(path)}' ends with '/', which names a directory: give the path of a file in "
                    f"it ({display_name(path.rstrip('/') or '.')}/<name>); a write makes the directories it needs."
                )
            current = self._current(path, "write")
            rel, before = current.rel, current.data
            if before is None:
                _check_new_name(path)
            digest = content_digest(before) if before is not None else None
            self.gate.check(agent, rel, before, "overwrite", digest=digest, conversation=conversation)
            text = content
            if before is not None:
                try:
                    old_text: str | None = file_text(before, rel)
                except RetriableError:
                    old_text = None  # a binary file is overwritten as it is given
                if old_text is not None:
                    if "\n" in old_text:
                        text = to_newline(text, detect_newline(old_text))
                    if old_text.startswith("\ufeff") and not text.startswith("\ufeff"):
                        text = "\ufeff" + text
            data = text.encode("utf-8")
            lines = _line_count(text)
            verb = "Created" if before is None else "Wrote"
            answer = f"{verb} {rel} ({lines} line{'' if lines == 1 else 's'})."
            change = _Change(path=rel, before=before, after=data, mode=current.mode, full=True, before_digest=digest)
            self._commit(agent, [change], answer, context, "workspace_write", conversation)
            return answer

    def edit(
        self,
        agent: str,
        path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
        context: ChangeContext | None = None,
        dry_run: bool = False,
        conversation: Conversation | None = None,
    ) -> str:
        """Replace ``old_string`` by ``new_string`` in ``path`` (see :func:`~toolcards.workspace._edit.apply_edit`).

        Needs a current read of the file (a page read is enough). Returns a line saying how
        many places changed (and by which strategy, when not exactly), then a unified diff
        inside the untrusted-output envelope. With ``dry_run`` the same checks run and the
        same diff is returned, but nothing is written or journaled.
        """
        from toolcards.workspace._edit import apply_edit

        with self._changing(context, "workspace_edit") as replayed:
            if replayed is not None:
                return replayed
            rel, before = self._existing(path)
            self.gate.check(agent, rel, before, "edit", conversation=conversation)
            old_text = file_text(before, rel, doing="edit")
            outcome = apply_edit(old_text, old_string, new_string, replace_all=replace_all, path=rel)
            after = outcome.text.encode("utf-8")
            how = "" if outcome.strategy == "exact" else f", matched by {outcome.strategy}: check the diff"
            places = f"{outcome.replacements} place{'' if outcome.replacements == 1 else 's'}"
            diff = change_diff(
                old_text,
                outcome.text,
                rel,
                max_lines=CHANGE_DIFF_LINES,
                same_head=outcome.same_head,
                same_head_lines=outcome.same_head_lines,
                same_tail=outcome.same_tail,
            ).rstrip()
            quoted = quote_file_text(diff, max_chars=CHANGE_DIFF_CHARS)
            if dry_run:
                return f"{DRY_RUN} Would edit {rel} ({places}{how}).\n{quoted}"
            answer = f"Edited {rel} ({places}{how}).\n{quoted}"
            change = _Change(
                path=rel, before=before, after=after, mode=None, full=None, before_digest=self._checked(agent, rel)
            )
            self._commit(agent, [change], answer, context, "workspace_edit", conversation)
            return answer

    def multi_edit(
        self,
        agent: str,
        edits: Sequence[FileEdit],
        context: ChangeContext | None = None,
        dry_run: bool = False,
        conversation: Conversation | None = None,
    ) -> str:
        """Apply ``edits`` in order, across files, all or nothing.

        Each edit sees the text left by the earlier edits of its file. Every file needs a
        current read. Returns a summary line, then one diff per changed file (together inside
        the untrusted-output envelope). With ``dry_run`` nothing is written or journaled.
        """
        from toolcards.workspace._edit import apply_edit

        with self._changing(context, "workspace_multi_edit") as replayed:
            if replayed is not None:
                return replayed
            if not edits:
                raise RetriableError("edits is empty: pass at least one edit with path, old_string and new_string.")
            files: dict[str, tuple[bytes, str]] = {}
            texts: dict[str, str] = {}
            for number, item in enumerate(edits, 1):
                rel = self.tree.resolve(item.path)
                if rel not in files:
                    rel, before = self._existing(item.path)
                    self.gate.check(agent, rel, before, "edit", conversation=conversation)
                    files[rel] = (before, file_text(before, rel, doing="edit"))
                    texts[rel] = files[rel][1]
                try:
                    outcome = apply_edit(
                        texts[rel], item.old_string, item.new_string, replace_all=item.replace_all, path=rel
                    )
                except RetriableError as exc:
                    earlier = " (its line numbers count the text after the earlier edits)" if number > 1 else ""
                    raise RetriableError(
                        f"Edit {number} of {len(edits)} ({rel}) failed, so no edit was applied{earlier}: {exc}"
                    ) from exc
                texts[rel] = outcome.text
            changes = [
                _Change(
                    path=rel,
                    before=before,
                    after=texts[rel].encode("utf-8"),
                    mode=None,
                    full=None,
                    before_digest=self._checked(agent, rel),
                )
                for rel, (before, old_text) in files.items()
                if texts[rel] != old_text
            ]
            diffs = "\n".join(
                change_diff(files[c.path][1], texts[c.path], c.path, max_lines=CHANGE_DIFF_LINES).rstrip()
                for c in changes
            )
            count = f"{len(edits)} edit{'' if len(edits) == 1 else 's'}"
            summary = f"Applied {count} to {len(changes)} file{'' if len(changes) == 1 else 's'}."
            if dry_run:
                summary = f"{DRY_RUN} Would apply {count} to {len(changes)} file{'' if len(changes) == 1 else 's'}."
            answer = f"{summary}\n{quote_file_text(diffs, max_chars=CHANGE_DIFF_CHARS)}" if diffs else summary
            if dry_run:
                return answer
            self._commit(agent, changes, answer, context, "workspace_multi_edit", conversation)
            return answer

    def patch(
        self,
        agent: str,
        patch_text: str,
        context: ChangeContext | None = None,
        dry_run: bool = False,
        conversation: Conversation | None = None,
    ) -> str:
        """Apply a GNU unified diff (see :mod:`toolcards.workspace._patch`), all or nothing.

        Files it changes or deletes need a current read (a page read is enough); files it
        creates do not. Returns one ``A``/``M``/``D`` line per file. With ``dry_run`` the
        same checks run and the answer adds the diff of each file as it would change;
        nothing is written or journaled.
        """
        from toolcards.workspace._patch import apply_patch

        with self._changing(context, "workspace_patch") as replayed:
            if replayed is not None:
                return replayed
            seen: dict[str, FileBytes] = {}

            def read(path: str) -> str | None:
                current = self._current(path, "edit")
                seen[path] = current
                if current.data is None:
                    _check_new_name(path)
                    return None
                try:
                    return file_text(current.data, current.rel, doing="edit")
                except NotText:
                    # The refusal points to workspace_write: the gate records this version as
                    # seen (or refuses saying who changed it), so that overwrite goes through.
                    self.gate.check(agent, current.rel, current.data, "edit", conversation=conversation)
                    raise

            changed = apply_patch(patch_text, read)
            changes: list[_Change] = []
            by_rel: dict[str, str] = {}
            for path, new_text in changed.items():
                if path not in seen:
                    read(path)
                rel, before = seen[path].rel, seen[path].data
                if by_rel.setdefault(rel, path) != path:
                    raise RetriableError(
                        f"The patch names one file twice, as {by_rel[rel]!r} and {path!r}. Use one path per file."
                    )
                self.gate.check(agent, rel, before, "edit", conversation=conversation)
                after = None if new_text is None else new_text.encode("utf-8")
                if after == before:
                    continue
                mode = seen[path].mode if before is not None and after is None else None
                full = True if before is None else None
                checked = self._checked(agent, rel) if before is not None else None
                changes.append(
                    _Change(path=rel, before=before, after=after, mode=mode, full=full, before_digest=checked)
                )
            if not changes:
                answer = "The patch changes nothing."
            else:
                lines = [f"{'A' if c.before is None else 'D' if c.after is None else 'M'} {c.path}" for c in changes]
                answer = "Patched:\n" + "\n".join(lines)
            if dry_run:
                if not changes:
                    return f"{DRY_RUN} {answer}"
                texts = {c.path: changed[by_rel[c.path]] for c in changes}
                diffs = "\n".join(
                    unified_diff(
                        None if c.before is None else file_text(c.before, c.path, doing="edit"),
                        texts[c.path],
                        c.path,
                        max_lines=CHANGE_DIFF_LINES,
                    ).rstrip()
                    for c in changes
                )
                return (
                    f"{DRY_RUN} Would patch:\n"
                    + "\n".join(lines)
                    + "\n"
                    + quote_file_text(diffs, max_chars=CHANGE_DIFF_CHARS)
                )
            self._commit(agent, changes, answer, context, "workspace_patch", conversation)
            return answer

    def delete(self, agent: str, path: str, context: ChangeContext | None = None) -> str:
        """Delete the regular file ``path`` (a symbolic link: the link itself); returns one line.

        Needs no read. A directory, a named pipe, a socket or a device is refused.
        """
        with self._changing(context, "workspace_delete") as replayed:
            if replayed is not None:
                return replayed
            journal = self.hub.journal
            status = self.tree.status(path) if journal is not None else None
            kept = status is not None and stat.S_ISREG(status.st_mode)
            if kept and status is not None and status.st_size <= MAX_KEPT_BYTES:
                current = self._current(path, "delete")
                if current.data is not None:  # journaled with its content, put back if that fails
                    answer = f"Deleted {current.rel}."
                    change = _Change(path=current.rel, before=current.data, after=None, mode=current.mode, full=None)
                    self._commit(agent, [change], answer, context, "workspace_delete")
                    return answer
            removed: list[PathChange] = []
            if kept and status is not None:  # too large to keep: recorded by digest
                with self.tree.open_file(path, "delete") as opened:
                    removed.append(
                        PathChange(
                            path=opened.rel, before=opened.digest(), after=None, before_mode=status.st_mode & 0o7777
                        )
                    )
            # A link (the link itself), or what unlink refuses in words: nothing the journal keeps.
            rel = self.tree.unlink(path, sync_directory=_SYNC_FLAGS[self.hub.sync][1])
            answer = f"Deleted {rel}."
            self._record(agent, removed, answer, context, "workspace_delete")
            self.gate.forget(rel)
            self._tell_index(written=[rel])
            self._changed(agent, f"deleted {rel}")
            return answer

    def move(
        self,
        agent: str,
        source: str,
        destination: str,
        overwrite: bool = False,
        context: ChangeContext | None = None,
        conversation: Conversation | None = None,
    ) -> str:
        """Move the file, directory or symbolic link ``source`` to ``destination`` in one
        rename (atomic; content never copied), creating missing parents; returns one line.

        Moving needs no read of ``source`` (like a delete); replacing a file at
        ``destination`` needs ``overwrite`` and a full, current read of it (like an
        overwrite), and only a file (or a link) is replaced, by a file or a link. Read records
        follow what moved. With the journal on, the move is one change: the paths it
        removed and made, with their content (a directory's is scanned first), so
        ``workspace_undo`` puts it back; if the journal cannot record it, it is moved back.

        Raises:
            RetriableError: ``source`` is missing, the root, a named pipe, socket or device;
                ``destination`` is ``source``, inside it, or exists (without ``overwrite``,
                or is a directory); the gate refuses; a path leaves the tree.
            ToolFailed: the rename, or putting it back after the journal failed, failed.
        """
        with self._changing(context, "workspace_move") as replayed:
            if replayed is not None:
                return replayed
            _check_new_name(destination)
            src = self.tree.resolve(source)
            dst = self.tree.resolve(destination)
            status, target = self._move_statuses(source, destination, src, dst)
            mode = status.st_mode
            replaced = self._move_replaces(agent, src, dst, mode, target, overwrite, conversation)
            journal = self.hub.journal
            changes: list[PathChange] = []
            if journal is not None:
                changes = self._moved_paths(journal, src, dst, status, replaced)
            prepared = None
            author = Author.of_agent(agent, context.task_id if context else None)
            tool = (context.tool if context else "") or "workspace_move"
            call = context.call if context else None
            if journal is not None and (changes or call is not None):
                prepared = journal.prepare(changes, tree=self.tree, call=call, author=author, tool=tool)
            kind = "directory " if stat.S_ISDIR(mode) else ""
            answer = f"Moved {kind}{src} to {dst}" + (" (replacing it)." if target is not None else ".")
            with self._settled_on_failure(journal, prepared):
                self.tree.rename(src, dst, replace=overwrite, sync_directory=_SYNC_FLAGS[self.hub.sync][1])
                if journal is not None and prepared is not None:
                    try:
                        journal.commit(
                            prepared, author, tool=tool, summary=f"moved {kind}{src} to {dst}", answer=answer, call=call
                        )
                    except (StoreError, OutcomeUnknown) as exc:
                        raise self._moved_back(src, dst, replaced, exc) from exc
            self.gate.move(src, dst)
            self._changed(agent, f"moved {src} to {dst}")
            return answer

    def _move_statuses(
        self, source: str, destination: str, src: str, dst: str
    ) -> tuple[os.stat_result, os.stat_result | None]:
        """``src``'s status and ``dst``'s (``None``: nothing there), or the refusal of a move
        that cannot be: of the root, of nothing, of a pipe or device, onto or into itself."""
        if src == ".":
            raise RetriableError("The workspace root cannot be moved. Move the paths inside it instead.")
        status = self.tree.status(src)
        if status is None:
            raise RetriableError(f"Nothing is at {src!r}. Call workspace_glob to find the right path.")
        mode = status.st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            raise RetriableError(f"{src!r} is {kind_of(mode)}: only files, directories and links are moved.")
        if dst == src:
            raise RetriableError(f"{source!r} and {destination!r} are the same path: nothing to move.")
        if dst == ".":
            name = src.rsplit("/", 1)[-1]
            raise RetriableError(
                f"The destination is the workspace root, a directory. To move {src!r} there, give the "
                f"full new path, e.g. {name!r}."
            )
        if dst.startswith(src + "/"):
            raise RetriableError(f"{src!r} cannot be moved into itself. Choose a destination outside it.")
        return status, self.tree.status(dst)

    def _move_replaces(
        self,
        agent: str,
        src: str,
        dst: str,
        mode: int,
        target: os.stat_result | None,
        overwrite: bool,
        conversation: Conversation | None,
    ) -> FileBytes | None:
        """The file a move onto ``dst`` replaces (read and let through the gate), ``None`` if
        it replaces a link or nothing; or the refusal of replacing what is there."""
        if target is None:
            return None
        if stat.S_ISDIR(target.st_mode):
            name = src.rsplit("/", 1)[-1]
            raise RetriableError(
                f"{dst!r} is a directory. To move {src!r} into it, give the full new path, e.g. {dst + '/' + name!r}."
            )
        if not overwrite:
            read_first = " (read it first)" if self._replacing_needs_a_read(dst, target) else ""
            raise RetriableError(
                f"{dst!r} already exists. Pass overwrite=true to replace it{read_first}, or choose another destination."
            )
        if stat.S_ISDIR(mode):
            raise RetriableError(f"{dst!r} is a file; a directory cannot replace it. Delete it first.")
        if stat.S_ISREG(target.st_mode):
            replaced = self._current(dst, "write")
            self.gate.check(agent, dst, replaced.data, "overwrite", conversation=conversation)
            return replaced
        if not stat.S_ISLNK(target.st_mode):
            raise not_regular_error(target.st_mode, "write", dst)
        return None

    def _replacing_needs_a_read(self, path: str, status: os.stat_result) -> bool:
        """Whether replacing what is at ``path`` (``status``) needs a read first: not when it is
        a file that is not text, which no read shows (the gate's refusal stands for the read)."""
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_EDIT_BYTES:
            return True
        try:
            current = self.tree.read_bytes(path, max_bytes=MAX_EDIT_BYTES, too_large="", doing="write", missing_ok=True)
        except (RetriableError, ToolFailed):
            return True  # the overwrite will say what is wrong
        return current.data is None or is_text(current.data)

    def _moved_paths(
        self, journal: Journal, src: str, dst: str, status: os.stat_result, replaced: FileBytes | None
    ) -> list[PathChange]:
        """The journal's view of moving ``src`` to ``dst``: what is removed and what is made,
        with the directories the move creates on the way and the file it replaces."""
        missing = self._missing_directories(dst)[:-1]
        made = [PathChange(path=path, before=None, after=DIRECTORY) for path in missing]
        if stat.S_ISDIR(status.st_mode):
            removed = journal.contents_under(self.tree, src)
        elif stat.S_ISREG(status.st_mode):
            if status.st_size <= MAX_KEPT_BYTES:
                current = self._current(src, "delete")
                before: bytes | str | None = current.data
            else:
                with self.tree.open_file(src, "delete") as opened:
                    before = opened.digest()
            removed = [PathChange(path=src, before=before, after=None, before_mode=status.st_mode & 0o7777)]
        else:
            removed = []  # a link: the journal keeps files and directories only
            if replaced is not None:
                made.append(PathChange(path=dst, before=replaced.data, after=None, before_mode=replaced.mode))
        added = [
            PathChange(
                path=dst + change.path[len(src) :],
                before=replaced.data if replaced is not None and change.path == src else None,
                after=change.before,
                after_mode=change.before_mode,
                before_mode=replaced.mode if replaced is not None and change.path == src else None,
            )
            for change in removed
        ]
        return [*made, *removed, *added]

    def _moved_back(self, src: str, dst: str, replaced: FileBytes | None, exc: BaseException) -> Exception:
        """Put a move the journal could not record back; the error to raise."""
        try:
            self.tree.rename(dst, src)
            if replaced is not None and replaced.data is not None:
                self.tree.write_bytes(dst, replaced.data, mode=replaced.mode)
        except (OSError, RetriableError, ToolFailed):
            return ToolFailed(
                f"The workspace journal could not record the move ({exc}), and moving {dst} back to {src} failed "
                "too. Check both paths before changing them."
            )
        return ToolFailed(f"The workspace journal could not record the move ({exc}), so nothing was changed.")

    def mkdir(self, agent: str, path: str, context: ChangeContext | None = None) -> str:
        """Create the directory ``path`` and its missing parents; idempotent. Returns one line."""
        with self._changing(context, "workspace_mkdir") as replayed:
            if replayed is not None:
                return replayed
            _check_new_name(path)
            missing = self._missing_directories(path) if self.hub.journal is not None else []
            rel, created = self.tree.make_directory(path)
            if not created:
                answer = f"Directory {rel}/ already exists."
                self._record(agent, [], answer, context, "workspace_mkdir")
                return answer
            answer = f"Created directory {rel}/."
            made = [PathChange(path=p, before=None, after=DIRECTORY) for p in [*missing, rel] if p != "."]
            self._record(agent, list({c.path: c for c in made}.values()), answer, context, "workspace_mkdir")
            self._changed(agent, f"created directory {rel}/")
            return answer

    def rmdir(
        self,
        agent: str,
        path: str,
        recursive: bool = False,
        deadline_s: float | None = None,
        context: ChangeContext | None = None,
    ) -> str:
        """Remove the directory ``path``: only an empty one unless ``recursive``.

        Symlinks inside are removed, never followed; a symlink at ``path`` is refused. The
        workspace root cannot be removed. A recursive removal stops when ``deadline_s``
        seconds have passed (the caller's remaining time), leaving what it did not reach.
        With the journal on, what the directory holds is scanned first (and kept, for an
        undo). Returns one line.
        """
        with self._changing(context, "workspace_rmdir") as replayed, deadline_after(deadline_s):
            if replayed is not None:
                return replayed
            journal = self.hub.journal
            removed: list[PathChange] = []
            if journal is not None and self.tree.status(path) is not None:
                rel = self.tree.resolve(path)
                if rel != "." and stat.S_ISDIR(self.tree.kind(rel) or 0):
                    removed = journal.contents_under(self.tree, rel)
            try:
                rel = self.tree.remove_directory(path, recursive=recursive)
            except (ToolFailed, RetriableError):
                if recursive:  # part of it may be gone
                    with contextlib.suppress(RetriableError, ToolFailed):
                        self.gate.forget(self.tree.resolve(path), below=True)
                        self._tell_index(removed_below=self.tree.resolve(path))
                raise
            self.gate.forget(rel, below=True)
            answer = f"Removed directory {rel}/."
            self._record(agent, removed, answer, context, "workspace_rmdir")
            self._tell_index(removed_below=rel)
            self._changed(agent, f"removed directory {rel}/")
            return answer

    # -- the journal --------------------------------------------------------------------------

    def scan(self) -> list[int]:
        """Record what changed in the tree outside the tools since the journal last looked.

        Returns the ids recorded (none with the journal off). Holds the tree's lock for
        the scan: a ``stat`` per file, and reading what changed.
        """
        journal = self.hub.journal
        if journal is None:
            return []
        with self._changing():
            return journal.scan(self.tree)

    def command_started(self, author: Author, command: str, timeout_s: float) -> RunningCommand | None:
        """A sandboxed command is about to run: scan first (so earlier changes are not
        its own) and register it as running. Returns its registration (``None``: no journal)."""
        journal = self.hub.journal
        if journal is None:
            return None
        running = RunningCommand.new(author, command, timeout_s)
        with self._changing():
            journal.scan(self.tree, register=running)
        return running

    def command_ended(self, running: RunningCommand) -> list[int]:
        """The command ``running`` ended: record what it changed. Returns the ids recorded."""
        journal = self.hub.journal
        if journal is None:
            return []
        with self._changing():
            return journal.scan(self.tree, ended=running)

    def undo(
        self,
        agent: str,
        selection: UndoSelection,
        dry_run: bool = False,
        context: ChangeContext | None = None,
    ) -> str:
        """Undo the changes ``selection`` picks, all or nothing (see :mod:`toolcards.workspace._undo`).

        Scans first, so a change made outside the tools is named in a refusal. With
        ``dry_run`` nothing is written and the answer lists what would change, with the
        diff. Otherwise the undo is one more change (which can be undone) and the answer
        gives its id.

        Raises:
            RetriableError: the journal is off, no change matches, a change is unknown or
                was dropped by retention, or a later change conflicts (named in the message);
                nothing was changed.
            ToolFailed: a write or the journal failed; what was written was put back.
        """
        from toolcards.workspace._undo import run_undo

        journal = self.hub.journal
        if journal is None:
            raise RetriableError("The workspace journal is off for this tree, so there is nothing to undo.")
        with self._changing(context, "workspace_undo") as replayed:
            if replayed is not None:
                return replayed
            sync_data, sync_directory = _SYNC_FLAGS[self.hub.sync]
            done = run_undo(
                journal,
                self.tree,
                selection,
                dry_run=dry_run,
                author=Author.of_agent(agent, context.task_id if context else None),
                call=context.call if context else None,
                sync_data=sync_data,
                sync_directory=sync_directory,
                check_growth=self._check_growth,
            )
            for path in done.paths:
                self.gate.forget(path, below=True)
            if done.paths and not dry_run:
                self._tell_index(written=list(done.paths))
            if done.paths:
                self._changed(agent, done.summary)
            return done.answer

    # -- internals --------------------------------------------------------------------------------

    def _tell_index(self, *, written: Sequence[str] = (), removed_below: str | None = None) -> None:
        """Bring the tree's search index (when one was made) up to these changes at once."""
        if "toolcards.workspace._index" not in sys.modules:
            return  # no call has searched yet, so no index was made: nothing to bring up to date
        from toolcards.workspace._index import workspace_index

        index = workspace_index(self.hub.root, create=False)
        if index is None:
            return
        if written:
            index.note_written(written)
        if removed_below is not None:
            index.note_removed_below(removed_below)

    @contextlib.contextmanager
    def _changing(self, context: ChangeContext | None = None, tool: str = "") -> Iterator[str | None]:
        """Hold the tree's lock for one mutation, which starts with nothing loaded; yields
        the answer the journal recorded for ``context``'s call when it was applied already."""
        with self.tree_lock.held():
            self._loaded = 0
            journal = self.hub.journal
            call = context.call if context is not None else None
            yield journal.replay(call, tool, self.tree) if journal is not None and call is not None else None

    def _current(self, path: str, doing: Doing) -> FileBytes:
        """The regular file at ``path`` (``data`` is ``None`` where nothing is), counted
        against :data:`MAX_CHANGE_BYTES` for this change."""
        current = self.tree.read_bytes(
            path, max_bytes=MAX_EDIT_BYTES, too_large=_TOO_LARGE_HINT, doing=doing, missing_ok=True
        )
        if current.data is not None:
            self._loaded += len(current.data)
            if self._loaded > MAX_CHANGE_BYTES:
                raise RetriableError(
                    f"This change needs more than {format_size(MAX_CHANGE_BYTES)} of files loaded at once; "
                    "split it into smaller changes. Nothing was changed."
                )
        return current

    def _existing(self, path: str) -> tuple[str, bytes]:
        current = self._current(path, "edit")
        if current.data is None:
            raise file_error(OSError(errno.ENOENT, "missing"), "edit", current.rel)
        return current.rel, current.data

    def _commit(
        self,
        agent: str,
        changes: list[_Change],
        answer: str,
        context: ChangeContext | None,
        tool: str,
        conversation: Conversation | None = None,
    ) -> None:
        """Write every change, restoring the written ones if one fails; then journal, record
        and publish. If the journal cannot record the change, the files are put back. A keyed
        change stores its intent before writing (:class:`~toolcards.workspace._journal.CallIntent`)."""
        self._check_quota(changes)
        journal = self.hub.journal
        prepared = None
        digests = {c.path: content_digest(c.after) for c in changes if c.after is not None} if journal else {}
        author = Author.of_agent(agent, context.task_id if context else None)
        journaled_as = (context.tool if context else "") or tool
        if journal is not None and (changes or (context is not None and context.call is not None)):
            prepared = journal.prepare(
                [
                    *self._parents_made(changes),
                    *(
                        PathChange(
                            path=c.path,
                            before=c.before,
                            after=c.after,
                            before_mode=c.mode,
                            before_digest=c.before_digest,
                            after_digest=digests.get(c.path),
                        )
                        for c in changes
                    ),
                ],
                tree=self.tree,
                call=context.call if context else None,
                author=author,
                tool=journaled_as,
            )
        with self._settled_on_failure(journal, prepared):
            self._write_and_journal(changes, prepared, author, journaled_as, answer, context)
        self._tell_index(written=[change.path for change in changes])
        for change in changes:
            if change.after is None:
                self.gate.forget(change.path)
            else:
                self.gate.record_write(
                    agent,
                    change.path,
                    change.after,
                    full=change.full,
                    digest=digests.get(change.path),
                    conversation=conversation,
                )
        if changes:
            what = ", ".join(
                f"{'created' if c.before is None else 'deleted' if c.after is None else 'changed'} {c.path}"
                for c in changes[:10]
            )
            more = f" and {len(changes) - 10} more" if len(changes) > 10 else ""
            self._changed(agent, what + more)

    def _write_and_journal(
        self,
        changes: list[_Change],
        prepared: Prepared | None,
        author: Author,
        tool: str,
        answer: str,
        context: ChangeContext | None,
    ) -> None:
        """Write every change, restoring the written ones if one fails, then journal them."""
        journal = self.hub.journal
        sync_data, sync_directory = _SYNC_FLAGS[self.hub.sync]
        done: list[_Change] = []
        for change in changes:
            try:
                if change.after is None:
                    self.tree.unlink(change.path, sync_directory=sync_directory)
                else:
                    self.tree.write_bytes(change.path, change.after, sync_data=sync_data, sync_directory=sync_directory)
            except (OSError, RetriableError, ToolFailed) as exc:
                if not done and isinstance(exc, RetriableError | ToolFailed):
                    raise  # nothing to undo, and its message already names the file
                raise self._rolled_back(change, done, exc) from exc
            done.append(change)
        if journal is not None and prepared is not None:
            try:
                journal.commit(prepared, author, tool=tool, answer=answer, call=context.call if context else None)
            except (StoreError, OutcomeUnknown) as exc:
                raise self._rolled_back(None, done, exc, journaled=True) from exc

    @contextlib.contextmanager
    def _settled_on_failure(self, journal: Journal | None, prepared: Prepared | None) -> Iterator[None]:
        """Settle the intent of a keyed change that fails before its commit, at once: put back,
        it is dropped; left half done, it is filed as the call's. Left alone, other processes
        would wait for its deadline before a retry of the call could be answered."""
        try:
            yield
        except BaseException:
            if journal is not None and prepared is not None and prepared.intent is not None:
                try:
                    journal.settle(self.tree)
                except Exception:
                    # The next replay, prepare or scan settles it.
                    logger.warning("The journal of %s could not settle a failed change", self.tree.root, exc_info=True)
            raise

    def _check_quota(self, changes: list[_Change]) -> None:
        """Refuse changes that would take the tree past its disk quota (a shrinking change passes)."""
        self._check_growth(sum(len(c.after or b"") - len(c.before or b"") for c in changes))

    def _check_growth(self, growth: int) -> None:
        """Refuse a change adding ``growth`` bytes when that takes the tree past its disk quota."""
        quota_mb = self.hub.quota_mb
        if quota_mb is None:
            return
        if growth <= 0:
            return
        quota = quota_mb * MIB
        usage = self._usage
        # The estimate is an upper bound: walk the tree only when it says the quota may pass.
        if usage.estimate() + growth <= quota or usage.measure() + growth <= quota:
            return
        used_mb = usage.estimate() / MIB
        raise RetriableError(
            f"Nothing was written: this change adds {growth / MIB:.1f} MB and the workspace already uses "
            f"{used_mb:.0f} MB of its {quota_mb:,} MB disk quota. Delete files you no longer need "
            "(workspace_delete), or write less, then retry."
        )

    def _record(
        self, agent: str, changes: list[PathChange], answer: str, context: ChangeContext | None, tool: str
    ) -> None:
        """Journal a change already made on disk (directories; a file too large to keep).

        Raises:
            ToolFailed: the journal could not record it (the change stays made).
        """
        journal = self.hub.journal
        if journal is None or not (changes or (context is not None and context.call is not None)):
            return
        try:
            journal.commit(
                journal.prepare(changes, tree=self.tree),
                Author.of_agent(agent, context.task_id if context else None),
                tool=(context.tool if context else "") or tool,
                answer=answer,
                call=context.call if context else None,
            )
        except (StoreError, OutcomeUnknown) as exc:
            raise ToolFailed(
                f"{answer} But the workspace journal could not record it ({exc}), so it cannot be undone "
                "through the journal. Tell the user."
            ) from exc

    def _checked(self, agent: str, rel: str) -> str | None:
        """The digest of what ``agent`` read of ``rel``: just after the gate let a change of
        it through, the digest of its current bytes (so they are not hashed again)."""
        record = self.gate.record_of(agent, rel)
        return record.digest if record is not None else None

    def _parents_made(self, changes: list[_Change]) -> list[PathChange]:
        """The directories the files ``changes`` create will make on their way: the change's
        own, so the journal does not later find them as made outside, and undo removes them."""
        made: dict[str, PathChange] = {}
        for change in changes:
            if change.before is None and change.after is not None:
                for path in self._missing_directories(change.path)[:-1]:
                    made.setdefault(path, PathChange(path=path, before=None, after=DIRECTORY))
        return list(made.values())

    def _missing_directories(self, path: str) -> list[str]:
        """The directories on the way to ``path`` (itself included) that do not exist yet."""
        parts = self.tree.resolve(path).split("/")
        for end in range(1, len(parts) + 1):
            if self.tree.kind("/".join(parts[:end])) is None:
                return ["/".join(parts[:stop]) for stop in range(end, len(parts) + 1)]
        return []

    def _rolled_back(
        self, failed: _Change | None, done: list[_Change], exc: BaseException, *, journaled: bool = False
    ) -> Exception:
        reason = str(exc) if isinstance(exc, RetriableError | ToolFailed) else (getattr(exc, "strerror", None) or exc)
        unrestored: list[str] = []
        sync_data, sync_directory = _SYNC_FLAGS[self.hub.sync]
        for change in reversed(done):
            try:
                if change.before is None:
                    if self.tree.kind(change.path) is not None:
                        self.tree.unlink(change.path, sync_directory=sync_directory)
                else:
                    self.tree.write_bytes(
                        change.path,
                        change.before,
                        mode=change.mode,
                        sync_data=sync_data,
                        sync_directory=sync_directory,
                    )
            except (OSError, RetriableError, ToolFailed):
                unrestored.append(change.path)
        if journaled or failed is None:
            what = f"The workspace journal could not record the change ({reason})"
        else:
            what = f"Writing {failed.path} failed ({reason})"
        if unrestored:
            return ToolFailed(
                f"{what}, and restoring {', '.join(unrestored)} failed too: "
                "those files may hold the new content. Read them before changing them."
            )
        restored = f"; the {len(done)} file(s) already written were restored" if done else ""
        message = f"{what}, so nothing was changed{restored}."
        return RetriableError(message) if isinstance(exc, RetriableError) else ToolFailed(message)

    def _changed(self, agent: str, summary: str) -> None:
        self._seq += 1
        for team_id, publish in self.hub.publishers():
            event = StateChanged(team_id=team_id, source=self.name, seq=self._seq, summary=f"{agent} {summary}")
            try:
                publish(event)
            except Exception:
                # The team stopped: stop publishing to it.
                self.hub.detach(team_id, publish)


class WorkspaceProxy(ActorMemberMixin, pykka.ActorProxy[WorkspaceActor]):
    """The typed proxy of a :class:`WorkspaceActor`: each method returns a future.

    ``cast(WorkspaceProxy, ref.proxy())`` (what :func:`workspace_actor` returns) lets a type
    checker follow asks.
    """

    attach = proxy_method(WorkspaceActor.attach)
    record_read = proxy_method(WorkspaceActor.record_read)
    record_of = proxy_method(WorkspaceActor.record_of)
    write = proxy_method(WorkspaceActor.write)
    edit = proxy_method(WorkspaceActor.edit)
    multi_edit = proxy_method(WorkspaceActor.multi_edit)
    patch = proxy_method(WorkspaceActor.patch)
    delete = proxy_method(WorkspaceActor.delete)
    move = proxy_method(WorkspaceActor.move)
    mkdir = proxy_method(WorkspaceActor.mkdir)
    rmdir = proxy_method(WorkspaceActor.rmdir)
    scan = proxy_method(WorkspaceActor.scan)
    command_started = proxy_method(WorkspaceActor.command_started)
    command_ended = proxy_method(WorkspaceActor.command_ended)
    undo = proxy_method(WorkspaceActor.undo)


class WorkspaceHub:
    """This process's share of one workspace tree: its write gate, the teams attached to it,
    their quota and durability settings, and its actor, started at the first change.

    Get one with :func:`workspace_hub`. Every method is thread-safe and quick: none waits
    for the actor except :meth:`actor`, which may start its thread (about a millisecond).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        """The tree's resolved root."""
        self.retired = False
        """Set by :func:`stop_workspace_actors`: a card holding this hub asks for a new one."""
        self._lock = threading.Lock()
        self._gate = WriteGate()
        self._publishers: dict[str, Callable[[Any], None]] = {}
        self._quota_mb: int | None = None
        self._sync: Sync | None = None
        self._journal_settings: JournalSettings | None = None
        self._journal: Journal | None = None
        self._ref: pykka.ActorRef[WorkspaceActor] | None = None
        self._proxy: WorkspaceProxy | None = None

    @property
    def gate(self) -> WriteGate:
        """The read-before-write gate; a replaced actor starts with a new, empty one."""
        return self._gate

    @property
    def quota_mb(self) -> int | None:
        """The smallest disk quota attached (``None``: none was given)."""
        return self._quota_mb

    @property
    def sync(self) -> Sync:
        """The safest durability attached (``"normal"`` before any card asked)."""
        return self._sync or "normal"

    @property
    def journal(self) -> Journal | None:
        """The tree's journal in the process's default store (``None`` until a card asked for
        one); opened at its first use, and again when its store was closed."""
        settings = self._journal_settings
        if settings is None:
            return None
        journal = self._journal
        if journal is None or journal.store.closed:
            from toolcards.store._default import default_store

            with self._lock:
                journal = self._journal
                if journal is None or journal.store.closed:
                    journal = self._journal = Journal(default_store(), self.root.name, settings)
        return journal

    def attach(
        self,
        team_id: str,
        publish: Callable[[Any], None],
        disk_mb: int | None = None,
        sync: Sync = "normal",
        journal: JournalSettings | None = None,
    ) -> None:
        """Publish this tree's changes to team ``team_id`` with ``publish(event)`` (idempotent).

        ``disk_mb`` is the attaching card's quota for the tree (the smallest attached applies),
        ``sync`` its durability (the safest attached applies) and ``journal`` its journal's
        retention (``None``: it asks for none; the journal is kept when any card asks for
        it, with the most history any asks for). Starts nothing.
        """
        with self._lock:
            self._publishers[team_id] = publish
            if disk_mb is not None:
                self._quota_mb = disk_mb if self._quota_mb is None else min(self._quota_mb, disk_mb)
            self._sync = sync if self._sync is None else max(self._sync, sync, key=_SYNC_ORDER.index)
            if journal is not None:
                current = self._journal_settings
                self._journal_settings = journal if current is None else current.merged(journal)
                if self._journal is not None:
                    self._journal.settings = self._journal_settings

    def detach(self, team_id: str, publish: Callable[[Any], None]) -> None:
        """Stop publishing to ``team_id`` (if ``publish`` is still how it is reached)."""
        with self._lock:
            if self._publishers.get(team_id) is publish:
                del self._publishers[team_id]

    def publishers(self) -> list[tuple[str, Callable[[Any], None]]]:
        """The teams attached and how each is published to."""
        with self._lock:
            return list(self._publishers.items())

    def record_read(
        self,
        agent: str,
        path: str,
        data: bytes | None,
        full: bool,
        digest: str | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        """Remember that ``agent`` read ``data`` as the content of ``path`` (root-relative), in
        ``conversation`` when the call had one, in the caller's thread (see
        :meth:`WriteGate.record_read`)."""
        self._gate.record_read(agent, path, data, full=full, digest=digest, conversation=conversation)

    def actor(self) -> WorkspaceProxy:
        """The proxy of the tree's actor, started now if it is not running.

        An actor found stopped is replaced by a new one whose read records start empty.
        """
        with self._lock:
            if self._ref is None or self._proxy is None or not self._ref.is_alive():
                if self._ref is not None:
                    self._gate = WriteGate()
                self._ref = WorkspaceActor.start(self.root, self)
                self._proxy = cast(WorkspaceProxy, self._ref.proxy())
            return self._proxy

    def stop(self, timeout: float | None) -> None:
        """Stop the actor, if one runs, after the messages already queued."""
        with self._lock:
            ref = self._ref
        if ref is not None:
            with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                ref.stop(block=True, timeout=timeout)


_hubs: dict[str, WorkspaceHub] = {}
_hubs_lock = threading.Lock()


def workspace_hub(root: Path, *, resolved: bool = False) -> WorkspaceHub:
    """The :class:`WorkspaceHub` of the tree at ``root``, made on first use; starts nothing.

    The registry is keyed by the tree's resolved path, so two spellings of one tree (or two
    teams sharing it) get the same hub. Race-free: concurrent callers get the same one.
    ``resolved`` says ``root`` is resolved already (a card's root, from
    :func:`~toolcards.fs._locations.workspace_dir`): it is not resolved again.
    """
    key = str(root) if resolved else os.path.realpath(root)
    hub = _hubs.get(key)
    if hub is not None:
        return hub
    with _hubs_lock:
        hub = _hubs.get(key)
        if hub is None:
            hub = _hubs[key] = WorkspaceHub(Path(key))
        return hub


def existing_hub(root: Path) -> WorkspaceHub | None:
    """The :class:`WorkspaceHub` of the tree at ``root`` if this process made one; makes none."""
    return _hubs.get(os.path.realpath(root))


def workspace_actor(root: Path) -> WorkspaceProxy:
    """The proxy of the one :class:`WorkspaceActor` of the tree at ``root``.

    The registry is keyed by the tree's resolved path, so two spellings of one tree (or two
    teams sharing it) get the same actor. Race-free: concurrent callers get the same actor.
    A stopped actor is replaced by a new one (whose read records start empty). Blocks only
    to start the actor's thread.
    """
    return workspace_hub(root).actor()


def stop_workspace_actors(timeout: float | None = 30.0) -> None:
    """Stop every workspace actor of this process and empty the registry.

    Blocks until each has handled the messages already queued and stopped, or ``timeout``
    seconds passed for one. A later :func:`workspace_actor` starts a new actor, with a new
    hub (cards bound earlier attach to it again at their next call).
    """
    with _hubs_lock:
        hubs = list(_hubs.values())
        _hubs.clear()
    for hub in hubs:
        hub.retired = True
        hub.stop(timeout)


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _check_new_name(path: str) -> None:
    """Refuse a name a tool would make that holds a character that does not print: listed, a
    newline or an escape in a name could forge the lines after it."""
    char = unprintable_in(path)
    if char is not None:
        raise RetriableError(
            f"'{display_name(path)}' holds {display_name(char)}, a character that does not print, and tools do "
            "not make such names. Choose a name without it."
        )
