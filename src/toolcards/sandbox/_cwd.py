"""A command's working directory: the ``cwd`` a model passes, checked once, where it enters.

:func:`resolve_cwd` turns ``exec_command``'s ``cwd`` into a directory of the workspace before
any backend sees it, or refuses it with :class:`~toolcards.sandbox._guards.CommandRefused`, in
the workspace's own terms (root-relative paths, never the host's or ``/workspace``); a refused
command has not run. Text that cannot name a directory (a NUL, a lone surrogate, an absolute
path, a name over :data:`NAME_MAX` bytes, a whole over :data:`PATH_MAX`) is refused without
touching the disk; then the path is walked one name at a time with ``lstat`` as the kernel
would, ``..`` refused above the root, symlinks followed only inside the workspace and at most
:data:`MAX_SYMLINKS` of them, and whatever stops the walk named by its relative path.

The answer holds when it is given: a concurrent command may swap a directory for a symlink
before this one enters it. In bwrap and docker the directory is entered inside the sandbox,
where a link leads nowhere unmounted; in local mode nothing contains the command anyway.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shlex
import stat
from pathlib import Path, PurePosixPath

from toolcards.sandbox._guards import CommandRefused

__all__ = ["CWD_ADVICE", "CWD_ESCAPE_MESSAGE", "MAX_SYMLINKS", "NAME_MAX", "PATH_MAX", "cwd_vanished", "resolve_cwd"]

CWD_ESCAPE_MESSAGE = "path escapes the workspace root — use a path relative to it"
"""What every ``cwd`` that leaves the workspace is told (through ``..``, a symlink, or an
absolute path), followed by the detail."""
CWD_ADVICE = "pass a directory inside the workspace, relative to its root ('' is the root; ls lists its directories)"
"""What to do instead, ending most refusals."""

PATH_MAX = 4096
"""Bytes in a path the kernel accepts, its final NUL included (Linux)."""
NAME_MAX = 255
"""Bytes in one name of a path (Linux filesystems)."""
MAX_SYMLINKS = 40
"""Symlinks one resolution follows at most, as the kernel does; more is reported as a loop."""

_SHOWN_CHARS = 60
"""A ``cwd`` longer than this is quoted by its start and its length."""


def resolve_cwd(workspace: Path, cwd: str, *, mount: str | None = None) -> tuple[Path, PurePosixPath]:
    """The host directory for ``cwd`` and its path relative to the workspace root.

    Args:
        workspace: the workspace root, resolved (absolute, no symlink on the way).
        cwd: the directory as the model gave it, relative to the root; ``""`` and ``"."``
            mean the root.
        mount: where the backend shows the workspace to the command (``/workspace``), or
            ``None`` when commands see the host's path. A symlink whose absolute target lies
            under it leads into the workspace, as it does for the command; an absolute
            ``cwd`` under it is answered with its relative form.

    Returns:
        ``(host directory, path relative to the root)``; the relative path has no symlink,
        ``.`` or ``..`` in it (``PurePosixPath(".")`` for the root).

    Raises:
        CommandRefused: ``cwd`` names no directory a command can enter inside the workspace;
            the message starts with ``SandboxError: cwd``, quotes ``cwd`` (never when it is
            absolute), and says what to do. Nothing else is raised, whatever the text or
            the tree holds.
    """
    if cwd in ("", "."):
        return workspace, PurePosixPath(".")
    # Before anything quotes it: an absolute cwd may be the host's own path.
    if cwd.startswith("/"):
        raise _absolute(workspace, cwd, mount)
    shown = _quoted(cwd)
    _check_text(cwd, shown)
    names = _walk(workspace, cwd, shown, mount)
    relative = "/".join(names)
    host = workspace.joinpath(*names)
    longest = max(len(os.fsencode(workspace)), len(mount or ""))
    if longest + 1 + len(os.fsencode(relative)) >= PATH_MAX:
        raise _too_deep(shown, relative)
    if names and not os.access(host, os.X_OK):
        raise CommandRefused(
            f"SandboxError: cwd {shown}: {_quoted(relative)} cannot be entered (permission denied). "
            f"Fix its permissions (chmod u+x) or {CWD_ADVICE}."
        )
    return host, PurePosixPath(relative or ".")


def cwd_vanished(relative: PurePosixPath) -> str:
    """The refusal of a command whose directory, resolved by :func:`resolve_cwd`, was gone
    when the command started (another command removed or replaced it meanwhile)."""
    return (
        f"SandboxError: cwd {_quoted(str(relative))} was removed before the command could start in it; "
        f"nothing was run. Create it again (mkdir -p) or {CWD_ADVICE}."
    )


def _quoted(text: str) -> str:
    """``text`` (a path or a name) quoted for a message: printable (``repr``), cut when long."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:40]!r}… ({len(text):,} characters)"


def _too_deep(shown: str, relative: str) -> CommandRefused:
    return CommandRefused(
        f"SandboxError: cwd {shown} leads to a directory nested too deep for a command to start in "
        f"(its path from the root is {len(os.fsencode(relative)):,} bytes). Use a directory higher up."
    )


def _check_text(cwd: str, shown: str) -> None:
    """Refuse what no path can be, before anything touches the disk."""
    if "\x00" in cwd:
        raise CommandRefused(
            f"SandboxError: cwd {shown} contains a NUL character, which no path can hold; {CWD_ADVICE}."
        )
    for index, char in enumerate(cwd):
        if "\ud800" <= char <= "\udfff":
            raise CommandRefused(
                f"SandboxError: cwd {shown} is not valid text: character {index + 1} is the lone surrogate "
                f"U+{ord(char):04X}, which names no directory a model can pass (a name shown with U+FFFD is not "
                f"UTF-8: rename it with a command first); {CWD_ADVICE}."
            )
    size = len(cwd.encode())
    if size >= PATH_MAX:
        raise CommandRefused(
            f"SandboxError: cwd is {size:,} bytes long ({shown}); a path is at most {PATH_MAX - 1:,} bytes. "
            "Use a shorter path."
        )
    for name in cwd.split("/"):
        name_size = len(name.encode())
        if name_size > NAME_MAX:
            what = f"is a name of {name_size:,} bytes" if name == cwd else f"holds a name of {name_size:,} bytes"
            where = "" if name == cwd else f" ({_quoted(name)})"
            raise CommandRefused(
                f"SandboxError: cwd {shown} {what}{where}; a name is at most {NAME_MAX} bytes. "
                "Use shorter directory names."
            )


def _absolute(workspace: Path, cwd: str, mount: str | None) -> CommandRefused:
    """The refusal of an absolute ``cwd``, which is never quoted (it may be the host's path);
    when it lies in the workspace, the message gives its relative form instead."""
    below = _below(workspace, cwd, mount)
    if below is not None:
        relative = posixpath.normpath(below) if below else "."
        if relative != ".." and not relative.startswith("../"):
            suggested = _quoted("" if relative == "." else relative)
            return CommandRefused(
                f"SandboxError: cwd is an absolute path; pass it relative to the workspace root: cwd={suggested}."
            )
    return CommandRefused(f"SandboxError: cwd is an absolute path outside the workspace: {CWD_ESCAPE_MESSAGE}.")


def _below(workspace: Path, path: str, mount: str | None) -> str | None:
    """What follows the root in the absolute ``path`` (``""`` for the root itself), when it
    starts with the root's host path or with ``mount``; ``None`` otherwise."""
    for base in (os.fspath(workspace), mount):
        if base and (path == base or path.startswith(base.rstrip("/") + "/")):
            return path[len(base) :].lstrip("/")
    return None


def _walk(workspace: Path, cwd: str, shown: str, mount: str | None) -> list[str]:
    """The names of the directory ``cwd`` leads to, from the root, each a real directory.

    Pending names are a stack of ``(name, given)``: ``given`` is the prefix of ``cwd`` whose
    resolution produced the name, so a message can name what the model wrote.
    """
    root = os.fspath(workspace)
    resolved: list[str] = []
    pending: list[tuple[str, str]] = []
    parts = cwd.split("/")
    for index in range(len(parts) - 1, -1, -1):
        pending.append((parts[index], "/".join(parts[: index + 1])))
    links = 0
    while pending:
        name, given = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            if not resolved:
                raise CommandRefused(
                    f"SandboxError: cwd {shown}: {CWD_ESCAPE_MESSAGE} ({_quoted(given)} leads above the root)."
                )
            resolved.pop()
            continue
        here = "/".join([*resolved, name])
        path = os.path.join(root, here)
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise _unusable(cwd, shown, here, exc) from None
        if stat.S_ISDIR(info.st_mode):
            resolved.append(name)
            continue
        if not stat.S_ISLNK(info.st_mode):
            raise CommandRefused(
                f"SandboxError: cwd {shown}: {_quoted(here)} is {_kind(info.st_mode)}, not a directory; {CWD_ADVICE}."
            )
        links += 1
        if links > MAX_SYMLINKS:
            raise CommandRefused(
                f"SandboxError: cwd {shown} cannot be entered: the symlink {_quoted(given)} leads into a loop "
                f"(more than {MAX_SYMLINKS} links followed). Pass the directory it should lead to, or fix the link."
            )
        try:
            target = os.readlink(path)
        except OSError as exc:
            raise _unusable(cwd, shown, here, exc) from None
        if target.startswith("/"):
            below = _below(workspace, target, mount)
            if below is None:
                raise CommandRefused(
                    f"SandboxError: cwd {shown}: {CWD_ESCAPE_MESSAGE} "
                    f"({_quoted(given)} is a symlink that leads out of it)."
                )
            resolved.clear()
            target = below
        target_parts = target.split("/")
        pending.extend((part, given) for part in reversed(target_parts))
    return resolved


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _unusable(cwd: str, shown: str, here: str, exc: OSError) -> CommandRefused:
    """The refusal for an ``lstat`` or ``readlink`` that failed on ``here`` (relative to the root)."""
    if isinstance(exc, FileNotFoundError):
        # shlex.quote leaves control characters as they are: suggest only what prints.
        create = f"mkdir -p {shlex.quote(cwd)}" if len(cwd) <= _SHOWN_CHARS and cwd.isprintable() else "mkdir -p"
        return CommandRefused(
            f"SandboxError: cwd {shown} does not exist: there is no {_quoted(here)} in the workspace. "
            f"Create it first ({create}) or {CWD_ADVICE}."
        )
    if isinstance(exc, PermissionError):
        return CommandRefused(
            f"SandboxError: cwd {shown}: {_quoted(here)} cannot be entered (permission denied); {CWD_ADVICE}."
        )
    if exc.errno == errno.ENAMETOOLONG:
        return _too_deep(shown, here)
    # strerror never holds the path (filename is a separate attribute).
    reason = (exc.strerror or type(exc).__name__).lower()
    return CommandRefused(f"SandboxError: cwd {shown}: {_quoted(here)} cannot be used ({reason}); {CWD_ADVICE}.")
