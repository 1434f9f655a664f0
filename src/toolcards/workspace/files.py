"""Reading, writing and listing files in a workspace.

* :func:`atomic_write` replaces a file so that readers see either the old or the new
  content, never a half-written file, even if the process dies mid-write.
* :func:`read_numbered` shows a text file a page at a time with line numbers, in the
  style of ``cat -n``: the number right-aligned in six columns, a tab, then the line
  (``"     1\\tfirst line"``). Lines are split on ``\\n``; a ``\\r`` before it (CRLF) is
  not shown; a leading UTF-8 byte-order mark is dropped. Lines longer than
  :data:`MAX_LINE_CHARS` are clipped with a marker giving the number of characters cut.
  :func:`number_lines` does the same for text that did not come from a file (a
  converted document).
* :func:`list_dir` lists a directory flat (``depth=1``) or as an ASCII tree.
* :func:`read_bytes` reads a whole file with the same model-facing errors.

A file that is not valid UTF-8 or contains a NUL byte is treated as binary. Functions
taking ``shown_as`` name the file that way in their messages (callers pass the
root-relative path, so a model never sees host paths); it defaults to the path given.
All of these block on disk I/O.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace.paths import SKIPPED_DIRS, display_name, relative, resolve_in_root

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_LIST_ENTRIES",
    "atomic_write",
    "list_dir",
    "number_lines",
    "read_bytes",
    "read_numbered",
]

MAX_LINE_CHARS = 2000
"""Longer lines are clipped by :func:`read_numbered`."""

MAX_LIST_ENTRIES = 500
"""How many entries :func:`list_dir` shows at most."""


def atomic_write(
    path: Path, data: bytes, *, mode: int | None = None, shown_as: str | None = None, sync_directory: bool = False
) -> None:
    """Replace ``path`` with ``data`` atomically, creating missing parent directories.

    The data goes to a temporary file in the same directory, is flushed to disk
    (``fdatasync``) and renamed over ``path`` with ``os.replace``, so a reader or a crash
    sees the old file or the new one, never a torn one. On any failure the temporary file
    is removed and ``path`` is untouched. ``path`` should be resolved (a symlink at
    ``path`` would be replaced by a regular file).

    Durability matches the state store's default (``synchronous=normal``): a killed
    process loses nothing written; after a power loss the last rename may be undone (the
    old content is back, whole). ``sync_directory=True`` also syncs the directory so the
    rename itself survives a power loss, at ~0.25 ms per write.

    Args:
        mode: permission bits for the file. Default: those of the file being replaced,
            or ``0o666`` less the umask for a new file.
        shown_as: how messages name the file (default: ``path``).
        sync_directory: also fsync the directory after the rename.

    Raises:
        RetriableError: ``path`` is a directory, or a parent is a file.
        ToolFailed: any other OS error (disk full, permission denied).
    """
    name = shown_as or str(path)
    directory = path.parent
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if mode is None:
            with contextlib.suppress(FileNotFoundError):
                mode = path.stat().st_mode & 0o7777
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            # fdatasync flushes the data and the size, all a reader after a crash needs.
            os.fdatasync(fd) if hasattr(os, "fdatasync") else os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, IsADirectoryError):
            raise RetriableError(f"Cannot write {name!r}: it is a directory. Choose a file path.") from exc
        if isinstance(exc, NotADirectoryError | FileExistsError):
            raise RetriableError(
                f"Cannot write {name!r}: a parent of it is a file, not a directory. Choose another path."
            ) from exc
        if isinstance(exc, OSError):
            raise ToolFailed(f"Cannot write {name!r}: {exc.strerror or exc}.") from exc
        raise
    if sync_directory:
        _fsync_directory(directory)


def read_bytes(path: Path, *, shown_as: str | None = None) -> bytes:
    """The whole content of the file at ``path``.

    Raises:
        RetriableError: it does not exist (the message suggests workspace_glob), is a
            directory (suggests workspace_list), or cannot be read.
    """
    name = shown_as or str(path)
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise RetriableError(
            f"File {name!r} does not exist. Call workspace_glob to find the right path, then retry."
        ) from exc
    except IsADirectoryError as exc:
        raise RetriableError(f"{name!r} is a directory, not a file. Call workspace_list to see its contents.") from exc
    except OSError as exc:
        raise RetriableError(f"Cannot read {name!r}: {exc.strerror or exc}.") from exc


def read_numbered(path: Path, offset: int = 1, limit: int = 2000, *, shown_as: str | None = None) -> str:
    """Lines ``offset`` .. ``offset + limit - 1`` of a UTF-8 text file, numbered from 1.

    Returns:
        The numbered lines (see the module docstring), followed, when lines remain after
        the page, by a notice with the total and the ``offset`` that reads on. An empty
        file gives ``"(empty file)"``.

    Raises:
        RetriableError: the file is missing (suggests workspace_glob), is a directory
            (suggests workspace_list), looks binary (suggests workspace_view for images;
            documents are converted automatically), or ``offset``/``limit`` are out of
            range (the message gives the line count).
    """
    name = shown_as or str(path)
    data = read_bytes(path, shown_as=name)
    try:
        if b"\x00" in data:
            raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), len(data), "NUL byte")
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RetriableError(
            f"{name!r} looks binary (it is not UTF-8 text), so it cannot be shown as lines. "
            "For an image call workspace_view; PDF, DOCX, XLSX and PPTX documents are converted "
            "to text when read."
        ) from exc
    return number_lines(text, offset, limit, shown_as=name)


def number_lines(text: str, offset: int = 1, limit: int = 2000, *, shown_as: str = "the file") -> str:
    """Number a page of ``text`` the way :func:`read_numbered` numbers a file.

    Raises:
        RetriableError: ``offset`` < 1, ``limit`` < 1, or ``offset`` past the last line.
    """
    if offset < 1 or limit < 1:
        raise RetriableError(f"offset and limit must be at least 1 (got offset={offset}, limit={limit}).")
    text = text.removeprefix("\ufeff")
    if not text:
        if offset > 1:
            raise RetriableError(f"offset {offset} is past the end: {shown_as!r} is empty.")
        return "(empty file)"
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    total = len(lines)
    if offset > total:
        raise RetriableError(
            f"offset {offset} is past the end: {shown_as!r} has {total} lines. Use an offset from 1 to {total}."
        )
    end = min(total, offset - 1 + limit)
    out = []
    for number in range(offset, end + 1):
        line = lines[number - 1].removesuffix("\r")
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line clipped: {len(line) - MAX_LINE_CHARS} more characters]"
        out.append(f"{number:>6}\t{line}")
    if end < total:
        out.append(f"(showing lines {offset}-{end} of {total}; read again with offset={end + 1} to continue)")
    return "\n".join(out)


def list_dir(root: Path, path: str = "", depth: int = 1) -> str:
    """List the directory ``root/path``: flat for ``depth=1``, else an ASCII tree.

    Directories come first, then files, each sorted case-insensitively; a directory ends
    with ``/``, a symlink with ``@`` (listed among the files, never followed). ``depth``
    is how many levels to show (0 = all). The contents of :data:`SKIPPED_DIRS` are not
    listed: such a directory shows as ``.git/ (skipped)``. At most
    :data:`MAX_LIST_ENTRIES` entries are shown, then a notice says the listing was cut.

    A flat listing is one name per line. A tree starts with the listed directory
    (``./`` for the root) and draws each level with ``├── ``, ``└── `` and ``│   ``.

    Raises:
        RetriableError: ``path`` escapes the root, does not exist, or is a file;
            ``depth`` is negative.
    """
    if depth < 0:
        raise RetriableError(f"depth must be 0 (all levels) or more (got {depth}).")
    real_root = resolve_in_root(root, "")
    target = resolve_in_root(root, path)
    shown = path or "."
    if not target.is_dir():
        if target.exists():
            raise RetriableError(f"{shown!r} is a file, not a directory. Read it instead of listing it.")
        raise RetriableError(f"Directory {shown!r} does not exist. Call workspace_glob to find paths.")
    lines: list[str] = []
    budget = [MAX_LIST_ENTRIES]
    if depth == 1:
        _list_level(str(target), "", 1, depth=1, lines=lines, budget=budget, flat=True)
    else:
        rel = relative(real_root, target)
        lines.append("./" if rel == "." else rel + "/")
        _list_level(str(target), "", 1, depth=depth, lines=lines, budget=budget, flat=False)
    if budget[0] < 0:
        lines.append(f"(listing cut at {MAX_LIST_ENTRIES} entries; list a subdirectory or use a smaller depth)")
    elif not lines or (depth != 1 and len(lines) == 1):
        lines.append("(empty directory)")
    return "\n".join(lines)


def _list_level(
    directory: str,
    indent: str,
    level: int,
    *,
    depth: int,
    lines: list[str],
    budget: list[int],
    flat: bool,
) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        lines.append(f"{indent}(cannot list: {exc.strerror or exc})")
        return
    dirs: list[os.DirEntry[str]] = []
    files: list[os.DirEntry[str]] = []
    for entry in entries:
        try:
            (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry)
        except OSError:
            files.append(entry)
    dirs.sort(key=lambda e: (e.name.casefold(), e.name))
    files.sort(key=lambda e: (e.name.casefold(), e.name))
    ordered = [(e, True) for e in dirs] + [(e, False) for e in files]
    for index, (entry, is_dir) in enumerate(ordered):
        if budget[0] <= 0:
            budget[0] = -1
            return
        budget[0] -= 1
        last = index == len(ordered) - 1
        if is_dir:
            label = display_name(entry.name) + "/"
            if entry.name in SKIPPED_DIRS:
                label += " (skipped)"
        else:
            label = display_name(entry.name) + ("@" if entry.is_symlink() else "")
        if flat:
            lines.append(label)
            continue
        lines.append(f"{indent}{'└── ' if last else '├── '}{label}")
        if is_dir and entry.name not in SKIPPED_DIRS and (depth == 0 or level < depth):
            child_indent = indent + ("    " if last else "│   ")
            _list_level(entry.path, child_indent, level + 1, depth=depth, lines=lines, budget=budget, flat=False)
            if budget[0] < 0:
                return


def _fsync_directory(directory: Path) -> None:
    # Some file systems refuse to open or sync a directory; the rename is done anyway.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
