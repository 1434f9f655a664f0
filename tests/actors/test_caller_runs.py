"""CallerRunsActor: a waiting caller runs the idle actor's messages, and nothing else changes.

What callers rely on is pykka's contract: one message at a time, in the order sent, answers
and errors delivered, every message run even when nobody reads its answer, a clean stop.
These tests hold the actor to it in each of the ways a message can now be run (by the
waiting caller, by the actor's thread after a timeout, a dropped future, a kept one).
"""

from __future__ import annotations

import contextvars
import gc
import os
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pykka
import pytest

from toolcards.actors._caller_runs import CallerRunsActor

WAIT_S = 10
"""A generous bound for events that must happen; reaching it is a failure, not a timing."""

_caller_value: contextvars.ContextVar[str] = contextvars.ContextVar("caller_value", default="unset")


class Recorder(CallerRunsActor):
    """Records what ran, in which thread; asserts nothing ever overlaps."""

    def __init__(self, started: threading.Event | None = None) -> None:
        super().__init__()
        self.log: list[Any] = []
        self.threads: list[int] = []
        self.inside = False
        self.overlaps = 0
        self.counter = 0
        self.on_start_ran = False
        self._started = started

    def on_start(self) -> None:
        if self._started is not None:
            self._started.wait(WAIT_S)
        self.on_start_ran = True

    def record(self, item: Any, done: threading.Event | None = None) -> Any:
        if self.inside:
            self.overlaps += 1
        self.inside = True
        self.log.append(item)
        self.threads.append(threading.get_ident())
        self.inside = False
        if done is not None:
            done.set()
        return item

    def bump(self) -> int:
        if self.inside:
            self.overlaps += 1
        self.inside = True
        value = self.counter
        # A thread switch here would lose an increment if two messages could overlap.
        for _ in range(50):
            pass
        self.counter = value + 1
        self.inside = False
        return self.counter

    def started_first(self) -> bool:
        return self.on_start_ran

    def thread(self) -> int:
        return threading.get_ident()

    def context_value(self) -> str:
        return _caller_value.get()

    def fail(self) -> None:
        raise ValueError("refused")

    def ask_other(self, other: pykka.ActorProxy[Recorder], item: Any) -> Any:
        return other.record(item).get()

    def on_receive(self, message: Any) -> Any:
        if message == "boom":
            raise RuntimeError("a tell that fails")
        if isinstance(message, tuple) and message[0] == "hold":
            _, running, release = message
            running.set()
            release.wait(WAIT_S)
            self.log.append("held")
            return None
        self.log.append(message)
        return message


@pytest.fixture
def actor() -> Iterator[pykka.ActorProxy[Recorder]]:
    ref = Recorder.start()
    yield ref.proxy()
    ref.stop()


def test_an_idle_actor_runs_the_waiting_callers_message_in_the_callers_thread(
    actor: pykka.ActorProxy[Recorder],
) -> None:
    actor.thread().get()  # on_start has run
    assert actor.record("x").get() == "x"
    assert actor.threads.get() == [threading.get_ident()]


def test_messages_from_one_sender_run_in_the_order_sent_whoever_runs_them(
    actor: pykka.ActorProxy[Recorder],
) -> None:
    ref = actor.actor_ref
    ref.tell("told-1")  # run by the actor's thread
    first = actor.record("asked-2")  # queued unannounced behind it
    ref.tell("told-3")
    actor.record("asked-4").get()
    first.get()
    assert actor.log.get() == ["told-1", "asked-2", "told-3", "asked-4"]


def test_many_threads_asking_at_once_never_overlap_and_lose_nothing(actor: pykka.ActorProxy[Recorder]) -> None:
    threads, each = 8, 300
    barrier = threading.Barrier(threads)

    def work() -> None:
        barrier.wait()
        for _ in range(each):
            actor.bump().get()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert actor.counter.get() == threads * each
    assert actor.overlaps.get() == 0


def test_a_dropped_future_still_runs(actor: pykka.ActorProxy[Recorder]) -> None:
    done = threading.Event()
    actor.record("dropped", done)  # the future is discarded at once
    assert done.wait(WAIT_S)
    assert actor.log.get() == ["dropped"]


def test_a_kept_future_nobody_reads_still_runs(actor: pykka.ActorProxy[Recorder]) -> None:
    done = threading.Event()
    kept = actor.record("kept", done)
    assert done.wait(WAIT_S), "the message of a kept, unread future never ran"
    assert kept.get() == "kept"


def test_a_wait_with_a_timeout_leaves_the_message_to_the_actors_thread(actor: pykka.ActorProxy[Recorder]) -> None:
    actor_thread = actor.thread().get(timeout=WAIT_S)
    assert actor_thread != threading.get_ident()
    assert actor.record("timed").get(timeout=WAIT_S) == "timed"
    assert actor.threads.get() == [actor_thread]


def test_no_message_runs_before_on_start() -> None:
    started = threading.Event()
    ref = Recorder.start(started)
    try:
        answer = ref.proxy().started_first()
        # The caller waits while on_start is still blocked: it must not run the message.
        waiter = threading.Thread(target=answer.get)
        waiter.start()
        started.set()
        waiter.join(WAIT_S)
        assert answer.get() is True
    finally:
        ref.stop()


def test_an_error_reaches_the_caller_and_the_actor_runs_on(actor: pykka.ActorProxy[Recorder]) -> None:
    with pytest.raises(ValueError, match="refused"):
        actor.fail().get()
    assert actor.record("after").get() == "after"


def test_a_failing_tell_stops_the_actor_as_in_pykka() -> None:
    ref = Recorder.start()
    ref.tell("boom")
    ref.actor_stopped.wait(WAIT_S)
    assert not ref.is_alive()
    with pytest.raises(pykka.ActorDeadError):
        ref.proxy().record("late").get()


def test_a_callers_context_variables_do_not_reach_the_actor(actor: pykka.ActorProxy[Recorder]) -> None:
    token = _caller_value.set("the caller's")
    try:
        assert actor.context_value().get() == "unset"
    finally:
        _caller_value.reset(token)


def test_an_attribute_write_is_run_by_the_actors_thread(actor: pykka.ActorProxy[Recorder]) -> None:
    actor.counter = 41  # ProxySetAttr: left to the actor's thread
    assert actor.bump().get() == 42


def test_an_actor_asking_another_is_answered() -> None:
    first, second = Recorder.start(), Recorder.start()
    try:
        assert first.proxy().ask_other(second.proxy(), "relayed").get() == "relayed"
        assert second.proxy().log.get() == ["relayed"]
    finally:
        first.stop()
        second.stop()


def test_stop_answers_what_was_asked_before_it_and_refuses_what_comes_after() -> None:
    ref = Recorder.start()
    proxy = ref.proxy()
    before = proxy.record("before")
    ref.stop()  # blocks until the actor has stopped
    assert before.get() == "before"
    with pytest.raises(pykka.ActorDeadError):
        proxy.record("after").get()


def test_a_stopped_actor_is_freed_without_the_cycle_collector() -> None:
    # A stopped actor holding a big state (a graph of thousands of entities) must go when its
    # last reference does, not at some later full collection that then frees it all at once.
    collecting = gc.isenabled()
    gc.disable()
    try:
        ref = Recorder.start()
        done = threading.Event()
        kept = ref.proxy().record("read late", done)  # unread: the watch wakes the actor
        assert done.wait(WAIT_S)
        assert kept.get() == "read late"
        actor = weakref.ref(ref._actor_weakref())  # type: ignore[attr-defined]
        ref.stop()
        del ref, kept
        deadline = time.monotonic() + WAIT_S  # the actor's thread lets go as it ends
        while actor() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert actor() is None, "a stopped, unreferenced actor is still alive"
    finally:
        if collecting:
            gc.enable()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+ warns about forking with threads
def test_a_forked_child_gets_its_own_watch() -> None:
    parent = Recorder.start()
    try:
        parent.proxy().record("warm the parent's watch", threading.Event())  # kept unread
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: a kept, unread ask must still run
            code = 1
            try:
                ref = Recorder.start()
                done = threading.Event()
                kept = ref.proxy().record("in the child", done)
                code = 0 if done.wait(WAIT_S) and kept.get() == "in the child" else 1
                ref.stop()
            finally:
                os.write(write, bytes([code]))
                os._exit(code)
        os.close(write)
        answer = os.read(read, 1)
        os.close(read)
        _, status = os.waitpid(pid, 0)
        assert answer == b"\x00" and os.waitstatus_to_exitcode(status) == 0
    finally:
        parent.stop()


def test_an_ask_behind_a_running_message_waits_for_it_then_runs(actor: pykka.ActorProxy[Recorder]) -> None:
    release, running = threading.Event(), threading.Event()
    actor.actor_ref.tell(("hold", running, release))  # run by the actor's thread, holds the lock
    assert running.wait(WAIT_S)
    answers: list[Any] = []
    waiter = threading.Thread(target=lambda: answers.append(actor.record("after").get()))
    waiter.start()
    release.set()
    waiter.join(WAIT_S)
    assert answers == ["after"]
    assert actor.log.get() == ["held", "after"]
