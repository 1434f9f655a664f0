"""Checks a command passes before it is spawned: its first word and its working directory.

The allowlist reads only the first word, so it is a usability filter (it tells the model
early which tools are expected), not a security boundary: ``bash -c '...'`` runs anything
the backend permits. Containment is the backend's job.

How the first word is found: the command is split with :mod:`shlex` (POSIX rules);
leading ``NAME=value`` assignments are skipped (``FOO=1 pytest`` runs ``pytest``); a path
is reduced to its basename (``./.venv/bin/python`` counts as ``python``). Only the first
simple command is read: in ``make && psql`` only ``make`` is checked.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

__all__ = ["CWD_ESCAPE_MESSAGE", "CommandRefused", "check_allowed", "command_name", "resolve_cwd"]

CWD_ESCAPE_MESSAGE = "path escapes the workspace root — use a path relative to it"

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class CommandRefused(Exception):
    """A command that must not run; ``str(exc)`` is the message the model reads."""


def command_name(cmd: str) -> str:
    """The program a command line starts: first word after ``NAME=value`` prefixes, basename.

    Returns ``""`` for an empty command or one made only of assignments.

    Raises:
        ValueError: the line cannot be split (an unclosed quote).
    """
    for token in shlex.split(cmd, posix=True):
        if _ASSIGNMENT.match(token):
            continue
        return PurePosixPath(token).name or token
    return ""


def check_allowed(cmd: str, allowed: Iterable[str]) -> str | None:
    """``None`` when the command may run, else the message a model reads.

    An empty ``allowed`` allows every command. Never raises.
    """
    allowed = tuple(allowed)
    try:
        name = command_name(cmd)
    except ValueError as exc:
        return f"CommandNotAllowedError: Could not read the command ({exc}): {cmd!r}. Check its quoting and retry."
    if not name:
        return "SandboxError: The command is empty. Pass the command line to run, e.g. 'pytest -q'."
    if not allowed or name in allowed:
        return None
    message = (
        f"CommandNotAllowedError: Command {name!r} is not in the allowed commands list. Allowed: [{', '.join(allowed)}]"
    )
    if name == "cd":
        message += ". To run in a subdirectory, pass it as the cwd argument instead of using cd."
    return message


def resolve_cwd(workspace: Path, cwd: str) -> tuple[Path, PurePosixPath]:
    """The host directory for ``cwd`` and its path relative to the workspace root.

    ``cwd`` must be relative, without ``..``, and must not leave the workspace through a
    symlink. ``""`` and ``"."`` mean the root.

    Raises:
        CommandRefused: ``SandboxError: cwd ...: path escapes the workspace root — use a
            path relative to it``, or the directory does not exist.
    """
    root = workspace.resolve()
    if cwd in ("", "."):
        return root, PurePosixPath(".")
    relative = PurePosixPath(cwd.replace(os.sep, "/"))
    if relative.is_absolute() or ".." in relative.parts or Path(cwd).is_absolute():
        raise CommandRefused(f"SandboxError: cwd {cwd!r}: {CWD_ESCAPE_MESSAGE}")
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        raise CommandRefused(f"SandboxError: cwd {cwd!r}: {CWD_ESCAPE_MESSAGE}")
    if not target.is_dir():
        raise CommandRefused(
            f"SandboxError: cwd {cwd!r} is not a directory in the workspace. "
            "Create it first (mkdir -p) or pass an existing directory."
        )
    return target, PurePosixPath(target.relative_to(root).as_posix())
