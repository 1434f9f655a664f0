"""``NamespaceMirror``: a small namespace's rows in memory, kept current with the store.

For the actors whose whole state is a few rows (the team's metadata, each member's chosen
model): they need the store's contract — read the latest committed rows cheaply before
answering, write under the namespace's lock after catching up — without a domain model of
their own. A read is one :meth:`Store.read` (an empty delta when nothing changed); a write
is one :meth:`Store.write` whose staged rows are mirrored in memory only once committed.

Not thread-safe: its owner (an actor) calls it one message at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from toolcards.store._base import CatchUp, Change, Delta, Snapshot, Store, Transaction

__all__ = ["MirroredWrite", "NamespaceMirror"]


class MirroredWrite:
    """One write through a :class:`NamespaceMirror`: what :meth:`stage` collects commits as one version."""

    def __init__(self, txn: Transaction) -> None:
        self.txn = txn
        self.staged: list[Change] = []

    def stage(self, changes: Iterable[Change]) -> None:
        """Add rows to write (``value=None`` deletes).

        Raises:
            toolcards.store.StoreError: a value is not JSON.
        """
        listed = list(changes)
        self.txn.stage(listed)
        self.staged += listed


class NamespaceMirror:
    """Every row of ``namespace`` as ``rows[collection][key]``, at :attr:`version`.

    Args:
        store: Where the namespace lives; it must outlive the mirror.
        namespace: ``"<team_id>/<actor name>"``.

    Raises:
        toolcards.store.StoreError: the namespace cannot be read.
    """

    def __init__(self, store: Store, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.rows: dict[str, dict[str, Any]] = {}
        self.version = 0
        self._absorb(store.load(namespace))

    def refresh(self) -> bool:
        """Catch up with what was committed since :attr:`version`; whether anything was.

        Raises:
            toolcards.store.StoreError: the read failed (the rows stay as they were).
        """
        catch_up = self.store.read(self.namespace, self.version)
        if isinstance(catch_up, Delta) and catch_up.empty:
            return False
        self._absorb(catch_up)
        return True

    @contextmanager
    def write(self) -> Iterator[MirroredWrite]:
        """``with mirror.write() as write: ...`` — the namespace's lock is held, the rows are
        current (validate against them), and what ``write.stage`` collects commits when the
        block ends, then shows in :attr:`rows`. An exception in the block writes nothing.

        Raises:
            toolcards.store.StoreError: the lock, the catch-up or the commit failed; nothing
                was written.
        """
        with self.store.write(self.namespace, since=self.version) as txn:
            self._absorb(txn.catch_up)
            write = MirroredWrite(txn)
            yield write
        if txn.committed is not None:
            for change in write.staged:
                self._apply(change)
            self.version = txn.committed

    def _absorb(self, catch_up: CatchUp | None) -> None:
        if catch_up is None:
            return
        if isinstance(catch_up, Snapshot):
            self.rows = {collection: dict(rows) for collection, rows in catch_up.rows.items()}
        else:
            for change in catch_up.changes:
                self._apply(change)
        self.version = catch_up.version

    def _apply(self, change: Change) -> None:
        rows = self.rows.setdefault(change.collection, {})
        if change.value is None:
            rows.pop(change.key, None)
        else:
            rows[change.key] = change.value
