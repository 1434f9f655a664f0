"""The process's one timer thread: callbacks at their time, in order, cancellable."""

from __future__ import annotations

import threading
import time
from typing import Any

import pykka
import pytest

from toolcards.actors._timers import ActorTimer, call_at, call_later

WAIT = 10.0


def test_callbacks_run_in_time_order_on_one_thread() -> None:
    ran: list[tuple[str, str]] = []
    done = threading.Event()

    def note(name: str) -> None:
        ran.append((name, threading.current_thread().name))
        if len(ran) == 3:
            done.set()

    now = time.monotonic()
    call_at(now + 0.3, lambda: note("third"))
    call_at(now + 0.1, lambda: note("first"))
    call_later(0.2, lambda: note("second"))
    assert done.wait(WAIT)
    assert [name for name, _ in ran] == ["first", "second", "third"]
    assert {thread for _, thread in ran} == {"toolcards-timers"}


def test_a_cancelled_callback_does_not_run_and_a_failing_one_stops_nothing() -> None:
    ran: list[str] = []
    done = threading.Event()
    handle = call_later(0.05, lambda: ran.append("cancelled"))
    handle.cancel()
    call_later(0.06, lambda: 1 / 0)  # logged, the thread goes on
    call_later(0.1, done.set)
    assert done.wait(WAIT)
    assert ran == []


def test_a_callback_due_in_the_past_runs_at_once() -> None:
    done = threading.Event()
    call_at(time.monotonic() - 5, done.set)
    assert done.wait(WAIT)


class _Recorder(pykka.ThreadingActor):
    def __init__(self, told: list[object], done: threading.Event) -> None:
        super().__init__()
        self.told, self.done = told, done

    def on_receive(self, message: Any) -> Any:
        self.told.append(message)
        if message == "last":
            self.done.set()


def test_an_actor_timer_tells_the_latest_message_and_drops_the_cancelled_one() -> None:
    told: list[object] = []
    done = threading.Event()
    ref = _Recorder.start(told, done)
    try:
        replaced, cancelled, last = ActorTimer(), ActorTimer(), ActorTimer()
        replaced.tell_later(ref, 0.05, "replaced")
        replaced.tell_later(ref, 0.05, "replacement")
        cancelled.tell_later(ref, 0.05, "cancelled")
        cancelled.cancel()
        last.tell_later(ref, 0.1, "last")
        assert done.wait(WAIT)
        assert told == ["replacement", "last"]
    finally:
        ref.stop()


def test_an_actor_timer_tells_a_stopped_actor_nothing(caplog: pytest.LogCaptureFixture) -> None:
    told: list[object] = []
    ref = _Recorder.start(told, threading.Event())
    ref.stop()
    timer = ActorTimer()
    timer.tell_later(ref, 0, "too late")
    done = threading.Event()
    call_later(0.05, done.set)  # runs after the tell, on the same thread
    assert done.wait(WAIT)
    assert told == []
    assert not [r for r in caplog.records if r.name == "toolcards.actors"]  # no ActorDeadError
