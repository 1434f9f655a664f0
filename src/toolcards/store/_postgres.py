"""The server store: one PostgreSQL database shared by every process of every host of a team.

The same tables as :class:`~toolcards.store.SQLiteStore` (``records``, ``namespaces``,
``toolcards_schema``), created under an advisory lock on first open, in the first schema of
``search_path``; text columns use the ``"C"`` collation so rows sort by code point as Python
and SQLite sort them. A database whose ``toolcards_schema`` is newer than this code is refused.

A write locks its namespace's row of ``namespaces`` (``SELECT ... FOR UPDATE``) for the whole
``with`` block, so writers of one namespace take turns (up to ``lock_timeout``) and writers of
different namespaces never wait; under ``READ COMMITTED`` every statement after the lock sees
what the previous holder committed, which makes the catch-up exact. Each operation is one or
two round trips; a lost connection is replaced and a first round trip retried (nothing was
committed), and a ``COMMIT`` whose answer is lost is never resent: ``pg_xact_status`` tells
whether it committed, else :class:`~toolcards.errors.OutcomeUnknown`. Durability is
PostgreSQL's (``synchronous_commit``, ``fsync``). The layout, round trips and reconnection
rules are in ``docs/architecture.md`` ("The PostgreSQL store").

Needs the ``postgres`` extra (``psycopg`` 3 and ``psycopg_pool``), imported when a store is
opened, so importing this module costs nothing without it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import re
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeVar

from toolcards.core._error_text import one_line
from toolcards.errors import OutcomeUnknown, StoreError
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
from toolcards.store._default import describe_location
from toolcards.store._transaction import StagedWrite

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

    _Conn = Connection[tuple[Any, ...]]
    _Pool = ConnectionPool[_Conn]

__all__ = ["PostgresStore"]

_T = TypeVar("_T")

logger = logging.getLogger(__name__)

_SETTLE_POLL_S: Final = 0.2
"""Seconds between two questions about a lost commit's outcome."""

SCHEMA_VERSION: Final = 1
"""Stored in ``toolcards_schema``; a database with a higher one is refused."""

_SCHEMA_LOCK: Final = 0x746F6F6C63617264  # "toolcard": the advisory lock key of table creation

_INSTALL_HINT: Final = "install the postgres extra: pip install 'toolcards[postgres]'"

_PROBE: Final = (
    "SELECT current_setting('server_encoding'), to_regclass('toolcards_schema') IS NOT NULL, "
    "to_regclass('records') IS NOT NULL OR to_regclass('namespaces') IS NOT NULL"
)
_SCHEMA_VERSION: Final = "SELECT coalesce(max(version), 0) FROM toolcards_schema"
_CREATE: Final = (
    "CREATE TABLE IF NOT EXISTS records ("
    'namespace TEXT COLLATE "C" NOT NULL, collection TEXT COLLATE "C" NOT NULL, key TEXT COLLATE "C" NOT NULL, '
    "value TEXT, version BIGINT NOT NULL, PRIMARY KEY (namespace, collection, key))",
    "CREATE INDEX IF NOT EXISTS records_by_version ON records (namespace, version)",
    "CREATE TABLE IF NOT EXISTS namespaces ("
    'namespace TEXT COLLATE "C" NOT NULL PRIMARY KEY, version BIGINT NOT NULL, purged BIGINT NOT NULL)',
    "CREATE TABLE IF NOT EXISTS toolcards_schema (version INTEGER NOT NULL)",
)

_ENSURE_HEAD: Final = (
    "INSERT INTO namespaces (namespace, version, purged) VALUES (%(ns)s, 0, 0) ON CONFLICT (namespace) DO NOTHING"
)
# The transaction's id comes along: it is what tells, after a lost COMMIT, whether it committed.
_LOCK_HEAD: Final = (
    "SELECT version, purged, pg_current_xact_id()::text FROM namespaces WHERE namespace = %(ns)s FOR UPDATE"
)
_XACT_STATUS: Final = "SELECT pg_xact_status(%s::xid8)"
# Under the lock, so the head cannot move; a writer behind the purge gets no rows here and
# reads the whole namespace instead.
_CHANGED_SINCE: Final = (
    "SELECT collection, key, value FROM records "
    "WHERE namespace = %(ns)s AND version > %(since)s::bigint "
    "AND %(since)s::bigint >= (SELECT purged FROM namespaces WHERE namespace = %(ns)s) "
    "ORDER BY version, collection, key"
)
# A write's round trips are each one query of several statements, values quoted by psycopg
# (client-side binding, simple query protocol): pipelined statements cost several waits on
# the socket and hundreds of Python calls per write.
_BEGIN_LOCK: Final = f"BEGIN; {_ENSURE_HEAD}; {_LOCK_HEAD}"
_BEGIN_LOCK_CHANGED: Final = f"{_BEGIN_LOCK}; {_CHANGED_SINCE}"
_HEAD: Final = "SELECT version FROM namespaces WHERE namespace = %s"
_ROWS: Final = (
    "SELECT collection, key, value FROM records WHERE namespace = %s AND value IS NOT NULL ORDER BY collection, key"
)
_SELECT_KEYS: Final = (
    "SELECT key, value FROM records WHERE namespace = %s AND collection = %s AND value IS NOT NULL AND key = ANY(%s)"
)
# One statement, one snapshot: part 0 is the head, part 1 the delta (when the change log
# reaches back to `since`), part 2 the whole namespace (when it does not).
_READ: Final = (
    "WITH head AS (SELECT version, purged FROM namespaces WHERE namespace = %(ns)s) "
    "SELECT 0 AS part, version AS sort, purged, NULL AS collection, NULL AS key, NULL AS value FROM head "
    "UNION ALL "
    "SELECT 1, r.version, NULL, r.collection, r.key, r.value FROM head h JOIN records r "
    "ON r.namespace = %(ns)s AND r.version > %(since)s::bigint "
    "WHERE %(since)s::bigint BETWEEN h.purged AND h.version "
    "UNION ALL "
    "SELECT 2, 0, NULL, r.collection, r.key, r.value FROM head h JOIN records r "
    "ON r.namespace = %(ns)s AND r.value IS NOT NULL "
    "WHERE %(since)s::bigint NOT BETWEEN h.purged AND h.version "
    "ORDER BY part, sort, collection, key"
)
_UPSERT_HEAD: Final = "INSERT INTO records (namespace, collection, key, value, version) VALUES "
_UPSERT_ROW: Final = "(%s, %s, %s, %s, %s)"
_UPSERT_TAIL: Final = (
    " ON CONFLICT (namespace, collection, key) DO UPDATE SET value = excluded.value, version = excluded.version"
)
_ROWS_PER_STATEMENT: Final = 1000
"""Staged rows per ``INSERT``; a larger write sends one round trip per this many rows before its last."""
_SET_HEAD: Final = "UPDATE namespaces SET version = %s, purged = %s WHERE namespace = %s"
_PURGE: Final = "DELETE FROM records WHERE namespace = %s AND version <= %s AND value IS NULL"
_DROP: Final = (
    "DELETE FROM records WHERE namespace = %(ns)s; "
    "UPDATE namespaces SET version = %(version)s, purged = %(version)s WHERE namespace = %(ns)s; COMMIT"
)

_PASSWORD_PARAMETER = re.compile(r"(?i)(\bpassword=)[^&\s]*")


class PostgresStore(Store):
    """A :class:`~toolcards.store.Store` in a PostgreSQL database, shared across hosts.

    Args:
        url: ``postgresql://user:password@host:port/database`` (or ``postgres://``, or any
            libpq connection string; libpq's ``PG*`` variables and ``~/.pgpass`` apply).
        min_size: connections the pool keeps open.
        max_size: most connections the pool opens; one per thread inside a store call or a
            :meth:`write` block, and a call waits when all are taken.
        connect_timeout: seconds to wait for a connection (opening one, or a free one
            from the pool) before failing.
        lock_timeout: seconds a :meth:`write` or :meth:`drop` waits for another writer
            of the same namespace before failing.
        settle_timeout: seconds a :meth:`write` or :meth:`drop` whose connection was lost
            during ``COMMIT`` keeps asking the server whether it committed, before raising
            :class:`~toolcards.errors.OutcomeUnknown`.

    Opening connects at once, checks the database and creates the tables if missing (see
    the module documentation), so a wrong URL, password or database fails here.

    Threads: the store is thread-safe; each call takes a pooled connection for its
    duration, and a :meth:`write` holds one, with its namespace's lock, for its whole
    ``with`` block. Processes: open one store per process; do not carry one across
    ``fork()`` (using the parent's store in the child raises :class:`StoreError`).

    Raises:
        StoreError: from the constructor and every method, for any failure of the server,
            the network or the driver (chained from the ``psycopg`` exception), with a
            message naming the server (password masked) and the fix; also when the
            ``postgres`` extra is not installed.
        ValueError: ``min_size``/``max_size`` or a timeout is out of range.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        lock_timeout: float = 30.0,
        settle_timeout: float = 10.0,
    ) -> None:
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError(f"need 0 <= min_size <= max_size and max_size >= 1, not {min_size} and {max_size}")
        if connect_timeout <= 0 or lock_timeout <= 0 or settle_timeout < 0:
            raise ValueError(f"timeouts must be positive, not {connect_timeout}, {lock_timeout} and {settle_timeout}")
        self._settle_timeout = settle_timeout
        self._url = url
        self._masked = _mask(url)
        self._max_size = max_size
        self._connect_timeout = connect_timeout
        self._lock_timeout = lock_timeout
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._pool: _Pool | None = None
        _require_driver()
        import psycopg
        from psycopg_pool import ConnectionPool, PoolTimeout

        # libpq counts whole seconds, at least 2.
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(connect_timeout)),
        }
        try:
            with psycopg.connect(url, **self._connect_kwargs) as conn:
                self._prepare(conn)
        except (psycopg.Error, ValueError) as exc:
            raise self._error("opening", exc) from exc
        pool: _Pool = ConnectionPool(
            url,
            kwargs=self._connect_kwargs,
            min_size=min_size,
            max_size=max_size,
            open=False,
            configure=self._configure,
            timeout=connect_timeout,
            # Give up a failing reconnection soon: the next call that needs a connection
            # then starts a fresh attempt at once, instead of waiting out a long backoff
            # after the server is back.
            reconnect_timeout=connect_timeout,
            name=f"toolcards {self._masked}",
        )
        try:
            pool.open(wait=min_size > 0, timeout=connect_timeout)
        except (psycopg.Error, PoolTimeout) as exc:
            pool.close()
            raise self._error("opening the connection pool", exc) from exc
        self._pool_of_connections = pool
        self._pool = pool

    @property
    def url(self) -> str:
        """The URL the store was opened with, its password replaced by ``***``."""
        return self._masked

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._pool is None

    def __repr__(self) -> str:
        return f"PostgresStore({self._masked!r})"

    def load(self, namespace: str) -> Snapshot:
        """Return every row of ``namespace`` with its version, read in one snapshot.

        Collections and keys come in sorted order (by code point); values are fresh
        objects the caller owns. One round trip.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        self._check_process()

        def work(conn: _Conn) -> tuple[int, list[tuple[str, str, str]]]:
            with conn.pipeline():
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                head = conn.execute(_HEAD, (namespace,))
                rows = conn.execute(_ROWS, (namespace,))
                conn.execute("COMMIT")
            found = head.fetchone()
            return (0 if found is None else found[0]), rows.fetchall()

        version, rows = self._run(f"loading namespace {namespace!r}", work)
        return _snapshot(namespace, version, rows)

    def get(self, namespace: str, collection: str, keys: Iterable[str]) -> dict[str, JSONValue]:
        """The current values of ``keys`` in ``collection`` (see :meth:`Store.get`): one query,
        one round trip.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        wanted = list(dict.fromkeys(keys))
        self._check_process()
        if not wanted:
            return {}

        def work(conn: _Conn) -> list[tuple[str, str]]:
            return conn.execute(_SELECT_KEYS, (namespace, collection, wanted)).fetchall()

        rows = self._run(f"reading rows of namespace {namespace!r}", work)
        return {key: decode_value(namespace, collection, key, text) for key, text in rows}

    def read(self, namespace: str, since: int) -> CatchUp:
        """Return what was committed to ``namespace`` after ``since`` (see :meth:`Store.read`).

        One statement, so one round trip and one consistent view, whichever of an empty
        delta, a delta or a snapshot it answers.

        Raises:
            StoreError: the read failed, a stored value is not JSON, or the store is closed.
        """
        self._check_process()

        def work(conn: _Conn) -> list[tuple[Any, ...]]:
            return conn.execute(_READ, {"ns": namespace, "since": since}).fetchall()

        rows = self._run(f"reading namespace {namespace!r}", work)
        if not rows or rows[0][0] != 0:
            # Never written: version 0, nothing purged.
            if since == 0:
                return Delta(namespace=namespace, since=since, version=0, changes=())
            return Snapshot(namespace=namespace, version=0, rows={})
        version, purged = rows[0][1], rows[0][2]
        if purged <= since <= version:
            changes = tuple(_change(namespace, collection, key, text) for _, _, _, collection, key, text in rows[1:])
            return Delta(namespace=namespace, since=since, version=version, changes=changes)
        return _snapshot(namespace, version, [(collection, key, text) for _, _, _, collection, key, text in rows[1:]])

    def namespaces(self) -> tuple[NamespaceSummary, ...]:
        """Every namespace with its version and live rows per collection (see :meth:`Store.namespaces`).

        Raises:
            StoreError: the read failed or the store is closed.
        """
        self._check_process()

        def work(conn: _Conn) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
            with conn.pipeline():
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                heads = conn.execute("SELECT namespace, version FROM namespaces")
                counts = conn.execute(
                    "SELECT namespace, collection, count(*) FROM records WHERE value IS NOT NULL "
                    "GROUP BY namespace, collection"
                )
                conn.execute("COMMIT")
            return heads.fetchall(), counts.fetchall()

        heads, counts = self._run("listing the namespaces", work)
        return summarize(heads, counts)

    def version(self, namespace: str) -> int:
        """The namespace's committed version (0 if it was never written); one round trip, no rows.

        Raises:
            StoreError: the read failed or the store is closed.
        """
        self._check_process()

        def work(conn: _Conn) -> int:
            found = conn.execute(_HEAD, (namespace,)).fetchone()
            return 0 if found is None else int(found[0])

        return self._run(f"reading the version of namespace {namespace!r}", work)

    @contextlib.contextmanager
    def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
        """Write to ``namespace`` holding its row lock (see :meth:`Store.write`).

        Holds a pooled connection and the namespace's lock for the whole block: keep the
        block short (no network calls, no embedding); writers of other namespaces are not
        held up. Two round trips when the writer's cache is current or a delta behind.

        When the connection is lost while the commit is answered, the store asks the server
        (on a new connection, for up to ``settle_timeout`` seconds) whether the transaction
        committed: committed, the block ends as if nothing had happened; rolled back, it
        raises a transient :class:`StoreError`; with no answer in time,
        :class:`~toolcards.errors.OutcomeUnknown`.

        Raises:
            StoreError: the lock was not granted within ``lock_timeout``, a statement
                failed (nothing was written), or the store is closed.
            OutcomeUnknown: the connection was lost during ``COMMIT`` and the server could
                not be asked in time whether it committed.
        """
        self._check_process()
        import psycopg

        conn, version, purged, catch_up, xid = self._begin_write(namespace, since)
        try:
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
                else:
                    conn.execute("ROLLBACK")
            except (psycopg.Error, ValueError) as exc:
                lost = conn.broken
                self._rollback(conn)
                action = f"committing {len(txn.staged)} change(s) to namespace {namespace!r}"
                try:
                    if not lost:
                        raise self._error(action, exc) from exc
                    self._settle(action, xid, exc)
                except BaseException:
                    txn.finish(committed=False)
                    raise
            txn.finish(committed=True)
        finally:
            self._release(conn)

    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace`` in one transaction; committed when this returns.

        Takes the namespace's lock like a write. The version moves on by one and every older
        version is marked purged, so each cache of the namespace reloads it (empty) at its
        next read.

        A lost ``COMMIT`` is settled as in :meth:`write`.

        Raises:
            StoreError: the transaction failed (nothing was deleted), or the store is closed.
            OutcomeUnknown: the connection was lost during ``COMMIT`` and the server could
                not be asked in time whether it committed.
        """
        self._check_process()
        import psycopg

        conn, version, _, _, xid = self._begin_write(namespace, None)
        try:
            psycopg.ClientCursor(conn).execute(_DROP, {"ns": namespace, "version": version + 1})
        except (psycopg.Error, ValueError) as exc:
            lost = conn.broken
            self._rollback(conn)
            action = f"dropping namespace {namespace!r}"
            if not lost:
                raise self._error(action, exc) from exc
            self._settle(action, xid, exc)
        finally:
            self._release(conn)

    def _settle(self, action: str, xid: str, exc: Exception) -> None:
        """After the connection was lost during a ``COMMIT``: return when the server says
        transaction ``xid`` committed; raise when it rolled back or cannot be asked in time.

        Asks ``pg_xact_status`` on fresh connections (not the pool's, which may all be
        reconnecting) until the server answers ``committed`` or ``aborted``, or
        ``settle_timeout`` passes. ``in progress`` means the server has not yet noticed the
        lost connection: ask again.

        Raises:
            StoreError: the transaction was rolled back (transient: nothing was written).
            OutcomeUnknown: no answer within ``settle_timeout``.
        """
        import psycopg

        deadline = time.monotonic() + self._settle_timeout
        while True:
            status = None
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(self._url, autocommit=True, connect_timeout=2) as conn,
            ):
                found = conn.execute(_XACT_STATUS, (xid,)).fetchone()
                status = None if found is None else found[0]
            if status == "committed":
                logger.warning(
                    "Store %s: the connection was lost while %s; the server says it committed.", self._masked, action
                )
                return
            if status == "aborted":
                raise StoreError(
                    f"Store {self._masked}: {action} failed ({one_line(exc)}). The connection was lost during the "
                    "commit and the server rolled it back: nothing was written. Retry.",
                    transient=True,
                ) from exc
            if time.monotonic() >= deadline:
                raise OutcomeUnknown(
                    f"Store {self._masked}: {action} failed ({one_line(exc)}). The connection was lost during the "
                    f"commit and the server could not be asked within {self._settle_timeout:g} s whether it "
                    "committed, so the write may or may not be in the store: read it again before deciding to "
                    "retry, or retry with the same idempotency key."
                ) from exc
            time.sleep(_SETTLE_POLL_S)

    def close(self) -> None:
        """Close the pool's connections; calling it again does nothing.

        A call running on another thread finishes on its connection, which is closed when it
        is returned. Afterwards every method raises :class:`StoreError`. Committed data
        needs no flushing: it is durable already.
        """
        if os.getpid() != self._pid:
            # The pool's sockets and threads belong to the parent: forget them untouched
            # (closing a connection here would end the parent's session).
            self._pool = None
            return
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # -- connections -----------------------------------------------------------------------

    def _run(self, action: str, work: Callable[[_Conn], _T], *, retry: bool = True) -> _T:
        """Run ``work`` on a pooled connection, translating failures into :class:`StoreError`.

        With ``retry``, a connection found lost (nothing was committed on it) is replaced,
        the idle ones are tested, and ``work`` runs once more.
        """
        import psycopg

        for attempt in range(2):
            conn = self._acquire(action)
            try:
                return work(conn)
            except (psycopg.Error, ValueError) as exc:
                self._rollback(conn)
                if not (retry and attempt == 0 and conn.broken):
                    raise self._error(action, exc) from exc
            finally:
                self._release(conn)
            self._check_idle_connections()
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _begin_write(self, namespace: str, since: int | None) -> tuple[_Conn, int, int, CatchUp | None, str]:
        """Open the transaction, lock the namespace and compute the catch-up; one round trip.

        Returns the connection, the namespace's version and purge point, the catch-up, and
        the transaction's id (what :meth:`_settle` asks the server about).
        """
        import psycopg

        action = f"starting a write to namespace {namespace!r}"
        for attempt in range(2):
            conn = self._acquire(action)
            try:
                cursor = psycopg.ClientCursor(conn)
                if since is None:
                    cursor.execute(_BEGIN_LOCK, {"ns": namespace})
                else:
                    cursor.execute(_BEGIN_LOCK_CHANGED, {"ns": namespace, "since": since})
                cursor.nextset()  # past BEGIN
                cursor.nextset()  # past the INSERT of a missing head
                row = cursor.fetchone()
                assert row is not None  # the row exists: it was inserted above if missing
                version, purged, xid = row
                catch_up: CatchUp | None = None
                if since is not None:
                    cursor.nextset()
                    if since == version:
                        catch_up = Delta(namespace=namespace, since=since, version=version, changes=())
                    elif purged <= since < version:
                        changes = tuple(_change(namespace, *found) for found in cursor.fetchall())
                        catch_up = Delta(namespace=namespace, since=since, version=version, changes=changes)
                    else:
                        catch_up = _snapshot(namespace, version, conn.execute(_ROWS, (namespace,)).fetchall())
            except (psycopg.Error, ValueError) as exc:
                lost = conn.broken
                self._rollback(conn)
                self._release(conn)
                if not (lost and attempt == 0):
                    raise self._error(action, exc) from exc
                self._check_idle_connections()
            except BaseException:
                self._rollback(conn)
                self._release(conn)
                raise
            else:
                return conn, version, purged, catch_up, xid
        raise AssertionError("unreachable: the second attempt returns or raises")

    @staticmethod
    def _commit_rows(conn: _Conn, txn: StagedWrite, purged: int) -> None:
        """Write the staged rows, the new head and the purge, and commit.

        One round trip for up to :data:`_ROWS_PER_STATEMENT` rows. A larger write first
        sends the rows before its last chunk, one chunk per round trip, so no query grows
        without bound; only the last query holds ``COMMIT``.
        """
        import psycopg

        new = txn.version + 1
        namespace = txn.namespace
        rows = [(namespace, collection, key, text, new) for (collection, key), text in txn.staged.items()]
        cursor = psycopg.ClientCursor(conn)
        last = (len(rows) - 1) // _ROWS_PER_STATEMENT * _ROWS_PER_STATEMENT
        for start in range(0, last, _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            cursor.execute(_upsert_statement(len(chunk)), [value for row in chunk for value in row])
        chunk = rows[last:]
        statements = [_upsert_statement(len(chunk))]
        params: list[Any] = [value for row in chunk for value in row]
        if new % TOMBSTONE_RETENTION == 0 and new > TOMBSTONE_RETENTION:
            purged = new - TOMBSTONE_RETENTION
            statements.append(_PURGE)
            params += (namespace, purged)
        statements += (_SET_HEAD, "COMMIT")
        params += (new, purged, namespace)
        cursor.execute("; ".join(statements), params)

    def _acquire(self, action: str) -> _Conn:
        """A working connection from the pool; raises :class:`StoreError` if there is none."""
        from psycopg_pool import PoolClosed, PoolTimeout

        pool = self._pool
        if pool is None:
            raise self._closed_error()
        # Each dead connection handed out is discarded (the pool opens a replacement), so
        # after at most max_size of them a fresh one comes.
        for _ in range(self._max_size + 1):
            try:
                conn = pool.getconn()
            except PoolClosed:
                raise self._closed_error() from None
            except PoolTimeout as exc:
                raise self._unavailable(action, exc) from exc
            if _usable(conn):
                return conn
            pool.putconn(conn)
        raise StoreError(
            f"Store {self._masked}: {action} failed: every pooled connection was dead. "
            f"Check that PostgreSQL is running and reachable at {_server_of(self._url)}, then retry."
        )

    def _check_idle_connections(self) -> None:
        """After a connection was found lost, test the idle ones too: they are likely lost as well."""
        import psycopg

        pool = self._pool
        if pool is not None:
            with contextlib.suppress(psycopg.Error):
                pool.check()

    def _unavailable(self, action: str, timeout: Exception) -> StoreError:
        """Explain a pool timeout: connect once directly to tell a down server from a busy pool."""
        import psycopg

        try:
            with psycopg.connect(self._url, autocommit=True, connect_timeout=2):
                pass
        except (psycopg.Error, ValueError) as exc:
            return self._error(action, exc)
        return StoreError(
            f"Store {self._masked}: {action} failed (no pooled connection within {self._connect_timeout:g} s). "
            f"All {self._max_size} connections were busy, or the pool was still reconnecting after an outage: "
            "retry; if it persists, open the store with a larger max_size or keep write blocks short.",
            transient=True,
        )

    def _release(self, conn: _Conn) -> None:
        # A pool closed meanwhile closes the connection instead of keeping it.
        self._pool_of_connections.putconn(conn)

    @staticmethod
    def _rollback(conn: _Conn) -> None:
        # The original error is the one to report; a failed rollback leaves nothing
        # committed either, and the pool discards a connection it cannot reset.
        import psycopg
        from psycopg.pq import TransactionStatus

        with contextlib.suppress(psycopg.Error):
            if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                conn.execute("ROLLBACK")

    def _configure(self, conn: _Conn) -> None:
        """Set up each new pooled connection (the pool calls it once per connection)."""
        milliseconds = max(1, round(self._lock_timeout * 1000))
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{milliseconds}ms",))

    def _prepare(self, conn: _Conn) -> None:
        """Check the database and create the tables if missing, once across processes."""
        probe = conn.execute(_PROBE).fetchone()
        assert probe is not None
        encoding, has_schema, _ = probe
        if encoding != "UTF8":
            raise StoreError(
                f"Store {self._masked}: the database's encoding is {encoding}, and toolcards stores UTF-8 text. "
                "Create a UTF-8 database (createdb -E UTF8 -T template0 NAME) and put its name in the URL."
            )
        version = self._schema_version(conn) if has_schema else 0
        if version < SCHEMA_VERSION:
            version = self._create_tables(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"Store {self._masked}: schema version {version} is newer than this toolcards understands "
                f"({SCHEMA_VERSION}). Upgrade toolcards, or point TOOLCARDS_STORE at another database."
            )

    def _create_tables(self, conn: _Conn) -> int:
        """Create the tables unless another process did; returns the schema version found or made."""
        import psycopg

        # Processes opening a new database at once wait here for the first to create the
        # tables. A session lock, taken before the transaction: a transaction begun before
        # the wait could still see the catalog as it was when it began.
        conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            with conn.transaction():
                probe = conn.execute(_PROBE).fetchone()
                assert probe is not None
                _, has_schema, has_tables = probe
                if has_schema:
                    return self._schema_version(conn)
                if has_tables:
                    raise StoreError(
                        f"Store {self._masked}: the database already has a table named records or namespaces "
                        "that toolcards did not create. Give toolcards its own database (or a schema of its own "
                        "via ?options=-csearch_path%3Dtoolcards in the URL)."
                    )
                for statement in _CREATE:
                    conn.execute(statement)
                conn.execute("INSERT INTO toolcards_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
                return SCHEMA_VERSION
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))

    @staticmethod
    def _schema_version(conn: _Conn) -> int:
        row = conn.execute(_SCHEMA_VERSION).fetchone()
        return 0 if row is None else int(row[0])

    # -- errors ----------------------------------------------------------------------------

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise StoreError(
                f"Store {self._masked} was opened in process {self._pid} and used in its forked child "
                f"{os.getpid()}. Open a new store in the child (open_store or default_store)."
            )

    def _closed_error(self) -> StoreError:
        return StoreError(
            f"Store {self._masked} is closed. Open it again with open_store(url), "
            "or use default_store(), which reopens a closed shared store."
        )

    def _error(self, action: str, exc: Exception) -> StoreError:
        return StoreError(
            f"Store {self._masked}: {action} failed ({one_line(exc)}). {self._hint(exc)}",
            transient=_transient(exc),
        )

    def _hint(self, exc: Exception) -> str:  # noqa: PLR0911 - one hint per kind of failure, a table
        from psycopg_pool import PoolTimeout

        server = _server_of(self._url)
        sqlstate = getattr(exc, "sqlstate", None) or ""
        text = str(exc)
        if isinstance(exc, PoolTimeout):
            return (
                f"No connection within {self._connect_timeout:g} s: the server at {server} is down or unreachable, "
                f"or all {self._max_size} pooled connections are busy. Check the server, then retry; or open the "
                "store with a larger max_size or connect_timeout."
            )
        if sqlstate == "55P03":
            return (
                f"Another writer held the namespace's lock longer than the lock timeout ({self._lock_timeout:g} s). "
                "Retry; if it persists, look in pg_stat_activity for a transaction left open, or open the store "
                "with a longer lock_timeout."
            )
        if sqlstate.startswith("28") or "password authentication failed" in text or "pg_hba.conf" in text:
            return (
                f"Check the user and password in the URL (or PGPASSWORD, ~/.pgpass) and the server's pg_hba.conf "
                f"at {server}."
            )
        if re.search(r'role ".*" does not exist', text):
            return f"Create the role on {server} (createuser NAME) or fix the user name in the URL."
        if sqlstate == "3D000" or re.search(r'database ".*" does not exist', text):
            return f"Create the database on {server} (createdb -E UTF8 NAME) or fix the database name in the URL."
        if sqlstate == "42501":
            return (
                "The URL's user lacks a privilege: grant it CREATE on the schema (to create the tables) and "
                "SELECT, INSERT, UPDATE, DELETE on records, namespaces and toolcards_schema."
            )
        if sqlstate.startswith("53"):
            return f"The server at {server} ran out of a resource (disk, memory or connections); free it, then retry."
        if sqlstate in ("40001", "40P01"):
            return "The server aborted the transaction to resolve a conflict; nothing was written. Retry."
        if isinstance(exc, ValueError) or "NUL" in text or sqlstate in ("22021", "22P05"):
            return (
                "Namespace, collection and key must be text PostgreSQL can store "
                "(no NUL characters, no lone surrogates)."
            )
        if sqlstate.startswith(("08", "57")) or sqlstate == "":
            return f"Check that PostgreSQL is running and reachable at {server} (pg_isready), then retry."
        return f"Look in the server's log at {server} for the cause."


def _transient(exc: Exception) -> bool:
    """Whether ``exc`` says the server was out of reach for the moment, not that something is
    wrong: a lost or refused connection, a server shutting down or starting, a pool still
    reconnecting, a lock or a conflict that a retry gets past."""
    from psycopg import OperationalError
    from psycopg_pool import PoolTimeout

    if isinstance(exc, PoolTimeout):
        return True
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate:
        return sqlstate.startswith(("08", "57P")) or sqlstate in ("55P03", "40001", "40P01", "53300")
    return isinstance(exc, OperationalError)  # no answer from a server: it could not be reached


def _usable(conn: _Conn) -> bool:
    """Whether a pooled connection still works, at the cost of a syscall when it does.

    An idle connection has nothing to read unless the server sent something: usually the
    notice that it is closing the session (shutdown, restart, terminated backend). Only
    then is it tested with an empty query.
    """
    import psycopg

    if conn.closed:
        return False
    if not _readable(conn.fileno()):
        return True
    try:
        conn.execute("")
    except psycopg.Error:
        return False
    return True


def _readable(fd: int) -> bool:
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


@functools.lru_cache(maxsize=32)  # bounded: 1,000 sizes of up to 30 KB each would be 15 MB
def _upsert_statement(rows: int) -> str:
    """The ``INSERT`` of ``rows`` rows, a placeholder per value (psycopg quotes the values)."""
    return _UPSERT_HEAD + ", ".join([_UPSERT_ROW] * rows) + _UPSERT_TAIL


def _require_driver() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise StoreError(f"PostgresStore needs psycopg 3 and psycopg_pool ({exc}): {_INSTALL_HINT}") from exc


def _mask(url: str) -> str:
    return _PASSWORD_PARAMETER.sub(r"\1***", describe_location(url))


def _server_of(url: str) -> str:
    """``host:port`` of the URL's server, for messages."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception:
        return "the server in the URL"
    host = params.get("host") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    return f"{host}:{port}"


def _change(namespace: str, collection: str, key: str, text: str | None) -> Change:
    value = None if text is None else decode_value(namespace, collection, key, text)
    return Change(collection=collection, key=key, value=value)


def _snapshot(namespace: str, version: int, rows: Iterable[tuple[str, str, str]]) -> Snapshot:
    state: dict[str, dict[str, JSONValue]] = {}
    for collection, key, text in rows:
        state.setdefault(collection, {})[key] = decode_value(namespace, collection, key, text)
    return Snapshot(namespace=namespace, version=version, rows=state)
