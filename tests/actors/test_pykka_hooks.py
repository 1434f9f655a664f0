"""The pykka internals :mod:`toolcards.actors._caller_runs` extends, named one by one.

pykka is pinned exactly because these are below its public API; when an upgrade moves one,
this test says which, instead of an actor misbehaving at run time.
"""

from __future__ import annotations

import inspect

import pykka
import pytest
from pykka import _envelope, messages

from toolcards.actors._caller_runs import CallerRunsActor

ACTOR_HOOKS = [
    "_create_actor_inbox",
    "_create_future",
    "_actor_loop_setup",
    "_actor_loop_running",
    "_handle_receive",
    "_handle_failure",
    "_stop",
    "on_failure",
]


@pytest.mark.parametrize("name", ACTOR_HOOKS)
def test_the_threading_actor_still_has_the_hook(name: str) -> None:
    assert hasattr(pykka.ThreadingActor, name), f"pykka.ThreadingActor has no {name}: follow it in caller_runs.py"


def test_a_future_keeps_its_result_and_get_hook_slots() -> None:
    future: pykka.ThreadingFuture[int] = pykka.ThreadingFuture()
    assert future._result is None and future._get_hook is None
    future.set(7)
    assert future._result is not None and future.get() == 7


def test_an_envelope_carries_a_message_and_where_to_reply() -> None:
    assert list(inspect.signature(_envelope.Envelope).parameters) == ["message", "reply_to"]
    assert isinstance(messages.ProxyCall, type) and isinstance(messages.ProxyGetAttr, type)


def test_a_waiting_caller_runs_proxy_calls_through_the_hooks() -> None:
    seen: list[object] = []

    class Echo(CallerRunsActor):
        def _handle_receive(self, message: object) -> object:
            seen.append(message)
            return super()._handle_receive(message)

        def hello(self) -> str:
            return "hi"

    ref = Echo.start()
    try:
        assert ref.proxy().hello().get() == "hi"
        assert not ref.actor_stopped.is_set()  # type: ignore[attr-defined]
    finally:
        ref.stop()
    assert any(isinstance(message, messages.ProxyCall) for message in seen)
