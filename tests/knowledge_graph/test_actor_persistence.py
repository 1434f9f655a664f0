"""KnowledgeGraphActor across restarts and kills: state, seq and vectors come back exactly."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import pykka
import pytest

import toolcards.vector
import toolcards.vector._service
from tests.knowledge_graph.conftest import HASHING, StartGraph
from toolcards.core._events import StateChanged
from toolcards.knowledge_graph import EntityCreate, EntityUpdate, KnowledgeGraphProxy, RelationCreate
from toolcards.knowledge_graph._actor import INLINE_EMBED_MAX, KnowledgeGraphActor
from toolcards.store import SQLiteStore
from toolcards.vector import EmbeddingParam, EmbeddingService

NAMESPACE = "team-1/#KnowledgeGraphTool"


class SpyService:
    """Wraps a real service: counts texts embedded, can pretend to be a slow remote provider."""

    def __init__(self, inner: EmbeddingService, *, provider: str | None = None) -> None:
        self.inner = inner
        self.param = inner.param if provider is None else inner.param.model_copy(update={"provider": provider})
        self.embedded: list[str] = []
        self.background_gate: threading.Event | None = None

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def available(self) -> bool:
        return self.inner.available

    @property
    def failure(self) -> str | None:
        return self.inner.failure

    def embed(self, texts: Sequence[str]) -> Any:
        if self.background_gate is not None and threading.current_thread().name.endswith("embeddings"):
            assert self.background_gate.wait(10)
        self.embedded.extend(texts)
        return self.inner.embed(texts)

    def embed_one(self, text: str) -> Any:
        vectors = self.embed([text])
        return None if vectors is None else vectors[0]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Callable[..., SpyService]:
    """Make the actor's embedding service a spy; returns a factory taking ``provider=``."""
    real = toolcards.vector.get_embedding_service
    holder: dict[str, SpyService] = {}

    def install(provider: str | None = None) -> SpyService:
        def get(param: EmbeddingParam) -> SpyService:
            key = param.model_dump_json()
            if key not in holder:
                holder[key] = SpyService(real(param), provider=provider)
            return holder[key]

        holder.clear()
        monkeypatch.setattr(toolcards.vector._service, "get_embedding_service", get)
        return get(HASHING)

    return install


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


PASSAGES = {"h:Alice", "w:Alice\x1f1.1", "h:Platform", "h:Auth", "w:Auth\x1f2.1"}
"""The vector keys of what :func:`fill` writes: each entity's head and observations."""


def fill(kg: KnowledgeGraphProxy) -> None:
    kg.update(
        "a",
        create_entities=[
            EntityCreate(name="Alice", entity_type="person", description="Leads platform", observations=["rust"]),
            EntityCreate(name="Platform", entity_type="team", is_root=True),
            EntityCreate(name="Auth", entity_type="service", description="Issues login tokens"),
        ],
        create_relations=[
            RelationCreate(from_entity="Alice", to_entity="Platform", relation_type="leads", description="since 2021"),
            RelationCreate(from_entity="Platform", to_entity="Auth", relation_type="owns"),
        ],
    ).get()
    kg.update("b", update_entities=[EntityUpdate(name="Auth", add_observations=["uses JWT"])]).get()


def test_restart_restores_graph_seq_and_vectors_without_reembedding(
    db_path: Path, spy: Callable[..., SpyService], events: list[StateChanged]
) -> None:
    service = spy()
    store = SQLiteStore(db_path)
    ref = KnowledgeGraphActor.start("team-1", store, HASHING, events.append)
    fill(cast(KnowledgeGraphProxy, ref.proxy()))
    before_graph = ref.proxy().graph().get()
    before_search = ref.proxy().search("login tokens", include_edges=True).get()
    before_vectors = store.load(NAMESPACE).rows["vectors"]
    before_summary = ref.proxy().summary().get()
    ref.stop()
    store.close()

    service.embedded.clear()
    store = SQLiteStore(db_path)
    ref = KnowledgeGraphActor.start("team-1", store, HASHING, events.append)
    kg = ref.proxy()
    assert kg.graph().get() == before_graph
    assert kg.summary().get() == before_summary
    assert kg.pending_embeddings().get() == 0
    assert service.embedded == []  # stored vectors matched the model: nothing re-embedded
    after_search = kg.search("login tokens", include_edges=True).get()
    assert after_search.edges == before_search.edges
    # The same vectors, though BLAS may round a row's dot product differently at another position.
    assert [(h.entity, h.keyword_score) for h in after_search.hits] == [
        (h.entity, h.keyword_score) for h in before_search.hits
    ]
    assert [h.score for h in after_search.hits] == pytest.approx([h.score for h in before_search.hits], abs=1e-6)
    assert store.load(NAMESPACE).rows["vectors"] == before_vectors
    kg.update("c", delete_entities=["Alice"]).get()
    assert [e.seq for e in events] == [1, 2, 3]
    ref.stop()
    store.close()


def test_restart_with_another_model_reembeds_in_the_background(db_path: Path, spy: Callable[..., SpyService]) -> None:
    spy()
    small = EmbeddingParam(provider="hashing", dimensions=64)
    store = SQLiteStore(db_path)
    ref = KnowledgeGraphActor.start("team-1", store, small)
    fill(cast(KnowledgeGraphProxy, ref.proxy()))
    ref.stop()
    assert {row["model"] for row in store.load(NAMESPACE).rows["vectors"].values()} == {"hashing:64"}

    kg = KnowledgeGraphActor.start("team-1", store, HASHING).proxy()
    wait_until(lambda: kg.pending_embeddings().get() == 0)
    rows = store.load(NAMESPACE).rows["vectors"]
    assert set(rows) == PASSAGES
    assert {row["model"] for row in rows.values()} == {"hashing:384"}
    assert kg.search("login tokens", mode="vector").get().hits[0].entity.name == "Auth"
    pykka.ActorRegistry.stop_all()
    store.close()


def test_vectors_are_stored_with_the_batch_for_local_providers(start_graph: StartGraph, store: Any) -> None:
    kg = start_graph(HASHING)
    fill(kg)
    rows = store.load(NAMESPACE).rows["vectors"]
    assert set(rows) == PASSAGES
    kg.update("a", delete_entities=["Auth"]).get()
    assert set(store.load(NAMESPACE).rows["vectors"]) == PASSAGES - {"h:Auth", "w:Auth\x1f2.1"}


def test_only_changed_text_is_reembedded(start_graph: StartGraph, spy: Callable[..., SpyService]) -> None:
    service = spy()
    kg = start_graph(HASHING)
    fill(kg)
    service.embedded.clear()
    kg.update("a", update_entities=[EntityUpdate(name="Platform", is_root=False)]).get()
    assert service.embedded == []
    kg.update("a", update_entities=[EntityUpdate(name="Platform", description="Runs deploys")]).get()
    assert service.embedded == ["Platform (team): Runs deploys"]


def test_a_slow_remote_provider_does_not_hold_up_updates(
    start_graph: StartGraph, spy: Callable[..., SpyService], store: Any
) -> None:
    service = spy(provider="openai")
    service.background_gate = threading.Event()
    kg = start_graph(HASHING)
    fill(kg)  # returns although the background embedding is blocked
    assert kg.pending_embeddings().get() == 5  # each head and window of observations
    assert "vectors" not in store.load(NAMESPACE).rows
    result = kg.search("login tokens").get()
    assert result.hits[0].entity.name == "Auth"
    assert result.note is not None and "embedded yet" in result.note

    service.background_gate.set()
    wait_until(lambda: kg.pending_embeddings().get() == 0)
    assert set(store.load(NAMESPACE).rows["vectors"]) == PASSAGES
    result = kg.search("login tokens", mode="vector").get()
    assert result.note is None and result.hits[0].entity.name == "Auth"


def test_query_vector_from_the_caller_is_used(start_graph: StartGraph, spy: Callable[..., SpyService]) -> None:
    service = spy()
    kg = start_graph(HASHING)
    fill(kg)
    vector = service.inner.embed_one("login tokens")
    service.embedded.clear()
    result = kg.search("unrelated words", mode="vector", query_vector=vector).get()
    assert service.embedded == []
    assert result.hits[0].entity.name == "Auth"


_CHILD = textwrap.dedent(
    """
    import sys
    from toolcards.knowledge_graph import EntityCreate, KnowledgeGraphProxy, RelationCreate
    from toolcards.knowledge_graph._actor import KnowledgeGraphActor
    from toolcards.store import SQLiteStore
    from toolcards.vector import EmbeddingParam

    store = SQLiteStore(sys.argv[1])
    kg = KnowledgeGraphActor.start("team-1", store, EmbeddingParam(provider="hashing")).proxy()
    for i in range(100_000):
        links = [RelationCreate(from_entity=f"e{i}", to_entity=f"e{i - 1}", relation_type="after")] if i else []
        report = kg.update(
            "child",
            create_entities=[EntityCreate(name=f"e{i}", entity_type="node", description=f"batch {i}")],
            create_relations=links,
        ).get()
        print(f"ack {i} {report.seq}", flush=True)
    """
)


@pytest.mark.slow
def test_every_acknowledged_batch_survives_sigkill(db_path: Path, spy: Callable[..., SpyService]) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(db_path)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert child.stdout is not None
    acked: list[tuple[int, int]] = []
    for line in child.stdout:
        _, number, seq = line.split()
        acked.append((int(number), int(seq)))
        if len(acked) >= 40:
            break
    os.kill(child.pid, signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)
    acked.extend((int(i), int(s)) for _, i, s in (line.split() for line in rest.splitlines() if line.startswith("ack")))
    assert child.returncode == -signal.SIGKILL

    service = spy()
    store = SQLiteStore(db_path)
    kg = KnowledgeGraphActor.start("team-1", store, HASHING).proxy()
    graph = kg.graph().get()
    names = {e.name for e in graph.entities}
    relations = {r.key for r in graph.relations}
    for index, _ in acked:
        assert f"e{index}" in names
        if index:
            assert (f"e{index}", f"e{index - 1}", "after") in relations
    # Each batch is one transaction: an entity that made it in came with its relation and vector.
    assert all((f"e{i}", f"e{i - 1}", "after") in relations for i in range(1, len(names)))
    assert kg.seq().get() >= acked[-1][1] == acked[-1][0] + 1
    assert kg.pending_embeddings().get() == 0 and service.embedded == []
    pykka.ActorRegistry.stop_all()
    store.close()


class FailingService:
    """An embedder that fails on first use and stays degraded, as EmbeddingService does."""

    param = HASHING
    model_id = "broken:1"
    failure: str | None = None

    @property
    def available(self) -> bool:
        return self.failure is None

    def embed(self, texts: Sequence[str]) -> None:
        self.failure = "model file missing"

    def embed_one(self, text: str) -> None:
        self.failure = "model file missing"


def test_an_unavailable_embedder_degrades_to_keyword_search(
    start_graph: StartGraph, monkeypatch: pytest.MonkeyPatch, store: Any
) -> None:
    monkeypatch.setattr(toolcards.vector._service, "get_embedding_service", lambda param: FailingService())
    kg = start_graph(HASHING)
    fill(kg)
    assert len(kg.entities().get()) == 3
    assert "vectors" not in store.load(NAMESPACE).rows
    assert kg.pending_embeddings().get() == 0
    result = kg.search("login tokens", mode="vector").get()
    assert result.mode == "keyword" and result.hits[0].entity.name == "Auth"
    assert result.note is not None and "unavailable (model file missing)" in result.note


def test_a_large_batch_is_embedded_in_the_background(start_graph: StartGraph, store: Any) -> None:
    kg = start_graph(HASHING)
    count = INLINE_EMBED_MAX + 1
    report = kg.update(
        "a", create_entities=[EntityCreate(name=f"item {i}", entity_type="widget") for i in range(count)]
    ).get()
    assert len(report.created_entities) == count
    wait_until(lambda: kg.pending_embeddings().get() == 0)
    assert len(store.load(NAMESPACE).rows["vectors"]) == count
    result = kg.search("item 7", mode="vector").get()
    assert result.note is None and result.hits[0].entity.name == "item 7"


def _embedding_threads(namespace: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(namespace) and t.is_alive()]


def test_a_crashed_graph_leaves_no_embedding_thread_behind(start_graph: StartGraph) -> None:
    kg = start_graph(HASHING)
    # More entities than an update embeds inline: the background worker starts.
    many = [EntityCreate(name=f"Service {n}", entity_type="service") for n in range(INLINE_EMBED_MAX + 1)]
    kg.update("a", create_entities=many).get()
    wait_until(lambda: kg.pending_embeddings().get() == 0)
    kg.search("service", mode="vector").get()  # the query thread too
    assert _embedding_threads("team-1/#KnowledgeGraphTool")
    actor = kg.actor_ref
    kg.get_entities.defer(None)  # a told message that raises: the actor dies of it
    assert actor.actor_stopped.wait(30)
    for thread in _embedding_threads("team-1/#KnowledgeGraphTool"):
        thread.join(30)
    assert _embedding_threads("team-1/#KnowledgeGraphTool") == []


def test_a_message_the_graph_does_not_know_is_logged_not_swallowed(
    start_graph: StartGraph, caplog: pytest.LogCaptureFixture
) -> None:
    kg = start_graph(HASHING)
    with caplog.at_level(logging.WARNING, logger="pykka"):
        assert kg.actor_ref.ask({"unknown": 1}, timeout=30) is None
    assert any("Unexpected message" in r.getMessage() and "unknown" in r.getMessage() for r in caplog.records)
