"""Undoing journal entries: the tree put back as it was before them, all or nothing.

:func:`plan_undo` picks the changes (:class:`UndoSelection`) and works out in memory, newest
first, what each path must hold afterwards: a path still holding what the change left gets back
exactly its earlier bytes and permission bits (created files deleted, deleted ones restored,
directories likewise, a file turned into a directory or back turned back); a path already as
before is left alone; a text file changed since gets the change's hunks taken out
(:func:`~toolcards.workspace._revert.revert_lines`) unless a later change touched the same or
adjacent lines. Otherwise (that case, a binary file, a file since deleted, a directory holding
files no undone change made, a file in the way of a directory to restore) the undo is refused,
naming the later changes, and nothing is written. The plan also checks that every directory it
writes in may be written and that the bytes fit on the file system, so a dry run refuses what
the real undo would refuse.

:func:`apply_undo` first sets aside, in ``.toolcards/undo/`` on the tree's own file system, every
file it will replace or remove whose content neither the plan nor the journal holds (files over
:data:`MAX_UNDO_FILE_BYTES`, kept by digest alone); then it removes what goes (innermost first)
and writes what comes (outermost first). If a step fails it puts back everything it did, newest
first (:meth:`AppliedUndo.roll_back`), so the tree is never left half restored and nothing is
lost. The tree's actor runs both holding the tree's lock and records the undo as one more change.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from toolcards.core._idempotency import CallKey
from toolcards.errors import OutcomeUnknown, RetriableError, StoreError, ToolFailed
from toolcards.fs._atomic_write import atomic_write_at
from toolcards.workspace._journal import OUTSIDE, Author, Journal, PathChange, Ref, StoredEntry, member_filter
from toolcards.workspace._models import DIRECTORY, content_digest
from toolcards.workspace._os_errors import describe
from toolcards.workspace._own_dir import open_own_directory
from toolcards.workspace._paths import OWN_DIR
from toolcards.workspace._revert import is_mergeable, revert_lines
from toolcards.workspace._text import quote_file_text, unified_diff
from toolcards.workspace._tree import Tree, format_size

__all__ = [
    "AppliedUndo",
    "UndoDone",
    "UndoPlan",
    "UndoSelection",
    "apply_undo",
    "parse_since",
    "plan_undo",
    "render_plan",
    "run_undo",
]

MAX_UNDO_FILE_BYTES = 16 * 1024 * 1024
"""Files larger than this are not loaded by an undo (it refuses to replace them)."""

UNDO_DIFF_LINES = 200
"""Lines of diff a dry run shows per file at most."""

UNDO_DIFF_CHARS = 12_000
"""Characters of diff a dry run shows in all at most."""

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)\s*$", re.IGNORECASE)
_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86_400.0}
_OTHER = "other"
_LISTED = 20
"""Paths an undo's answer lists at most."""
_SET_ASIDE_DIR = "undo"
"""The folder of :data:`~toolcards.workspace._paths.OWN_DIR` where an undo sets files aside."""
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class UndoSelection:
    """Which changes an undo takes back.

    With ``change_id``: that change. Otherwise, with ``member``, ``task_id`` or ``since``:
    every change matching them all. Otherwise: the last change to ``path``, or, without a
    path, ``caller``'s last change. ``path`` (a file or a directory) also limits an undo to
    the part of each change under it.
    """

    change_id: int | None = None
    """One change, by id."""
    path: str | None = None
    """A workspace-relative file or directory."""
    member: str | None = None
    """``@Name`` or ``Name``, or ``outside`` (no ``@``) for the changes made without the tools
    (:func:`~toolcards.workspace._journal.member_filter`)."""
    task_id: int | None = None
    """The changes made for one task."""
    since: str | None = None
    """A change id (it and later ones), a time (ISO 8601, UTC unless it says otherwise) or
    an age (``30m``, ``2h``, ``1d``)."""
    caller: str = ""
    """Who asks (``@Name``): without a filter, their last change is undone."""


@dataclass(slots=True)
class _State:
    """What one path holds: ``bytes``, :data:`DIRECTORY`, a digest (a file too large to
    load), :data:`_OTHER` (a link, a pipe...), or ``None``."""

    content: bytes | str | None
    mode: int | None = None
    _digest: str | None = None

    @property
    def digest(self) -> str | None:
        if isinstance(self.content, bytes):
            if self._digest is None:
                self._digest = content_digest(self.content)
            return self._digest
        if self.content in (None, DIRECTORY, _OTHER):
            return None
        return self.content

    @property
    def unloaded(self) -> bool:
        """A file too large to load: only its digest is known, not its bytes."""
        return isinstance(self.content, str) and self.content not in (DIRECTORY, _OTHER)

    @property
    def is_file(self) -> bool:
        """A regular file, loaded or not."""
        return isinstance(self.content, bytes) or self.unloaded

    def matches(self, ref: Ref) -> bool:
        if ref is None:
            return self.content is None
        if ref == "/":
            return self.content == DIRECTORY
        return self.digest == ref.lstrip("!")

    def same_as(self, other: _State) -> bool:
        if isinstance(self.content, bytes) and isinstance(other.content, bytes):
            return self.content == other.content and (other.mode is None or self.mode == other.mode)
        return self.content == other.content


@dataclass(kw_only=True)
class UndoPlan:
    """What an undo will do: the changes it takes back and each path's state before and after."""

    undone: list[StoredEntry]
    """The changes taken back, newest first."""
    current: dict[str, _State]
    """What each path holds now."""
    target: dict[str, _State]
    """What each path it changes will hold (only paths that change)."""
    merged: list[str] = field(default_factory=list)
    """Paths whose change was taken out of a text changed since (the rest is kept)."""

    def changes(self) -> list[PathChange]:
        """The undo as the journal records it."""
        return [
            PathChange(
                path=path,
                before=self.current[path].content if self.current[path].content != _OTHER else None,
                after=target.content,
                before_mode=self.current[path].mode,
                after_mode=target.mode,
            )
            for path, target in sorted(self.target.items())
        ]

    def summary(self) -> str:
        """One line naming what was undone."""
        ids = [entry.id for entry in self.undone]
        if len(ids) == 1:
            return f"undid change {ids[0]}"
        shown = ", ".join(str(i) for i in ids[:5])
        return f"undid changes {shown}" + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of an undo: ``path`` made to hold ``state`` (nothing, for a removal); ``before``
    is what a roll-back puts back."""

    path: str
    state: _State
    before: _State


@dataclass(kw_only=True)
class AppliedUndo:
    """An undo written to the tree, which can still be put back (see :meth:`roll_back`)."""

    tree: Tree
    plan: UndoPlan
    sync_data: bool
    sync_directory: bool
    done: list[_Step] = field(default_factory=list)
    """The steps taken so far, in order."""
    aside: _SetAside | None = None
    """What was set aside before the first step (files whose content is not in memory)."""

    def roll_back(self) -> list[str]:
        """Put every path written back as it was, newest step first; returns those that could
        not be. What was set aside is dropped only when everything was put back."""
        failed: list[str] = []
        for step in reversed(self.done):
            try:
                if self.aside is not None and step.path in self.aside.kept and step.before.unloaded:
                    self.aside.put_back(step.path, self.sync_directory)
                else:
                    _put(self.tree, step.path, step.before, self.sync_data, self.sync_directory)
            except Exception:  # whatever it is, the other paths are still put back
                failed.append(step.path)
        self.done.clear()
        if not failed:
            self.finish()
        return list(dict.fromkeys(failed))

    def finish(self) -> None:
        """The undo is recorded (or rolled back): drop what was set aside for a roll-back."""
        if self.aside is not None:
            self.aside.discard()
            self.aside = None

    def kept_in(self) -> str:
        """Where set-aside files still are (after a roll-back that failed), in words, or ``""``."""
        if self.aside is None or not self.aside.kept:
            return ""
        return f" What they held that the journal does not keep is in {self.aside.folder}/, under the same paths."


class _SetAside:
    """Files an undo will replace or remove whose bytes are neither in the plan nor in the
    journal (over :data:`MAX_UNDO_FILE_BYTES`): kept under their own paths in
    ``.toolcards/undo/<time>-<token>/`` until the undo is recorded or rolled back.

    A hard link where the file system allows one (nothing is copied, and the old content
    survives the atomic write that replaces the path), else a copy. The folder is on the
    tree's own file system, opened by handle without following links, and out of every scan.
    A process killed mid-undo leaves it behind, so the files can still be put back by hand.
    """

    def __init__(self, tree: Tree, sync_data: bool) -> None:
        self.tree = tree
        self.sync_data = sync_data
        self.name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(4)}"
        self.folder = f"{OWN_DIR}/{_SET_ASIDE_DIR}/{self.name}"
        """Where the files are kept, relative to the tree's root."""
        self.kept: set[str] = set()
        """The paths kept (and not put back)."""
        self._own: int | None = None
        self._parent: int | None = None
        self._fd: int | None = None

    def keep(self, path: str) -> None:
        """Link or copy ``path`` into the folder.

        Raises:
            RetriableError: it is gone, or changed while it was copied.
            ToolFailed: it can be neither linked nor copied (no space left...).
        """
        parent, name = _split(path)
        try:
            with self.tree.directory(parent) as source, self._directory(parent, make=True) as into:
                try:
                    os.link(name, name, src_dir_fd=source.fd, dst_dir_fd=into, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                        raise
                    # Another file system (a mount inside the tree), or one without hard links.
                    with self.tree.open_file(path) as opened:
                        mode = stat.S_IMODE(opened.status.st_mode)
                        atomic_write_at(into, name, _Chunks(opened.chunks()), mode=mode, sync_data=self.sync_data)
        except (FileNotFoundError, NotADirectoryError):
            raise RetriableError(
                f"Nothing was undone: {path} changed while the undo was being prepared. Retry."
            ) from None
        except OSError as exc:
            raise ToolFailed(
                f"Nothing was undone: {path} is over {format_size(MAX_UNDO_FILE_BYTES)}, a size the journal does not "
                f"keep, and it could not be set aside in {self.folder}/ ({describe(exc)}), so a failed undo could not "
                "put it back. Free some space, then retry."
            ) from exc
        self.kept.add(path)

    def put_back(self, path: str, sync_directory: bool) -> None:
        """Move ``path``'s kept file back to ``path``, replacing the file there.

        Raises:
            OSError / RetriableError / ToolFailed: it could not be moved back (it stays kept).
        """
        parent, name = _split(path)
        with self._directory(parent, make=False) as kept, self.tree.directory(parent, "write") as into:
            os.rename(name, name, src_dir_fd=kept, dst_dir_fd=into.fd)
            if sync_directory:
                with contextlib.suppress(OSError):  # some file systems refuse to sync a directory
                    os.fsync(into.fd)
        self.kept.discard(path)

    def discard(self) -> None:
        """Remove the folder and what it holds. A failure is logged, not raised: the undo is
        settled by then (recorded, or every path put back), so what is left is a spare copy."""
        try:
            if self._fd is not None and self._parent is not None:
                shutil.rmtree(self.name, dir_fd=self._parent)
                if self._own is not None:
                    with contextlib.suppress(OSError):  # another undo's folder is in it
                        os.rmdir(_SET_ASIDE_DIR, dir_fd=self._own)
        except OSError as exc:
            logger.warning("Could not remove %s of %s: %s", self.folder, self.tree.root, describe(exc))
        finally:
            for fd in (self._fd, self._parent, self._own):
                if fd is not None:
                    os.close(fd)
            self._fd = self._parent = self._own = None
            self.kept.clear()

    @contextlib.contextmanager
    def _directory(self, parent: str, *, make: bool) -> Iterator[int]:
        """A descriptor of ``parent`` inside the folder; with ``make`` the folder and the
        directories on the way are made when missing. Nothing on the way is followed."""
        if self._fd is None:
            if not make:
                raise ToolFailed(f"{self.folder}/ was never made.")
            self._open_folder()
        assert self._fd is not None
        fd = os.dup(self._fd)
        try:
            for part in () if parent == "." else parent.split("/"):
                if make:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _open_folder(self) -> None:
        self._own = open_own_directory(self.tree.root)
        self._parent = open_own_directory(self.tree.root, _SET_ASIDE_DIR)
        os.mkdir(self.name, 0o700, dir_fd=self._parent)
        self._fd = os.open(self.name, _DIRECTORY_FLAGS, dir_fd=self._parent)


class _Chunks:
    """A file's chunks as something :func:`atomic_write_at` reads."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def read(self, size: int, /) -> bytes:
        return next(self._chunks, b"")


def _split(path: str) -> tuple[str, str]:
    """``path``'s parent (``"."`` for the root) and last name."""
    parent, _, name = path.rpartition("/")
    return parent or ".", name


def parse_since(text: str | None, *, now: float | None = None) -> tuple[int | None, float | None]:
    """``since`` as ``(change id, time)``: one of them, or neither for ``None``.

    Raises:
        RetriableError: it is neither a change id, a time nor an age.
    """
    if text is None or not text.strip():
        return None, None
    word = text.strip().lstrip("#")
    if word.isdigit():
        return int(word), None
    age = _AGE.match(word)
    if age is not None:
        return None, (time.time() if now is None else now) - float(age[1]) * _UNITS[age[2].lower()]
    try:
        moment = datetime.fromisoformat(word)
    except ValueError:
        raise RetriableError(
            f"since={text!r} is not a change id (e.g. 42), a time (e.g. 2026-05-01T14:30, UTC unless it says "
            "otherwise) or an age (e.g. 30m, 2h, 1d). Fix it and retry."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return None, moment.timestamp()


def plan_undo(journal: Journal, tree: Tree, selection: UndoSelection) -> UndoPlan:
    """Work out the undo ``selection`` asks for; nothing is written.

    Everything that can be known before writing is checked here, so a dry run and the real
    undo refuse alike: what each path holds, what a directory to remove or replace still
    holds, that every path put back sits in directories, that those directories may be
    written and that the bytes fit. A missing directory on the way joins the plan.

    Raises:
        RetriableError: the path leaves the tree; no change matches; a change is unknown or
            was dropped by retention; a later change conflicts, a version needed was not
            kept, something no undone change made is in the way, or there is nothing to undo
            (the message says which, naming the changes).
        ToolFailed: a directory cannot be written, or the bytes do not fit.
        StoreError: the journal cannot be read.
    """
    rel = tree.resolve(selection.path) if selection.path else None
    rel = None if rel == "." else rel
    entries = _selected(journal, selection, rel)
    items = [(entry, item) for entry in entries for item in entry.files if _under(item[0], rel)]
    if not items:
        if selection.change_id is not None:
            raise RetriableError(f"Change {selection.change_id} did not change {rel!r}: nothing to undo.")
        raise RetriableError(f"No change matching those filters changed {rel!r}: nothing to undo.")
    paths = list(dict.fromkeys(item[0] for _, item in items))
    current = {path: _read_state(tree, path) for path in paths}
    befores = journal.contents(item[1] for _, item in items)
    staged = {path: _State(state.content, state.mode) for path, state in current.items()}
    selected = {entry.id for entry in entries}
    conflicts: list[str] = []
    merged: list[str] = []
    for entry, (path, before, after, before_mode, _) in items:
        state = staged[path]
        if state.matches(after):
            staged[path] = _restored(journal, entry, path, before, before_mode, befores, state)
        elif state.matches(before):
            continue  # already as it was before
        else:
            reverted = _merged(journal, before, after, befores, state)
            if reverted is None:
                conflicts.append(_conflict(journal, entry, path, state, selected))
            else:
                staged[path] = _State(reverted, state.mode)
                merged.append(path)
    if conflicts:
        shown = "\n".join(f"- {line}" for line in conflicts[:5])
        more = f"\n- and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        raise RetriableError(
            f"Nothing was undone: undoing {_ids(entries)} would overwrite later work.\n{shown}{more}\n"
            "Undo those later changes too (together, with since=<the earliest id>), or change the files by hand."
        )
    target = {path: staged[path] for path in paths if not staged[path].same_as(current[path])}
    if not target:
        raise RetriableError(
            f"Nothing to undo: the paths of {_ids(entries)} already hold what they held before"
            + " (undone already, or changed back since)."
        )
    _check_directories(journal, tree, target, current, selected)
    _check_parents(journal, tree, target, current, selected)
    _check_room(tree, target, current)
    return UndoPlan(undone=entries, current=current, target=target, merged=merged)


@dataclass(frozen=True, kw_only=True)
class UndoDone:
    """What :func:`run_undo` did."""

    answer: str
    """What the model reads."""
    paths: list[str]
    """The paths written (none for a dry run)."""
    summary: str
    """One line naming the changes undone (for the team's event)."""


def run_undo(
    journal: Journal,
    tree: Tree,
    selection: UndoSelection,
    *,
    dry_run: bool,
    author: Author,
    call: CallKey | None,
    sync_data: bool,
    sync_directory: bool,
    check_growth: Callable[[int], None],
) -> UndoDone:
    """Scan, plan, write and record one undo; the tree's actor calls it holding the tree's lock.

    ``check_growth(bytes)`` refuses an undo that would take the tree past its disk quota.

    A dry run is refused as the undo would be (the plan's checks and the quota).

    Raises:
        RetriableError: as :func:`plan_undo`, or the quota; nothing was changed.
        ToolFailed: as :func:`plan_undo` and :func:`apply_undo`, or the journal could not
            record the undo; what was written was put back.
    """
    journal.scan(tree)
    plan = plan_undo(journal, tree, selection)
    changes = plan.changes()
    check_growth(sum(_size(c.after) - _size(c.before) for c in changes))
    if dry_run:
        return UndoDone(answer=render_plan(plan, dry_run=True), paths=[], summary="")
    prepared = journal.prepare(changes)
    applied = apply_undo(tree, plan, sync_data=sync_data, sync_directory=sync_directory)
    try:
        entry_id = journal.commit(
            prepared,
            author,
            tool="workspace_undo",
            answer=lambda new_id: render_plan(plan, dry_run=False, entry_id=new_id),
            call=call,
            undoes=[entry.id for entry in plan.undone],
        )
    except BaseException as exc:
        failed = applied.roll_back()
        if not isinstance(exc, StoreError | OutcomeUnknown):
            raise
        kept = f" except {', '.join(failed)}: read them before changing them" if failed else ""
        raise ToolFailed(
            f"The journal could not record the undo ({exc}), so the files were put back{kept}: nothing was "
            f"changed.{applied.kept_in()} Retry; tell the user if it keeps failing."
        ) from exc
    applied.finish()
    return UndoDone(
        answer=render_plan(plan, dry_run=False, entry_id=entry_id),
        paths=[change.path for change in changes],
        summary=plan.summary(),
    )


def apply_undo(tree: Tree, plan: UndoPlan, *, sync_data: bool, sync_directory: bool) -> AppliedUndo:
    """Write ``plan``: set aside the files it replaces or removes whose bytes are not in
    memory, remove what goes (innermost first), then write what comes (outermost first).
    Call it holding the tree's lock, and :meth:`AppliedUndo.finish` once the undo is recorded.

    Raises:
        RetriableError / ToolFailed: a file could not be set aside; nothing was changed.
        ToolFailed: a step failed; everything written was put back (the message names any
            path that could not be, and where what it held is kept).
    """
    applied = AppliedUndo(tree=tree, plan=plan, sync_data=sync_data, sync_directory=sync_directory)
    unloaded = sorted(path for path in plan.target if plan.current[path].unloaded)
    if unloaded:
        applied.aside = _SetAside(tree, sync_data)
        try:
            for path in unloaded:
                applied.aside.keep(path)
        except BaseException:
            applied.finish()
            raise
    for step in _steps(plan):
        try:
            _put(tree, step.path, step.state, sync_data, sync_directory)
        except BaseException as exc:
            applied.done.append(step)  # it may be half done: put it back too
            failed = applied.roll_back()
            if not isinstance(exc, OSError | RetriableError | ToolFailed):
                raise  # a bug or an interruption: put back, and left as it is for whoever catches it
            reason = describe(exc) if isinstance(exc, OSError) else str(exc)
            if failed:
                raise ToolFailed(
                    f"The undo stopped at {step.path} ({reason}), and putting back {', '.join(failed)} failed too: "
                    f"read those paths before changing them.{applied.kept_in()}"
                ) from exc
            raise ToolFailed(
                f"The undo stopped at {step.path} ({reason}); everything was put back: nothing was changed."
            ) from exc
        applied.done.append(step)
    return applied


def render_plan(plan: UndoPlan, *, dry_run: bool, entry_id: int | None = None) -> str:
    """What the model reads: what the undo did (or would do), and for a dry run the diff."""
    entries = plan.undone
    undone = f"{_ids(entries)} ({_authors(entries)})"
    lines = [_line(plan, path) for path in sorted(plan.target)]
    shown = lines[:_LISTED] + ([f"... and {len(lines) - _LISTED} more"] if len(lines) > _LISTED else [])
    merged = f" Kept the later edits of {', '.join(plan.merged)}." if plan.merged else ""
    if dry_run:
        diffs = "\n".join(filter(None, (_diff(plan, path) for path in sorted(plan.target))))
        head = f"Undoing {undone} would change {_count(lines)} (dry run, nothing written):"
        return (
            f"{head}\n"
            + "\n".join(shown)
            + merged
            + (f"\n{quote_file_text(diffs, max_chars=UNDO_DIFF_CHARS)}" if diffs else "")
        )
    this = f"\nThis undo is change {entry_id}; undo it to redo." if entry_id else ""
    return f"Undid {undone}, {_count(lines)}:\n" + "\n".join(shown) + merged + this


# -- planning ------------------------------------------------------------------------------------


def _selected(journal: Journal, selection: UndoSelection, rel: str | None) -> list[StoredEntry]:
    if selection.change_id is not None:
        return [journal.entry(selection.change_id)]
    journal.refresh()
    member = None if selection.member is None else member_filter(selection.member)
    if member is not None or selection.task_id is not None or selection.since is not None:
        since_id, since_time = parse_since(selection.since)
        if since_id is not None and since_id > journal.last_id:
            raise RetriableError(journal.missing_message(since_id))
        found = journal.select(
            path=rel, member=member, task_id=selection.task_id, since_id=since_id, since_time=since_time
        )
        if not found:
            raise RetriableError("No change matches those filters. Call workspace_history to see the changes.")
        return found
    if rel is not None:
        found = journal.select(path=rel, limit=1)
        if not found:
            raise RetriableError(f"The journal holds no change of {rel!r}. Call workspace_history to see the changes.")
        return found
    found = journal.select(member=selection.caller, limit=1)
    if not found:
        raise RetriableError(
            "You have made no change the journal holds. Give change_id (see workspace_history), or agent, "
            "task_id or since."
        )
    return found


def _restored(
    journal: Journal,
    entry: StoredEntry,
    path: str,
    before: Ref,
    before_mode: int | None,
    befores: dict[str, bytes],
    state: _State,
) -> _State:
    if before is None:
        return _State(None)
    if before == "/":
        return _State(DIRECTORY)
    data = befores.get(before.lstrip("!"))
    if data is None:
        why = "it was over 16 MiB" if before.startswith("!") else "it is no longer stored"
        raise RetriableError(
            f"Nothing was undone: what {path} held before change {entry.id} was not kept ({why}), so it cannot "
            "be restored."
        )
    # A file turned into a directory since (recorded without its bits) takes the default ones.
    return _State(data, before_mode if before_mode is not None else state.mode if state.is_file else None)


def _merged(journal: Journal, before: Ref, after: Ref, befores: dict[str, bytes], state: _State) -> bytes | None:
    """``state``'s text with the change taken out, or ``None`` when that is not possible."""
    if not (isinstance(state.content, bytes) and before and after and "/" not in (before, after)):
        return None
    versions = {**befores, **journal.contents([after])}
    old, new = versions.get(before.lstrip("!")), versions.get(after.lstrip("!"))
    if old is None or new is None or not is_mergeable(old, new, state.content):
        return None
    return revert_lines(new, old, state.content)


def _conflict(journal: Journal, entry: StoredEntry, path: str, state: _State, selected: set[int]) -> str:
    later = list(journal.later_entries(path, entry.id, selected))
    if state.content is None:
        what = f"{path} was deleted since"
    elif state.content == _OTHER:
        what = f"{path} is no longer a file or a directory"
    elif isinstance(state.content, bytes) and b"\0" in state.content:
        what = f"{path} was changed since and is binary now (it cannot be merged)"
    elif state.content == DIRECTORY:
        what = f"{path} is a directory now"
    else:
        what = f"{path} was changed since on the same lines (or next to them)"
    if later:
        named = "; ".join(_describe(e) for e in later[-3:])
        more = f" and {len(later) - 3} earlier" if len(later) > 3 else ""
        return f"change {entry.id}: {what}, by {named}{more}"
    return f"change {entry.id}: {what}, outside the workspace tools"


def _check_directories(
    journal: Journal, tree: Tree, target: dict[str, _State], current: dict[str, _State], selected: set[int]
) -> None:
    """Refuse to remove a directory, or to replace it by a file, while it will still hold
    something the undo does not remove."""
    for path, state in target.items():
        if state.content == DIRECTORY or current[path].content != DIRECTORY:
            continue
        with tree.directory(path) as directory:
            found, more = directory.entries()
        left = [
            entry.name
            for entry in found
            if f"{path}/{entry.name}" not in target or target[f"{path}/{entry.name}"].content is not None
        ]
        if left or more:
            names = ", ".join(left[:5]) + (" ..." if len(left) > 5 or more else "")
            why = "removed" if state.content is None else f"replaced by the file {path} it was before"
            made = _last_changed(journal, [f"{path}/{name}" for name in left[:5]], selected)
            raise RetriableError(
                f"Nothing was undone: directory {path}/ would have to be {why}, but it holds {names}{made}, which "
                "no undone change made. Move or delete them first, or undo the changes that made them too."
            )


def _check_parents(
    journal: Journal, tree: Tree, target: dict[str, _State], current: dict[str, _State], selected: set[int]
) -> None:
    """Make sure every path the undo puts something at sits in directories once the undo is
    done: a missing one joins the plan (made, and recorded, by the undo); a file in the way
    the undo does not take back, or a directory it removes, refuses the undo."""
    for path in sorted(target, key=_depth):
        if target[path].content is None:
            continue
        parts = path.split("/")
        for depth in range(1, len(parts)):
            above = "/".join(parts[:depth])
            if above in target:
                if target[above].content == DIRECTORY:
                    continue
                raise RetriableError(
                    f"Nothing was undone: {path} would be put back inside {above}, which the undo "
                    f"{'removes' if target[above].content is None else 'turns into a file'}. Undo the changes one "
                    "at a time (change_id=...), or change the files by hand."
                )
            kind = tree.kind(above)
            if kind == stat.S_IFDIR:
                continue
            if kind is None:
                current[above], target[above] = _State(None), _State(DIRECTORY)
                continue
            made = _last_changed(journal, [above], set())
            raise RetriableError(
                f"Nothing was undone: {path} cannot be put back, because {above} is not a directory now{made}, "
                f"and this undo does not take {above} back. Undo it as well (path={above!r}, or no path), or move it "
                "away first."
            )


def _check_room(tree: Tree, target: dict[str, _State], current: dict[str, _State]) -> None:
    """Refuse, before anything is written, an undo that the file system will refuse: a
    directory it changes that may not be written, or more bytes than are free."""
    made = {path for path, state in target.items() if state.content == DIRECTORY != current[path].content}
    for parent in sorted({_split(path)[0] for path in target} - made):
        with tree.directory(parent) as directory:
            if not _writable(directory.fd):
                raise ToolFailed(
                    f"Nothing was undone: it changes {'the root' if parent == '.' else parent + '/'} of the "
                    "workspace, which this process may not write (permission denied or a read-only file system). "
                    "Tell the user; once it can be written, retry."
                )
    needed = sum(len(state.content) for state in target.values() if isinstance(state.content, bytes))
    if needed:
        status = os.statvfs(tree.root)
        free = status.f_bavail * status.f_frsize
        if needed > free:
            raise ToolFailed(
                f"Nothing was undone: it writes {format_size(needed)} and the workspace's file system has "
                f"{format_size(free)} free. Free some space, then retry."
            )


def _writable(fd: int) -> bool:
    """Whether entries can be made and removed in the directory open as ``fd``."""
    effective = os.access in os.supports_effective_ids
    return os.access(".", os.W_OK | os.X_OK, dir_fd=fd, effective_ids=effective)


def _last_changed(journal: Journal, paths: list[str], excluded: set[int]) -> str:
    """``, last changed by change 7 (...)``: the last change of each of ``paths``, unless it is
    one of ``excluded``; ``""`` when none is left."""
    found: dict[int, StoredEntry] = {}
    for path in paths:
        for entry in journal.select(path=path, limit=1):
            if entry.id not in excluded:
                found[entry.id] = entry
    if not found:
        return ""
    named = [_describe(entry) for _, entry in sorted(found.items(), reverse=True)[:3]]
    return ", last changed by " + "; ".join(named)


def _depth(path: str) -> int:
    return path.count("/")


def _read_state(tree: Tree, path: str) -> _State:
    status = tree.status(path)
    if status is None:
        return _State(None)
    mode = stat.S_IMODE(status.st_mode)
    if stat.S_ISDIR(status.st_mode):
        return _State(DIRECTORY, mode)
    if not stat.S_ISREG(status.st_mode):
        return _State(_OTHER, mode)
    if status.st_size > MAX_UNDO_FILE_BYTES:
        with tree.open_file(path) as opened:
            return _State(opened.digest(), mode)
    current = tree.read_bytes(path, max_bytes=MAX_UNDO_FILE_BYTES, too_large="", missing_ok=True)
    return _State(current.data, mode)


def _put(tree: Tree, path: str, state: _State, sync_data: bool, sync_directory: bool) -> None:
    """Make ``path`` hold ``state`` (a file, a directory, or nothing); what is in the way of a
    file or a directory was removed by an earlier step."""
    content = state.content
    if isinstance(content, bytes):
        tree.write_bytes(path, content, mode=state.mode, sync_data=sync_data, sync_directory=sync_directory)
        return
    if content == DIRECTORY:
        if tree.status(path) is None:
            tree.make_directory(path)
            if state.mode is not None:  # a directory a roll-back makes again gets its bits back
                with tree.directory(path, "create directory") as made:
                    os.fchmod(made.fd, state.mode)
        return
    if content is not None:
        raise ToolFailed(f"{path} cannot be put back: its content was not loaded.")
    found = tree.status(path)
    if found is None:
        return
    if stat.S_ISDIR(found.st_mode):
        tree.remove_directory(path)
    else:
        tree.unlink(path, sync_directory=sync_directory)


def _steps(plan: UndoPlan) -> list[_Step]:
    """The undo as steps: what goes, innermost first, then what comes, outermost first. A path
    turned from a file into a directory (or back) is one step of each: the later work checked
    by the plan, what is in the way is the change's own."""
    removals: list[_Step] = []
    writes: list[_Step] = []
    for path, target in plan.target.items():
        current = plan.current[path]
        swapped = current.content is not None and target.content is not None and current.is_file != target.is_file
        if target.content is None or swapped:
            removals.append(_Step(path, _State(None), current))
        if target.content is not None:
            writes.append(_Step(path, target, _State(None) if swapped else current))
    removals.sort(key=lambda step: (-_depth(step.path), step.path))
    writes.sort(key=lambda step: (_depth(step.path), step.path))
    return removals + writes


# -- words -----------------------------------------------------------------------------------------


def _size(side: bytes | str | None) -> int:
    return len(side) if isinstance(side, bytes) else 0


def _under(path: str, rel: str | None) -> bool:
    return rel is None or path == rel or path.startswith(rel + "/")


def _ids(entries: list[StoredEntry]) -> str:
    if len(entries) == 1:
        return f"change {entries[0].id}"
    shown = ", ".join(str(e.id) for e in entries[:8])
    return f"changes {shown}" + (f" and {len(entries) - 8} more" if len(entries) > 8 else "")


def _describe(entry: StoredEntry) -> str:
    when = datetime.fromtimestamp(entry.at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    if entry.tool == OUTSIDE:
        return f"change {entry.id} (made outside the tools, {when})"
    return f"change {entry.id} ({entry.member}, {entry.tool}, {when})"


def _authors(entries: list[StoredEntry]) -> str:
    """``workspace_edit by @Alice``, ``made outside the tools``, or several of those."""
    made = sorted({"made outside the tools" if e.tool == OUTSIDE else f"{e.tool} by {e.member}" for e in entries})
    return "; ".join(made[:3]) + (f"; and {len(made) - 3} more" if len(made) > 3 else "")


def _line(plan: UndoPlan, path: str) -> str:
    """``A path`` (it comes back), ``D path`` (it goes) or ``M path`` (its content changes)."""
    before, after = plan.current[path].content, plan.target[path].content
    shown = f"{path}/" if DIRECTORY in (before, after) else path
    letter = "A" if before is None else "D" if after is None else "M"
    if after == DIRECTORY and before not in (None, DIRECTORY):
        return f"{letter} {path}/ (a file now)"
    if before == DIRECTORY and after not in (None, DIRECTORY):
        return f"{letter} {path} (a directory now)"
    return f"{letter} {shown}"


def _count(lines: list[str]) -> str:
    return f"{len(lines)} path{'' if len(lines) == 1 else 's'}"


def _diff(plan: UndoPlan, path: str) -> str:
    before, after = plan.current[path].content, plan.target[path].content
    if DIRECTORY in (before, after):
        if after is None or after == DIRECTORY:
            return ""
        before = None  # a directory turned back into a file: the file's content is all new
    if plan.current[path].unloaded:
        done = f"{len(after):,} bytes restored" if isinstance(after, bytes) else "deleted"
        return f"{path}: over {format_size(MAX_UNDO_FILE_BYTES)} now (not shown), {done}"
    if (isinstance(before, bytes) and b"\0" in before) or (isinstance(after, bytes) and b"\0" in after):
        size = len(after) if isinstance(after, bytes) else 0
        return f"{path}: binary file, {size:,} byte{'' if size == 1 else 's'} restored"
    old = before.decode("utf-8", "replace") if isinstance(before, bytes) else None
    new = after.decode("utf-8", "replace") if isinstance(after, bytes) else None
    return unified_diff(old, new, path, max_lines=UNDO_DIFF_LINES).rstrip()
