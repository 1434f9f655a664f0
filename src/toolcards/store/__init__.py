"""Persistence for actor state: load a namespace, apply change sets, each in one transaction.

An actor loads its namespace (``{collection: {key: JSON value}}``) when it starts and writes
every update with :meth:`Store.apply` before acknowledging it; ``apply`` returns only once the
transaction has committed. :class:`SQLiteStore` (one WAL-mode file, the default) survives the
process being killed; :class:`MemoryStore` keeps the same contract in memory for tests.
Every failure is a :class:`~toolcards.errors.StoreError`.
"""

from __future__ import annotations

from toolcards.errors import StoreError
from toolcards.store.base import Change, Store
from toolcards.store.default import MEMORY, close_default_stores, default_store, open_store
from toolcards.store.memory import MemoryStore
from toolcards.store.sqlite import SQLiteStore

__all__ = [
    "MEMORY",
    "Change",
    "MemoryStore",
    "SQLiteStore",
    "Store",
    "StoreError",
    "close_default_stores",
    "default_store",
    "open_store",
]
