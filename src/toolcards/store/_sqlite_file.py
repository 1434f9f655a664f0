"""The file a :class:`~toolcards.store.SQLiteStore` opens, looked at before SQLite writes to it.

Opening a database with SQLite changes it at once (WAL mode rewrites its header, an empty or
missing file beside its ``-wal`` makes SQLite discard that log), so :func:`examine` first reads
the file's first bytes and its schema through a read-only connection (``immutable`` when no
``-wal`` is beside it, so not even an empty log is left) and decides: *to create* (no file, no
log); *a store* (this schema or an older one, or an empty SQLite database); or *refused,
untouched*: a missing directory, a file that is not SQLite, another program's database, a newer
toolcards' store, and files whose data was probably lost (an empty file, a missing file beside
its log, a WAL-mode file with no tables: a copy of the main file alone).

:func:`create_store_file` makes a new store whole (tables, then WAL mode) in a temporary file
hard-linked into place, which fails if another process created it first (that one is used), so
no process ever sees an empty or half-made store and an empty file can be refused as data lost.
Without hard links the file is made in place, and a process opening it in the instant after its
creation may be refused as empty; opening again succeeds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shlex
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolcards.errors import StoreError

__all__ = ["create_store_file", "examine"]

_SQLITE_HEADER: Final = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database."""

ErrorFor = Callable[[str, sqlite3.Error], StoreError]
"""Words a SQLite failure for the store's reader: ``(what was being done, the error)``."""

_WAL_MODE: Final = b"\x02\x02"
"""Bytes 18-19 of the header (read and write format versions) of a database in WAL mode."""
_TABLES: Final = frozenset({"records", "namespaces"})
_INDEXES: Final = frozenset({"records_by_version"})
_RECORDS_COLUMNS: Final = frozenset({"namespace", "collection", "key", "value"})
"""What every schema version's ``records`` table has (1 had no ``version`` column)."""
_NO_HARD_LINKS: Final = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS})
_SHOWN: Final = 5


def _log_of(path: Path) -> Path:
    """The write-ahead log beside the database ``path``: its changes not yet in ``path``."""
    return path.with_name(path.name + "-wal")


def examine(path: Path, *, schema_version: int, busy_timeout: float, error: ErrorFor) -> bool:
    """Refuse a file that is not a toolcards store or has lost its data, writing nothing to it.

    Args:
        path: the absolute path of the database file.
        schema_version: the newest schema this toolcards reads.
        busy_timeout: seconds to wait for another connection's lock while reading the schema.
        error: words a SQLite failure of the read-only look at the schema.

    Returns:
        ``True`` when there is no file and it should be created (:func:`create_store_file`);
        ``False`` when it is a store, or an empty SQLite database, to open as it is; also for
        something other than a regular file, which connecting then reports as it is.

    Raises:
        StoreError: the directory is missing or is not one; the file cannot be looked at; it
            is empty, or missing beside a log holding changes; it is not SQLite, is another
            program's database, a newer toolcards' store, or in WAL mode without its tables.
            The message names the file, the likely cause and what to do.
    """
    _refuse_a_missing_directory(path)
    wal = _log_of(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise StoreError(f"Store {path}: cannot look at the file ({exc.strerror or exc}).") from exc
    if found is not None and not stat.S_ISREG(found.st_mode):
        return False
    try:
        wal_size: int | None = os.stat(wal).st_size
    except FileNotFoundError:
        wal_size = None
    except OSError as exc:
        raise StoreError(f"Store {path}: cannot look at its log {wal.name} ({exc.strerror or exc}).") from exc
    if found is None or found.st_size == 0:
        if wal_size:
            state = "is missing" if found is None else "is empty"
            raise StoreError(
                f"Store {path}: the database file {state} but its write-ahead log {wal.name} holds "
                f"{wal_size:,} bytes of changes, which opening it would discard. Restore {path.name} from a copy "
                f"made by `toolcards backup` (a store's {wal.name} belongs with its {path.name}: never copy or move "
                f"one without the other); to start an empty store instead, move {path.name} and {wal.name} aside."
            )
        if found is None:
            return True
        raise StoreError(
            f"Store {path} is an empty file (0 bytes) with no write-ahead log beside it. toolcards never leaves "
            f"a store empty, so its data was probably lost: a truncated file, or a copy of {path.name} made "
            f"without its {wal.name}. Restore a copy made by `toolcards backup`; to start an empty store "
            f"instead, delete {path}."
        )
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise StoreError(f"Store {path}: cannot read the file ({exc.strerror or exc}).") from exc
    if not header.startswith(_SQLITE_HEADER):
        raise StoreError(
            f"Store {path} is not a SQLite database (it holds {found.st_size:,} bytes of something else); nothing "
            "was written to it. Set TOOLCARDS_STORE to another file, or move this one aside."
        )
    wal_mode = header[18:20] == _WAL_MODE
    schema = _read_schema(path, immutable=wal_mode and wal_size is None, busy_timeout=busy_timeout, error=error)
    _judge(path, schema, schema_version=schema_version, wal_mode=wal_mode)
    return False


def create_store_file(path: Path, initialise: Callable[[sqlite3.Connection], None], *, error: ErrorFor) -> None:
    """Create the store at ``path`` whole, unless another process creates it first.

    ``initialise`` gets a connection (autocommit) to a new empty database in a temporary file
    beside ``path`` and must leave it complete: its tables, then WAL mode. The file is
    flushed and hard-linked to ``path``; when ``path`` exists by then, another process
    created it whole the same way, and it is left as it is. Where the file system has no
    hard links nothing is linked, and the caller's connection creates ``path`` in place.
    The temporary is removed in every case. Blocks on disk I/O (two flushes).

    Raises:
        StoreError: the temporary cannot be made (``error`` words it), ``initialise`` failed,
            or linking failed for another reason than an existing ``path``.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    try:
        try:
            conn = sqlite3.connect(temporary, isolation_level=None)
        except sqlite3.Error as exc:
            raise error("creating", exc) from exc
        try:
            initialise(conn)
        finally:
            conn.close()
        _flush(temporary)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return
        except OSError as exc:
            if exc.errno in _NO_HARD_LINKS:
                return
            raise StoreError(
                f"Store {path}: cannot put the new store in place ({exc.strerror or exc}). Check that "
                f"{path.parent} is writable, or set TOOLCARDS_STORE to another file."
            ) from exc
        _flush(path.parent)
    finally:
        for leftover in (
            temporary,
            *(temporary.with_name(temporary.name + end) for end in ("-wal", "-shm", "-journal")),
        ):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


@dataclass(frozen=True, kw_only=True)
class _Schema:
    objects: tuple[tuple[str, str], ...]
    """``(type, name)`` of every table, index, view and trigger but SQLite's own (``sqlite_*``)."""
    records_columns: frozenset[str]
    """The columns of a table named ``records``, if there is one."""
    user_version: int
    application_id: int


def _refuse_a_missing_directory(path: Path) -> None:
    # SQLite would answer "unable to open database file" and leave the reader guessing.
    parent = path.parent
    try:
        is_directory = stat.S_ISDIR(os.stat(parent).st_mode)
    except FileNotFoundError:
        raise StoreError(
            f"Store {path}: the directory {parent} does not exist. Create it (mkdir -p "
            f"{shlex.quote(str(parent))}) or correct the path (TOOLCARDS_STORE or --store); toolcards "
            "creates only its default directory, <workspaces root>/.toolcards."
        ) from None
    except NotADirectoryError:
        is_directory = False
    except OSError:
        return  # connecting reports it, with the hint for its error code
    if not is_directory:
        raise StoreError(f"Store {path}: {parent} is not a directory. Correct the path (TOOLCARDS_STORE or --store).")


def _read_schema(path: Path, *, immutable: bool, busy_timeout: float, error: ErrorFor) -> _Schema:
    # Read-only: nothing is written, a rollback-journal file gets no -journal. A WAL-mode file
    # would get an empty -wal and a -shm even so, unless it is read as immutable, which is
    # exact when no -wal is beside it (every change is in the main file then).
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    try:
        probe = sqlite3.connect(f"{path.as_uri()}?{query}", uri=True, timeout=busy_timeout)
    except sqlite3.Error as exc:
        raise error("opening", exc) from exc
    try:
        rows: list[tuple[str, str]] = probe.execute("SELECT type, name FROM sqlite_master").fetchall()
        (user_version,) = probe.execute("PRAGMA user_version").fetchone()
        (application_id,) = probe.execute("PRAGMA application_id").fetchone()
        columns = frozenset(str(row[1]) for row in probe.execute("PRAGMA table_info(records)"))
    except sqlite3.Error as exc:
        raise error("reading the list of tables", exc) from exc
    finally:
        probe.close()
    return _Schema(
        objects=tuple(sorted((kind, name) for kind, name in rows if not name.startswith("sqlite_"))),
        records_columns=columns,
        user_version=user_version,
        application_id=application_id,
    )


def _judge(path: Path, schema: _Schema, *, schema_version: int, wal_mode: bool) -> None:
    has_records = ("table", "records") in schema.objects and schema.records_columns >= _RECORDS_COLUMNS
    if has_records and not schema.application_id and schema.user_version > schema_version:
        raise StoreError(
            f"Store {path}: schema version {schema.user_version} is newer than this toolcards understands "
            f"({schema_version}); nothing was written to it. Upgrade toolcards, or set TOOLCARDS_STORE to another file."
        )
    if not schema.objects and not schema.user_version and not schema.application_id:
        if wal_mode:
            wal = _log_of(path)
            raise StoreError(
                f"Store {path} is a SQLite database in WAL mode with no tables, and no write-ahead log beside it "
                f"holds them: its data was probably lost (a copy of {path.name} made without its {wal.name}, "
                f"which held every change not yet copied into {path.name}). Copy {path.name} together with its "
                f"{wal.name}, or restore a copy made by `toolcards backup`; to start an empty store instead, "
                f"delete {path}."
            )
        return  # an empty database: a new store
    ours = all(
        (kind == "table" and name in _TABLES) or (kind == "index" and name in _INDEXES) for kind, name in schema.objects
    )
    if ours and has_records and not schema.application_id:
        return
    raise StoreError(
        f"Store {path} is a SQLite database of another program ({_described(schema)}); toolcards writes "
        "nothing to it. Set TOOLCARDS_STORE to a file of its own."
    )


def _described(schema: _Schema) -> str:
    """What identifies a foreign database: its application id, its tables, views and triggers."""
    parts = [f"application_id {schema.application_id}"] if schema.application_id else []
    listed = []
    for kind in ("table", "view", "trigger"):
        names = [name for what, name in schema.objects if what == kind]
        if names:
            shown = ", ".join(names[:_SHOWN]) + (", ..." if len(names) > _SHOWN else "")
            listed.append(f"{kind}s: {shown}")
    parts.extend(listed or ["no tables"])
    if schema.user_version:
        parts.append(f"user_version {schema.user_version}")
    return "; ".join(parts)


def _flush(path: Path) -> None:
    # So that after a power loss a new store is in place whole or not at all. Best effort:
    # SQLite flushed the file at its commits already, and some file systems refuse to
    # flush a directory.
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
