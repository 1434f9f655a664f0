"""A store in process memory, for tests and examples: same contract as SQLite, no file.

Values are kept as the same JSON text :class:`~toolcards.store.SQLiteStore` writes, so a
value reads back exactly as it would from the database (tuples as lists, non-string keys as
strings), a non-JSON value fails the same way, and neither the caller's objects nor the
loaded ones share anything with what is stored. Nothing survives the process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from toolcards.errors import StoreError
from toolcards.store.base import Change, JSONValue, Store
from toolcards.store.codec import decode_value, encode_changes

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """A thread-safe :class:`~toolcards.store.Store` held in a dict behind one lock.

    Every method blocks only while another thread holds the lock for a dict update; values
    are encoded and decoded outside it.

    Raises:
        StoreError: from every method once closed, and from ``apply`` for a non-JSON value.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # namespace → collection → key → JSON text; empty collections and namespaces are removed.
        self._data: dict[str, dict[str, dict[str, str]]] | None = {}

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._data is None

    def __repr__(self) -> str:
        return "MemoryStore()"

    def load(self, namespace: str) -> dict[str, dict[str, JSONValue]]:
        """Return every row of ``namespace`` as ``{collection: {key: value}}``.

        Collections and keys come in sorted order; values are fresh objects the caller owns.
        Returns ``{}`` for a namespace with no rows.

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            collections = self._live().get(namespace, {})
            rows = [
                (collection, key, text)
                for collection, values in sorted(collections.items())
                for key, text in sorted(values.items())
            ]
        state: dict[str, dict[str, JSONValue]] = {}
        for collection, key, text in rows:
            state.setdefault(collection, {})[key] = decode_value(namespace, collection, key, text)
        return state

    def apply(self, namespace: str, changes: Iterable[Change]) -> None:
        """Write every change at once; other threads see all of it or none of it.

        A change set with one non-JSON value writes nothing; when a key appears twice the
        last change wins; deleting a missing row is not an error.

        Raises:
            StoreError: a value is not JSON, or the store is closed.
        """
        encoded = encode_changes(namespace, changes)
        with self._lock:
            data = self._live()
            collections = data.setdefault(namespace, {})
            for (collection, key), text in encoded.items():
                if text is not None:
                    collections.setdefault(collection, {})[key] = text
                elif collection in collections:
                    collections[collection].pop(key, None)
                    if not collections[collection]:
                        del collections[collection]
            if not collections:
                del data[namespace]

    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace``.

        Raises:
            StoreError: the store is closed.
        """
        with self._lock:
            self._live().pop(namespace, None)

    def close(self) -> None:
        """Discard all state; calling it again does nothing. Afterwards every method raises."""
        with self._lock:
            self._data = None

    def _live(self) -> dict[str, dict[str, dict[str, str]]]:
        if self._data is None:
            raise StoreError("This MemoryStore is closed and its state is gone. Create a new MemoryStore().")
        return self._data
