"""The persistence contract every stateful actor writes through.

State is organised as ``namespace → collection → key → JSON value``. A namespace is one
actor's state (for example ``"team-1/#PlanningTool"``); a collection is one kind of row
(``"tasks"``, ``"meta"``); a key is the row's identity. An actor loads its namespace
once when it starts, then applies small change sets: a change set costs what changed,
never the size of the state.

Values are JSON: a value reads back as ``json.loads(json.dumps(value))`` (tuples as lists,
non-string dict keys as strings), and a value JSON cannot hold is refused.

The contract is deliberately small (load, apply, drop, close) so that a server database can
implement it with portable SQL when a team spans machines. Implementations:
:class:`~toolcards.store.SQLiteStore` (the default) and :class:`~toolcards.store.MemoryStore`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Change", "Store"]

JSONValue = Any


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One row to write or delete, part of a change set applied in one transaction."""

    collection: str
    """The kind of row, e.g. ``"tasks"``."""
    key: str
    """The row's identity inside its collection."""
    value: JSONValue | None
    """The new JSON-serialisable value, or ``None`` to delete the row."""


class Store(ABC):
    """Durable storage for actor state. Implementations are thread-safe.

    ``apply`` is the write: it commits every change in one transaction and returns only
    once the transaction is durable, so an actor may acknowledge an update as soon as
    ``apply`` returns. Every failure is a :class:`~toolcards.errors.StoreError`.
    """

    @abstractmethod
    def load(self, namespace: str) -> dict[str, dict[str, JSONValue]]:
        """Return every row of ``namespace`` as ``{collection: {key: value}}`` (empty if none).

        The values are fresh objects: changing them does not change the stored state.

        Raises:
            toolcards.store.StoreError: the read failed or the store is closed.
        """

    @abstractmethod
    def apply(self, namespace: str, changes: Iterable[Change]) -> None:
        """Write every change in one transaction; durable when this returns.

        A ``None`` value deletes its row (deleting a missing row is not an error); when a
        key appears twice, the last change wins.

        Raises:
            toolcards.store.StoreError: a value is not JSON, the transaction failed, or the
                store is closed; nothing was written.
        """

    def put(self, namespace: str, collection: str, rows: Mapping[str, JSONValue | None]) -> None:
        """Apply ``rows`` (key → value, ``None`` deletes) of one collection in one transaction."""
        self.apply(namespace, (Change(collection=collection, key=k, value=v) for k, v in rows.items()))

    @abstractmethod
    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace`` in one transaction.

        Raises:
            toolcards.store.StoreError: the transaction failed (nothing was deleted) or the
                store is closed.
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections; calling it again does nothing. Further calls raise ``StoreError``."""
