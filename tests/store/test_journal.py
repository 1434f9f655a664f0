"""A team's event log in the store: gapless numbers across writers, bounded, read back typed."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolcards.actors import ActorSystem, MemoryJournal
from toolcards.core._events import StateChanged, ToolExecutionRecord
from toolcards.store import RecordedEvent, SQLiteStore, Store, StoreJournal, store_journals
from toolcards.store._journal import decode_event, encode_event


def changed(seq: int, summary: str = "x") -> StateChanged:
    return StateChanged(team_id="t", source="#PlanningTool", seq=seq, summary=summary)


def test_numbers_are_gapless_and_events_read_back_as_their_class(store: Store) -> None:
    journal = StoreJournal(store, "t")
    assert journal.head() == 0
    numbers = [journal.append(changed(i)) for i in range(5)]

    assert numbers == [1, 2, 3, 4, 5]
    assert journal.head() == 5
    events = journal.since(2)
    assert [seq for seq, _ in events] == [3, 4, 5]
    assert all(isinstance(event, StateChanged) for _, event in events)
    assert [event.seq for _, event in events] == [2, 3, 4]


def test_only_the_last_events_are_kept(store: Store) -> None:
    journal = StoreJournal(store, "t", size=3)
    for i in range(10):
        journal.append(changed(i))

    assert [seq for seq, _ in journal.since(0)] == [8, 9, 10]
    assert journal.head() == 10


def test_teams_have_separate_logs(store: Store) -> None:
    StoreJournal(store, "a").append(changed(1))
    assert StoreJournal(store, "b").since(0) == []


def test_concurrent_appenders_share_one_sequence(tmp_path: Path) -> None:
    stores = [SQLiteStore(tmp_path / "state.db") for _ in range(4)]
    numbers: list[int] = []
    lock = threading.Lock()

    def append(store: SQLiteStore) -> None:
        journal = StoreJournal(store, "t")
        for i in range(50):
            seq = journal.append(changed(i))
            with lock:
                numbers.append(seq)

    threads = [threading.Thread(target=append, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(numbers) == list(range(1, 201))
    for store in stores:
        store.close()


def test_an_event_class_not_loaded_here_comes_back_with_its_fields() -> None:
    value = {"type": "someone.elses.module:Custom", "data": {"kind": "custom", "team_id": "t", "weight": 3}}

    event = decode_event(value)

    assert isinstance(event, RecordedEvent)
    assert (event.kind, event.team_id, getattr(event, "weight", None)) == ("custom", "t", 3)


def test_odd_values_never_raise() -> None:
    assert isinstance(decode_event("garbage"), RecordedEvent)
    assert decode_event({"type": "x:Y", "data": {"kind": 7}}).kind == "7"
    assert encode_event(object())["data"]["kind"] == "event"
    record = ToolExecutionRecord(tool="t", call_id="c", agent="@A", channel="tool_call", success=True, latency_ms=1.0)
    assert decode_event(encode_event(record)) == record


def test_memory_journal_is_private_and_bounded() -> None:
    journal = MemoryJournal(size=2)
    for i in range(3):
        journal.append(i)
    assert not journal.shared
    assert journal.since(0) == [(2, 1), (3, 2)]
    assert journal.head() == 3


def test_a_team_sees_the_events_another_process_publishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two OS processes, one store file: a subscriber here receives what the other publishes."""
    db = tmp_path / "state.db"
    monkeypatch.setenv("TOOLCARDS_STORE", str(db))
    received: list[tuple[int, object]] = []
    arrived = threading.Event()

    with ActorSystem(journal=store_journals()) as system:
        team = system.team("t")

        def subscriber(seq: int, event: object) -> None:
            received.append((seq, event))
            if len(received) == 4:
                arrived.set()

        team.subscribe(subscriber)
        team.publish_and_wait(changed(100, "mine"))
        code = (
            "from toolcards.actors import ActorSystem\n"
            "from toolcards.core._events import StateChanged\n"
            "from toolcards.store import store_journals\n"
            "with ActorSystem(journal=store_journals()) as system:\n"
            "    team = system.team('t')\n"
            "    for i in range(3):\n"
            "        team.publish_and_wait(StateChanged(team_id='t', source='#Other', seq=i, summary='theirs'))\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        assert arrived.wait(30), received
        assert [seq for seq, _ in received] == [1, 2, 3, 4]
        assert [getattr(event, "summary", None) for _, event in received] == ["mine", "theirs", "theirs", "theirs"]
        assert [seq for seq, _ in team.events(0)] == [1, 2, 3, 4]


def test_a_batch_is_one_entry_whose_events_share_a_number(store: Store) -> None:
    journal = StoreJournal(store, "t")
    journal.append(changed(1))
    seq = journal.append_all([changed(2), changed(3)])

    assert seq == 2 and journal.head() == 2
    assert [(number, event.seq) for number, event in journal.since(0)] == [(1, 1), (2, 2), (2, 3)]
    assert journal.since(1) == journal.since(0)[1:]
    memory = MemoryJournal()
    assert memory.append_all([changed(1), changed(2)]) == 1 and [n for n, _ in memory.since(0)] == [1, 1]


def test_tool_call_records_reach_another_process_s_log_in_batches(tmp_path: Path) -> None:
    from toolcards.core._observer import TeamAgent

    here = ActorSystem(journal=store_journals(SQLiteStore(tmp_path / "state.db")))
    there = SQLiteStore(tmp_path / "state.db")
    try:
        agent = TeamAgent("Ann", here.team("t"))
        for index in range(3):
            agent.notify_event(
                ToolExecutionRecord(
                    tool="ping", call_id=str(index), agent="@Ann", channel="tool_call", success=True, latency_ms=1
                )
            )
        here.team("t").head()  # an ask: the orchestrator wrote the batch first
        events = StoreJournal(there, "t").since(0)
        assert [event.call_id for _, event in events] == ["0", "1", "2"]
        assert len({number for number, _ in events}) == 1  # one write for the three
        assert {event.team_id for _, event in events} == {"t"}
    finally:
        here.stop()
        there.close()


def test_one_event_that_is_not_text_costs_its_batch_nothing(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """A batch is written event by event: the one holding a lone surrogate (a file name that is
    not UTF-8, a client's ``"\\ud800"``) is written with it escaped, the others as they are."""
    journal = StoreJournal(store, "t")
    bad = changed(2, "budget set for @\ud800")
    with caplog.at_level(logging.WARNING, logger="toolcards.store"):
        seq = journal.append_all([changed(1), bad, changed(3)])

    events = journal.since(0)
    assert seq == 1 and [number for number, _ in events] == [1, 1, 1]
    assert [event.summary for _, event in events] == ["x", "budget set for @\\ud800", "x"]
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith("team t: a state_changed event from #PlanningTool holds text that is not Unicode")


def test_an_event_that_is_not_json_is_kept_as_its_repr(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    journal = StoreJournal(store, "t")
    odd = ToolExecutionRecord(
        tool="ping", call_id="c", agent="@A\udcff", channel="tool_call", success=True, latency_ms=float("nan")
    )
    with caplog.at_level(logging.WARNING, logger="toolcards.store"):
        journal.append_all([changed(1), odd])
        journal.append(odd)

    events = journal.since(0)
    assert [type(event).__name__ for _, event in events] == ["StateChanged", "RecordedEvent", "RecordedEvent"]
    assert "latency_ms=nan" in events[1][1].text
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("team t: a tool_execution event from ping of @A\\udcff is not JSON (")
    assert lines[0].endswith("); the event log keeps its repr instead")


def test_a_team_s_log_keeps_every_valid_event_of_a_batch_with_a_bad_one(tmp_path: Path) -> None:
    """Through the orchestrator's batch: the events of other calls written at the same moment as
    the bad one reach the log beside it."""
    from toolcards.core._observer import TeamAgent

    here = ActorSystem(journal=store_journals(SQLiteStore(tmp_path / "state.db")))
    there = SQLiteStore(tmp_path / "state.db")
    try:
        agent = TeamAgent("Ann", here.team("t"))
        for index, who in enumerate(["@Ann", "@Ann\ud800", "@Bob"]):
            agent.notify_event(
                ToolExecutionRecord(
                    tool="usage", call_id=str(index), agent=who, channel="tool_call", success=True, latency_ms=1
                )
            )
        here.team("t").head()  # an ask: the orchestrator wrote the batch first
        events = StoreJournal(there, "t").since(0)
        assert [(event.call_id, event.agent) for _, event in events] == [
            ("0", "@Ann"),
            ("1", "@Ann\\ud800"),
            ("2", "@Bob"),
        ]
    finally:
        here.stop()
        there.close()
