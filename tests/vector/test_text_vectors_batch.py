"""TextVectors hands its index whole batches: every stored row restored at once, every vector of
a background call at once; a row the index refuses is embedded again, alone."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from toolcards.vector import EmbeddingParam, EmbeddingService, TextsEmbedded, TextVectors, VectorIndex
from toolcards.vector._text_vectors import text_digest

HASHING = EmbeddingParam(provider="hashing")
WAIT = 30.0
SERVICE = EmbeddingService(HASHING)


class RecordingIndex(VectorIndex):
    """A VectorIndex that records the size of every batch it is handed."""

    made: list[int]

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.batches: list[int] = []
        RecordingIndex.made.append(dim)

    def upsert_many(self, keys: Sequence[str], vectors: Sequence[npt.ArrayLike]) -> dict[int, str]:
        self.batches.append(len(keys))
        return super().upsert_many(keys, vectors)


class Texts(dict[str, str]):
    """The owner's texts, counting how often each is read."""

    def __init__(self, **texts: str) -> None:
        super().__init__(texts)
        self.reads: dict[str, int] = {}

    def text_of(self, key: str) -> str | None:
        self.reads[key] = self.reads.get(key, 0) + 1
        return self.get(key)


@pytest.fixture
def texts() -> Texts:
    return Texts()


@pytest.fixture
def inbox() -> queue.SimpleQueue[object]:
    return queue.SimpleQueue()


@pytest.fixture
def vectors(texts: Texts, inbox: queue.SimpleQueue[object]) -> Iterator[TextVectors]:
    RecordingIndex.made = []
    made = TextVectors(
        SERVICE, text_of=texts.text_of, deliver=inbox.put, name="test/#Batch", index_factory=RecordingIndex
    )
    yield made
    made.close()


def row(text: str, vector: Any = None) -> dict[str, str]:
    if vector is None:
        vector = SERVICE.embed_one(text)
    return {"model": SERVICE.model_id, "digest": text_digest(text), "vector": VectorIndex.encode(vector)}


def index_of(vectors: TextVectors) -> RecordingIndex:
    index = vectors._index
    assert isinstance(index, RecordingIndex)
    return index


def test_every_stored_row_is_restored_in_one_batch(texts: Texts, vectors: TextVectors) -> None:
    texts.update({f"k{n}": f"text number {n}" for n in range(300)})
    vectors.restore({key: row(text) for key, text in texts.items()})
    assert index_of(vectors).batches == [300]
    assert len(vectors) == 300 and vectors.pending == 0
    query = SERVICE.embed_one("text number 7")
    assert query is not None
    assert vectors.search(query, top_k=1)[0][0] == "k7"


def test_a_row_the_index_refuses_is_embedded_again_and_the_others_are_restored(
    texts: Texts, vectors: TextVectors, caplog: pytest.LogCaptureFixture
) -> None:
    texts.update(a="alpha", short="short", nan="not a number", b="beta", gone_row="x")
    nan = np.asarray(SERVICE.embed_one("not a number")).copy()
    nan[5] = np.nan
    rows = {
        "a": row("alpha"),
        "short": row("short", np.ones(100, dtype=np.float32)),
        "nan": row("not a number", nan),
        "b": row("beta"),
    }
    with caplog.at_level(logging.WARNING, logger="toolcards.vector._text_vectors"):
        vectors.load(list(texts), rows, shared=False)
    assert "'short'" in caplog.text and "'nan'" in caplog.text and "'a'" not in caplog.text
    assert index_of(vectors).batches == [4]
    assert len(vectors) == 2  # a and b; short, nan and the row-less one are being embedded
    assert vectors.pending == 3


def test_the_index_takes_the_size_of_the_first_vector_it_can_hold(texts: Texts, vectors: TextVectors) -> None:
    texts.update(empty="e", a="alpha")
    # An empty vector is base64 of no float32 at all: no index has size 0, so it is refused
    # and the next row's vector makes the index, as when rows were indexed one by one.
    vectors.restore({"empty": {**row("e"), "vector": ""}, "a": row("alpha")})
    assert RecordingIndex.made == [384]
    assert len(vectors) == 1 and vectors.pending == 1  # the empty one is embedded again


def test_load_reads_the_text_of_a_restored_key_once(texts: Texts, vectors: TextVectors) -> None:
    texts.update(a="alpha", b="beta", c="gamma")
    vectors.load(list(texts), {"a": row("alpha"), "b": row("beta")}, shared=True)
    assert texts.reads["a"] == texts.reads["b"] == 1  # c, without a row, is read again to be expected
    assert len(vectors) == 2 and vectors.pending == 1  # c is expected from its writer


def test_a_key_of_an_unknown_entity_counts_as_restored_in_the_graph() -> None:
    from datetime import UTC, datetime

    from toolcards.knowledge_graph._index import GraphIndex
    from toolcards.knowledge_graph._models import Entity
    from toolcards.knowledge_graph._passages import head_key

    graph = GraphIndex()
    graph.put_entities(
        [Entity.model_validate({"name": "known", "entity_type": "t", "created_at": datetime(2026, 1, 1, tzinfo=UTC)})]
    )
    texts = {head_key("known"): "known (t)", head_key("ghost"): "ghost (t)"}
    restored = TextVectors(
        SERVICE, text_of=texts.get, deliver=lambda message: None, name="test/#Graph", index_factory=graph.vector_rows
    )
    try:
        restored.load(list(texts), {key: row(text) for key, text in texts.items()}, shared=False)
        # The graph ignores the ghost's vector, as it always did one at a time: not embedded again.
        assert len(restored) == 2 and restored.pending == 0
        assert len(graph.vector_rows(384)) == 1
    finally:
        restored.close()


def test_the_vectors_of_a_background_call_are_indexed_in_one_batch(
    texts: Texts, vectors: TextVectors, inbox: queue.SimpleQueue[object]
) -> None:
    texts.update({f"k{n}": f"text number {n}" for n in range(10)})
    vectors.embed(list(texts))
    while vectors.pending:
        message = inbox.get(timeout=WAIT)
        assert isinstance(message, TextsEmbedded)
        vectors.received(message, vectors.still_current(message.vectors))
    assert index_of(vectors).batches == [10]
    assert len(vectors) == 10


def test_vectors_made_ahead_of_a_write_are_indexed_in_one_batch(texts: Texts, vectors: TextVectors) -> None:
    texts.update(a="alpha", b="beta", c="gamma")
    ready = vectors.embed_now(dict(texts), max_texts=10)
    assert len(ready) == 3
    vectors.embed(list(texts), ready=ready)
    assert index_of(vectors).batches == [3]
    assert len(vectors) == 3 and vectors.pending == 0
