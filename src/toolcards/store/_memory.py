"""A store in process memory, for tests and examples: same contract as SQLite, no file.

Values are kept as the same JSON text :class:`~toolcards.store.SQLiteStore` writes, so a
value reads back exactly as it would from the database (tuples as lists, non-string keys as
strings), a non-JSON value fails the same way, and neither the caller's objects nor the
loaded ones share anything with what is stored. Versions, deltas and tombstone compaction
behave as in the database. Nothing survives the process, and no other process can reach
it: :attr:`shared` is ``False``.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

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
from toolcards.store._transaction import StagedWrite

__all__ = ["MemoryStore"]

_RowKey = tuple[str, str]


@dataclass(slots=True)
class _Namespace:
    version: int = 0
    purged: int = 0
    rows: dict[_RowKey, tuple[str | None, int]] = field(default_factory=dict)
    """``(collection, key)`` → (JSON text or ``None`` for a tombstone, version that wrote it)."""
    log: list[tuple[int, tuple[_RowKey, ...]]] = field(default_factory=list)
    """``(version, keys written)`` per commit since ``purged``, oldest first."""


class MemoryStore(Store):
    """A thread-safe :class:`~toolcards.store.Store` held in dicts behind one lock.

    A :meth:`write` holds the lock for its whole ``with`` block, as a database's write
    lock would; values are encoded and decoded outside it.

    Args:
        tombstone_retention: versions a deleted row is remembered for deltas; a reader
            further behind gets a snapshot (as with SQLite's ``TOMBSTONE_RETENTION``).

    Raises:
        StoreError: from every method once closed, and from staging a non-JSON value.
    """

    def __init__(self, *, tombstone_retention: int = TOMBSTONE_RETENTION) -> None:
        self._lock = threading.RLock()
        self._retention = tombstone_retention
        self._data: dict[str, _Namespace] | None = {}

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._data is None

    @property
    def shared(self) -> bool:
        """Always ``False``: the state lives in this process only."""
        return False

    def __repr__(self) -> str:
        return "MemoryStore()"

    def load(self, namespace: str) -> Snapshot:
        """Return every row of ``namespace`` (sorted by collection and key) and its version.

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            space = self._live().get(namespace) or _Namespace()
            version = space.version
            rows = sorted((ck, text) for ck, (text, _) in space.rows.items() if text is not None)
        return _snapshot(namespace, version, rows)

    def get(self, namespace: str, collection: str, keys: Iterable[str]) -> dict[str, JSONValue]:
        """The current values of ``keys`` in ``collection`` (see :meth:`Store.get`).

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            space = self._live().get(namespace) or _Namespace()
            found = [(key, space.rows.get((collection, key), (None, 0))[0]) for key in keys]
        return {key: decode_value(namespace, collection, key, text) for key, text in found if text is not None}

    def read(self, namespace: str, since: int) -> CatchUp:
        """Return what was committed to ``namespace`` after ``since`` (see :meth:`Store.read`).

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            space = self._live().get(namespace) or _Namespace()
            if since == space.version:
                return Delta(namespace=namespace, since=since, version=since, changes=())
            rows: Sequence[tuple[_RowKey, str | None]]
            if since < space.purged or since > space.version:
                rows = sorted((ck, text) for ck, (text, _) in space.rows.items() if text is not None)
                snapshot = True
            else:
                rows = self._since(space, since)
                snapshot = False
            version = space.version
        if snapshot:
            return _snapshot(namespace, version, rows)
        changes = tuple(
            Change(collection=c, key=k, value=None if text is None else decode_value(namespace, c, k, text))
            for (c, k), text in rows
        )
        return Delta(namespace=namespace, since=since, version=version, changes=changes)

    def version(self, namespace: str) -> int:
        """The namespace's committed version.

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            space = self._live().get(namespace)
            return 0 if space is None else space.version

    def namespaces(self) -> tuple[NamespaceSummary, ...]:
        """Every namespace with its version and live rows per collection (see :meth:`Store.namespaces`).

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            spaces = self._live()
            heads = [(namespace, space.version) for namespace, space in spaces.items()]
            live = Counter(
                (namespace, c)
                for namespace, space in spaces.items()
                for (c, _), (text, _) in space.rows.items()
                if text is not None
            )
        return summarize(heads, ((namespace, c, count) for (namespace, c), count in live.items()))

    @contextlib.contextmanager
    def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
        """Write to ``namespace`` holding the store's lock (see :meth:`Store.write`).

        Raises:
            StoreError: the store is closed, or a staged value is not JSON.
        """
        with self._lock:
            space = self._live().get(namespace) or _Namespace()
            catch_up = None
            if since is not None:
                # Re-entrant lock: read() sees the same state this write starts from.
                catch_up = self.read(namespace, since)
            txn = StagedWrite(namespace, space.version, catch_up)
            try:
                yield txn
            except BaseException:
                txn.finish(committed=False)
                raise
            if txn.staged:
                self._commit(namespace, txn)
            txn.finish(committed=True)

    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace``; its version moves on and older ones are purged.

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            data = self._live()
            space = data.get(namespace)
            if space is None:
                data[namespace] = _Namespace(version=1, purged=1)
                return
            space.version += 1
            space.purged = space.version
            space.rows.clear()
            space.log.clear()

    def close(self) -> None:
        """Discard all state; calling it again does nothing. Afterwards every method raises."""
        with self._lock:
            self._data = None

    # -- internals (the caller holds the lock) ------------------------------------------------

    def _live(self) -> dict[str, _Namespace]:
        if self._data is None:
            raise StoreError("This MemoryStore is closed and its state is gone. Create a new MemoryStore().")
        return self._data

    @staticmethod
    def _since(space: _Namespace, since: int) -> list[tuple[_RowKey, str | None]]:
        start = bisect.bisect_right(space.log, since, key=lambda entry: entry[0])
        keys: dict[_RowKey, None] = {}
        for _, written in space.log[start:]:
            keys.update(dict.fromkeys(written))
        rows = [(ck, space.rows[ck]) for ck in keys if ck in space.rows]
        rows.sort(key=lambda row: (row[1][1], row[0]))
        return [(ck, text) for ck, (text, _) in rows]

    def _commit(self, namespace: str, txn: StagedWrite) -> None:
        space = self._live().setdefault(namespace, _Namespace())
        version = space.version = txn.version + 1
        for ck, text in txn.staged.items():
            space.rows[ck] = (text, version)
        space.log.append((version, tuple(txn.staged)))
        if version % self._retention == 0 and version > self._retention:
            space.purged = version - self._retention
            for ck in [ck for ck, (text, v) in space.rows.items() if text is None and v <= space.purged]:
                del space.rows[ck]
            start = bisect.bisect_right(space.log, space.purged, key=lambda entry: entry[0])
            del space.log[:start]


def _snapshot(namespace: str, version: int, rows: Sequence[tuple[_RowKey, str | None]]) -> Snapshot:
    state: dict[str, dict[str, JSONValue]] = {}
    for (collection, key), text in rows:
        assert text is not None
        state.setdefault(collection, {})[key] = decode_value(namespace, collection, key, text)
    return Snapshot(namespace=namespace, version=version, rows=state)
