"""Choosing a store by location, and the store every actor of a process shares by default.

``open_store(location)`` makes a new store for a location. ``default_store()`` returns the
process-wide :class:`~toolcards.store.SQLiteStore` for ``toolcards.core.settings.store_path()``,
so all actors of a process share one connection to one file; ``close_default_stores()`` closes
those shared stores at shutdown.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from toolcards.store.base import Store
from toolcards.store.memory import MemoryStore
from toolcards.store.sqlite import SQLiteStore

__all__ = ["MEMORY", "close_default_stores", "default_store", "open_store"]

MEMORY = ":memory:"
"""The location that selects a :class:`~toolcards.store.MemoryStore`."""

_lock = threading.Lock()
_shared: dict[Path, SQLiteStore] = {}


def open_store(location: str | Path | None = None) -> Store:
    """Open a new store for ``location``.

    Args:
        location: ``None`` for the SQLite database at ``store_path()`` (``TOOLCARDS_STORE``,
            else ``<workspaces root>/.toolcards/state.db``); ``":memory:"`` for a
            :class:`~toolcards.store.MemoryStore`; any other value is a database file path.

    Returns:
        A new store the caller owns and should close. Opening blocks for the file's
        creation and schema check.

    Raises:
        StoreError: the database cannot be opened; the message names the file and the fix.
    """
    if isinstance(location, str) and location == MEMORY:
        return MemoryStore()
    return SQLiteStore(location)


def default_store() -> Store:
    """Return this process's shared store for ``store_path()``, opening it on first use.

    The path is read on every call, so a changed ``TOOLCARDS_STORE`` gets its own store; one
    :class:`~toolcards.store.SQLiteStore` exists per path, and a closed one is replaced.
    Thread-safe: concurrent first calls open the file once. After ``fork()`` the child starts
    with no shared stores.

    Raises:
        StoreError: the database cannot be opened; the message names the file and the fix.
    """
    from toolcards.core.settings import store_path

    try:
        path = store_path()
    except OSError:
        # SQLiteStore reports the failed directory creation with what to do about it.
        return SQLiteStore()
    with _lock:
        store = _shared.get(path)
        if store is None or store.closed:
            store = _shared[path] = SQLiteStore(path)
        return store


def close_default_stores() -> None:
    """Close every store :func:`default_store` opened; the next call opens a fresh one.

    Blocks until calls running on those stores finish. Committed data needs no flushing.
    """
    with _lock:
        stores = list(_shared.values())
        _shared.clear()
    for store in stores:
        store.close()


def _forget_after_fork() -> None:
    # The parent's connections must not be used in the child, and a lock held by another
    # parent thread at fork time would never be released here.
    global _lock, _shared
    _lock = threading.Lock()
    _shared = {}


os.register_at_fork(after_in_child=_forget_after_fork)
