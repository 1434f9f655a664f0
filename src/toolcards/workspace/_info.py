"""What a path is, without reading it whole: :func:`path_info` (``workspace_info``).

One ``lstat`` (the last component is not followed: a link is described as a link, with the
workspace path it leads to), the creation time where the system records it, and for a
regular file of at most :data:`MAX_COUNTED_BYTES` its line count when it is text (the rule
of :func:`~toolcards.workspace._text.file_text`). The type is guessed from the name
(:mod:`mimetypes`), else from the content (``text/plain`` or
``application/octet-stream``). Times are UTC, ISO 8601. A directory gives the number of its
entries (at most :data:`~toolcards.workspace._tree.MAX_SCAN_ENTRIES` are counted).
"""

from __future__ import annotations

import mimetypes
import stat
from datetime import UTC, datetime

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._os_errors import kind_of
from toolcards.workspace._paths import display_name
from toolcards.workspace._tree import Tree, format_size

__all__ = ["MAX_COUNTED_BYTES", "path_info"]

MAX_COUNTED_BYTES = 1024 * 1024
"""Files up to this size have their lines counted (larger ones would cost a whole read)."""


def path_info(tree: Tree, path: str) -> str:
    """``key: value`` lines describing what ``path`` names in ``tree``.

    Raises:
        RetriableError: nothing is there; the path leaves the tree.
    """
    rel = tree.resolve(path)
    status = tree.status(rel)
    if status is None:
        raise RetriableError(f"Nothing is at {display_name(rel)!r}. Call workspace_glob to find the right path.")
    mode = status.st_mode
    lines = [f"path: {display_name(rel)}"]
    created = tree.created(rel)
    if stat.S_ISREG(mode):
        size = f"{status.st_size:,} byte{'' if status.st_size == 1 else 's'}"
        size += f" ({format_size(status.st_size)})" if status.st_size >= 1024 else ""
        lines += ["kind: file", f"size: {size}"]
        lines += _content(tree, rel, status.st_size)
    elif stat.S_ISDIR(mode):
        lines.append("kind: directory")
        lines.append(_entries(tree, rel))
    elif stat.S_ISLNK(mode):
        lines.append("kind: symlink")
        lines.append(_target(tree, rel))
    else:
        lines.append(f"kind: {kind_of(mode).removeprefix('a ').removeprefix('an ')}")
    lines.append(f"modified: {_utc(status.st_mtime)}")
    if created is not None:
        lines.append(f"created: {_utc(created)}")
    lines.append(f"permissions: {stat.filemode(mode)[1:]} ({stat.S_IMODE(mode):o})")
    return "\n".join(lines)


def _content(tree: Tree, rel: str, size: int) -> list[str]:
    guessed, _ = mimetypes.guess_type(rel, strict=False)
    if size > MAX_COUNTED_BYTES:
        return [f"type: {guessed or 'unknown'}"]
    try:
        with tree.open_file(rel) as opened:
            data = opened.read_all(MAX_COUNTED_BYTES, too_large="")
    except (RetriableError, ToolFailed):  # changed or unreadable meanwhile: the rest still holds
        return [f"type: {guessed or 'unknown'}"]
    text: str | None = None
    if b"\x00" not in data:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    if text is None:
        return [f"type: {guessed or 'application/octet-stream'} (binary)"]
    count = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    return [f"lines: {count:,}", f"type: {guessed or 'text/plain'} (text)"]


def _entries(tree: Tree, rel: str) -> str:
    try:
        with tree.directory(rel) as directory:
            found, more = directory.entries()
    except (RetriableError, ToolFailed) as exc:
        return f"entries: unknown ({exc})"
    return f"entries: {'more than ' if more else ''}{len(found):,}"


def _target(tree: Tree, rel: str) -> str:
    try:
        kind = tree.kind(rel)
        if kind == stat.S_IFDIR:
            with tree.directory(rel) as directory:
                return f"target: {display_name(directory.rel)}/"
        if kind == stat.S_IFREG:
            with tree.open_file(rel) as opened:
                return f"target: {display_name(opened.rel)}"
    except RetriableError:
        return "target: outside the workspace, or a loop (not followed)"
    except ToolFailed:
        return "target: unreadable"
    if kind is None:
        return "target: missing (a broken link)"
    return f"target: {kind_of(kind)}"


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
