"""An online, consistent copy of a SQLite store, taken while other processes keep writing.

:func:`backup_sqlite_store` opens the store as every process does (so a file that is not a
toolcards store, or has lost its data, is refused untouched), then copies it with SQLite's
online backup (``sqlite3.Connection.backup``) in one step: one read transaction, so the copy
is the store as committed at one moment, everything acknowledged before it included, while
writers go on (in WAL mode a reader holds nobody up). The copy goes to a temporary file
beside the destination, is checked (``PRAGMA integrity_check``), flushed and put in place with a
hard link (a rename when replacing is allowed), so the destination is never half written
and an existing file is never replaced by accident. It is one self-contained file: none of
it is in a ``-wal``, and opening it is enough to restore the team.

A PostgreSQL store is backed up with ``pg_dump``; a ``:memory:`` store cannot be copied from
another process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shlex
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from toolcards.errors import StoreError
from toolcards.store._sqlite import SQLiteStore

__all__ = ["SQLiteBackup", "backup_sqlite_store", "destination_problem"]

_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS})


@dataclass(frozen=True, kw_only=True)
class SQLiteBackup:
    """What :func:`backup_sqlite_store` copied."""

    source: Path
    """The store's database file."""
    destination: Path
    """The copy: one self-contained SQLite file, a store as it is."""
    size: int
    """Bytes of the copy."""
    namespaces: tuple[tuple[str, int], ...]
    """Every namespace of the copy with its version, sorted by name."""


def destination_problem(source: Path, destination: Path, *, overwrite: bool = False) -> str | None:
    """What is wrong with writing a copy of the store ``source`` to ``destination``, or ``None``.

    Wrong: ``destination`` is a directory, or the store itself, or lies in a directory that
    does not exist, or exists while ``overwrite`` is false. The answer is a sentence naming
    the path and the fix.
    """
    if destination.is_dir():
        return f"{destination} is a directory. Name the file to write, e.g. {destination / 'state-backup.db'}."
    if destination == source or (destination.exists() and source.exists() and destination.samefile(source)):
        return f"{destination} is the store itself. Choose another path for the copy."
    parent = destination.parent
    if not parent.is_dir():
        return (
            f"The directory {parent} does not exist. Create it (mkdir -p {shlex.quote(str(parent))}) or choose "
            "another path for the copy."
        )
    if destination.exists() and not overwrite:
        return f"{destination} exists. Pass --force to replace it, or choose another path."
    return None


def backup_sqlite_store(
    source: str | Path, destination: str | Path, *, overwrite: bool = False, busy_timeout: float = 30.0
) -> SQLiteBackup:
    """Copy the SQLite store ``source`` to ``destination`` while other processes use it.

    Args:
        source: the store's database file; it must exist (a backup never creates a store).
        destination: the file to write; its directory must exist.
        overwrite: replace ``destination`` if it exists.
        busy_timeout: seconds to wait for another process's lock (only a writer switching the
            file's mode or schema holds one that a reader waits for).

    Returns:
        What was copied: the paths, the copy's size and its namespaces with their versions.

    Blocks for the copy's reading, checking and two flushes: about as long as reading the
    store twice. Writers of other processes are not held up.

    Raises:
        StoreError: the store is missing, is not a toolcards store or cannot be read; the
            destination is wrong (:func:`destination_problem`) or exists by the time the copy
            is put in place; writing, checking or placing the copy failed. Nothing is left
            at ``destination`` then, and an existing file there is untouched.
    """
    source = Path(os.path.abspath(os.path.expanduser(source)))
    destination = Path(os.path.abspath(os.path.expanduser(destination)))
    if not source.is_file():
        what = "is not a file" if source.exists() else "does not exist"
        raise StoreError(
            f"Store {source} {what}: there is nothing to back up. Check TOOLCARDS_STORE or --store (the default "
            "is <workspaces root>/.toolcards/state.db, under TOOLCARDS_WORKSPACES_ROOT)."
        )
    problem = destination_problem(source, destination, overwrite=overwrite)
    if problem is not None:
        raise StoreError(f"Cannot back up store {source} to {destination}: {problem}")
    # Opened as a store first: the same refusals as every opener, and the log recovered, so
    # the read-only connection below never has to recover it.
    store = SQLiteStore(source, busy_timeout=busy_timeout)
    temporary = destination.with_name(f".{destination.name}.{secrets.token_hex(6)}.tmp")
    try:
        namespaces = _copy(source, temporary, busy_timeout)
        _flush(temporary)
        _put_in_place(temporary, destination, overwrite=overwrite)
        _flush(destination.parent)
    except sqlite3.Error as exc:
        raise StoreError(
            f"Backing up store {source} to {destination} failed ({exc}); nothing was written there. Check that "
            f"{destination.parent} is writable and has room for a copy of the store, then retry."
        ) from exc
    except OSError as exc:
        raise StoreError(
            f"Backing up store {source} to {destination} failed ({exc.strerror or exc}); nothing was written "
            f"there. Check that {destination.parent} is writable and has room for a copy of the store, then retry."
        ) from exc
    finally:
        for leftover in (
            temporary,
            *(temporary.with_name(temporary.name + end) for end in ("-wal", "-shm", "-journal")),
        ):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        store.close()
    return SQLiteBackup(source=source, destination=destination, size=destination.stat().st_size, namespaces=namespaces)


def _copy(source: Path, temporary: Path, busy_timeout: float) -> tuple[tuple[str, int], ...]:
    reader = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=busy_timeout)
    try:
        copy = sqlite3.connect(temporary, isolation_level=None)
        try:
            # pages=-1: every page in one step, under one read transaction. In steps, each
            # commit of another process would restart the copy, for ever under steady writes.
            reader.backup(copy, pages=-1)
            # The whole check, indexes against their tables too: this is the file a team is
            # restored from, and reading it once more costs about what the copy did.
            (verdict,) = copy.execute("PRAGMA integrity_check(1)").fetchone()
            if verdict != "ok":
                raise StoreError(
                    f"Backing up store {source}: the copy failed its check ({verdict}), so it was not kept. Check "
                    "the store itself with `sqlite3 FILE 'PRAGMA integrity_check'`, then retry."
                )
            rows: list[tuple[str, int]] = copy.execute(
                "SELECT namespace, version FROM namespaces ORDER BY namespace"
            ).fetchall()
        finally:
            copy.close()
    finally:
        reader.close()
    return tuple(rows)


def _put_in_place(temporary: Path, destination: Path, *, overwrite: bool) -> None:
    if overwrite:
        os.replace(temporary, destination)
        return
    try:
        os.link(temporary, destination)
    except FileExistsError:
        raise StoreError(
            f"{destination} appeared while the store was being copied, and was left as it is. Pass --force to "
            "replace it, or choose another path."
        ) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # No hard links here: a rename, after a last look (another writer could still slip in between).
        if destination.exists():
            raise StoreError(
                f"{destination} appeared while the store was being copied, and was left as it is."
            ) from None
        os.rename(temporary, destination)


def _flush(path: Path) -> None:
    # The copy is whole on disk before its name appears, and the name survives a power loss
    # (best effort for a directory: some file systems refuse to flush one).
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        if path.is_dir():
            with contextlib.suppress(OSError):
                os.fsync(fd)
        else:
            os.fsync(fd)
    finally:
        os.close(fd)
