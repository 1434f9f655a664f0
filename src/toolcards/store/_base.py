"""The persistence contract: the store is the team's truth, shared by every process.

State is ``namespace → collection → key → JSON value``: a namespace is one actor's state
(``"team-1/#PlanningTool"``), a collection one kind of row, a key the row's identity. Every
namespace has a version (0, then one more per committed write) and every row remembers the
version that last wrote it; a deleted row stays as a *tombstone* for a while. That is the
change log: "what changed after ``v``" costs the rows changed, and a reader that fell behind
the tombstone purge gets the whole namespace instead.

An actor's memory is a cache of its namespace, held by several processes (and hosts) at once,
so a **write** (:meth:`Store.write`) takes the namespace's write lock, hands the writer what
others committed since its version (:attr:`Transaction.catch_up`), lets it validate and stage
against that fresh state, and commits the next version before the actor answers: two writers
never commit from the same version, so no id is handed out twice and no acknowledged row is
overwritten unseen. A **read** calls :meth:`Store.read` with the cache's version, cheaply
empty when nothing changed. Values read back as ``json.loads(json.dumps(value))``; a value
JSON cannot hold is refused. ``docs/architecture.md`` describes the three implementations and
the contract suite they share.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "TOMBSTONE_RETENTION",
    "CatchUp",
    "Change",
    "Delta",
    "NamespaceSummary",
    "Snapshot",
    "Store",
    "Transaction",
]

JSONValue = Any

TOMBSTONE_RETENTION = 1024
"""Deleted rows are kept as tombstones for this many versions of their namespace (every
store purges at multiples of it); a cache further behind reloads the namespace whole."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One row to write or delete; also one row of a :class:`Delta`."""

    collection: str
    """The kind of row, e.g. ``"tasks"``."""
    key: str
    """The row's identity inside its collection."""
    value: JSONValue | None
    """The new JSON-serialisable value (to write: or a :class:`~toolcards.store.JSONText` holding its JSON
    text), or ``None`` to delete the row (in a delta: it was deleted)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Snapshot:
    """Every row of a namespace at one version."""

    namespace: str
    version: int
    """The namespace's version these rows are the state of."""
    rows: dict[str, dict[str, JSONValue]]
    """``{collection: {key: value}}``; collections and keys in sorted order; fresh objects."""

    @property
    def changes(self) -> tuple[Change, ...]:
        """The rows as the changes that write them into an empty namespace (as :attr:`Delta.changes`)."""
        return tuple(
            Change(collection=collection, key=key, value=value)
            for collection, rows in self.rows.items()
            for key, value in rows.items()
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Delta:
    """The rows of a namespace written after version :attr:`since`, up to :attr:`version`.

    Each changed row appears once, with its value at :attr:`version` (``None``: deleted), so
    applying every change to the state at :attr:`since` gives the state at :attr:`version`.
    """

    namespace: str
    since: int
    version: int
    changes: tuple[Change, ...]
    """Ordered by the version that wrote them, then collection and key."""

    @property
    def empty(self) -> bool:
        """Whether nothing was committed after :attr:`since`."""
        return self.version == self.since


@dataclass(frozen=True, kw_only=True, slots=True)
class NamespaceSummary:
    """What a namespace holds, without its values: one entry of :meth:`Store.namespaces`."""

    namespace: str
    """``"<team_id>/<actor name>"``, e.g. ``"acme/#PlanningTool"``."""
    version: int
    """Its committed version (for a team's event log, ``"<team>/#events"``, its last event's number)."""
    rows: dict[str, int]
    """Live rows (tombstones left out) per collection, in sorted order: ``{"tasks": 3, "meta": 1}``."""


CatchUp: TypeAlias = Snapshot | Delta
"""What a cache at some version must apply to be current: a :class:`Delta`, or a whole
:class:`Snapshot` when the change log no longer reaches back that far."""


class Transaction(ABC):
    """One write to one namespace, holding its write lock; made by :meth:`Store.write`.

    Read :attr:`catch_up`, stage rows with :meth:`stage`, and leave the ``with`` block: the
    staged rows then commit as version :attr:`version` ``+ 1`` (nothing staged: nothing is
    committed and the version stays). An exception inside the block rolls back.
    """

    namespace: str
    version: int
    """The namespace's committed version when the lock was taken, before this write."""
    catch_up: CatchUp | None
    """What was committed after the writer's ``since`` (``None`` when ``since`` was ``None``)."""
    committed: int | None = None
    """After the block: the version this write committed as, or ``None`` if it staged nothing."""

    @abstractmethod
    def stage(self, changes: Iterable[Change]) -> int:
        """Add ``changes`` to this write; returns the version they will commit as.

        Values are encoded at once, so a non-JSON value raises here and nothing of the
        transaction is written. May be called several times; when a key is staged twice,
        the last change wins. Deleting a missing row is not an error.

        Raises:
            toolcards.store.StoreError: a value is not JSON, or the transaction is over.
        """


class Store(ABC):
    """Durable, shared storage for actor state. Implementations are thread-safe.

    Every failure is a :class:`~toolcards.errors.StoreError` whose message names the store
    and the fix.
    """

    @abstractmethod
    def load(self, namespace: str) -> Snapshot:
        """Return every row of ``namespace`` and the version they are the state of.

        Raises:
            toolcards.store.StoreError: the read failed or the store is closed.
        """

    def get(self, namespace: str, collection: str, keys: Iterable[str]) -> dict[str, JSONValue]:
        """The current values of ``keys`` in ``collection`` of ``namespace``, without loading the
        namespace: for rows read one at a time, such as large values a cache leaves out.

        Keys that were never written, or are deleted, are left out of the result; values are
        fresh objects the caller owns. The built-in stores answer with one query; this default
        loads the namespace, so a store of your own is correct before it is fast.

        Raises:
            toolcards.store.StoreError: the read failed, a stored value is not JSON, or the
                store is closed.
        """
        rows = self.load(namespace).rows.get(collection, {})
        return {key: rows[key] for key in keys if key in rows}

    @abstractmethod
    def read(self, namespace: str, since: int) -> CatchUp:
        """Return what was committed to ``namespace`` after version ``since``.

        An empty :class:`Delta` when nothing was (the common case, answered without reading
        rows where the store can tell cheaply); a :class:`Delta` of the rows written since;
        or a :class:`Snapshot` when the change log was compacted past ``since`` or ``since``
        is ahead of the store (the namespace was dropped or the database replaced).

        Raises:
            toolcards.store.StoreError: the read failed or the store is closed.
        """

    @abstractmethod
    def write(self, namespace: str, since: int | None) -> AbstractContextManager[Transaction]:
        """Open a write to ``namespace``: ``with store.write(ns, since=v) as txn: ...``.

        Entering takes the namespace's write lock (waiting for another process's write)
        and computes :attr:`Transaction.catch_up` from ``since``, the version the writer's
        cache is at (``None``: the writer keeps no cache and needs no catch-up). Leaving
        the block commits what was staged; the commit is durable when the block exits.

        Raises:
            toolcards.store.StoreError: the lock was not granted in time, the read or the
                commit failed (then nothing was written), or the store is closed.
        """

    def apply(self, namespace: str, changes: Iterable[Change]) -> int:
        """Write ``changes`` in one transaction without catching up; returns the new version.

        For writers that keep no cache of the namespace. An empty change set writes
        nothing and returns the current version.

        Raises:
            toolcards.store.StoreError: a value is not JSON, the transaction failed, or the
                store is closed; nothing was written.
        """
        with self.write(namespace, since=None) as txn:
            txn.stage(changes)
        return txn.committed if txn.committed is not None else txn.version

    def put(self, namespace: str, collection: str, rows: Mapping[str, JSONValue | None]) -> int:
        """Apply ``rows`` (key → value, ``None`` deletes) of one collection; returns the new version."""
        return self.apply(namespace, (Change(collection=collection, key=k, value=v) for k, v in rows.items()))

    def version(self, namespace: str) -> int:
        """The namespace's committed version (0 if it was never written)."""
        return self.read(namespace, since=0).version

    def namespaces(self) -> tuple[NamespaceSummary, ...]:
        """Every namespace the store holds, sorted by name, with its version and row counts,
        read in one snapshot. For inspection (``toolcards info``): it counts every row.

        Raises:
            toolcards.store.StoreError: the read failed or the store is closed.
            NotImplementedError: a store of your own that does not list its namespaces.
        """
        raise NotImplementedError(f"{type(self).__name__} does not list its namespaces: implement namespaces().")

    @abstractmethod
    def drop(self, namespace: str) -> None:
        """Delete every row of ``namespace`` in one transaction.

        The version still increases (it never goes back), and every cache of the namespace
        is handed an empty :class:`Snapshot` at its next read.

        Raises:
            toolcards.store.StoreError: the transaction failed (nothing was deleted) or the
                store is closed.
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections; calling it again does nothing. Further calls raise ``StoreError``."""

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (the built-in stores say so; ``False`` here)."""
        return False

    @property
    def shared(self) -> bool:
        """Whether other processes can reach this store (``False`` for a :class:`MemoryStore`)."""
        return True


def apply_rows(rows: dict[str, dict[str, JSONValue]], changes: Iterable[Change]) -> None:
    """Apply ``changes`` to ``{collection: {key: value}}`` in place (``None`` deletes).

    For stores and tests that keep a plain mirror of a namespace; actors apply deltas to
    their own structures.
    """
    for change in changes:
        if change.value is None:
            collection = rows.get(change.collection)
            if collection is not None:
                collection.pop(change.key, None)
                if not collection:
                    del rows[change.collection]
        else:
            rows.setdefault(change.collection, {})[change.key] = change.value


def summarize(heads: Iterable[tuple[str, int]], counts: Iterable[tuple[str, str, int]]) -> tuple[NamespaceSummary, ...]:
    """:meth:`Store.namespaces` from ``(namespace, version)`` heads and ``(namespace,
    collection, live rows)`` counts read in one snapshot. A namespace with rows but no head
    (written before versions existed) has version 0."""
    versions = {namespace: int(version) for namespace, version in heads}
    rows: dict[str, dict[str, int]] = {namespace: {} for namespace in versions}
    for namespace, collection, count in counts:
        rows.setdefault(namespace, {})[collection] = int(count)
    return tuple(
        NamespaceSummary(
            namespace=namespace, version=versions.get(namespace, 0), rows=dict(sorted(rows[namespace].items()))
        )
        for namespace in sorted(rows)
    )
