"""What ``workspace_history`` and ``workspace_diff`` show: journal entries in words a model reads.

One line per entry, newest first::

    #42 2026-05-01 14:30:03Z @Alice workspace_edit task 7: changed src/app.py

(times in UTC; ``outside`` for a change made without the tools). A diff is a header line,
the command line for ``exec_command``, then a GNU unified diff per text file; a binary
file, a directory, or a version the journal did not keep is one line saying so. Both are
file text, returned inside the untrusted-output envelope by their capabilities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from toolcards.workspace._journal import OUTSIDE
from toolcards.workspace._models import DIRECTORY, FileChange, JournalEntry
from toolcards.workspace._text import unified_diff

__all__ = ["DIFF_LINES_PER_FILE", "format_time", "render_diff", "render_history"]

DIFF_LINES_PER_FILE = 400
"""Lines of diff ``workspace_diff`` shows per file at most."""


def format_time(at: float) -> str:
    """``at`` (seconds since the epoch) as ``2026-05-01 14:30:03Z``."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def render_history(entries: Sequence[JournalEntry], *, filtered: bool) -> str:
    """One line per entry; a sentence when there is none."""
    if not entries:
        return "No change matches." if filtered else "The journal holds no change yet."
    return "\n".join(_line(entry) for entry in entries)


def render_diff(entry: JournalEntry, contents: Mapping[str, bytes]) -> str:
    """The header of ``entry`` and the diff of each of its files (``contents``: the kept
    versions by digest)."""
    head = _line(entry)
    if entry.command:
        head += f"\n$ {entry.command}"
    parts = [head, *(_file_diff(change, contents) for change in entry.files)]
    return "\n".join(part for part in parts if part)


def _line(entry: JournalEntry) -> str:
    task = f" task {entry.task_id}" if entry.task_id is not None else ""
    undoes = f" (undid {', '.join(str(i) for i in entry.undoes)})" if entry.undoes else ""
    who = entry.member or OUTSIDE
    tool = "" if entry.tool == OUTSIDE else f" {entry.tool}"
    return f"#{entry.id} {format_time(entry.at)} {who}{tool}{task}: {entry.summary}{undoes}"


def _file_diff(change: FileChange, contents: Mapping[str, bytes]) -> str:
    path = change.path
    if DIRECTORY in (change.before, change.after):
        return f"{path}/: directory {'created' if change.before is None else 'removed'}"
    if change.before == change.after:
        return f"{path}: permission bits {_mode(change.before_mode)} -> {_mode(change.after_mode)}"
    old, old_ok = _version(change.before, change.before_kept, contents)
    new, new_ok = _version(change.after, change.after_kept, contents)
    if not (old_ok and new_ok):
        return f"{path}: changed; its {'old' if not old_ok else 'new'} content was not kept (file over 16 MiB)"
    if (old is not None and "\0" in old) or (new is not None and "\0" in new):
        return f"{path}: binary file changed"
    return unified_diff(old, new, path, max_lines=DIFF_LINES_PER_FILE).rstrip()


def _version(digest: str | None, kept: bool, contents: Mapping[str, bytes]) -> tuple[str | None, bool]:
    if digest is None:
        return None, True
    data = contents.get(digest)
    if data is None or not kept:
        return None, False
    return data.decode("utf-8", "replace"), True


def _mode(mode: int | None) -> str:
    return "?" if mode is None else f"{mode:o}"
