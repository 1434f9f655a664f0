"""Graph actors of two processes on one SQLite file: an entity one process embedded is never
embedded again by the other, and one whose writer never embeds it still gets a vector.

Writers are real child processes where the interleaving needs no control; where it does,
the two "processes" are two actors each with its own ``SQLiteStore`` object (its own
connection), which learn what the other wrote only through store catch-ups.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import toolcards.vector
import toolcards.vector._service
import toolcards.vector._text_vectors
from tests.knowledge_graph.conftest import HASHING, StartGraph
from tests.knowledge_graph.test_actor_persistence import fill, wait_until
from toolcards.knowledge_graph import EntityUpdate, KnowledgeGraphProxy
from toolcards.store import SQLiteStore
from toolcards.vector import EmbeddingParam, EmbeddingService
from toolcards.vector._text_vectors import text_digest

NAMESPACE = "team-1/#KnowledgeGraphTool"
WAIT = 30.0
HASHING_B = EmbeddingParam(provider="hashing", batch_size=32)
"""The same model as HASHING (``hashing:384``), so that each process gets a service of its own."""
TEXTS = {
    "Alice (person): Leads platform",
    "rust",
    "Platform (team)",
    "Auth (service): Issues login tokens",
    "uses JWT",
}
"""The embedded texts of the entities ``fill`` leaves."""

_WRITER = textwrap.dedent(
    """
    import sys
    from toolcards.knowledge_graph import EntityCreate
    from toolcards.knowledge_graph._actor import KnowledgeGraphActor
    from toolcards.store import SQLiteStore
    from toolcards.vector import EmbeddingParam

    store = SQLiteStore(sys.argv[1])
    embedding = EmbeddingParam(provider="hashing") if sys.argv[2] == "hashing" else None
    ref = KnowledgeGraphActor.start("team-1", store, embedding)
    ref.proxy().update(
        "writer", create_entities=[EntityCreate(name="Auth", entity_type="service", description="Issues login tokens")]
    ).get()
    ref.stop()
    store.close()
    """
)


def write_in_another_process(db_path: Path, embedding: str) -> None:
    """Run a short-lived writer process (as ``toolcards call`` is) that creates entity Auth."""
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(db_path), embedding],
        check=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


class RecordingService:
    """Wraps a real service: records embedded texts; can hold background calls until released."""

    def __init__(self, inner: EmbeddingService, *, provider: str | None = None, gated: bool = False) -> None:
        self.inner = inner
        self.param = inner.param if provider is None else inner.param.model_copy(update={"provider": provider})
        self.texts: list[str] = []
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.entered = threading.Event()

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
        if threading.current_thread().name.endswith("embeddings"):
            self.entered.set()
            assert self.gate.wait(WAIT)
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``install(param, **options)``: actors started next with ``param`` use a RecordingService."""
    real = toolcards.vector.get_embedding_service
    installed: dict[str, RecordingService] = {}

    def install(param: EmbeddingParam, **options: Any) -> RecordingService:
        installed[param.model_dump_json()] = recorder = RecordingService(real(param), **options)
        monkeypatch.setattr(
            toolcards.vector._service, "get_embedding_service", lambda p: installed.get(p.model_dump_json()) or real(p)
        )
        return recorder

    yield install
    for recorder in installed.values():
        recorder.gate.set()


def vector_hit(kg: KnowledgeGraphProxy, query: str) -> str | None:
    result = kg.search(query, mode="vector").get(timeout=WAIT)
    return result.hits[0].entity.name if result.mode == "vector" and result.hits else None


@pytest.mark.slow
def test_an_entity_another_process_embedded_is_not_embedded_again(
    db_path: Path, start_graph: StartGraph, services: Callable[..., RecordingService]
) -> None:
    store = SQLiteStore(db_path)
    reader = services(HASHING)
    kg = start_graph(HASHING, on=store)
    assert kg.entities().get(timeout=WAIT) == []
    write_in_another_process(db_path, "hashing")  # embeds inline: its vector commits with the entity
    assert vector_hit(kg, "login tokens") == "Auth"
    assert kg.pending_embeddings().get(timeout=WAIT) == 0
    assert reader.texts == ["login tokens"]  # the query only
    store.close()


@pytest.mark.slow
def test_an_entity_whose_writer_never_embeds_it_is_embedded_after_the_grace_period(
    db_path: Path, start_graph: StartGraph, services: Callable[..., RecordingService], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolcards.vector._text_vectors, "REMOTE_EMBED_GRACE_S", 0.2)
    store = SQLiteStore(db_path)
    reader = services(HASHING)
    kg = start_graph(HASHING, on=store)
    assert kg.entities().get(timeout=WAIT) == []
    write_in_another_process(db_path, "none")  # a keyword-only process: it stores no vector
    assert [entity.name for entity in kg.entities().get(timeout=WAIT)] == ["Auth"]
    assert kg.pending_embeddings().get(timeout=WAIT) == 1  # waiting for the writer's vector
    wait_until(lambda: kg.pending_embeddings().get(timeout=WAIT) == 0, timeout=WAIT)
    assert reader.texts == ["Auth (service): Issues login tokens"]
    row = store.load(NAMESPACE).rows["vectors"]["h:Auth"]
    assert (row["model"], row["digest"]) == ("hashing:384", text_digest("Auth (service): Issues login tokens"))
    assert vector_hit(kg, "login tokens") == "Auth"
    store.close()


def test_vectors_stored_after_the_catch_up_are_used_not_recomputed(
    db_path: Path, start_graph: StartGraph, services: Callable[..., RecordingService]
) -> None:
    first, second = SQLiteStore(db_path), SQLiteStore(db_path)
    writer = services(HASHING, provider="openai", gated=True)  # a slow provider: embeds in the background
    reader = services(HASHING_B)
    a = start_graph(HASHING, on=first)
    b = start_graph(HASHING_B, on=second)
    assert b.seq().get(timeout=WAIT) == 0  # B has loaded the empty graph: it learns of A's writes by catching up
    fill(a)
    assert writer.entered.wait(WAIT)  # A's background call is held
    assert len(b.entities().get(timeout=WAIT)) == 3  # B caught up with the entities, not their vectors
    assert b.pending_embeddings().get(timeout=WAIT) == 5  # each head and window of observations

    writer.gate.set()
    wait_until(lambda: a.pending_embeddings().get(timeout=WAIT) == 0, timeout=WAIT)
    wait_until(lambda: b.pending_embeddings().get(timeout=WAIT) == 0, timeout=WAIT)
    assert vector_hit(b, "login tokens") == "Auth"
    assert set(writer.texts) >= TEXTS
    assert not TEXTS & set(reader.texts)
    first.close()
    second.close()


def test_an_entity_changed_elsewhere_loses_its_old_vector_until_the_new_one_lands(
    db_path: Path, start_graph: StartGraph, services: Callable[..., RecordingService]
) -> None:
    first, second = SQLiteStore(db_path), SQLiteStore(db_path)
    writer = services(HASHING, provider="openai")
    reader = services(HASHING_B)
    a = start_graph(HASHING, on=first)
    b = start_graph(HASHING_B, on=second)
    assert b.seq().get(timeout=WAIT) == 0  # B has loaded the empty graph: it learns of A's writes by catching up
    fill(a)
    wait_until(lambda: a.pending_embeddings().get(timeout=WAIT) == 0, timeout=WAIT)
    assert vector_hit(b, "login tokens") == "Auth"

    writer.entered.clear()
    writer.gate.clear()
    a.update("a", update_entities=[EntityUpdate(name="Auth", description="Stores invoices")]).get(timeout=WAIT)
    assert writer.entered.wait(WAIT)
    assert b.pending_embeddings().get(timeout=WAIT) == 1
    assert vector_hit(b, "login tokens") != "Auth"  # the vector of the old text is gone
    writer.gate.set()
    wait_until(lambda: b.pending_embeddings().get(timeout=WAIT) == 0, timeout=WAIT)
    assert vector_hit(b, "stores invoices") == "Auth"
    assert writer.texts[-1] == "Auth (service): Stores invoices"  # only the changed passage
    assert not (TEXTS | {writer.texts[-1]}) & set(reader.texts)
    first.close()
    second.close()
