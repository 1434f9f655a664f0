"""Persistence for actor state: the store is the team's truth, shared by its processes.

An actor loads its namespace (``{collection: {key: JSON value}}`` at a version) when it
starts, catches up with what other processes committed (:meth:`Store.read`) before it
answers a read, and writes every update inside :meth:`Store.write`, which locks the
namespace, hands it what changed since its version and commits before the actor answers.
:class:`SQLiteStore` (one WAL-mode file, the default) serves the processes of one host;
:class:`PostgresStore` serves several hosts; :class:`MemoryStore` keeps the same contract
in one process for tests. :func:`backup_sqlite_store` copies a SQLite store while it is in
use. Every failure is a :class:`~toolcards.errors.StoreError`.

:class:`NamespaceMirror` keeps a small namespace's rows in memory for the actors whose state
is a few rows (the team's metadata, the models members chose).

The runtime's shared parts live here too, injected into ``ActorSystem``: each team's event log
(``store_journals()``), its roster of every process's members (``store_presence()``) and its
ledger of what every call cost, with the budgets that limit it (``store_ledgers()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards._lazy_names import lazy_names
from toolcards.errors import OutcomeUnknown, StoreError
from toolcards.store._base import CatchUp, Change, Delta, NamespaceSummary, Snapshot, Store, Transaction
from toolcards.store._calls import CallLog
from toolcards.store._codec import JSONText
from toolcards.store._default import (
    MEMORY,
    close_default_stores,
    default_store,
    describe_location,
    location_kind,
    open_store,
    sqlite_path,
)
from toolcards.store._journal import RecordedEvent, StoreJournal, store_journals
from toolcards.store._ledger import StoreLedger, store_ledgers
from toolcards.store._memory import MemoryStore
from toolcards.store._mirror import MirroredWrite, NamespaceMirror
from toolcards.store._presence import StorePresence, store_presence
from toolcards.store._sqlite import SQLiteStore
from toolcards.store._sqlite_backup import SQLiteBackup, backup_sqlite_store

if TYPE_CHECKING:
    from toolcards.store._postgres import PostgresStore

__all__ = [
    "MEMORY",
    "CallLog",
    "CatchUp",
    "Change",
    "Delta",
    "JSONText",
    "MemoryStore",
    "MirroredWrite",
    "NamespaceMirror",
    "NamespaceSummary",
    "OutcomeUnknown",
    "PostgresStore",
    "RecordedEvent",
    "SQLiteBackup",
    "SQLiteStore",
    "Snapshot",
    "Store",
    "StoreError",
    "StoreJournal",
    "StoreLedger",
    "StorePresence",
    "Transaction",
    "backup_sqlite_store",
    "close_default_stores",
    "default_store",
    "describe_location",
    "location_kind",
    "open_store",
    "sqlite_path",
    "store_journals",
    "store_ledgers",
    "store_presence",
]


# The PostgreSQL store loads psycopg only when it is asked for.
__getattr__, __dir__ = lazy_names(globals(), {"PostgresStore": "toolcards.store._postgres"})
