"""What an OS error on a workspace file means, in words a model can act on.

Every ``OSError`` raised while a workspace tool touches a file is translated here, once, by
:func:`file_error`, into the error the model reads: a
:class:`~toolcards.errors.RetriableError` when another path or another call can succeed
(the file is missing, is a directory, a parent is a file, a name is too long), a
:class:`~toolcards.errors.ToolFailed` when the environment is at fault (permission denied,
no space left on the device, a read-only file system, an input/output error). The message
names the file as the caller shows it (its workspace-relative path; never the host path
that ``exc.filename`` may hold), says what happened in words rather than an exception class
name, and, for the common cases, what to call next.

:func:`not_regular_error` does the same for a file that exists but is not a regular file
(a named pipe, a socket, a device): the workspace tools read and write regular files only.

Pure functions: nothing here touches the disk.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Literal

from toolcards.errors import RetriableError, ToolcardsError, ToolFailed

__all__ = ["Doing", "describe", "file_error", "kind_of", "not_regular_error"]

Doing = Literal["read", "write", "edit", "delete", "list", "create directory", "remove directory"]
"""What a tool was doing to a file when the error happened; it picks the message's hint."""

_WORDS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EIO: "an input/output error (the disk or network file system failed)",
    errno.EFBIG: "the file is too large for the file system",
    errno.EMFILE: "too many open files in this process; retry later",
    errno.ENFILE: "too many open files on this host; retry later",
    errno.EAGAIN: "it is busy (another process holds a lease on it); retry later",
    errno.EBUSY: "it is busy (in use by the system)",
    errno.ETXTBSY: "it is a program that is running",
    errno.ESTALE: "the network file system lost track of it; retry",
    errno.ENAMETOOLONG: "a name in the path is too long",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENOENT: "it does not exist",
    errno.ENOTDIR: "a parent of it is a file, not a directory",
    errno.EISDIR: "it is a directory",
    errno.EEXIST: "it already exists",
    errno.ENOTEMPTY: "the directory is not empty",
    errno.EXDEV: "it is on another file system",
    errno.EINVAL: "the file system does not support this operation here",
}

_RETRIABLE = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.ENOTEMPTY,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.ESTALE,
        errno.EAGAIN,
    }
)
"""Errors another path, or the same call a moment later, can get past."""

_MISSING: dict[Doing, str] = {
    "read": "File {0} does not exist. Call workspace_glob to find the right path, then retry.",
    "edit": "File {0} does not exist. To create it use workspace_write; to find a path call workspace_glob.",
    "delete": "File {0} does not exist. Call workspace_glob to find the right path.",
    "list": "Directory {0} does not exist. Call workspace_glob to find paths.",
    "remove directory": "Directory {0} does not exist. Call workspace_list to see what does.",
}

_IS_DIRECTORY: dict[Doing, str] = {
    "read": "{0} is a directory, not a file. Call workspace_list to see its contents.",
    "edit": "{0} is a directory, not a file. Choose a file path.",
    "write": "Cannot write {0}: it is a directory. Choose a file path.",
    "delete": "{0} is a directory; workspace_delete removes files only.",
}

_PARENT_IS_FILE: dict[Doing, str] = {
    "write": "Cannot write {0}: a parent of it is a file, not a directory. Choose another path.",
    "create directory": "Cannot create directory {0}: it or one of its parents is a file.",
    "list": "{0} is a file, not a directory. Read it instead of listing it.",
    "remove directory": "{0} is a file. Delete it with workspace_delete.",
}

_KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFREG: "a regular file",
}


def describe(exc: OSError) -> str:
    """What ``exc`` means, in lower-case words, without any path or class name."""
    code = exc.errno
    if code is None:
        return "an operating system error"
    if code == errno.EWOULDBLOCK:
        code = errno.EAGAIN
    words = _WORDS.get(code)
    if words is not None:
        return words
    try:
        return os.strerror(code).lower()
    except ValueError:
        return f"operating system error {code}"


def file_error(exc: OSError, doing: Doing, shown: str) -> ToolcardsError:
    """The error a model reads for ``exc``, raised while ``doing`` the file ``shown``.

    ``shown`` is the workspace-relative path (quoted in the message). Chain the result
    (``raise file_error(exc, ...) from exc``) so the original stays in logs.
    """
    name = repr(shown)
    code = errno.EAGAIN if exc.errno == errno.EWOULDBLOCK else exc.errno
    if code == errno.ENOENT and doing in _MISSING:
        return RetriableError(_MISSING[doing].format(name))
    if code == errno.ENOTDIR and doing in ("read", "edit", "delete"):
        return RetriableError(_MISSING[doing].format(name))
    if code == errno.EISDIR and doing in _IS_DIRECTORY:
        return RetriableError(_IS_DIRECTORY[doing].format(name))
    if code in (errno.ENOTDIR, errno.EEXIST) and doing in _PARENT_IS_FILE:
        return RetriableError(_PARENT_IS_FILE[doing].format(name))
    message = f"Cannot {doing} {name}: {describe(exc)}."
    return RetriableError(message) if code in _RETRIABLE else ToolFailed(message)


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a named pipe", "a socket", ...)."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def not_regular_error(mode: int, doing: Doing, shown: str) -> RetriableError:
    """The refusal for ``doing`` the file ``shown``, which is not a regular file (``mode``)."""
    if stat.S_ISDIR(mode) and doing in _IS_DIRECTORY:
        return RetriableError(_IS_DIRECTORY[doing].format(repr(shown)))
    return RetriableError(
        f"{shown!r} is {kind_of(mode)}, not a regular file: the workspace tools only read, change and "
        "delete regular files. Choose another path."
    )
