"""Replacing a file atomically: a reader sees the old content or the new, never a mix.

:func:`atomic_write_at` is the one implementation for every file toolcards writes whole. The
temporary is created ``O_EXCL | O_NOFOLLOW`` in the target's directory (it can neither exist
already nor be a planted link) with its final permission bits, flushed with ``fdatasync`` and
renamed over the target; on failure it is removed and the target is untouched. The directory is
a descriptor, so a caller that walked to it through handles (the workspace's
:class:`~toolcards.workspace._tree.Tree`) keeps that guarantee; :func:`atomic_write` opens a
path's parent. Errors are the failing step's ``OSError``, for each caller to word.

Without the flush (``sync_data=False``) an existing target is swapped in one
``renameat2(RENAME_EXCHANGE)`` and the old file unlinked, because ext4's ``auto_da_alloc``
would otherwise make a rename over a file pay the flush this mode chose not to pay.
:func:`rename_noreplace_at` never replaces the destination (``RENAME_NOREPLACE``, else a check
and a rename, the caller's lock keeping its own writers out). Blocks on disk I/O.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["Readable", "atomic_write", "atomic_write_at", "rename_noreplace_at"]


class Readable(Protocol):
    """What content can be read from, piece by piece (a binary file, a stream of encoded text)."""

    def read(self, size: int, /) -> bytes:
        """Up to ``size`` more bytes; ``b""`` at the end."""


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_CHUNK_BYTES = 1024 * 1024
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV})
"""What ``renameat2`` answers where a file system or kernel cannot exchange: rename instead."""


def _temporary_name(name: str) -> str:
    token = secrets.token_hex(6)
    return f".{name}.{token}.tmp" if len(os.fsencode(name)) <= 200 else f".toolcards.{token}.tmp"


def atomic_write_at(
    dir_fd: int,
    name: str,
    data: bytes | Readable,
    *,
    mode: int | None = None,
    sync_data: bool = True,
    sync_directory: bool = False,
) -> None:
    """Replace (or create) the file ``name`` in the directory ``dir_fd`` with ``data``, atomically.

    Args:
        data: the content, as bytes or as a binary stream (anything :class:`Readable`) read to
            its end in 1 MiB pieces.
        mode: permission bits, set exactly (whatever the umask). Default: ``0o666`` less the
            umask. A caller that keeps an old file's permissions passes them.
        sync_data: flush the temporary (``fdatasync``) before the rename, so that after a
            power loss the file holds its old or its new content, never a torn or empty
            one. Without it the replacement is still atomic for readers and survives a
            killed process (one killed between the exchange and the unlink leaves the old
            content in a hidden ``.<name>.<token>.tmp`` beside it). Added in 0.2.
        sync_directory: also ``fsync`` the directory, so the rename survives a power loss
            (skipped where the file system refuses to sync a directory).

    Raises:
        OSError: creating, writing, flushing or renaming failed; the target is untouched and
            the temporary removed.
    """
    temporary = _temporary_name(name)
    try:
        fd = os.open(temporary, _TEMP_FLAGS, 0o666 if mode is None else mode, dir_fd=dir_fd)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            if isinstance(data, bytes | bytearray | memoryview):
                _write_all(fd, data)
            else:
                while chunk := data.read(_CHUNK_BYTES):
                    _write_all(fd, chunk)
            if sync_data:
                os.fdatasync(fd) if hasattr(os, "fdatasync") else os.fsync(fd)
        finally:
            os.close(fd)
        if sync_data or not _exchanged(dir_fd, temporary, name):
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
    if sync_directory:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)


def atomic_write(
    path: Path,
    data: bytes | Readable,
    *,
    mode: int | None = None,
    directory_mode: int = 0o777,
    sync_directory: bool = False,
) -> None:
    """:func:`atomic_write_at` for a path: missing parents are made (with ``directory_mode``,
    less the umask), then the file is replaced in its parent directory.

    Raises:
        OSError: as :func:`atomic_write_at`, or a parent could not be made or opened.
    """
    path.parent.mkdir(mode=directory_mode, parents=True, exist_ok=True)
    dir_fd = os.open(path.parent, _DIRECTORY_FLAGS)
    try:
        atomic_write_at(dir_fd, path.name, data, mode=mode, sync_directory=sync_directory)
    finally:
        os.close(dir_fd)


def _exchanged(dir_fd: int, temporary: str, name: str) -> bool:
    """Swap ``temporary`` with an existing ``name`` and unlink what was there; ``False`` (nothing
    done) when ``name`` does not exist or the system cannot exchange.

    Raises:
        OSError: what was at ``name`` cannot be unlinked (a directory put there meanwhile);
            it is swapped back first, so ``name`` is as it was.
    """
    try:
        if not _exchange(dir_fd, temporary, name):
            return False
    except OSError as exc:
        if exc.errno == errno.ENOENT or exc.errno in _UNSUPPORTED:
            return False
        raise
    try:
        os.unlink(temporary, dir_fd=dir_fd)
    except OSError:
        _exchange(dir_fd, temporary, name)
        raise
    return True


def rename_noreplace_at(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """Rename ``src`` (in ``src_dir_fd``) to ``dst`` (in ``dst_dir_fd``), refusing to replace
    anything at ``dst``; atomic where ``renameat2(RENAME_NOREPLACE)`` is offered (see the
    module docstring).

    Raises:
        FileExistsError: something is at ``dst``; nothing was renamed.
        OSError: the rename failed (``src`` missing, another file system...).
    """
    function = _renameat2()
    if function is not None:
        if function(src_dir_fd, os.fsencode(src), dst_dir_fd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        import ctypes

        code = ctypes.get_errno()
        if code not in _UNSUPPORTED or code == errno.EXDEV:
            raise OSError(code, os.strerror(code), dst)
    try:
        os.lstat(dst, dir_fd=dst_dir_fd)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)


_renameat2_function: Callable[[int, bytes, int, bytes, int], int] | None = None
_renameat2_looked_up = False


def _renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    """The C library's ``renameat2`` (Python has no binding; it sets ``errno`` for
    ``ctypes.get_errno``), or ``None`` where there is none (not Linux, or a C library
    without it)."""
    global _renameat2_function, _renameat2_looked_up
    if _renameat2_looked_up:
        return _renameat2_function
    _renameat2_looked_up = True
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: most processes never need it

    function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if function is None:
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    function.restype = ctypes.c_int
    _renameat2_function = function
    return _renameat2_function


def _exchange(dir_fd: int, a: str, b: str) -> bool:
    """Swap ``a`` and ``b`` in ``dir_fd``; ``False`` where the system has no ``renameat2``.

    Raises:
        OSError: the exchange failed.
    """
    function = _renameat2()
    if function is None:
        return False
    if function(dir_fd, os.fsencode(a), dir_fd, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        import ctypes

        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return True


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
