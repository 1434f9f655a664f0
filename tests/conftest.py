"""Shared fixtures: an isolated workspaces root, fake observers on a real actor system,
and a teardown that stops every actor a test left running."""

from __future__ import annotations

import asyncio
import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

from tests.postgres_server import PostgresServer, PostgresUnavailable, start_server
from toolcards.actors._system import ActorSystem
from toolcards.core._lookup import use_locations
from toolcards.store import close_default_stores
from toolcards.testing import FakeObserver


@pytest.fixture(autouse=True)
def isolated_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own workspaces root and state database, and a per-user data
    directory of its own (``XDG_DATA_HOME``), so no lookup reaches the real home."""
    root = tmp_path / "workspaces"
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(root))
    monkeypatch.delenv("TOOLCARDS_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    use_locations()  # no explicit choice left by an earlier test's command line
    yield root
    use_locations()


@pytest.fixture(autouse=True)
def stop_all() -> Iterator[None]:
    """No test leaves an actor thread (or an open state database) behind."""
    yield
    pykka.ActorRegistry.stop_all()
    close_default_stores()


@pytest.fixture(autouse=True)
def close_sync_run_loop() -> Iterator[None]:
    """Close the event loop an ``Agent.run_sync`` left set on the main thread.

    pydantic-ai keeps that loop open for the next sync run, by design; the next test's
    ``asyncio.run`` replaces it, and the garbage collector then reports it (and its two
    self-pipe sockets) as unclosed, in whichever test happens to be running.
    """
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:  # none set, and none may be made here
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def system() -> Iterator[ActorSystem]:
    with ActorSystem() as actor_system:
        yield actor_system


@pytest.fixture
def alice(system: ActorSystem) -> FakeObserver:
    return FakeObserver("Alice", "team-1", system=system)


@pytest.fixture
def bob(system: ActorSystem) -> FakeObserver:
    return FakeObserver("Bob", "team-1", system=system)


_postgres_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (see ``tests/postgres_server.py``).

    Skips the tests that use it, with the reason, when it cannot start (no binaries).
    Offers ``.url(dbname)``, ``.create_schema()``, ``.create_database()``, ``.restart()``.
    """
    try:
        server = start_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    yield server
    server.destroy()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of an empty store of the test's own (a fresh schema), dropped after the test.

    Every process given the URL (e.g. as ``TOOLCARDS_STORE``) shares that one store.
    """
    schema = f"test_{next(_postgres_schemas)}"
    url = postgres_server.create_schema(schema)
    yield url
    postgres_server.drop_schema(schema)
