"""The default store: one SQLite file in WAL mode, shared by every process of a host.

The layout is PostgreSQL's (``docs/architecture.md``): ``records`` (a row's ``version`` is the
namespace version that last wrote it, so the change log is one range scan of
``records_by_version``; a deleted row is a NULL-valued tombstone until older than
:data:`TOMBSTONE_RETENTION` versions) and ``namespaces`` (the version, and ``purged``: how far
tombstones were removed; a reader behind it gets a snapshot).

**Writes** are ``BEGIN IMMEDIATE`` (the file's one write lock, so every process waits its turn
in the busy handler), catch the writer up from its cache's version, write the staged rows and
the new version, ``COMMIT``: a write costs the rows it changes, never the namespace's size.
**Reads** first ask ``PRAGMA data_version``, which changes only when another connection
committed, so an unchanged namespace is answered without touching a table.

Durability: ``COMMIT`` returns once the transaction is in the ``-wal`` file; with
``synchronous="normal"`` that survives a killed process but not a power loss,
``synchronous="full"`` fsyncs the WAL at every commit. The file must be on a local file system
(WAL needs shared memory between processes); across hosts, use PostgreSQL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final, Literal

from toolcards.errors import StoreError
from toolcards.store._base import (
    TOMBSTONE_RETENTION,
    CatchUp,
    Change,
    Delta,
    JSONValue,
    NamespaceSummary,
    Snapshot,
    Store,
    Transaction,
    summarize,
)
from toolcards.store._codec import decode_value
from toolcards.store._sqlite_file import create_store_file, examine
from toolcards.store._transaction import StagedWrite

__all__ = ["SQLiteStore"]

_log = logging.getLogger(__name__)

_KEYS_PER_QUERY: Final = 500
"""Keys one query of :meth:`SQLiteStore.get` asks for (SQLite allows 32,766 parameters)."""

SCHEMA_VERSION: Final = 2
"""Stored in ``PRAGMA user_version``; 1 (no versions) is migrated, a higher one refused."""

_CREATE: Final = (
    "CREATE TABLE records ("
    "namespace TEXT NOT NULL, collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
    "version INTEGER NOT NULL, PRIMARY KEY (namespace, collection, key)) WITHOUT ROWID",
    "CREATE INDEX records_by_version ON records (namespace, version)",
    "CREATE TABLE namespaces ("
    "namespace TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, purged INTEGER NOT NULL) WITHOUT ROWID",
)
_MIGRATE_FROM_1: Final = (
    "ALTER TABLE records RENAME TO records_v1",
    *_CREATE,
    "INSERT INTO records (namespace, collection, key, value, version) "
    "SELECT namespace, collection, key, value, 0 FROM records_v1",
    "DROP TABLE records_v1",
)
_HEAD: Final = "SELECT version, purged FROM namespaces WHERE namespace = ?"
_SELECT_NAMESPACE: Final = (
    "SELECT collection, key, value FROM records WHERE namespace = ? AND value IS NOT NULL ORDER BY collection, key"
)
_SELECT_SINCE: Final = (
    "SELECT collection, key, value FROM records WHERE namespace = ? AND version > ? ORDER BY version, collection, key"
)
_UPSERT: Final = (
    "INSERT INTO records (namespace, collection, key, value, version) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (namespace, collection, key) DO UPDATE SET value = excluded.value, version = excluded.version"
)
_SET_HEAD: Final = (
    "INSERT INTO namespaces (namespace, version, purged) VALUES (?, ?, ?) "
    "ON CONFLICT (namespace) DO UPDATE SET version = excluded.version, purged = excluded.purged"
)
_NAMESPACES: Final = "SELECT namespace, version FROM namespaces"
_ROW_COUNTS: Final = (
    "SELECT namespace, collection, count(*) FROM records WHERE value IS NOT NULL GROUP BY namespace, collection"
)
_SELECT_KEYS: Final = (
    "SELECT key, value FROM records WHERE namespace = ? AND collection = ? AND value IS NOT NULL AND key IN "
)
_PURGE: Final = "DELETE FROM records WHERE namespace = ? AND version <= ? AND value IS NULL"
_DELETE_NAMESPACE: Final = "DELETE FROM records WHERE namespace = ?"


class SQLiteStore(Store):
    """A :class:`~toolcards.store.Store` in one SQLite database file.

    Args:
        path: the database file; ``None`` means ``toolcards.fs._locations.store_path()``
            (``TOOLCARDS_STORE``, else ``<workspaces root>/.toolcards/state.db``). The file
            is created if missing. Its directory must exist, except the default one, which is
            created: a path whose directory is missing is refused with a message naming the
            directory (``mkdir -p`` it, or correct the path), since a mistyped path would
            otherwise start an empty team in a new place while its state sits in the old one.
        synchronous: ``"normal"`` (default) survives the process being killed;
            ``"full"`` also survives power loss, with one fsync per write.
        busy_timeout: seconds to wait for another process's write lock before failing.

    Opening looks at the file before anything is written to it and refuses, untouched, one
    that is not a toolcards store or whose data was probably lost (an empty file, a file
    without the log holding its tables: see :mod:`toolcards.store._sqlite_file`); creates a
    missing store whole (tables, then WAL mode, put in place at once, so no process ever
    sees it half made); then connects and migrates an older schema. A bad location fails
    here rather than at the first write.

    Threads: the store holds **one connection behind a lock**; every method blocks until the
    lock is free, and a :meth:`write` holds it for its whole ``with`` block: per-thread
    connections would wait on each other in SQLite's sleeping busy handler instead
    (``docs/architecture.md``), and this keeps three file descriptors however many threads.

    Processes: any number of processes may open the same file and share its namespaces;
    writes are serialised by SQLite's write lock, and a writer waits up to
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
        busy_timeout: float = 30.0,
    ) -> None:
        if synchronous not in ("normal", "full"):
            raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
        self._path = _resolve(path)
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._pid = os.getpid()
        self._lock = threading.Lock()
        # The versions this connection last read or wrote, valid while data_version (which
        # moves only when another connection commits) is still _seen_data_version.
        self._known: dict[str, int] = {}
        self._seen_data_version = -1
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

    def load(self, namespace: str) -> Snapshot:
        """Return every row of ``namespace`` with its version, read in one snapshot.

        Collections and keys come in sorted order; values are fresh objects the caller owns.
        Blocks while another thread uses the store.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                with self._read_transaction(conn):
                    version, _ = self._head(conn, namespace)
                    rows = self._rows(conn, namespace)
            except (sqlite3.Error, ValueError) as exc:
                raise self._error(f"loading namespace {namespace!r}", exc) from exc
            self._known[namespace] = version
        return _snapshot(namespace, version, rows)

    def get(self, namespace: str, collection: str, keys: Iterable[str]) -> dict[str, JSONValue]:
        """The current values of ``keys`` in ``collection`` (see :meth:`Store.get`): one query
        per 500 keys, in one read transaction.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        wanted = list(dict.fromkeys(keys))
        self._check_process()
        found: list[tuple[str, str]] = []
        with self._lock:
            conn = self._connection()
            try:
                with self._read_transaction(conn):
                    for start in range(0, len(wanted), _KEYS_PER_QUERY):
                        chunk = wanted[start : start + _KEYS_PER_QUERY]
                        query = _SELECT_KEYS + "(" + ",".join("?" * len(chunk)) + ")"
                        found += conn.execute(query, (namespace, collection, *chunk)).fetchall()
            except sqlite3.Error as exc:
                raise self._error(f"reading rows of namespace {namespace!r}", exc) from exc
        return {key: decode_value(namespace, collection, key, text) for key, text in found}

    def read(self, namespace: str, since: int) -> CatchUp:
        """Return what was committed to ``namespace`` after ``since`` (see :meth:`Store.read`).

        When no other connection committed since this one last looked, and ``since`` is the
        version this connection last saw, answers an empty delta after one ``PRAGMA``.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                self._refresh_known(conn)
                if self._known.get(namespace) == since:
                    return Delta(namespace=namespace, since=since, version=since, changes=())
                with self._read_transaction(conn):
                    version, purged = self._head(conn, namespace)
                    catch_up = self._catch_up(conn, namespace, since, version, purged)
            except (sqlite3.Error, ValueError) as exc:
                raise self._error(f"reading namespace {namespace!r}", exc) from exc
            self._known[namespace] = version
        return catch_up

    def version(self, namespace: str) -> int:
        """The namespace's committed version, read without its rows.

        Raises:
            StoreError: the read failed or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                version, _ = self._head(conn, namespace)
            except (sqlite3.Error, ValueError) as exc:
                raise self._error(f"reading the version of namespace {namespace!r}", exc) from exc
        return version

    def namespaces(self) -> tuple[NamespaceSummary, ...]:
        """Every namespace with its version and live rows per collection (see :meth:`Store.namespaces`).

        Raises:
            StoreError: the read failed or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                with self._read_transaction(conn):
                    heads = conn.execute(_NAMESPACES).fetchall()
                    counts = conn.execute(_ROW_COUNTS).fetchall()
            except sqlite3.Error as exc:
                raise self._error("listing the namespaces", exc) from exc
        return summarize(heads, counts)

    @contextlib.contextmanager
    def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
        """Write to ``namespace`` under SQLite's write lock (see :meth:`Store.write`).

        Holds this store's thread lock for the whole block: keep the block short (no
        network calls, no embedding).

        Raises:
            StoreError: the lock was not granted within ``busy_timeout``, a statement failed
                (nothing was written), or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                # IMMEDIATE takes the write lock up front, so waiting for another process
                # happens in the busy handler instead of failing at the first write.
                conn.execute("BEGIN IMMEDIATE")
                version, purged = self._head(conn, namespace)
                catch_up = None if since is None else self._catch_up(conn, namespace, since, version, purged)
            except (sqlite3.Error, ValueError) as exc:
                self._rollback(conn)
                raise self._error(f"starting a write to namespace {namespace!r}", exc) from exc
            txn = StagedWrite(namespace, version, catch_up)
            try:
                yield txn
            except BaseException:
                self._rollback(conn)
                txn.finish(committed=False)
                raise
            try:
                if txn.staged:
                    self._commit_rows(conn, txn, purged)
                conn.execute("COMMIT")
            except (sqlite3.Error, ValueError) as exc:
                self._rollback(conn)
                txn.finish(committed=False)
                raise self._error(f"committing {len(txn.staged)} change(s) to namespace {namespace!r}", exc) from exc
            txn.finish(committed=True)
            self._known[namespace] = txn.committed or version

    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace`` in one transaction; committed when this returns.

        The version moves on by one and every older version is marked purged, so each
        cache of the namespace reloads it (empty) at its next read.

        Raises:
            StoreError: the transaction failed (nothing was deleted) or the store is closed.
        """
        self._check_process()
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                version, _ = self._head(conn, namespace)
                conn.execute(_DELETE_NAMESPACE, (namespace,))
                conn.execute(_SET_HEAD, (namespace, version + 1, version + 1))
                conn.execute("COMMIT")
            except (sqlite3.Error, ValueError) as exc:
                self._rollback(conn)
                raise self._error(f"dropping namespace {namespace!r}", exc) from exc
            self._known[namespace] = version + 1

    def close(self) -> None:
        """Checkpoint the log into the database file, then close the connection; calling it
        again does nothing.

        Committed data needs no flushing, it is durable already; but until a checkpoint it
        may be only in the ``-wal`` file, so a copy of the database file alone would lack
        it. Close therefore copies the log into the file and empties it
        (``PRAGMA wal_checkpoint(TRUNCATE)``), once and without waiting: that completes when
        no other connection is reading an older snapshot or writing (always, when this is
        the last connection), and otherwise stops where it must, logged at debug level, with
        every change still safe in the log. Blocks until a running call of another thread
        finishes. Afterwards every method raises :class:`StoreError`.

        Changed in 0.2: checkpoints before closing.

        Raises:
            StoreError: closing the connection failed (a failed checkpoint does not raise).
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
            self._checkpoint(conn)
            try:
                conn.close()
            except sqlite3.Error as exc:
                raise self._error("closing", exc) from exc

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        # No busy wait: a reader may hold its snapshot for as long as it likes, and a close
        # must not hang on it. SQLite itself checkpoints only when the last connection closes.
        try:
            conn.execute("PRAGMA busy_timeout=0")
            busy, logged, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            _log.debug(
                "Store %s: the checkpoint at close failed (%s); the changes stay in its -wal file.", self._path, exc
            )
            return
        if busy:
            _log.debug(
                "Store %s: the checkpoint at close stopped at %s of %s log frames: another connection is "
                "reading an older snapshot or writing. The changes stay in the -wal file, which belongs "
                "with the database file.",
                self._path,
                copied,
                logged,
            )

    # -- statements (the caller holds self._lock) ------------------------------------------

    @staticmethod
    def _head(conn: sqlite3.Connection, namespace: str) -> tuple[int, int]:
        row: tuple[int, int] | None = conn.execute(_HEAD, (namespace,)).fetchone()
        return row if row is not None else (0, 0)

    @staticmethod
    def _rows(conn: sqlite3.Connection, namespace: str) -> list[tuple[str, str, str]]:
        rows: list[tuple[str, str, str]] = conn.execute(_SELECT_NAMESPACE, (namespace,)).fetchall()
        return rows

    def _catch_up(self, conn: sqlite3.Connection, namespace: str, since: int, version: int, purged: int) -> CatchUp:
        if since == version:
            return Delta(namespace=namespace, since=since, version=version, changes=())
        if since < purged or since > version:
            return _snapshot(namespace, version, self._rows(conn, namespace))
        rows: list[tuple[str, str, str | None]] = conn.execute(_SELECT_SINCE, (namespace, since)).fetchall()
        changes = tuple(
            Change(
                collection=collection,
                key=key,
                value=None if text is None else decode_value(namespace, collection, key, text),
            )
            for collection, key, text in rows
        )
        return Delta(namespace=namespace, since=since, version=version, changes=changes)

    @staticmethod
    def _commit_rows(conn: sqlite3.Connection, txn: StagedWrite, purged: int) -> None:
        new = txn.version + 1
        namespace = txn.namespace
        conn.executemany(
            _UPSERT, [(namespace, collection, key, text, new) for (collection, key), text in txn.staged.items()]
        )
        if new % TOMBSTONE_RETENTION == 0 and new > TOMBSTONE_RETENTION:
            purged = new - TOMBSTONE_RETENTION
            conn.execute(_PURGE, (namespace, purged))
        conn.execute(_SET_HEAD, (namespace, new, purged))

    def _refresh_known(self, conn: sqlite3.Connection) -> None:
        (data_version,) = conn.execute("PRAGMA data_version").fetchone()
        if data_version != self._seen_data_version:
            self._seen_data_version = data_version
            self._known.clear()

    @contextlib.contextmanager
    def _read_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        # One read transaction, so the version and the rows come from the same snapshot.
        conn.execute("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        # The original error is the one to report; a failed rollback leaves nothing
        # committed either.
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _connect(self) -> sqlite3.Connection:
        # What the file is gets decided before SQLite writes to it (see sqlite_file).
        if examine(self._path, schema_version=SCHEMA_VERSION, busy_timeout=self._busy_timeout, error=self._error):
            create_store_file(self._path, self._prepare, error=self._error)
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
        """Create or migrate the tables, then switch to WAL mode (a file made new gets both)."""
        try:
            conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"Store {self._path}: schema version {version} is newer than this toolcards "
                    f"understands ({SCHEMA_VERSION}). Upgrade toolcards, or set TOOLCARDS_STORE to another file."
                )
            if version < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    # Another process may have created or migrated the file meanwhile.
                    (version,) = conn.execute("PRAGMA user_version").fetchone()
                    has_records = conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'"
                    ).fetchone()
                    if version < SCHEMA_VERSION:
                        for statement in _MIGRATE_FROM_1 if has_records else _CREATE:
                            conn.execute(statement)
                        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    self._rollback(conn)
                    raise
            # After the tables: a new file written in rollback-journal mode holds them itself,
            # so a WAL-mode file without tables is one whose log was lost (see sqlite_file).
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        except sqlite3.Error as exc:
            raise self._error("opening", exc) from exc
        if mode != "wal":
            raise StoreError(
                f"Store {self._path}: the file system refused WAL mode (journal mode is {mode!r}). "
                "Put the database on a local file system, e.g. set TOOLCARDS_STORE to a path under /tmp; "
                "to share a team across hosts use a PostgreSQL store (TOOLCARDS_STORE=postgresql://...)."
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
        code = getattr(exc, "sqlite_errorcode", None)
        # Another process held the file's lock past the busy timeout: the next call gets it.
        busy = code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        return StoreError(f"Store {self._path}: {action} failed ({exc}). {self._hint(exc)}", transient=busy)

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
                f"{path} is not a valid toolcards database. Move it aside together with its -wal and -shm files "
                "(they belong to it), then restore a copy made by `toolcards backup` in its place (without one, "
                "its state is lost), or set TOOLCARDS_STORE to another path."
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
    from toolcards.fs._locations import store_path

    try:
        return store_path()
    except OSError as exc:
        raise StoreError(
            f"Cannot create the directory for the default state database ({exc}). "
            "Set TOOLCARDS_STORE to a writable file path, "
            "or TOOLCARDS_WORKSPACES_ROOT to a writable directory."
        ) from exc


def _snapshot(namespace: str, version: int, rows: list[tuple[str, str, str]]) -> Snapshot:
    state: dict[str, dict[str, JSONValue]] = {}
    for collection, key, text in rows:
        state.setdefault(collection, {})[key] = decode_value(namespace, collection, key, text)
    return Snapshot(namespace=namespace, version=version, rows=state)
