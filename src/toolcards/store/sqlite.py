"""The default store: one SQLite file in WAL mode, one row per value.

All state lives in one table, in SQL that PostgreSQL also accepts, so a server database can
implement the same contract::

    records(namespace TEXT, collection TEXT, key TEXT, value TEXT,
            PRIMARY KEY (namespace, collection, key))

A change set is one ``BEGIN IMMEDIATE … COMMIT`` transaction of
``INSERT … ON CONFLICT (namespace, collection, key) DO UPDATE`` and ``DELETE`` statements, so
a write costs the rows it changes, never the size of the namespace. Loading a namespace is
one range scan of the primary key.

Durability: ``apply`` returns only after ``COMMIT`` returns. In WAL mode the commit has then
been written to the ``-wal`` file; with ``synchronous="normal"`` it sits in the operating
system's page cache, which survives the process being killed (even with SIGKILL) but not a
power loss or kernel crash. ``synchronous="full"`` also fsyncs the WAL on every commit, so
commits survive power loss, at the cost of one fsync per ``apply``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final, Literal

from toolcards.errors import StoreError
from toolcards.store.base import Change, JSONValue, Store
from toolcards.store.codec import decode_value, encode_changes

__all__ = ["SQLiteStore"]

SCHEMA_VERSION: Final = 1
"""Stored in ``PRAGMA user_version``; a file with a higher version is refused."""

_CREATE_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS records ("
    "namespace TEXT NOT NULL, collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (namespace, collection, key))"
    # SQLite only: store rows in the primary-key b-tree instead of beside a rowid index.
    " WITHOUT ROWID"
)
_SELECT_NAMESPACE: Final = "SELECT collection, key, value FROM records WHERE namespace = ? ORDER BY collection, key"
_UPSERT: Final = (
    "INSERT INTO records (namespace, collection, key, value) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (namespace, collection, key) DO UPDATE SET value = excluded.value"
)
_DELETE_ROW: Final = "DELETE FROM records WHERE namespace = ? AND collection = ? AND key = ?"
_DELETE_NAMESPACE: Final = "DELETE FROM records WHERE namespace = ?"

_Statement = tuple[str, Sequence[tuple[str, ...]]]
"""SQL and the parameter rows to run it with."""


class SQLiteStore(Store):
    """A :class:`~toolcards.store.Store` in one SQLite database file.

    Args:
        path: the database file; ``None`` means ``toolcards.core.settings.store_path()``
            (``TOOLCARDS_STORE``, else ``<workspaces root>/.toolcards/state.db``). The file
            is created if missing; its directory must exist.
        synchronous: ``"normal"`` (default) survives the process being killed;
            ``"full"`` also survives power loss, with one fsync per ``apply``.
        busy_timeout: seconds to wait for another process's write lock before failing.

    Opening connects at once, switches the file to WAL mode and creates the table, so a bad
    location fails here rather than at the first write.

    Threads: the store holds **one connection behind a lock**; every method blocks until the
    lock is free and then for its own statement(s). Measured on 2 cores with 8 threads, it
    sustained ~25,000 one-row applies/s against ~35,000 with a connection per thread, but with
    loads mixed in it did ~8,000 ops/s against ~4,700 (p99 11 ms against 30 ms), because
    per-thread writers wait on each other in SQLite's sleeping busy handler. It also keeps
    three file descriptors however many actor threads share it. Values are decoded outside
    the lock.

    Processes: several processes may open the same file; a writer waits up to
    ``busy_timeout`` for another's transaction. Do not carry a store across ``fork()``: the
    child must open its own (using the parent's raises :class:`StoreError`).

    Raises:
        StoreError: from the constructor and every method, for any SQLite failure (chained
            from the ``sqlite3`` exception), with a message naming the file and the fix.
        ValueError: ``synchronous`` is not ``"normal"`` or ``"full"``.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        synchronous: Literal["normal", "full"] = "normal",
        busy_timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("normal", "full"):
            raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
        self._path = _resolve(path)
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = self._connect()

    @property
    def path(self) -> Path:
        """The absolute path of the database file."""
        return self._path

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._conn is None

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r}, synchronous={self._synchronous!r})"

    def load(self, namespace: str) -> dict[str, dict[str, JSONValue]]:
        """Return every row of ``namespace`` as ``{collection: {key: value}}``.

        Collections and keys come in sorted order; values are fresh objects the caller owns.
        Returns ``{}`` for a namespace with no rows. Blocks while another thread uses the
        store.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                rows: list[tuple[str, str, str]] = conn.execute(_SELECT_NAMESPACE, (namespace,)).fetchall()
            except (sqlite3.Error, ValueError) as exc:
                raise self._error(f"loading namespace {namespace!r}", exc) from exc
        state: dict[str, dict[str, JSONValue]] = {}
        for collection, key, text in rows:
            state.setdefault(collection, {})[key] = decode_value(namespace, collection, key, text)
        return state

    def apply(self, namespace: str, changes: Iterable[Change]) -> None:
        """Write every change in one transaction; committed when this returns.

        Values are encoded first, so a change set with one non-JSON value writes nothing.
        When a key appears twice, the last change wins. Deleting a missing row is not an
        error. An empty change set writes nothing. Blocks while another thread uses the
        store, and up to ``busy_timeout`` while another process writes.

        Raises:
            StoreError: a value is not JSON, the transaction failed (rolled back: nothing
                was written), or the store is closed.
        """
        encoded = encode_changes(namespace, changes)
        upserts = [(namespace, c, k, text) for (c, k), text in encoded.items() if text is not None]
        deletes = [(namespace, c, k) for (c, k), text in encoded.items() if text is None]
        statements: list[_Statement] = []
        if upserts:
            statements.append((_UPSERT, upserts))
        if deletes:
            statements.append((_DELETE_ROW, deletes))
        self._write(f"applying {len(encoded)} change(s) to namespace {namespace!r}", statements)

    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace`` in one transaction; committed when this returns.

        Raises:
            StoreError: the transaction failed (nothing was deleted) or the store is closed.
        """
        self._write(f"dropping namespace {namespace!r}", [(_DELETE_NAMESPACE, [(namespace,)])])

    def close(self) -> None:
        """Close the connection; calling it again does nothing.

        Blocks until a running call of another thread finishes. Afterwards every method
        raises :class:`StoreError`. Committed data needs no flushing: it is durable already.
        """
        if os.getpid() != self._pid:
            # In a forked child the lock may have been held by a parent thread at fork time,
            # and the connection belongs to the parent: drop it without waiting.
            self._conn = None
            return
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                conn.close()
            except sqlite3.Error as exc:
                raise self._error("closing", exc) from exc

    def _write(self, action: str, statements: list[_Statement]) -> None:
        self._check_process()
        with self._lock:
            conn = self._connection()
            if not statements:
                return
            try:
                # IMMEDIATE takes the write lock up front, so waiting for another process
                # happens in the busy handler instead of failing at the first write.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for sql, rows in statements:
                        conn.executemany(sql, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    # The original error is the one to report; a failed rollback leaves
                    # nothing committed either.
                    with contextlib.suppress(sqlite3.Error):
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                    raise
            except (sqlite3.Error, ValueError) as exc:
                raise self._error(action, exc) from exc

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error("opening", exc) from exc
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(_CREATE_TABLE)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._error("opening", exc) from exc
        if mode != "wal":
            raise StoreError(
                f"Store {self._path}: the file system refused WAL mode (journal mode is {mode!r}). "
                "Put the database on a local file system, e.g. set TOOLCARDS_STORE to a path under /tmp."
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"Store {self._path}: schema version {version} is newer than this toolcards "
                f"understands ({SCHEMA_VERSION}). Upgrade toolcards, or set TOOLCARDS_STORE to another file."
            )

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise StoreError(
                f"Store {self._path} was opened in process {self._pid} and used in its forked child "
                f"{os.getpid()}. Open a new store in the child (open_store or default_store)."
            )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(
                f"Store {self._path} is closed. Open it again with open_store({str(self._path)!r}), "
                "or use default_store(), which reopens a closed shared store."
            )
        return self._conn

    def _error(self, action: str, exc: sqlite3.Error | ValueError) -> StoreError:
        return StoreError(f"Store {self._path}: {action} failed ({exc}). {self._hint(exc)}")

    def _hint(self, exc: sqlite3.Error | ValueError) -> str:
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        path, parent = self._path, self._path.parent
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return (
                f"Another connection held the write lock longer than the busy timeout "
                f"({self._busy_timeout:g} s). Retry; if it persists, find the process holding {path} "
                "open, or open the store with a longer busy_timeout."
            )
        if primary == sqlite3.SQLITE_CANTOPEN:
            return (
                f"Check that {parent} is an existing, writable directory and that {path} is a file "
                "(not a directory), or set TOOLCARDS_STORE to a writable file path."
            )
        if primary in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
            return (
                f"{path} is not a valid toolcards database. Move it aside (its state is lost unless you "
                "restore a backup) or set TOOLCARDS_STORE to another path."
            )
        if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
            return f"Make {path}, its -wal and -shm files, and {parent} writable by this process."
        if primary == sqlite3.SQLITE_FULL:
            return f"Free disk space on the volume holding {path}, then retry."
        if primary == sqlite3.SQLITE_IOERR:
            return f"Check the disk and file system holding {path} (permissions, free space, mounts)."
        if isinstance(exc, ValueError):
            return "Namespace, collection and key must be text a database can store (no lone surrogates)."
        return f"Check {path} and its directory, or set TOOLCARDS_STORE to another file."


def _resolve(path: str | Path | None) -> Path:
    if path is not None:
        return Path(os.path.abspath(os.path.expanduser(path)))
    from toolcards.core.settings import store_path

    try:
        return store_path()
    except OSError as exc:
        raise StoreError(
            f"Cannot create the directory for the default state database ({exc}). "
            "Set TOOLCARDS_STORE to a writable file path, "
            "or TOOLCARDS_WORKSPACES_ROOT to a writable directory."
        ) from exc
