"""A team's event log that cannot be written: one line when it starts failing (no traceback),
DEBUG lines while it keeps failing, one line when it works again; a bug keeps its traceback."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from toolcards.actors._journal import MemoryJournal
from toolcards.actors._orchestrator import Orchestrator
from toolcards.errors import StoreError

REASON = (
    "Store /data/state.db: committing 1 change(s) to namespace 't/#events' failed (database or disk is full). "
    "Check the disk and file system holding /data/state.db (permissions, free space, mounts)."
)


class FlakyJournal(MemoryJournal):
    """A journal that raises ``failure`` while it is set."""

    failure: Exception | None = None

    def append(self, event: Any) -> int:
        if self.failure is not None:
            raise self.failure
        return super().append(event)

    def append_all(self, events: Sequence[Any]) -> int:
        if self.failure is not None:
            raise self.failure
        return super().append_all(events)


def test_a_failing_event_log_is_one_line_until_it_works_again(caplog: pytest.LogCaptureFixture) -> None:
    journal = FlakyJournal()
    orchestrator = Orchestrator.start("t", journal).proxy()
    delivered: list[int] = []
    orchestrator.subscribe(lambda seq, event: delivered.append(seq)).get()
    with caplog.at_level(logging.INFO):
        journal.failure = StoreError(REASON)
        for _ in range(5):
            orchestrator.publish("event").get()
        journal.failure = None
        orchestrator.publish("event").get()
        journal.failure = StoreError(REASON)
        orchestrator.publish("event").get()
    assert len(delivered) == 7  # this process's subscribers got every event
    records = [r for r in caplog.records if r.name.startswith("toolcards")]
    assert [r.levelno for r in records] == [logging.ERROR, logging.INFO, logging.ERROR]
    first, again, second = (r.getMessage() for r in records)
    assert first == (
        "team t: 1 event could not be written to the event log; other processes and dashboards will miss it, "
        f"and further failures are not repeated until a write succeeds: {REASON}"
    )
    assert again == "team t: the event log is written again; 5 events were not written to it"
    assert second == first
    assert all(r.exc_info is None for r in records)


def test_with_debug_logging_the_first_line_carries_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    journal = FlakyJournal()
    journal.failure = OSError(28, "No space left on device", "/data/events.log")
    orchestrator = Orchestrator.start("t", journal).proxy()
    with caplog.at_level(logging.DEBUG, logger="toolcards"):
        orchestrator.publish("event").get()
        orchestrator.publish("event").get()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "No space left on device: '/data/events.log'" in errors[0].getMessage()
    assert any(r.levelno == logging.DEBUG and "failed again" in r.getMessage() for r in caplog.records)


def test_a_bug_in_the_journal_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    journal = FlakyJournal()
    journal.failure = TypeError("Object of type Thing is not JSON serializable")
    orchestrator = Orchestrator.start("t", journal).proxy()
    with caplog.at_level(logging.INFO):
        orchestrator.publish("event").get()
        orchestrator.publish("event").get()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and all(r.exc_info is not None for r in errors)
