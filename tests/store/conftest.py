"""Fixtures for the store tests: each store implementation, and a clean process-wide default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcards.store import MemoryStore, SQLiteStore, Store, close_default_stores


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each implementation in turn, closed after the test (PostgreSQL: a schema of its own)."""
    opened: Store
    if request.param == "memory":
        opened = MemoryStore()
    elif request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "state.db")
    else:
        from toolcards.store._postgres import PostgresStore

        opened = PostgresStore(request.getfixturevalue("postgres_url"))
    yield opened
    opened.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A database path in a fresh directory."""
    return tmp_path / "state.db"


@pytest.fixture(autouse=True)
def _isolated_default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # No test may touch ./workspaces, and shared stores must not leak between tests.
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "workspaces"))
    monkeypatch.delenv("TOOLCARDS_STORE", raising=False)
    yield
    close_default_stores()
