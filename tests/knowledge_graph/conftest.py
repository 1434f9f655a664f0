"""Fixtures for the knowledge-graph tests: a store, actor factories, and a clean actor registry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pykka
import pytest

from toolcards.core._events import StateChanged
from toolcards.knowledge_graph import KnowledgeGraphProxy
from toolcards.knowledge_graph._actor import KnowledgeGraphActor
from toolcards.store import MemoryStore, SQLiteStore, Store
from toolcards.vector import EmbeddingParam

HASHING = EmbeddingParam(provider="hashing")

StartGraph = Callable[..., KnowledgeGraphProxy]


@pytest.fixture(autouse=True)
def _stop_actors() -> Iterator[None]:
    yield
    pykka.ActorRegistry.stop_all()


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    opened = MemoryStore()
    yield opened
    opened.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def events() -> list[StateChanged]:
    return []


@pytest.fixture
def start_graph(store: Store, events: list[StateChanged]) -> StartGraph:
    """Start an actor on the test's store (or the one given) and return its proxy."""

    def start(
        embedding: EmbeddingParam | None = None, *, on: Store | None = None, team: str = "team-1", **kwargs: Any
    ) -> KnowledgeGraphProxy:
        ref = KnowledgeGraphActor.start(team, on or store, embedding, events.append, **kwargs)
        return cast(KnowledgeGraphProxy, ref.proxy())

    return start


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(db_path)
    yield opened
    opened.close()
