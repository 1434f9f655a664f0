"""TextVectors: the index of an actor's texts, its one worker, stored rows and the grace period.

The tests play the owning actor: texts live in a dict, ``deliver`` puts messages on a queue,
and :meth:`Owner.run_until_idle` handles them on the test's thread as an actor would.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any, cast

import numpy as np
import pytest

import toolcards.vector._text_vectors as text_vectors_module
from toolcards.vector import EmbeddingParam, EmbeddingService, GraceElapsed, TextsEmbedded, TextVectors, VectorIndex
from toolcards.vector._text_vectors import text_digest

WAIT = 30.0  # seconds a test waits for a thread before failing; never a timing assertion
HASHING = EmbeddingParam(provider="hashing")


class GatedService:
    """A real hashing service that records each call and can hold calls until its gate opens."""

    def __init__(self, *, gated: bool = False, provider: str | None = None, fail: bool = False) -> None:
        self.inner = EmbeddingService(HASHING)
        self.param = HASHING if provider is None else HASHING.model_copy(update={"provider": provider})
        self.calls: list[list[str]] = []
        self.threads: list[str] = []
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.entered = threading.Semaphore(0)
        self.fail = fail
        self.failure: str | None = None

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def available(self) -> bool:
        return self.failure is None

    def embed(self, texts: Sequence[str]) -> Any:
        self.entered.release()
        assert self.gate.wait(WAIT)
        self.calls.append(list(texts))
        self.threads.append(threading.current_thread().name)
        if self.fail:
            self.failure = "model file missing"
            return None
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


class Owner:
    """Plays the actor: holds the texts and handles the messages TextVectors sends it."""

    def __init__(self, service: GatedService, *, grace_s: float | None = None) -> None:
        self.texts: dict[str, str] = {}
        self.inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.stored: dict[str, dict[str, str]] = {}
        self.vectors = TextVectors(
            cast(EmbeddingService, service),
            text_of=self.texts.get,
            deliver=self.inbox.put,
            name="test/#Owner",
            grace_s=grace_s,
        )

    def handle(self, message: object) -> None:
        if isinstance(message, TextsEmbedded):
            accepted = self.vectors.still_current(message.vectors)
            self.stored.update((vector.key, self.vectors.row(vector)) for vector in accepted)
            self.vectors.received(message, accepted)
        elif isinstance(message, GraceElapsed):
            self.vectors.embed_overdue()

    def run_until_idle(self) -> None:
        idle = self.vectors.when_idle()
        while not idle.done():
            self.handle(self.inbox.get(timeout=WAIT))

    def write(self, **texts: str) -> None:
        """This process commits ``texts``."""
        self.texts.update(texts)
        self.vectors.embed(texts)


@pytest.fixture
def service() -> Iterator[GatedService]:
    made = GatedService()
    yield made
    made.gate.set()


@pytest.fixture
def owner(service: GatedService) -> Iterator[Owner]:
    made = Owner(service)
    yield made
    made.vectors.close()


def query(text: str) -> Any:
    return EmbeddingService(HASHING).embed_one(text)


def test_text_digest_is_blake2b_16_of_the_text() -> None:
    assert text_digest("héllo") == hashlib.blake2b("héllo".encode(), digest_size=16).hexdigest()
    assert len(text_digest("")) == 32


def test_written_texts_are_embedded_in_the_background_and_searchable(owner: Owner, service: GatedService) -> None:
    owner.write(a="fix the flaky database migration test", b="paint the office walls")
    assert owner.vectors.pending == 2
    owner.run_until_idle()
    assert owner.vectors.pending == 0 and len(owner.vectors) == 2
    assert service.calls == [["fix the flaky database migration test", "paint the office walls"]]
    assert service.threads == ["test/#Owner embeddings"]
    hits = owner.vectors.search(query("flaky database migration"), top_k=5, min_score=0.3)
    assert [key for key, _ in hits] == ["a"]
    assert set(owner.vectors.scores(query("office"))) == {"a", "b"}
    assert owner.vectors.dim == 384


def test_no_embedding_call_starts_while_the_owner_writes(owner: Owner, service: GatedService) -> None:
    with owner.vectors.writing():
        owner.write(a="fix the flaky database migration test")
        # The worker holds its call back while the write is in progress...
        assert not service.entered.acquire(timeout=0.5)
    # ...and makes it as soon as the write is over.
    assert service.entered.acquire(timeout=WAIT)
    owner.run_until_idle()
    assert len(owner.vectors) == 1


def test_the_stored_row_holds_model_digest_and_vector(owner: Owner) -> None:
    owner.write(a="paint the office walls")
    owner.run_until_idle()
    row = owner.stored["a"]
    assert set(row) == {"model", "digest", "vector"}
    assert row["model"] == "hashing:384"
    assert row["digest"] == text_digest("paint the office walls")
    np.testing.assert_allclose(VectorIndex.decode(row["vector"]), query("paint the office walls"), atol=1e-6)


def test_one_call_in_flight_and_texts_written_meanwhile_batch_into_the_next() -> None:
    service = GatedService(gated=True)
    owner = Owner(service)
    try:
        owner.write(a="first")
        assert service.entered.acquire(timeout=WAIT)  # the first call is under way, and stuck
        owner.write(b="second")
        owner.write(c="third")
        assert owner.vectors.pending == 3
        service.gate.set()
        owner.run_until_idle()
        assert service.calls == [["first"], ["second", "third"]]
    finally:
        service.gate.set()
        owner.vectors.close()


def test_a_backlog_is_embedded_in_chunks(monkeypatch: pytest.MonkeyPatch, owner: Owner, service: GatedService) -> None:
    monkeypatch.setattr(text_vectors_module, "EMBED_CHUNK", 2)
    owner.write(**{f"k{i}": f"text number {i}" for i in range(5)})
    owner.run_until_idle()
    assert [len(call) for call in service.calls] == [2, 2, 1]
    assert len(owner.vectors) == 5


def test_a_vector_of_a_text_changed_meanwhile_is_dropped_and_the_new_text_embedded() -> None:
    service = GatedService(gated=True)
    owner = Owner(service)
    try:
        owner.write(a="old words")
        assert service.entered.acquire(timeout=WAIT)
        owner.write(a="new words")
        service.gate.set()
        owner.run_until_idle()
        assert service.calls == [["old words"], ["new words"]]
        assert owner.stored["a"]["digest"] == text_digest("new words")
    finally:
        service.gate.set()
        owner.vectors.close()


def test_an_unchanged_text_is_not_embedded_again(owner: Owner, service: GatedService) -> None:
    owner.write(a="same words")
    owner.run_until_idle()
    owner.write(a="same words")
    owner.run_until_idle()
    assert service.calls == [["same words"]]


def test_a_forgotten_key_leaves_the_index(owner: Owner) -> None:
    owner.write(a="paint the office walls")
    owner.run_until_idle()
    del owner.texts["a"]
    owner.vectors.forget("a")
    assert len(owner.vectors) == 0
    assert owner.vectors.search(query("paint the office walls"), top_k=5) == []


def test_restore_indexes_matching_rows_and_embeds_the_rest(
    owner: Owner, service: GatedService, caplog: pytest.LogCaptureFixture
) -> None:
    vector = VectorIndex.encode(query("kept"))
    owner.texts.update(kept="kept", other_model="x", old_text="now", old_format="y", broken="z", missing="m")
    rows = {
        "kept": {"model": "hashing:384", "digest": text_digest("kept"), "vector": vector},
        "other_model": {"model": "hashing:64", "digest": text_digest("x"), "vector": vector},
        "old_text": {"model": "hashing:384", "digest": text_digest("then"), "vector": vector},
        "old_format": {"model": "hashing:384", "hash": "0011223344556677", "vector": vector},
        "broken": {"model": "hashing:384", "digest": text_digest("z"), "vector": "not base64!"},
    }
    with caplog.at_level(logging.WARNING, logger="toolcards.vector._text_vectors"):
        owner.vectors.restore(rows)
    assert "unreadable" in caplog.text
    owner.vectors.embed(owner.texts)  # on start: whatever has no vector is embedded
    owner.run_until_idle()
    assert sorted(service.texts) == ["m", "now", "x", "y", "z"]
    assert len(owner.vectors) == 6


@pytest.mark.parametrize("shared", [True, False])
def test_load_expects_texts_whose_writer_may_still_embed_them_on_a_shared_store(
    service: GatedService, shared: bool
) -> None:
    owner = Owner(service, grace_s=WAIT)
    try:
        vector = VectorIndex.encode(query("x"))
        owner.texts.update(kept="kept", no_row="a", older_text="b", other_model="c", old_format="d")
        rows = {
            "kept": {
                "model": "hashing:384",
                "digest": text_digest("kept"),
                "vector": VectorIndex.encode(query("kept")),
            },
            "older_text": {"model": "hashing:384", "digest": text_digest("before"), "vector": vector},
            "other_model": {"model": "hashing:64", "digest": text_digest("c"), "vector": vector},
            "old_format": {"model": "hashing:384", "hash": "0011223344556677", "vector": vector},
        }
        owner.vectors.load(list(owner.texts), rows, shared=shared)
        assert owner.vectors.pending == 4
        owner.handle(owner.inbox.get(timeout=WAIT))  # the one call in flight
        if shared:  # "a" and "b" wait for their writer's rows
            assert sorted(service.texts) == ["c", "d"]
            assert owner.vectors.pending == 2
        else:
            assert sorted(service.texts) == ["a", "b", "c", "d"]
            assert owner.vectors.pending == 0
    finally:
        owner.vectors.close()


def test_a_deleted_row_of_a_gone_key_forgets_it(owner: Owner) -> None:
    owner.write(a="paint the office walls")
    owner.run_until_idle()
    del owner.texts["a"]
    owner.vectors.restore({"a": None})
    assert len(owner.vectors) == 0


# -- texts another process wrote ---------------------------------------------------------


def remote_row(key: str, text: str) -> dict[str, str]:
    return {"model": "hashing:384", "digest": text_digest(text), "vector": VectorIndex.encode(query(text))}


def test_an_expected_text_is_not_embedded_and_its_stored_row_is_used(owner: Owner, service: GatedService) -> None:
    owner.texts["a"] = "paint the office walls"
    owner.vectors.expect(["a"])
    assert owner.vectors.pending == 1
    idle = owner.vectors.when_idle()
    assert not idle.done()
    owner.vectors.restore({"a": remote_row("a", "paint the office walls")})  # the writer's row lands
    assert idle.done() and owner.vectors.pending == 0
    assert [key for key, _ in owner.vectors.search(query("office walls"), top_k=1)] == ["a"]
    assert service.calls == []


def test_an_expected_text_replaces_the_old_vector(owner: Owner, service: GatedService) -> None:
    owner.write(a="paint the office walls")
    owner.run_until_idle()
    owner.texts["a"] = "water the plants"
    owner.vectors.expect(["a"])
    assert len(owner.vectors) == 0  # the old vector describes text that is gone
    owner.vectors.restore({"a": remote_row("a", "paint the office walls")})  # a row of the old text
    assert len(owner.vectors) == 0
    owner.vectors.restore({"a": remote_row("a", "water the plants")})
    assert len(owner.vectors) == 1
    assert service.texts == ["paint the office walls"]


def test_an_expected_text_whose_row_never_comes_is_embedded_after_the_grace_period(service: GatedService) -> None:
    owner = Owner(service, grace_s=0.05)
    try:
        owner.texts.update(a="paint the office walls", b="water the plants")
        owner.vectors.expect(["a", "b"])
        owner.vectors.restore({"b": remote_row("b", "water the plants")})
        message = owner.inbox.get(timeout=WAIT)
        assert isinstance(message, GraceElapsed)
        owner.handle(message)
        owner.run_until_idle()
        assert service.calls == [["paint the office walls"]]
        assert set(owner.stored) == {"a"}
    finally:
        owner.vectors.close()


def test_a_row_landing_before_the_grace_period_ends_prevents_the_embedding(service: GatedService) -> None:
    owner = Owner(service, grace_s=0.05)
    try:
        owner.texts["a"] = "paint the office walls"
        owner.vectors.expect(["a"])
        message = owner.inbox.get(timeout=WAIT)
        # The actor catches up before embed_overdue: the row is there.
        owner.vectors.restore({"a": remote_row("a", "paint the office walls")})
        owner.handle(message)
        owner.run_until_idle()
        assert service.calls == []
    finally:
        owner.vectors.close()


def test_a_text_written_here_after_being_expected_is_embedded_at_once(owner: Owner, service: GatedService) -> None:
    owner.texts["a"] = "remote words"
    owner.vectors.expect(["a"])
    owner.write(a="local words")
    owner.run_until_idle()
    assert service.calls == [["local words"]]


def test_a_text_written_elsewhere_stays_expected_when_this_process_writes_the_same_text(
    owner: Owner, service: GatedService
) -> None:
    owner.texts["a"] = "remote words"
    owner.vectors.expect(["a"])
    owner.vectors.embed(["a"])  # e.g. this process changed only the task's status
    assert owner.vectors.embed_now({"a": "remote words"}, max_texts=64) == {}
    assert owner.vectors.pending == 1
    owner.vectors.restore({"a": remote_row("a", "remote words")})
    assert owner.vectors.pending == 0
    assert service.calls == []


def test_expecting_an_already_indexed_text_waits_for_nothing(owner: Owner) -> None:
    owner.write(a="paint the office walls")
    owner.run_until_idle()
    owner.vectors.expect(["a"])
    assert owner.vectors.pending == 0


# -- inline, queries, search -------------------------------------------------------------


def test_embed_now_embeds_few_texts_of_a_fast_provider_on_the_calling_thread(
    owner: Owner, service: GatedService
) -> None:
    ready = owner.vectors.embed_now({"a": "paint the office walls"}, max_texts=2)
    assert service.threads == [threading.current_thread().name]
    assert ready["a"].digest == text_digest("paint the office walls")
    assert len(owner.vectors) == 0  # nothing is indexed before the caller commits
    owner.texts["a"] = "paint the office walls"
    owner.vectors.embed(["a"], ready=ready)
    assert len(owner.vectors) == 1 and owner.vectors.pending == 0
    assert owner.vectors.embed_now({"a": "paint the office walls"}, max_texts=2) == {}  # already indexed
    assert owner.vectors.embed_now({"x": "1", "y": "2", "z": "3"}, max_texts=2) == {}  # too many
    assert len(service.calls) == 1


def test_embed_now_leaves_a_remote_provider_to_the_worker() -> None:
    remote = GatedService(provider="openai")
    owner = Owner(remote)
    try:
        assert owner.vectors.embed_now({"a": "words"}, max_texts=64) == {}
        assert remote.calls == []
    finally:
        owner.vectors.close()


def test_a_ready_vector_of_another_text_is_not_used(owner: Owner, service: GatedService) -> None:
    ready = owner.vectors.embed_now({"a": "draft words"}, max_texts=2)
    owner.write(a="committed words")  # the commit changed the text after embedding ahead
    owner.vectors.embed(["a"], ready=ready)
    owner.run_until_idle()
    assert service.texts == ["draft words", "committed words"]


def test_a_query_waits_at_most_its_timeout(caplog: pytest.LogCaptureFixture) -> None:
    service = GatedService(gated=True)
    owner = Owner(service)
    try:
        with caplog.at_level(logging.WARNING, logger="toolcards.vector._text_vectors"):
            assert owner.vectors.embed_query("words", timeout_s=0.01) is None
        assert "took over 0.01s" in caplog.text
        service.gate.set()
        vector = owner.vectors.embed_query("words", timeout_s=WAIT)
        assert vector is not None and vector.shape == (384,)
        assert all(name.startswith("test/#Owner query") for name in service.threads)
    finally:
        service.gate.set()
        owner.vectors.close()


def test_search_among_allowed_keys_and_a_query_of_another_size(owner: Owner) -> None:
    owner.write(a="database migration", b="database migration tests", c="office walls")
    owner.run_until_idle()
    vector = query("database migration")
    assert [key for key, _ in owner.vectors.search(vector, top_k=1)] == ["a"]
    assert [key for key, _ in owner.vectors.search(vector, top_k=1, allowed={"b", "c"})] == ["b"]
    assert owner.vectors.search(vector, top_k=5, min_score=0.5, allowed={"c"}) == []
    assert owner.vectors.search(np.ones(8, dtype=np.float32), top_k=5) == []


# -- failure and shutdown ----------------------------------------------------------------


def test_a_failed_provider_drops_the_backlog_and_resolves_waiters() -> None:
    service = GatedService(fail=True)
    owner = Owner(service)
    try:
        owner.write(a="one", b="two")
        owner.run_until_idle()
        assert not owner.vectors.available and owner.vectors.failure == "model file missing"
        owner.write(c="three")
        owner.texts["d"] = "four"
        owner.vectors.expect(["d"])
        assert owner.vectors.pending == 0 and owner.vectors.when_idle().done()
        assert owner.vectors.embed_query("one", timeout_s=WAIT) is None
        assert service.calls == [["one", "two"]]
    finally:
        owner.vectors.close()


def test_close_stops_the_worker_drops_the_backlog_and_resolves_waiters() -> None:
    service = GatedService(gated=True)
    owner = Owner(service, grace_s=WAIT)
    owner.write(a="one")
    assert service.entered.acquire(timeout=WAIT)
    owner.write(b="two")
    owner.texts["c"] = "three"
    owner.vectors.expect(["c"])
    idle = owner.vectors.when_idle()
    worker = next(t for t in threading.enumerate() if t.name == "test/#Owner embeddings")
    owner.vectors.close(wait_s=0)
    assert idle.result(0) is None
    service.gate.set()
    worker.join(WAIT)
    assert not worker.is_alive()
    assert service.calls == [["one"]]  # "two" was dropped
    with pytest.raises(queue.Empty):
        owner.inbox.get(timeout=0.1)  # neither the stopped call's result nor the timer is delivered
    owner.vectors.close()  # again: nothing happens


def test_a_deliver_that_fails_stops_the_worker() -> None:
    service = GatedService()

    def gone(message: object) -> None:
        raise RuntimeError("actor stopped")

    vectors = TextVectors(cast(EmbeddingService, service), text_of={"a": "one"}.get, deliver=gone, name="gone")
    vectors.embed(["a"])
    worker = next(t for t in threading.enumerate() if t.name == "gone embeddings")
    worker.join(WAIT)
    assert not worker.is_alive()
    vectors.close()


def test_when_idle_is_a_future_resolved_at_once_when_nothing_waits(owner: Owner) -> None:
    future = owner.vectors.when_idle()
    assert isinstance(future, concurrent.futures.Future) and future.done()
