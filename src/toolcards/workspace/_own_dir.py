"""toolcards' own folder in a tree, :data:`~toolcards.workspace._paths.OWN_DIR`, opened by handle.

Spilled outputs and the files an undo sets aside live there. Each directory on the way is made
when missing and opened without following a link, so a link a command planted cannot lead the
writes out of the tree; a new ``.toolcards`` gets a ``.gitignore`` of ``*``, so a command's
``git add -A`` leaves toolcards' own files out of the project.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from toolcards.workspace._paths import OWN_DIR

__all__ = ["open_own_directory"]

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GITIGNORE = b"# toolcards' own files: not part of the project.\n*\n"


def open_own_directory(root: Path, *names: str) -> int:
    """A descriptor of ``root/.toolcards/<names...>``, each directory made when missing.

    Raises:
        OSError: the root cannot be opened or a directory made; ``ELOOP`` or ``ENOTDIR`` when a
            link or a file is where a directory should be.
    """
    fd = os.open(root, _DIRECTORY_FLAGS)
    try:
        for name in (OWN_DIR, *names):
            made = False
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
                made = True
            child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            if made and name == OWN_DIR:
                _ignore_everything(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _ignore_everything(directory: int) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(
            ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=directory
        )
        try:
            os.write(fd, _GITIGNORE)
        finally:
            os.close(fd)
