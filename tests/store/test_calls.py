"""CallLog: the call records a namespace's writes keep, which make a retry exactly-once."""

from __future__ import annotations

import pytest

from toolcards.core._idempotency import CallKey
from toolcards.errors import ToolFailed
from toolcards.store import _calls as calls_module
from toolcards.store._base import Change
from toolcards.store._calls import CALLS, CallLog

KEY = CallKey(key="@A|update_planning|k1", digest="d1")


def test_a_recorded_call_is_replayed_and_an_unknown_one_is_not() -> None:
    log = CallLog()
    assert log.replay(KEY, "update_planning") is None
    rows = log.record(KEY, {"created": [3]}, version=7)
    assert rows == [Change(collection=CALLS, key=KEY.key, value=rows[0].value)]
    assert rows[0].value["a"] == {"created": [3]} and rows[0].value["v"] == 7
    assert log.replay(KEY, "update_planning") is None  # staged, not committed yet
    log.committed(rows)
    assert log.replay(KEY, "update_planning") == {"created": [3]}
    assert log.replay(None, "update_planning") is None
    assert log.record(None, {"x": 1}, version=8) == []


def test_an_answer_given_as_a_function_is_made_only_for_a_keyed_call() -> None:
    made: list[int] = []

    def answer() -> dict[str, list[int]]:
        made.append(1)
        return {"created": [4]}

    log = CallLog()
    assert log.record(None, answer, version=1) == []
    assert made == []  # a large report is not encoded when nothing keeps it
    log.committed(log.record(KEY, answer, version=2))
    assert made == [1]
    assert log.replay(KEY, "update_planning") == {"created": [4]}


def test_the_same_key_with_other_arguments_is_refused() -> None:
    log = CallLog()
    log.committed(log.record(KEY, {"created": [3]}, version=1))
    with pytest.raises(ToolFailed, match="reuses the idempotency key of an earlier call with other arguments"):
        log.replay(CallKey(key=KEY.key, digest="other"), "update_planning")


def test_records_of_other_processes_arrive_with_catch_ups_and_deletes_forget_them() -> None:
    log = CallLog()
    log.absorb(Change(collection=CALLS, key=KEY.key, value={"d": "d1", "a": {"ok": 1}, "v": 4, "t": 1.0}))
    assert log.replay(KEY, "t") == {"ok": 1}
    log.absorb(Change(collection=CALLS, key=KEY.key, value=None))
    assert log.replay(KEY, "t") is None and len(log) == 0


def test_records_are_kept_up_to_the_count_then_the_oldest_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls_module, "CALL_RETENTION", 4)
    log = CallLog()
    for version in range(1, 5):
        log.committed(log.record(CallKey(key=f"k{version}", digest="d"), {"v": version}, version))
    assert len(log) == 4
    rows = log.record(CallKey(key="k5", digest="d"), {"v": 5}, 5)
    assert [(row.key, row.value is None) for row in rows] == [("k5", False), ("k1", True)]
    log.committed(rows)
    assert len(log) == 4 and log.replay(CallKey(key="k1", digest="d"), "t") is None


def test_records_older_than_the_age_limit_go(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(calls_module.time, "time", lambda: clock[0])
    log = CallLog()
    log.committed(log.record(CallKey(key="old", digest="d"), {}, 1))
    clock[0] += calls_module.CALL_MAX_AGE_S + 1
    for version in range(2, 2 + 64):
        log.committed(log.record(CallKey(key=f"k{version}", digest="d"), {}, version))
    assert log.replay(CallKey(key="old", digest="d"), "t") is None
    assert len(log) == 64
