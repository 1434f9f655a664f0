"""Choosing a store by location, and the store every actor of a process shares by default.

A location (``TOOLCARDS_STORE`` or ``--store``) is a file path or ``sqlite:///path``
(:class:`~toolcards.store.SQLiteStore`, shared by the processes of a host), a
``postgresql://`` URL (:class:`~toolcards.store.PostgresStore`, shared across hosts; the
``postgres`` extra) or ``:memory:`` (:class:`~toolcards.store.MemoryStore`, one process).
``open_store(location)`` makes a new store; ``default_store()`` returns the process-wide one
for the location the lookup finds (:mod:`toolcards.core._lookup`), creating a SQLite store
there if none exists (how a team starts), so a process's actors share one connection or pool;
``close_default_stores()`` closes them, also at normal interpreter exit.

A ``:memory:`` default store cannot be shared, so two processes using one would silently serve
two teams: the second is refused by an exclusive lock on
``<workspaces root>/.toolcards/memory-store.lock``, whose message names the first's pid.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import IO, Literal

from toolcards.errors import StoreError
from toolcards.store._base import Store
from toolcards.store._memory import MemoryStore
from toolcards.store._sqlite import SQLiteStore

__all__ = [
    "MEMORY",
    "close_default_stores",
    "default_store",
    "describe_location",
    "location_kind",
    "open_store",
    "sqlite_path",
]

MEMORY = ":memory:"
"""The location that selects a :class:`~toolcards.store.MemoryStore`."""

_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})

_lock = threading.Lock()
_shared: dict[str, Store] = {}
_memory_guard: IO[bytes] | None = None


def open_store(location: str | Path | None = None) -> Store:
    """Open a new store for ``location``.

    Args:
        location: ``None`` for the location the lookup finds
            (:func:`toolcards.fs._locations.store_location`); ``":memory:"``; a
            ``postgresql://`` URL; or a database file path (``sqlite:///path`` too).

    Returns:
        A new store the caller owns and should close. Opening connects at once, so a bad
        location fails here.

    Raises:
        StoreError: the store cannot be opened, the URL's scheme is unknown, or the
            PostgreSQL driver is not installed; the message names the location and the fix.
    """
    if location is None:
        try:
            location = _found_location()
        except OSError:
            # SQLiteStore reports the failed directory creation with what to do about it.
            return SQLiteStore()
    kind = location_kind(location)
    if kind == "memory":
        return MemoryStore()
    if kind == "postgresql":
        from toolcards.store._postgres import PostgresStore

        return PostgresStore(str(location))
    return SQLiteStore(sqlite_path(location))


def location_kind(location: str | Path) -> Literal["sqlite", "postgresql", "memory"]:
    """Which store ``location`` selects, without opening it (see :func:`open_store`).

    Raises:
        StoreError: ``location`` is a URL of a scheme no store serves.
    """
    if isinstance(location, Path):
        return "sqlite"
    if location == MEMORY:
        return "memory"
    match = _URL.match(location)
    if match is None:
        return "sqlite"
    scheme = match["scheme"].lower()
    if scheme == "sqlite":
        return "sqlite"
    if scheme in _POSTGRES_SCHEMES:
        return "postgresql"
    raise StoreError(
        f"Unknown store location scheme {scheme!r} in {describe_location(location)}. Use a file path "
        "(SQLite), postgresql://user@host:port/database (PostgreSQL) or :memory:."
    )


def sqlite_path(location: str | Path) -> Path:
    """The absolute database file of a SQLite ``location`` (a path, or ``sqlite:///path``)."""
    text = str(location)
    match = _URL.match(text)
    if match is not None and match["scheme"].lower() == "sqlite":
        text = text[match.end() :]
    return Path(os.path.abspath(os.path.expanduser(text)))


def describe_location(location: str | Path) -> str:
    """``location`` safe to print: a URL's password is replaced by ``***``."""
    from toolcards.core._lookup import masked

    return masked(str(location))


def default_store() -> Store:
    """Return this process's shared store for ``store_location()``, opening it on first use.

    The location is read on every call, so a changed ``TOOLCARDS_STORE`` gets its own
    store; one store exists per location, and a closed one is replaced. Thread-safe:
    concurrent first calls open it once. After ``fork()`` the child starts with no shared
    stores.

    Raises:
        StoreError: the store cannot be opened; or the location is ``:memory:`` and another
            process already keeps this workspaces root's team state in its memory.
        WiringError: the lookup failed (an unreadable ``toolcards.toml``, no home directory).
    """
    try:
        location = _found_location()
    except OSError:
        # SQLiteStore reports the failed directory creation with what to do about it.
        return SQLiteStore()
    with _lock:
        store = _shared.get(location)
        if store is None or getattr(store, "closed", False):
            if location == MEMORY:
                _guard_memory_store()
            store = _shared[location] = open_store(location)
        return store


def _found_location() -> str:
    """The location the lookup finds; for the default file under the workspaces root, its
    directory is made (a file named by an option, the environment or a project file must be
    in a directory that exists)."""
    from toolcards.fs._locations import store_location, store_path

    location = store_location()
    return str(store_path()) if location_kind(location) == "sqlite" else location


def close_default_stores() -> None:
    """Close every store :func:`default_store` opened; the next call opens a fresh one.

    Also runs when the interpreter exits normally, so a SQLite store's log is checkpointed
    into its database file (see :meth:`SQLiteStore.close`) even when nobody closed it: a
    copy of that file alone then holds everything. Blocks until calls running on those
    stores finish. Committed data needs no flushing.

    Raises:
        StoreError: closing a store failed; every other store is closed all the same.
    """
    global _memory_guard
    with _lock:
        stores = list(_shared.values())
        _shared.clear()
        guard, _memory_guard = _memory_guard, None
    failure: StoreError | None = None
    for store in stores:
        try:
            store.close()
        except StoreError as exc:
            failure = failure or exc
    if guard is not None:
        guard.close()
    if failure is not None:
        raise failure


def _close_at_exit() -> None:
    # Actor threads still running at exit may hold the shared store for ever, so it is
    # never freed and SQLite never gets the close at which it would checkpoint.
    try:
        close_default_stores()
    except StoreError as exc:
        logging.getLogger(__name__).warning("%s", exc)


def _guard_memory_store() -> None:
    """Refuse a ``:memory:`` default store when another process holds one for this root."""
    global _memory_guard
    import fcntl

    from toolcards.fs._locations import internal_dir

    if _memory_guard is not None:
        return
    path = internal_dir() / "memory-store.lock"
    handle = open(path, "a+b")  # noqa: SIM115 - held open for the life of the store
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().decode("ascii", "replace").strip() or "another process"
        handle.close()
        raise StoreError(
            f"TOOLCARDS_STORE=:memory: keeps a team's state inside one process, and {holder} already keeps "
            f"the state of workspaces root {path.parent.parent} that way: this process would serve a "
            "different, empty team. Share the default SQLite store (unset TOOLCARDS_STORE) or a PostgreSQL "
            "URL instead."
        ) from None
    handle.truncate(0)
    handle.write(f"process {os.getpid()}".encode())
    handle.flush()
    _memory_guard = handle


def _forget_after_fork() -> None:
    # The parent's connections must not be used in the child, and a lock held by another
    # parent thread at fork time would never be released here. The memory guard's lock
    # belongs to the parent's open file, so the child must not claim it either.
    global _lock, _shared, _memory_guard
    _lock = threading.Lock()
    _shared = {}
    if _memory_guard is not None:
        with contextlib.suppress(OSError):
            _memory_guard.close()
    _memory_guard = None


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(_close_at_exit)
