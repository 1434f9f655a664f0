"""Fixtures for the planning tests: stores, an actor factory, spy stores and embedding services.

Actors are stopped after each test by the root conftest's ``stop_all``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from toolcards.core._events import StateChanged
from toolcards.errors import StoreError
from toolcards.planning import PlanningProxy
from toolcards.planning._actor import PlanningActor
from toolcards.store import CatchUp, Change, MemoryStore, Snapshot, Store, Transaction
from toolcards.vector import EmbeddingParam

StartActor = Callable[..., PlanningProxy]


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    """A fresh in-memory store, closed after the test."""
    opened = MemoryStore()
    yield opened
    opened.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A SQLite database path in a fresh directory."""
    return tmp_path / "state.db"


@pytest.fixture
def start(store: MemoryStore) -> StartActor:
    """Start a PlanningActor (on the in-memory store unless given one) and return its typed proxy."""

    def start(
        *,
        team_id: str = "team-1",
        on: Store | None = None,
        embedding: EmbeddingParam | None = None,
        publish: Callable[[StateChanged], None] | None = None,
    ) -> PlanningProxy:
        ref = PlanningActor.start(team_id, on if on is not None else store, embedding, publish)
        return cast(PlanningProxy, ref.proxy())

    return start


class SpyTransaction(Transaction):
    """Records what the actor stages, passing it on to the real transaction."""

    def __init__(self, inner: Transaction) -> None:
        self.inner = inner
        self.namespace = inner.namespace
        self.version = inner.version
        self.catch_up = inner.catch_up
        self.staged: list[Change] = []

    @property  # type: ignore[override]
    def committed(self) -> int | None:
        return self.inner.committed

    def stage(self, changes: Iterable[Change]) -> int:
        batch = list(changes)
        self.staged.extend(batch)
        return self.inner.stage(batch)


class SpyStore(Store):
    """Delegates to a real store, recording every committed change set; can fail the next commit."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.applied: list[list[Change]] = []
        self.fail_next = False

    def load(self, namespace: str) -> Snapshot:
        return self.inner.load(namespace)

    def read(self, namespace: str, since: int) -> CatchUp:
        return self.inner.read(namespace, since)

    @contextlib.contextmanager
    def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
        with self.inner.write(namespace, since) as txn:
            spy = SpyTransaction(txn)
            yield spy
            if spy.staged and self.fail_next:
                self.fail_next = False
                raise StoreError("disk full (simulated)")
        if spy.staged:
            self.applied.append(spy.staged)

    def drop(self, namespace: str) -> None:
        self.inner.drop(namespace)

    def close(self) -> None:
        self.inner.close()


class RecordingService:
    """Wraps an embedding service: counts embedded texts and can hold every call until released."""

    def __init__(self, inner: Any, *, gated: bool = False) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.entered = threading.Event()

    @property
    def param(self) -> EmbeddingParam:
        return cast(EmbeddingParam, self.inner.param)

    @property
    def model_id(self) -> str:
        return cast(str, self.inner.model_id)

    @property
    def available(self) -> bool:
        return cast(bool, self.inner.available)

    @property
    def failure(self) -> str | None:
        return cast("str | None", self.inner.failure)

    def embed(self, texts: Sequence[str]) -> Any:
        self.entered.set()
        self.gate.wait(30)
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def record_embeddings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., RecordingService]]:
    """``install(param, gated=False)``: actors started next with ``param`` use a RecordingService."""
    import toolcards.vector
    import toolcards.vector._service

    real = toolcards.vector.get_embedding_service
    recorders: dict[str, RecordingService] = {}

    def get(param: EmbeddingParam) -> Any:
        return recorders.get(param.model_dump_json()) or real(param)

    def install(param: EmbeddingParam, *, gated: bool = False) -> RecordingService:
        recorder = RecordingService(real(param), gated=gated)
        recorders[param.model_dump_json()] = recorder
        monkeypatch.setattr(toolcards.vector._service, "get_embedding_service", get)
        return recorder

    yield install
    for recorder in recorders.values():
        recorder.gate.set()  # no embedding thread may outlive the test waiting on its gate


# The deterministic embedder used in tests.
HASHING = EmbeddingParam(provider="hashing")
