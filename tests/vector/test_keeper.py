"""EmbeddingKeeper: the glue between an actor and its TextVectors, played here by the test.

The test is the actor: texts live in a dict, ``deliver`` puts messages on a queue, and the
test hands them to :meth:`EmbeddingKeeper.receive` as ``on_receive`` would.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence

import pytest

from toolcards.errors import StoreError
from toolcards.vector import EmbeddingKeeper, EmbeddingParam, GraceElapsed, TextsEmbedded, TextVector

WAIT = 30.0  # seconds a test waits for a thread before failing; never a timing assertion
HASHING = EmbeddingParam(provider="hashing")


class Owner:
    """What an actor gives its keeper: texts, a store write that may fail, a catch-up."""

    def __init__(self, *, fail_writes: bool = False, closed: bool = False) -> None:
        self.texts = {"a": "deploy the service", "b": "rotate the keys"}
        self.inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.stored: list[str] = []
        self.catch_ups = 0
        self.fail_writes = fail_writes
        self.closed = closed
        self.keeper = EmbeddingKeeper(
            HASHING,
            name="team/#Owner",
            text_of=self.texts.get,
            persist=self.persist,
            catch_up=self.catch_up,
            store_closed=lambda: self.closed,
        )

    def persist(self, found: Sequence[TextVector]) -> list[TextVector]:
        if self.fail_writes:
            raise StoreError("disk I/O error\nat line 2")
        vectors = self.keeper.vectors
        assert vectors is not None
        kept = vectors.still_current(found)
        self.stored.extend(v.key for v in kept)
        return kept

    def catch_up(self) -> None:
        self.catch_ups += 1
        raise StoreError("database is locked")

    def run_until_idle(self) -> None:
        vectors = self.keeper.vectors
        assert vectors is not None
        while vectors.pending:
            assert self.keeper.receive(self.inbox.get(timeout=WAIT))


def threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("team/#Owner") and t.is_alive()]


def test_the_keeper_embeds_persists_and_indexes_in_the_background() -> None:
    owner = Owner()
    owner.keeper.start(owner.inbox.put, list(owner.texts), {}, shared=False)
    owner.run_until_idle()
    vectors = owner.keeper.vectors
    assert vectors is not None and len(vectors) == 2
    assert sorted(owner.stored) == ["a", "b"]
    owner.keeper.stop()
    assert owner.keeper.vectors is None
    assert threads() == []
    owner.keeper.stop()  # again: nothing
    owner.keeper.start(owner.inbox.put, ["a"], {}, shared=False)  # after stop: nothing
    assert owner.keeper.vectors is None


def test_other_messages_are_the_actors() -> None:
    owner = Owner()
    assert owner.keeper.receive("tick") is False
    # Before start (or after stop) the keeper's own messages are taken and dropped.
    assert owner.keeper.receive(GraceElapsed()) is True
    assert owner.keeper.receive(TextsEmbedded(model_id="m", keys=(), vectors=())) is True


def test_a_failed_write_is_one_line_and_the_vectors_are_still_searched(caplog: pytest.LogCaptureFixture) -> None:
    owner = Owner(fail_writes=True)
    owner.keeper.start(owner.inbox.put, list(owner.texts), {}, shared=False)
    with caplog.at_level(logging.DEBUG, logger="toolcards.vector"):
        owner.run_until_idle()
    vectors = owner.keeper.vectors
    assert vectors is not None and len(vectors) == 2  # derived data: searched all the same
    (error,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert error.exc_info is None
    assert error.getMessage().endswith("StoreError: disk I/O error at line 2")
    assert "team/#Owner" in error.getMessage()
    owner.keeper.stop()


def test_a_failed_write_on_a_closed_store_is_a_shutdown(caplog: pytest.LogCaptureFixture) -> None:
    owner = Owner(fail_writes=True, closed=True)
    owner.keeper.start(owner.inbox.put, list(owner.texts), {}, shared=False)
    with caplog.at_level(logging.DEBUG, logger="toolcards.vector"):
        owner.run_until_idle()
    assert [r.levelno for r in caplog.records if "vectors" in r.getMessage()] == [logging.DEBUG]
    owner.keeper.stop()


def test_a_failed_catch_up_is_one_line_and_overdue_texts_are_embedded(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("toolcards.vector._text_vectors.REMOTE_EMBED_GRACE_S", 0.05)
    owner = Owner()
    owner.keeper.start(owner.inbox.put, [], {}, shared=True)
    vectors = owner.keeper.vectors
    assert vectors is not None
    vectors.expect(["a"])  # another process wrote it; its vector never comes
    with caplog.at_level(logging.DEBUG, logger="toolcards.vector"):
        assert isinstance(message := owner.inbox.get(timeout=WAIT), GraceElapsed)
        assert owner.keeper.receive(message)
    owner.run_until_idle()
    assert owner.catch_ups == 1 and owner.stored == ["a"]
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.exc_info is None and "StoreError: database is locked" in warning.getMessage()
    owner.keeper.stop()
