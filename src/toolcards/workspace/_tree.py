"""``Tree``: a workspace tree, reached only through directory handles of its root.

Models and sandboxed commands may rename, swap and link a tree's directories while a tool runs
(``renameat2(RENAME_EXCHANGE)`` flips a directory and a symlink atomically). So a path is
never checked and then reopened by name: every operation opens the root (``O_DIRECTORY``),
walks the path one component at a time, each step an ``openat`` of one name with
``O_NOFOLLOW``, and works relative to the last directory reached. Whatever is swapped
meanwhile, a step lands on a real directory inside the tree or is refused.

**Paths.** ``""`` and ``"."`` name the root; an absolute path, a NUL byte or invalid text is
refused; ``..`` returns to the directory the walk came from and is refused at the root
(``openat2``'s ``RESOLVE_BENEATH``). **Symbolic links** are followed only while they stay
inside, their target walked the same way from the link's directory; one leading out, or more
than :data:`MAX_SYMLINKS` in a path, is refused (:data:`~toolcards.workspace._paths.ESCAPE_MESSAGE`).
Reads and writes follow a last-component link (a write replaces the target);
:meth:`Tree.unlink` and :meth:`Tree.remove_directory` act on the link itself. Canonical paths
(:attr:`OpenFile.rel`, the ``rel`` results) name where the walk arrived, so two spellings of
one file are one path for the write gate.

**Only regular files** are read or written: opened ``O_NONBLOCK`` (a named pipe or a leased
file cannot block) and checked with ``fstat``; anything else is refused by name
(:func:`~toolcards.workspace._os_errors.not_regular_error`). **Writes** are atomic
(:func:`~toolcards.fs._atomic_write.atomic_write_at` in the target's directory): a temporary
file, ``fdatasync``, ``renameat``; on failure the target is untouched. ``sync_directory=True``
also syncs the directory (so the rename survives a power loss); ``sync_data=False`` skips the
flush (the workspace's ``sync="off"``).

**Errors** are translated once (:mod:`toolcards.workspace._os_errors`), naming the
workspace-relative path in words, never the host path. Loops whose length depends on the tree
call :func:`~toolcards.core._deadline.check_deadline`.

A ``Tree`` holds no descriptor between calls (each opens the root by its path, which the
sandbox cannot rename: it is its mount point), so it is thread-safe and needs no closing;
:class:`OpenFile` and :class:`Directory` hold theirs for their ``with`` block. Everything here
blocks on disk I/O.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import itertools
import operator
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

from toolcards.core._deadline import check_deadline
from toolcards.errors import RetriableError, ToolFailed
from toolcards.fs._atomic_write import atomic_write_at
from toolcards.workspace._os_errors import Doing, describe, file_error, kind_of, not_regular_error
from toolcards.workspace._paths import ESCAPE_MESSAGE, OWN_DIR

__all__ = [
    "MAX_SYMLINKS",
    "READ_CHUNK_BYTES",
    "Directory",
    "Entry",
    "FileBytes",
    "OpenFile",
    "Tree",
    "format_size",
]

MAX_SYMLINKS = 40
"""Symbolic links one path may pass through (the kernel's own limit)."""

READ_CHUNK_BYTES = 256 * 1024
"""Bytes read at a time when a file is streamed."""

MAX_SCAN_ENTRIES = 10_000
"""Entries :meth:`Directory.entries` reads of one directory at most."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_RETRIES = 16
"""How often one step is retried when what it found changed under it (a swap in progress)."""
_CHANGING: frozenset[Doing] = frozenset({"write", "edit", "delete", "create directory", "remove directory"})
"""What a walk does that changes the tree: such a walk never enters :data:`OWN_DIR`."""
_MAX_REMOVE_DEPTH = 256
"""How deep :meth:`Tree.remove_directory` descends (it holds two descriptors per level)."""

T = TypeVar("T")


class _IsLink(Exception):
    """Raised by a last-step operation that found a symbolic link where it acted."""


@dataclass(frozen=True, kw_only=True)
class FileBytes:
    """A whole regular file, as :meth:`Tree.read_bytes` read it."""

    rel: str
    """Where it is (or would be): its canonical workspace-relative path."""
    data: bytes | None
    """Its content; ``None`` when nothing is there (only with ``missing_ok``)."""
    mode: int | None
    """Its permission bits (``None`` with ``data``)."""


class Entry(NamedTuple):
    """One name in a directory, as :meth:`Directory.entries` lists it (links not followed).

    A named tuple: a listing makes one per name, and a tuple is the cheapest record to make.
    """

    name: str
    """The name (with undecodable bytes as surrogates, as ``os`` gives them)."""
    kind: int
    """``stat.S_IFMT`` of the entry itself: ``S_IFDIR``, ``S_IFREG``, ``S_IFLNK``, ``S_IFIFO``..."""

    @property
    def is_directory(self) -> bool:
        """Whether it is a directory (a link to one is not)."""
        return self.kind == stat.S_IFDIR


class OpenFile:
    """A regular file of a tree, open for reading; use it as a context manager.

    Obtained from :meth:`Tree.open_file`. Its descriptor refers to the file that was
    opened, whatever is renamed or swapped afterwards.
    """

    def __init__(self, fd: int, rel: str, status: os.stat_result, stamped_ns: int | None = None) -> None:
        self.fd = fd
        """The open descriptor (``O_RDONLY | O_NONBLOCK``); closed by :meth:`close`."""
        self.rel = rel
        """Its canonical workspace-relative path."""
        self.status = status
        """Its ``fstat`` when it was opened."""
        self.stamped_ns = stamped_ns
        """The wall clock (``time.time_ns()``) just before that ``fstat``, when known: what
        tells whether a read of it may be kept (:func:`toolcards.workspace._kept.settled`)."""
        self._at_start = True

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def size(self) -> int:
        """Its size in bytes when it was opened."""
        return self.status.st_size

    def chunks(self, chunk_bytes: int = READ_CHUNK_BYTES) -> Iterator[bytes]:
        """Its content from the start, ``chunk_bytes`` at a time, checking the deadline.

        Raises:
            RetriableError: the file changed while it was read (its size or modification
                time is not what it was when opened): read it again.
            ToolFailed: an OS error (an input/output error...), in words.
        """
        try:
            if not self._at_start:
                os.lseek(self.fd, 0, os.SEEK_SET)
            self._at_start = False
            remaining = self.status.st_size
            while True:
                check_deadline()
                # One byte past the expected end, so a file read whole ends in one call.
                want = min(chunk_bytes, remaining + 1) if remaining >= 0 else chunk_bytes
                block = os.read(self.fd, want)
                if not block:
                    break
                remaining -= len(block)
                yield block
                if remaining == 0 and len(block) < want:
                    # Short of the byte past the size fstat gave: the end, without a read to
                    # hear it. A file that grew meanwhile shows in the fstat below.
                    break
            after = os.fstat(self.fd)
        except OSError as exc:
            raise file_error(exc, "read", self.rel) from exc
        if remaining != 0 or (after.st_size, after.st_mtime_ns) != (self.status.st_size, self.status.st_mtime_ns):
            raise RetriableError(f"{self.rel!r} changed while it was being read. Read it again.")

    def read_all(self, max_bytes: int, *, too_large: str) -> bytes:
        """The whole content, when it is at most ``max_bytes`` long.

        Raises:
            RetriableError: the file is larger (the message gives both sizes, then
                ``too_large``, a sentence saying what to do instead), or it changed while
                it was read.
        """
        if self.size > max_bytes:
            raise self._too_large(self.size, max_bytes, too_large)
        parts: list[bytes] = []
        total = 0
        for block in self.chunks():
            total += len(block)
            if total > max_bytes:
                raise self._too_large(total, max_bytes, too_large)
            parts.append(block)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def digest(self) -> str:
        """The SHA-256 of the whole content (as ``content_digest`` gives it), streamed."""
        hasher = hashlib.sha256()
        for block in self.chunks():
            hasher.update(block)
        return hasher.hexdigest()

    def _too_large(self, size: int, limit: int, hint: str) -> RetriableError:
        shown = format_size(size)
        if shown == format_size(limit):
            shown += f" ({size:,} bytes)"
        return RetriableError(f"{self.rel!r} is {shown}, more than the {format_size(limit)} this tool handles. {hint}")


class Directory:
    """A directory of a tree, open by handle; use it as a context manager.

    Obtained from :meth:`Tree.directory` (or :meth:`Directory.child`). Its entries and
    sub-directories are reached through its descriptor, never by path, so a walk built on
    it cannot be led out of the tree by a rename or a link.
    """

    def __init__(self, fd: int, rel: str) -> None:
        self.fd = fd
        """The open descriptor (``O_DIRECTORY``); closed by :meth:`close`."""
        self.rel = rel
        """Its canonical workspace-relative path (``"."`` for the root)."""

    def __enter__(self) -> Directory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def child_rel(self, name: str) -> str:
        """The workspace-relative path of ``name`` in this directory."""
        return name if self.rel == "." else f"{self.rel}/{name}"

    def entries(self, limit: int = MAX_SCAN_ENTRIES) -> tuple[list[Entry], bool]:
        """Up to ``limit`` entries, in the order the file system gives them, and whether
        there were more (:meth:`kinds`, as records).

        Raises:
            ToolFailed: the directory cannot be read (permission denied...), in words.
        """
        found, more = self.kinds(limit)
        return list(map(Entry._make, found.items())), more

    def kinds(self, limit: int = MAX_SCAN_ENTRIES) -> tuple[dict[str, int], bool]:
        """Up to ``limit`` names, each with its kind (``stat.S_IFMT`` of the entry itself, as
        :attr:`Entry.kind`), in the order the file system gives them, and whether there were
        more. Nothing is followed; the deadline is checked as it reads.

        Read in blocks made in C-level passes (a listing reads every name of a directory):
        the kinds are asked name by name only in a block holding something other than
        regular files.

        Raises:
            ToolFailed: the directory cannot be read (permission denied...), in words.
        """
        found: dict[str, int] = {}
        try:
            with os.scandir(self.fd) as scan:
                while len(found) < limit:  # in blocks, the deadline checked before each
                    check_deadline()
                    items = list(itertools.islice(scan, min(256, limit - len(found))))
                    if not items:
                        return found, False
                    names = map(_name_of, items)
                    if _all_regular_files(items):
                        found.update(zip(names, itertools.repeat(stat.S_IFREG)))
                    else:
                        found.update(zip(names, map(_kind, items), strict=True))
                return found, next(scan, None) is not None
        except OSError as exc:
            raise file_error(exc, "list", self.rel) from exc

    def child(self, name: str) -> Directory:
        """The sub-directory ``name`` (never through a link), open.

        Raises:
            RetriableError / ToolFailed: it is not a directory any more, or cannot be opened.
        """
        try:
            fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            raise file_error(exc, "list", self.child_rel(name)) from exc
        return Directory(fd, self.child_rel(name))

    def open_file(self, name: str) -> OpenFile:
        """The regular file ``name`` in this directory (never through a link), open.

        Raises:
            RetriableError: it is a link, a directory, a named pipe, a socket or a device,
                or it is gone. ToolFailed: it cannot be opened (permission denied...).
        """
        rel = self.child_rel(name)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RetriableError(f"{rel!r} is a symbolic link; it is not followed here.") from exc
            raise _open_error(exc, self.fd, name, rel, "read") from exc
        return _checked_regular(fd, rel, "read")


class Tree:
    """The workspace tree at ``root``; every operation walks from a handle of its root.

    See the module docstring for how paths, links and errors are handled. ``root`` must
    exist (an operation on a missing root fails with ``ToolFailed``).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        """The tree's root directory, opened by this path at each operation."""

    @functools.cached_property
    def real_root(self) -> str:
        """The real path of the root, against which absolute link targets are checked."""
        return os.path.realpath(self.root)

    # -- reading --------------------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The canonical workspace-relative path of ``path`` (which need not exist).

        Raises:
            RetriableError: the path leaves the tree, is absolute or invalid.
        """
        return self._at(path, "read", lambda fd, name, rel: rel, missing=lambda rel: rel)[0]

    def open_file(self, path: str, doing: Doing = "read") -> OpenFile:
        """The regular file at ``path``, open for reading (links inside the tree followed).

        Use the result as a context manager.

        Raises:
            RetriableError: it is missing, a directory, a named pipe, a socket or a device;
                the path leaves the tree. ToolFailed: it cannot be opened (in words).
        """
        opened, _ = self._open_regular(path, doing, missing_ok=False)
        assert opened is not None
        return opened

    def read_bytes(
        self, path: str, *, max_bytes: int, too_large: str, doing: Doing = "read", missing_ok: bool = False
    ) -> FileBytes:
        """The whole regular file at ``path``, when it is at most ``max_bytes`` long.

        With ``missing_ok`` a path where nothing is (or below a file) gives a
        :class:`FileBytes` whose ``data`` is ``None``.

        Raises:
            RetriableError: as :meth:`open_file`; or it is larger than ``max_bytes`` (the
                message ends with ``too_large``), or changed while it was read.
        """
        opened, rel = self._open_regular(path, doing, missing_ok=missing_ok)
        if opened is None:  # the walk says where it would be: no second walk to name it
            return FileBytes(rel=rel, data=None, mode=None)
        with opened:
            data = opened.read_all(max_bytes, too_large=too_large)
        return FileBytes(rel=opened.rel, data=data, mode=stat.S_IMODE(opened.status.st_mode))

    def kind(self, path: str) -> int | None:
        """``stat.S_IFMT`` of what ``path`` names (links inside the tree followed), or
        ``None`` when nothing is there (or a parent is a file).

        Raises:
            RetriableError: the path leaves the tree or is invalid.
        """

        def status(dir_fd: int, name: str, rel: str) -> int | None:
            try:
                mode = os.lstat(name, dir_fd=dir_fd).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as exc:
                raise file_error(exc, "read", rel) from exc
            if stat.S_ISLNK(mode):
                raise _IsLink
            return stat.S_IFMT(mode)

        return self._at(path, "read", status, missing=lambda rel: None)[0]

    def status(self, path: str) -> os.stat_result | None:
        """The ``lstat`` of what ``path`` names, its last component not followed (a link is
        reported as a link), or ``None`` when nothing is there.

        Raises:
            RetriableError: the path leaves the tree or is invalid.
        """

        def status_of(dir_fd: int, name: str, rel: str) -> os.stat_result | None:
            try:
                return os.lstat(name, dir_fd=dir_fd)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as exc:
                raise file_error(exc, "read", rel) from exc

        return self._at(path, "read", status_of, follow_last=False, missing=lambda rel: None)[0]

    def created(self, path: str) -> float | None:
        """When what ``path`` names was created (its last component not followed), where the
        system records it (:func:`~toolcards.workspace._birth_time.birth_time`); else ``None``.

        Raises:
            RetriableError: the path leaves the tree or is invalid.
        """
        from toolcards.workspace._birth_time import birth_time

        def created_at(dir_fd: int, name: str, rel: str) -> float | None:
            return birth_time(dir_fd, name)

        return self._at(path, "read", created_at, follow_last=False, missing=lambda rel: None)[0]

    def directory(self, path: str, doing: Doing = "list") -> Directory:
        """The directory at ``path`` (links inside the tree followed), open.

        Use the result as a context manager.

        Raises:
            RetriableError: it is missing or a file; the path leaves the tree.
        """

        def open_last(dir_fd: int, name: str, rel: str) -> Directory:
            try:
                return Directory(os.open(name, _DIRECTORY_FLAGS, dir_fd=dir_fd), rel)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _in_flux(dir_fd, name):
                    raise _IsLink from None  # a link, or one a moment ago: resolved again
                raise file_error(exc, doing, rel) from exc

        return self._at(path, doing, open_last)[0]

    # -- changing -----------------------------------------------------------------------------------

    def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        mode: int | None = None,
        sync_data: bool = True,
        sync_directory: bool = False,
    ) -> str:
        """Replace (or create) the regular file at ``path`` with ``data``, atomically.

        Missing parent directories are created. A link at ``path`` that stays inside the
        tree is followed (its target is replaced). See the module docstring for durability.

        Args:
            mode: permission bits. Default: those of the file replaced, or ``0o666`` less
                the umask for a new one.
            sync_data: flush the file before renaming it into place (see
                :func:`~toolcards.fs._atomic_write.atomic_write_at`).
            sync_directory: also ``fsync`` the directory, so the rename survives a power loss.

        Returns the canonical workspace-relative path written.

        Raises:
            RetriableError: ``path`` is a directory, a named pipe, a socket or a device; a
                parent is a file; the path leaves the tree.
            ToolFailed: any other OS error (no space left on the device, permission
                denied...), in words. The target is untouched.
        """

        def write_last(dir_fd: int, name: str, rel: str) -> str:
            try:
                current: os.stat_result | None = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                current = None
            except OSError as exc:
                raise file_error(exc, "write", rel) from exc
            keep = mode
            if current is not None:
                if stat.S_ISLNK(current.st_mode):
                    raise _IsLink
                if not stat.S_ISREG(current.st_mode):
                    raise not_regular_error(current.st_mode, "write", rel)
                if keep is None:
                    keep = stat.S_IMODE(current.st_mode)
            _replace(dir_fd, name, rel, data, keep, sync_data, sync_directory)
            return rel

        return self._at(path, "write", write_last, create_parents=True)[0]

    def unlink(self, path: str, *, sync_directory: bool = False) -> str:
        """Delete the regular file (or the symbolic link itself) at ``path``; with
        ``sync_directory`` the directory is flushed after, so the deletion survives a power loss.

        Returns its canonical workspace-relative path.

        Raises:
            RetriableError: it is missing, a directory, a named pipe, a socket or a device.
            ToolFailed: it cannot be deleted (permission denied...), in words.
        """

        def unlink_last(dir_fd: int, name: str, rel: str) -> str:
            try:
                mode = os.lstat(name, dir_fd=dir_fd).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    raise not_regular_error(mode, "delete", rel)
                os.unlink(name, dir_fd=dir_fd)
            except OSError as exc:
                raise file_error(exc, "delete", rel) from exc
            if sync_directory:
                with contextlib.suppress(OSError):  # some file systems refuse to sync a directory
                    os.fsync(dir_fd)
            return rel

        return self._at(path, "delete", unlink_last, follow_last=False)[0]

    def rename(self, source: str, destination: str, *, replace: bool = False, sync_directory: bool = False) -> str:
        """Move what is at ``source`` (a file, a directory, a symbolic link itself) to
        ``destination``, in one ``rename``: atomic, its content never copied.

        Missing parent directories of ``destination`` are created. Without ``replace``
        nothing at ``destination`` is ever replaced (``RENAME_NOREPLACE`` where the system
        has it: see :func:`~toolcards.fs._atomic_write.rename_noreplace_at`); with it a
        file there is replaced atomically. The caller checks what the two paths name; this
        only refuses what the system refuses, in words. With ``sync_directory`` both
        directories are flushed after.

        Returns the canonical workspace-relative path of ``destination``.

        Raises:
            RetriableError: ``source`` is missing; something is at ``destination`` (without
                ``replace``); a directory would go into itself; a path leaves the tree.
            ToolFailed: any other OS error, in words.
        """
        from toolcards.fs._atomic_write import rename_noreplace_at

        def move_from(src_fd: int, src_name: str, src_rel: str) -> str:
            def move_to(dst_fd: int, dst_name: str, dst_rel: str) -> str:
                try:
                    if replace:
                        os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                    else:
                        rename_noreplace_at(src_fd, src_name, dst_fd, dst_name)
                except FileNotFoundError as exc:
                    raise RetriableError(
                        f"Nothing is at {src_rel!r}. Call workspace_glob to find the right path."
                    ) from exc
                except (FileExistsError, IsADirectoryError, NotADirectoryError) as exc:
                    raise RetriableError(
                        f"{dst_rel!r} already exists, so {src_rel!r} was not moved. Choose another destination."
                    ) from exc
                except OSError as exc:
                    if exc.errno == errno.ENOTEMPTY:
                        raise RetriableError(
                            f"{dst_rel!r} is a directory that is not empty: choose another destination."
                        ) from exc
                    if exc.errno == errno.EINVAL:
                        raise RetriableError(f"{src_rel!r} cannot be moved into itself.") from exc
                    raise ToolFailed(f"Cannot move {src_rel!r} to {dst_rel!r}: {describe(exc)}.") from exc
                if replace:
                    _unlink_hard_link_left(src_fd, src_name, dst_fd, dst_name)
                if sync_directory:
                    for fd in {src_fd, dst_fd}:
                        with contextlib.suppress(OSError):
                            os.fsync(fd)
                return dst_rel

            return self._at(destination, "write", move_to, follow_last=False, create_parents=True)[0]

        return self._at(source, "read", move_from, follow_last=False, changes=True)[0]

    def make_directory(self, path: str) -> tuple[str, bool]:
        """Create the directory ``path`` and its missing parents.

        Returns its canonical workspace-relative path and whether it was created (``False``:
        it already existed).

        Raises:
            RetriableError: it or a parent is a file; the path leaves the tree.
        """

        def make_last(dir_fd: int, name: str, rel: str) -> tuple[str, bool]:
            try:
                os.mkdir(name, 0o777, dir_fd=dir_fd)
                return rel, True
            except FileExistsError:
                pass
            except OSError as exc:
                raise file_error(exc, "create directory", rel) from exc
            try:
                mode = os.lstat(name, dir_fd=dir_fd).st_mode
            except OSError as exc:
                raise file_error(exc, "create directory", rel) from exc
            if stat.S_ISLNK(mode):
                raise _IsLink
            if not stat.S_ISDIR(mode):
                raise file_error(OSError(errno.EEXIST, "exists"), "create directory", rel)
            return rel, False

        return self._at(path, "create directory", make_last, create_parents=True)[0]

    def remove_directory(self, path: str, *, recursive: bool = False) -> str:
        """Remove the directory ``path``: an empty one, or with everything in it.

        The walk of a recursive removal goes by handles and never follows a link (links
        inside are removed, not what they point to); it checks the deadline as it goes and
        descends at most 256 levels. The root cannot be removed.

        Returns its canonical workspace-relative path.

        Raises:
            RetriableError: it is missing, a file or a link, not empty (without
                ``recursive``; the message counts its entries), or the root.
            ToolFailed: some of it could not be removed (the message names up to five
                paths and why).
        """

        def remove_last(dir_fd: int, name: str, rel: str) -> str:
            if rel == ".":
                raise RetriableError("The workspace root cannot be removed. Remove the paths inside it instead.")
            try:
                mode = os.lstat(name, dir_fd=dir_fd).st_mode
            except OSError as exc:
                raise file_error(exc, "remove directory", rel) from exc
            if stat.S_ISLNK(mode):
                raise RetriableError(f"{rel!r} is a symbolic link, not a directory. Delete it with workspace_delete.")
            if stat.S_ISREG(mode):
                raise file_error(OSError(errno.ENOTDIR, "not a directory"), "remove directory", rel)
            if not stat.S_ISDIR(mode):
                raise RetriableError(f"{rel!r} is {kind_of(mode)}, not a directory. Choose a directory path.")
            if recursive:
                failures: list[str] = []
                _remove_tree(dir_fd, name, rel, failures, depth=0)
                if failures:
                    raise ToolFailed(f"Could not remove all of {rel!r}: {'; '.join(failures[:5])}.")
                return rel
            try:
                os.rmdir(name, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise file_error(exc, "remove directory", rel) from exc
                count, more = _count_entries(dir_fd, name)
                entries = f"more than {count:,} entries" if more else f"{count} entr{'y' if count == 1 else 'ies'}"
                raise RetriableError(
                    f"Directory {rel!r} is not empty ({entries}). Pass recursive=true to remove it with "
                    "everything in it."
                ) from exc
            return rel

        return self._at(path, "remove directory", remove_last, follow_last=False)[0]

    # -- the walk ------------------------------------------------------------------------------------

    def _open_regular(self, path: str, doing: Doing, *, missing_ok: bool) -> tuple[OpenFile | None, str]:
        def open_last(dir_fd: int, name: str, rel: str) -> OpenFile | None:
            try:
                fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _IsLink from None
                if missing_ok and exc.errno == errno.ENOENT:
                    return None
                raise _open_error(exc, dir_fd, name, rel, doing) from exc
            return _checked_regular(fd, rel, doing)

        return self._at(path, doing, open_last, missing=(lambda rel: None) if missing_ok else None)

    def _at(
        self,
        path: str,
        doing: Doing,
        last: Callable[[int, str, str], T],
        *,
        follow_last: bool = True,
        create_parents: bool = False,
        missing: Callable[[str], T] | None = None,
        changes: bool | None = None,
    ) -> tuple[T, str]:
        """Walk ``path`` from the root and return ``last(dir_fd, name, rel)``, run on its
        last component in the handle of the directory that holds it, and ``rel``.

        ``last`` raises :class:`_IsLink` when it found a link where it acted: with
        ``follow_last`` the link's target is walked on from there and ``last`` runs again
        where it leads. With ``create_parents`` missing directories on the way are created.
        With ``missing``, a directory on the way that does not exist (or is a file) ends
        the walk with ``missing(rel)``, ``rel`` being where the path would be. A path that
        names a directory (the root, or one ending in ``..``) runs ``last`` on ``"."`` in it.
        A walk that ``changes`` the tree (by default: one ``doing`` a change) is refused at
        :data:`~toolcards.workspace._paths.OWN_DIR`, however it got there.
        """
        walk = _Walk(self, path, doing, changes=doing in _CHANGING if changes is None else changes)
        try:
            while True:
                if not walk.pending:
                    return walk.finish_in_directory(last)
                name = walk.pending.pop()
                if name == "..":
                    walk.up()
                    continue
                if walk.pending:
                    found = walk.descend(name, create_parents=create_parents, missing=missing)
                else:
                    found = walk.finish(name, last, follow_last=follow_last)
                if found is not None:
                    return found
        finally:
            walk.close()

    def _open_root(self, doing: Doing) -> int:
        try:
            return os.open(self.root, _DIRECTORY_FLAGS)
        except OSError as exc:
            raise ToolFailed(
                f"Cannot {doing} in the workspace: its root directory cannot be opened ({describe(exc)})."
            ) from exc

    def _reopen(self, root_fd: int, fd: int, names: list[str], path: str) -> int:
        """The directory ``names`` (already walked, so real directories), opened anew from the root."""
        if fd != root_fd:
            os.close(fd)
        current = root_fd
        for index, name in enumerate(names):
            try:
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=current)
            except OSError as exc:
                if current != root_fd:
                    os.close(current)
                rel = "/".join(names[: index + 1])
                raise RetriableError(
                    f"{rel!r} changed while {path!r} was being resolved ({describe(exc)}). Retry."
                ) from exc
            if current != root_fd:
                os.close(current)
            current = child
        return current

    def _follow(self, target: str, links: int, pending: list[str], names: list[str], path: str) -> int:
        """Queue the components of a link's ``target``; return the new link count.

        An absolute target is accepted only under the root's real path; then ``names`` is
        emptied (the walk goes on from the root; the caller moves back to the root handle).
        """
        links += 1
        if links > MAX_SYMLINKS:
            raise RetriableError(f"Cannot resolve {path!r}: too many levels of symbolic links.")
        if target.startswith("/"):
            prefix = self.real_root.rstrip("/") + "/"
            if target.rstrip("/") == self.real_root:
                target = ""
            elif target.startswith(prefix):
                target = target[len(prefix) :]
            else:
                raise _escape(path)
            names.clear()
        pending.extend(reversed([part for part in target.split("/") if part not in ("", ".")]))
        return links


class _Walk:
    """One walk of :meth:`Tree._at`: the directory it stands in and the components left.

    ``fd`` is the handle of the directory ``names`` leads to (the root's handle while
    ``names`` is empty); ``pending`` holds the components still to walk, the next last.
    """

    def __init__(self, tree: Tree, path: str, doing: Doing, *, changes: bool) -> None:
        self.tree = tree
        self.path = path
        self.doing = doing
        self.changes = changes
        self.pending = _components(path)
        self.pending.reverse()
        self.root_fd = tree._open_root(doing)
        self.fd = self.root_fd
        self.names: list[str] = []
        self.links = 0
        self.retries = 0
        self.made = 0
        self.components = len(self.pending)

    def close(self) -> None:
        if self.fd != self.root_fd:
            os.close(self.fd)
        os.close(self.root_fd)

    def up(self) -> None:
        """Walk ``..``: open the parent anew from the root (never past it)."""
        if not self.names:
            raise _escape(self.path)
        self.names.pop()
        self.fd = self.tree._reopen(self.root_fd, self.fd, self.names, self.path)

    def finish_in_directory(self, last: Callable[[int, str, str], T]) -> tuple[T, str]:
        """Nothing is left: run ``last`` on ``"."`` in the directory reached."""
        rel = "/".join(self.names) or "."
        try:
            return last(self.fd, ".", rel), rel
        except _IsLink:  # "." is never a link
            raise RetriableError(f"{rel!r} changed while it was being opened. Retry.") from None

    def finish(self, name: str, last: Callable[[int, str, str], T], *, follow_last: bool) -> tuple[T, str] | None:
        """Run ``last`` on the last component; None when it was a link the walk now follows."""
        rel = "/".join([*self.names, name])
        self._keep_out(name)
        try:
            return last(self.fd, name, rel), rel
        except _IsLink:
            if not follow_last:
                raise RetriableError(f"{rel!r} changed while it was being changed. Retry.") from None
        target = _link_target(self.fd, name)
        if target is None:  # no longer a link: try again
            self._retry(name, rel)
        else:
            self._follow(target)
        return None

    def descend(self, name: str, *, create_parents: bool, missing: Callable[[str], T] | None) -> tuple[T, str] | None:
        """Step into the directory ``name``; the walk's end when ``missing`` decides it, else None."""
        self._keep_out(name)
        try:
            child = os.open(name, _DIRECTORY_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            return self._not_entered(exc, name, create_parents=create_parents, missing=missing)
        if self.fd != self.root_fd:
            os.close(self.fd)
        self.fd = child
        self.names.append(name)
        return None

    def _not_entered(
        self, exc: OSError, name: str, *, create_parents: bool, missing: Callable[[str], T] | None
    ) -> tuple[T, str] | None:
        """``name`` could not be opened as a directory: follow, retry, create, end or raise."""
        here = "/".join([*self.names, name])
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            target = _link_target(self.fd, name)
            if target is not None:
                self._follow(target)
                return None
            if exc.errno == errno.ELOOP or _in_flux(self.fd, name):  # swapped while we looked
                self._retry(name, here)
                return None
        if exc.errno == errno.ENOENT and create_parents:
            try:
                os.mkdir(name, 0o777, dir_fd=self.fd)
            except FileExistsError:  # made (or swapped) by someone else meanwhile: look again
                self._retry(name, here)
                return None
            except OSError as made:
                raise file_error(made, self.doing, _joined(self.names, name, self.pending)) from made
            self._made(name, here)
            return None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and missing is not None:
            rel = _lexical([*self.names, name], self.pending, self.path)
            return missing(rel), rel
        raise _walk_error(exc, self.doing, here, _joined(self.names, name, self.pending)) from exc

    def _keep_out(self, name: str) -> None:
        if self.changes and not self.names and name == OWN_DIR:
            raise RetriableError(
                f"{OWN_DIR}/ is toolcards' own folder (spilled outputs): tools may read it but not change "
                f"it, so {self.path!r} was left alone. Choose a path outside it."
            )

    def _retry(self, name: str, rel: str) -> None:
        self.retries = _retry(self.retries, rel)
        self.pending.append(name)

    def _made(self, name: str, rel: str) -> None:
        """Enter a parent just made. Making one is not a retry, so a new chain of any depth
        is made whole; past one per component of the path, something keeps removing them."""
        self.made += 1
        if self.made > self.components:
            self._retry(name, rel)
        else:
            self.pending.append(name)

    def _follow(self, target: str) -> None:
        self.links = self.tree._follow(target, self.links, self.pending, self.names, self.path)
        if not self.names and self.fd != self.root_fd:
            os.close(self.fd)
            self.fd = self.root_fd


# -- helpers of the walk and the operations --------------------------------------------------------


def _components(path: str) -> list[str]:
    if "\x00" in path or path.startswith(("/", "\\")):
        raise _escape(path)
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise RetriableError(f"The path {path!r} is not valid text (it holds a lone surrogate). Fix it.") from None
    return [part for part in path.split("/") if part not in ("", ".")]


def _unlink_hard_link_left(src_fd: int, src_name: str, dst_fd: int, dst_name: str) -> None:
    """Finish a rename the system did not do: when both names were hard links of one file,
    ``rename`` succeeds and changes nothing, so the source name is removed here. A name that
    differs only in case may be the same entry (a case-insensitive directory): it is kept."""
    try:
        if src_name.casefold() == dst_name.casefold():
            here, there = os.fstat(src_fd), os.fstat(dst_fd)
            if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
                return
        left = os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)
        moved = os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False)
    except OSError:
        return
    if (left.st_dev, left.st_ino) == (moved.st_dev, moved.st_ino):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(src_name, dir_fd=src_fd)


def _escape(path: str) -> RetriableError:
    return RetriableError(f"{ESCAPE_MESSAGE} (got {path!r})")


def _retry(retries: int, rel: str) -> int:
    if retries >= _RETRIES:
        raise RetriableError(f"{rel!r} kept changing while it was being opened (renamed or swapped). Retry later.")
    return retries + 1


def _lexical(names: list[str], pending: list[str], path: str) -> str:
    """Where a path that does not exist (yet) would be: the rest of it applied by name."""
    parts = list(names)
    for name in reversed(pending):
        if name == "..":
            if not parts:
                raise _escape(path)
            parts.pop()
        else:
            parts.append(name)
    return "/".join(parts) or "."


def _joined(names: list[str], name: str, pending: list[str]) -> str:
    return "/".join([*names, name, *reversed(pending)])


def _walk_error(exc: OSError, doing: Doing, here: str, whole: str) -> Exception:
    """An error met at the directory ``here`` on the way to ``whole``."""
    if exc.errno == errno.ENOTDIR and doing not in ("write", "create directory"):
        # A parent is a file: for a read, a listing or a removal, nothing is at the path.
        return file_error(OSError(errno.ENOENT, "missing"), doing, whole)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return file_error(exc, doing, whole)
    return file_error(exc, doing, here)


def _link_target(dir_fd: int, name: str) -> str | None:
    """The target of the link ``name``, or ``None`` when it is not (or no longer) a link."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _in_flux(dir_fd: int, name: str) -> bool:
    """Whether ``name``, which just failed to open as a directory, is now a link or a
    directory: it is being swapped, so the step is tried again."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISLNK(mode)


_name_of = operator.attrgetter("name")


_is_regular_file = operator.methodcaller("is_file", follow_symlinks=False)


def _all_regular_files(items: list[os.DirEntry[str]]) -> bool:
    """Whether every one of ``items`` is a regular file itself (what the directory read said:
    no link is followed; ``False`` when one has to be asked and cannot be)."""
    try:
        return all(map(_is_regular_file, items))
    except OSError:
        return False


def _kind(item: os.DirEntry[str]) -> int:
    try:  # regular files first: most entries are
        if item.is_file(follow_symlinks=False):
            return stat.S_IFREG
        if item.is_dir(follow_symlinks=False):
            return stat.S_IFDIR
        if item.is_symlink():
            return stat.S_IFLNK
        return stat.S_IFMT(item.stat(follow_symlinks=False).st_mode)
    except OSError:
        return 0


def _open_error(exc: OSError, dir_fd: int, name: str, rel: str, doing: Doing) -> Exception:
    """Why ``name`` could not be opened: a socket (``ENXIO``) or a device says what it is."""
    if exc.errno not in (errno.ENOENT, errno.EACCES, errno.EPERM):
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            return not_regular_error(mode, doing, rel)
    return file_error(exc, doing, rel)


def _checked_regular(fd: int, rel: str, doing: Doing) -> OpenFile:
    stamped_ns = time.time_ns()
    try:
        status = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise file_error(exc, doing, rel) from exc
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise not_regular_error(status.st_mode, doing, rel)
    return OpenFile(fd, rel, status, stamped_ns)


def _replace(
    dir_fd: int, name: str, rel: str, data: bytes, mode: int | None, sync_data: bool, sync_directory: bool
) -> None:
    try:
        atomic_write_at(dir_fd, name, data, mode=mode, sync_data=sync_data, sync_directory=sync_directory)
    except OSError as exc:
        raise file_error(exc, "write", rel) from exc


def _count_entries(dir_fd: int, name: str) -> tuple[int, bool]:
    try:
        fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=dir_fd)
    except OSError:
        return 0, True
    with Directory(fd, name) as opened:
        found, more = opened.entries()
    return len(found), more


def _remove_tree(parent_fd: int, name: str, rel: str, failures: list[str], *, depth: int) -> None:
    """Remove the directory ``name`` of ``parent_fd`` and everything in it, by handles."""
    if depth >= _MAX_REMOVE_DEPTH:
        failures.append(f"{rel}: nested deeper than {_MAX_REMOVE_DEPTH} levels")
        return
    try:
        fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        failures.append(f"{rel}: {describe(exc)}")
        return
    with Directory(fd, rel) as opened:
        # Read it again until it is empty: a directory emptied while it is read may skip
        # names, and one holds more than a read returns. Stop when a pass removes nothing.
        while True:
            try:
                found, _ = opened.entries()
            except ToolFailed as exc:
                failures.append(str(exc))
                return
            if not found:
                break
            before = len(failures)
            for index, entry in enumerate(found):
                if index % 64 == 0:
                    check_deadline()
                child = opened.child_rel(entry.name)
                if entry.is_directory:
                    _remove_tree(fd, entry.name, child, failures, depth=depth + 1)
                    continue
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except FileNotFoundError:
                    pass
                except IsADirectoryError:  # it became a directory meanwhile
                    _remove_tree(fd, entry.name, child, failures, depth=depth + 1)
                except OSError as exc:
                    failures.append(f"{child}: {describe(exc)}")
            if len(failures) > before:
                return
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except OSError as exc:
        failures.append(f"{rel}: {describe(exc)}")


def format_size(size: int) -> str:
    """``size`` bytes in words a model reads: ``"512 bytes"``, ``"3.2 MB"`` (MB = 2**20 bytes)."""
    if size < 1024:
        return "1 byte" if size == 1 else f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
