"""Two PlanningActors on one SQLite file, as two processes serve one team: a description one of
them embedded is never embedded again by the other, yet both search it by meaning.

Each actor has its own ``SQLiteStore`` object (its own connection), so each learns what the
other wrote only through store catch-ups, as separate processes do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import toolcards.vector._text_vectors
from tests.planning.conftest import HASHING, RecordingService, StartActor
from toolcards.planning import PlanningProxy, TaskCreate, TaskUpdate
from toolcards.store import SQLiteStore
from toolcards.vector import EmbeddingParam
from toolcards.vector._text_vectors import text_digest

Record = Callable[..., RecordingService]
WAIT = 30  # seconds a test waits before failing; never a timing assertion
NAMESPACE = "team-1/#PlanningTool"
HASHING_B = EmbeddingParam(provider="hashing", batch_size=32)
"""The same model as HASHING (``hashing:384``), so that process B gets a recorder of its own."""
DESCRIPTION = "Fix flaky database migration test"
QUERY = "fix flaky databases migrations tests"  # no keyword match: only its meaning finds the task


@pytest.fixture
def stores(db_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """Two connections to one database file: one per "process"."""
    first, second = SQLiteStore(db_path), SQLiteStore(db_path)
    yield first, second
    first.close()
    second.close()


def indexed(proxy: PlanningProxy) -> None:
    proxy.when_indexed().get(timeout=WAIT).result(WAIT)


def started(proxy: PlanningProxy) -> PlanningProxy:
    """``proxy`` once its actor has loaded the board (``start`` returns before ``on_start`` ran)."""
    proxy.seq().get(timeout=WAIT)
    return proxy


def test_a_description_another_process_embeds_is_not_embedded_again(
    start: StartActor, record_embeddings: Record, stores: tuple[SQLiteStore, SQLiteStore]
) -> None:
    writer = record_embeddings(HASHING, gated=True)
    reader = record_embeddings(HASHING_B)
    a = start(on=stores[0], embedding=HASHING)
    b = started(start(on=stores[1], embedding=HASHING_B))

    a.update("@A", create=[TaskCreate(description=DESCRIPTION)]).get(timeout=WAIT)
    assert writer.entered.wait(WAIT)  # A is embedding it, and held there
    assert [task.description for task in b.tasks().get(timeout=WAIT)] == [DESCRIPTION]  # B caught up
    assert b.search(QUERY).get(timeout=WAIT) == []  # no vector yet: keyword only, and no match

    writer.gate.set()
    indexed(a)  # A's vector row is committed
    hits = b.search(QUERY).get(timeout=WAIT)  # B catches up and indexes the stored row
    assert [(hit.task.id, hit.match) for hit in hits] == [(1, "semantic")]
    indexed(b)
    assert DESCRIPTION not in reader.texts  # B embedded its queries only
    assert writer.texts == [DESCRIPTION]


def test_a_changed_description_takes_the_writer_s_new_vector(
    start: StartActor, record_embeddings: Record, stores: tuple[SQLiteStore, SQLiteStore]
) -> None:
    record_embeddings(HASHING)
    reader = record_embeddings(HASHING_B)
    a = start(on=stores[0], embedding=HASHING)
    b = started(start(on=stores[1], embedding=HASHING_B))
    a.update("@A", create=[TaskCreate(description="Paint the office walls")]).get(timeout=WAIT)
    indexed(a)
    assert b.search("paint the office walls").get(timeout=WAIT)[0].match == "both"

    a.update("@A", update=[TaskUpdate(id=1, description=DESCRIPTION)]).get(timeout=WAIT)
    indexed(a)
    assert [(hit.task.id, hit.match) for hit in b.search(QUERY).get(timeout=WAIT)] == [(1, "semantic")]
    assert b.search("paint the office walls").get(timeout=WAIT) == []  # the old vector is gone
    assert not {"Paint the office walls", DESCRIPTION} & set(reader.texts)


def test_a_description_whose_writer_never_embeds_it_is_embedded_after_the_grace_period(
    start: StartActor,
    record_embeddings: Record,
    stores: tuple[SQLiteStore, SQLiteStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(toolcards.vector._text_vectors, "REMOTE_EMBED_GRACE_S", 0.2)
    writer = record_embeddings(HASHING, gated=True)  # A never gets past its embedding call
    reader = record_embeddings(HASHING_B)
    a = start(on=stores[0], embedding=HASHING)
    b = started(start(on=stores[1], embedding=HASHING_B))

    a.update("@A", create=[TaskCreate(description=DESCRIPTION)]).get(timeout=WAIT)
    assert writer.entered.wait(WAIT)
    assert len(b.tasks().get(timeout=WAIT)) == 1  # B learns of the task written elsewhere
    indexed(b)  # resolves once B gave up waiting for A's vector and embedded it itself
    assert reader.texts == [DESCRIPTION]
    row = stores[1].load(NAMESPACE).rows["vectors"]["1"]
    assert (row["model"], row["digest"]) == ("hashing:384", text_digest(DESCRIPTION))
    assert [(hit.task.id, hit.match) for hit in b.search(QUERY).get(timeout=WAIT)] == [(1, "semantic")]

    writer.gate.set()
    indexed(a)  # A's late vector is of the same text; B's row was there first
    assert [(hit.task.id, hit.match) for hit in a.search(QUERY).get(timeout=WAIT)] == [(1, "semantic")]


def test_old_rows_without_a_digest_are_embedded_again(
    start: StartActor, record_embeddings: Record, db_path: Path
) -> None:
    store = SQLiteStore(db_path)
    first = start(on=store, embedding=HASHING)
    first.update("@A", create=[TaskCreate(description=DESCRIPTION)]).get(timeout=WAIT)
    indexed(first)
    first.stop()
    row = store.load(NAMESPACE).rows["vectors"]["1"]
    old = {"model": row["model"], "hash": "0123456789abcdef", "vector": row["vector"]}  # the older planning format
    store.put(NAMESPACE, "vectors", {"1": old})

    recorder = record_embeddings(HASHING)
    second = start(on=store, embedding=HASHING)
    indexed(second)
    assert recorder.texts == [DESCRIPTION]
    assert store.load(NAMESPACE).rows["vectors"]["1"]["digest"] == text_digest(DESCRIPTION)
    store.close()


def test_an_actor_starting_while_the_writer_embeds_waits_for_its_vector(
    start: StartActor, record_embeddings: Record, stores: tuple[SQLiteStore, SQLiteStore]
) -> None:
    writer = record_embeddings(HASHING, gated=True)
    reader = record_embeddings(HASHING_B)
    a = start(on=stores[0], embedding=HASHING)
    a.update("@A", create=[TaskCreate(description=DESCRIPTION)]).get(timeout=WAIT)
    assert writer.entered.wait(WAIT)
    b = started(start(on=stores[1], embedding=HASHING_B))  # loads the task, not yet its vector
    assert b.search(QUERY).get(timeout=WAIT) == []

    writer.gate.set()
    indexed(a)
    assert [(hit.task.id, hit.match) for hit in b.search(QUERY).get(timeout=WAIT)] == [(1, "semantic")]
    indexed(b)
    assert DESCRIPTION not in reader.texts
