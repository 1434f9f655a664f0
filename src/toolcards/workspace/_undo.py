"""Undoing journal entries: the tree put back as it was before them, all or nothing.

:func:`plan_undo` picks the changes (:class:`UndoSelection`) and works out in memory, newest
first, what each path must hold afterwards: a path still holding what the change left gets back
exactly its earlier bytes and permission bits (created files deleted, deleted ones restored,
directories likewise); a path already as before is left alone; a text file changed since gets
the change's hunks taken out (:func:`~toolcards.workspace._revert.revert_lines`) unless a later
change touched the same or adjacent lines. Otherwise (that case, a binary file, a file since
deleted, a directory holding files no undone change made) the undo is refused, naming the later
changes, and nothing is written.

:func:`apply_undo` writes the plan, directories in nesting order, and puts back everything it
wrote if a step fails (:meth:`AppliedUndo.roll_back`), so the tree is never left half restored.
The tree's actor runs both holding the tree's lock and records the undo as one more change.
"""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from toolcards.core._idempotency import CallKey
from toolcards.errors import OutcomeUnknown, RetriableError, StoreError, ToolFailed
from toolcards.workspace._journal import OUTSIDE, Author, Journal, PathChange, Ref, StoredEntry
from toolcards.workspace._models import DIRECTORY, content_digest
from toolcards.workspace._os_errors import describe
from toolcards.workspace._revert import is_mergeable, revert_lines
from toolcards.workspace._text import quote_file_text, unified_diff
from toolcards.workspace._tree import Tree

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
    """``@Name``, or :data:`~toolcards.workspace._journal.OUTSIDE`."""
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


@dataclass(kw_only=True)
class AppliedUndo:
    """An undo written to the tree, which can still be put back (see :meth:`roll_back`)."""

    tree: Tree
    plan: UndoPlan
    sync_data: bool
    sync_directory: bool
    done: list[str] = field(default_factory=list)
    """The paths written so far, in order."""

    def roll_back(self) -> list[str]:
        """Put every path written back as it was; returns those that could not be."""
        failed: list[str] = []
        for path in reversed(self.done):
            try:
                _put(self.tree, path, self.plan.current[path], self.sync_data, self.sync_directory)
            except (OSError, RetriableError, ToolFailed):
                failed.append(path)
        self.done.clear()
        return failed


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

    Raises:
        RetriableError: the path leaves the tree; no change matches; a change is unknown or
            was dropped by retention; a later change conflicts, a version needed was not
            kept, or there is nothing to undo (the message says which, naming the changes).
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
    _check_directories(tree, target, current)
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

    Raises:
        RetriableError: as :func:`plan_undo`, or the quota; nothing was changed.
        ToolFailed: a write failed, or the journal could not record the undo; what was
            written was put back.
    """
    journal.scan(tree)
    plan = plan_undo(journal, tree, selection)
    if dry_run:
        return UndoDone(answer=render_plan(plan, dry_run=True), paths=[], summary="")
    changes = plan.changes()
    check_growth(sum(_size(c.after) - _size(c.before) for c in changes))
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
    except (StoreError, OutcomeUnknown) as exc:
        failed = applied.roll_back()
        kept = f" except {', '.join(failed)}: read them before changing them" if failed else ""
        raise ToolFailed(
            f"The journal could not record the undo ({exc}), so the files were put back{kept}: nothing was "
            "changed. Retry; tell the user if it keeps failing."
        ) from exc
    return UndoDone(
        answer=render_plan(plan, dry_run=False, entry_id=entry_id),
        paths=[change.path for change in changes],
        summary=plan.summary(),
    )


def apply_undo(tree: Tree, plan: UndoPlan, *, sync_data: bool, sync_directory: bool) -> AppliedUndo:
    """Write ``plan``: directories to make (outermost first), files, then directories to
    remove (innermost first). Call it holding the tree's lock.

    Raises:
        ToolFailed: a step failed; everything written was put back (the message names any
            path that could not be).
    """
    applied = AppliedUndo(tree=tree, plan=plan, sync_data=sync_data, sync_directory=sync_directory)

    def order(path: str) -> tuple[int, int]:
        target, depth = plan.target[path].content, path.count("/")
        if target == DIRECTORY:
            return 0, depth
        if plan.current[path].content == DIRECTORY:
            return 2, -depth
        return 1, 0

    for path in sorted(plan.target, key=order):
        try:
            _put(tree, path, plan.target[path], sync_data, sync_directory)
        except (OSError, RetriableError, ToolFailed) as exc:
            applied.done.append(path)  # it may be half done: put it back too
            failed = applied.roll_back()
            reason = describe(exc) if isinstance(exc, OSError) else str(exc)
            if failed:
                raise ToolFailed(
                    f"The undo stopped at {path} ({reason}), and putting back {', '.join(failed)} failed too: "
                    "read those paths before changing them."
                ) from exc
            raise ToolFailed(
                f"The undo stopped at {path} ({reason}); everything was put back: nothing was changed."
            ) from exc
        applied.done.append(path)
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
    member = None if selection.member is None else _member(selection.member)
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
    return _State(data, before_mode if before_mode is not None else state.mode)


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


def _check_directories(tree: Tree, target: dict[str, _State], current: dict[str, _State]) -> None:
    """Refuse to remove a directory that will still hold something the undo does not remove."""
    for path, state in target.items():
        if state.content is not None or current[path].content != DIRECTORY:
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
            raise RetriableError(
                f"Nothing was undone: directory {path}/ would have to be removed, but it holds {names}, which "
                "no undone change made. Move or delete them first, or undo the changes that made them."
            )


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
    """Make ``path`` hold ``state`` (a file, a directory, or nothing)."""
    content = state.content
    if isinstance(content, bytes):
        tree.write_bytes(path, content, mode=state.mode, sync_data=sync_data, sync_directory=sync_directory)
        return
    if content == DIRECTORY:
        if tree.status(path) is None:
            tree.make_directory(path)
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


# -- words -----------------------------------------------------------------------------------------


def _size(side: bytes | str | None) -> int:
    return len(side) if isinstance(side, bytes) else 0


def _member(name: str) -> str:
    bare = name.strip().lstrip("@").strip()
    if bare.lower() == OUTSIDE:
        return OUTSIDE
    return f"@{bare}" if bare else ""


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
    return f"{letter} {shown}"


def _count(lines: list[str]) -> str:
    return f"{len(lines)} path{'' if len(lines) == 1 else 's'}"


def _diff(plan: UndoPlan, path: str) -> str:
    before, after = plan.current[path].content, plan.target[path].content
    if DIRECTORY in (before, after):
        return ""
    if (isinstance(before, bytes) and b"\0" in before) or (isinstance(after, bytes) and b"\0" in after):
        size = len(after) if isinstance(after, bytes) else 0
        return f"{path}: binary file, {size:,} byte{'' if size == 1 else 's'} restored"
    old = before.decode("utf-8", "replace") if isinstance(before, bytes) else None
    new = after.decode("utf-8", "replace") if isinstance(after, bytes) else None
    return unified_diff(old, new, path, max_lines=UNDO_DIFF_LINES).rstrip()
