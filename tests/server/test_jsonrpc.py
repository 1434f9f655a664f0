"""JSON-RPC dispatch in process: each rule on a Dispatcher with a recording writer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from toolcards.server._jsonrpc import Dispatcher, RequestError, encode


class Peer:
    """A dispatcher whose handlers are given per test, and what it wrote."""

    def __init__(self, on_request: Callable[..., Any] | None = None) -> None:
        self.written: list[dict[str, Any]] = []
        self.notifications: list[tuple[str, Any]] = []
        self.dispatcher = Dispatcher(
            lambda frame: self.written.append(json.loads(frame)),
            on_request or (lambda method, params, request_id: {"echo": params}),
            lambda method, params: self.notifications.append((method, params)),
        )

    def feed(self, message: Any) -> None:
        self.dispatcher.feed(message if isinstance(message, (bytes, str)) else json.dumps(message))


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(body())


def test_each_malformed_frame_gets_the_code_for_what_is_wrong() -> None:
    peer = Peer()
    peer.feed(b"{nope")
    peer.feed(b"[" * 50_000)
    peer.feed(b"[]")
    peer.feed(b'"text"')
    peer.feed({"id": 1, "method": "m"})
    peer.feed({"jsonrpc": "2.0", "id": 2, "method": 5})
    peer.feed({"jsonrpc": "2.0", "id": 2.5, "method": "m"})
    peer.feed({"jsonrpc": "2.0", "id": None, "method": "m"})
    peer.feed({"jsonrpc": "2.0", "id": 3, "method": "m", "params": [1]})
    codes = [(answer["id"], answer["error"]["code"]) for answer in peer.written]
    assert codes == [
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (1, -32600),
        (2, -32600),
        (None, -32600),
        (None, -32600),
        (3, -32602),
    ]


def test_answers_echo_the_id_and_notifications_and_responses_get_none() -> None:
    peer = Peer()
    for request_id in ("a", 0, 2**70, -1):
        peer.feed({"jsonrpc": "2.0", "id": request_id, "method": "m", "params": {"x": 1}})
    peer.feed({"jsonrpc": "2.0", "method": "notifications/x", "params": {"y": 2}})
    peer.feed({"jsonrpc": "2.0", "method": "notifications/bad", "params": [1]})
    peer.feed({"jsonrpc": "2.0", "id": 9, "result": {}})
    assert [answer["id"] for answer in peer.written] == ["a", 0, 2**70, -1]
    assert peer.written[0]["result"] == {"echo": {"x": 1}}
    assert peer.notifications == [("notifications/x", {"y": 2})]


def test_handler_errors_become_error_responses_without_internals() -> None:
    def handler(method: str, params: Any, request_id: Any) -> Any:
        if method == "refuse":
            raise RequestError(-32002, "no such thing", {"uri": "x"})
        if method == "nan":
            return {"value": float("nan"), "big": float("inf")}
        if method == "object":
            return {"value": object()}
        raise KeyError("secret internals")

    peer = Peer(handler)
    peer.feed({"jsonrpc": "2.0", "id": 1, "method": "refuse"})
    peer.feed({"jsonrpc": "2.0", "id": 2, "method": "crash"})
    peer.feed({"jsonrpc": "2.0", "id": 3, "method": "object"})
    peer.feed({"jsonrpc": "2.0", "id": 4, "method": "nan"})
    refused, crashed, unencodable = (answer["error"] for answer in peer.written[:3])
    assert refused == {"code": -32002, "message": "no such thing", "data": {"uri": "x"}}
    assert crashed == {"code": -32603, "message": "Internal server error"}
    assert unencodable["code"] == -32603 and "not JSON" in unencodable["data"]
    # JSON has no NaN or infinity: they go out as null, as JavaScript sends them.
    assert peer.written[3] == {"jsonrpc": "2.0", "id": 4, "result": {"value": None, "big": None}}


def test_slow_requests_run_concurrently_and_a_cancelled_one_is_never_answered() -> None:
    async def body() -> None:
        release = asyncio.Event()

        async def slow(value: str) -> dict[str, Any]:
            await release.wait()
            return {"value": value}

        async def failing() -> dict[str, Any]:
            raise RequestError(-32602, "bad")

        def handler(method: str, params: Any, request_id: Any) -> Any:
            if method == "ping":
                return {}
            if method == "fail":
                return failing()
            return slow(str(request_id))

        peer = Peer(handler)
        peer.feed({"jsonrpc": "2.0", "id": "kept", "method": "slow"})
        peer.feed({"jsonrpc": "2.0", "id": "dropped", "method": "slow"})
        peer.feed({"jsonrpc": "2.0", "id": "kept", "method": "slow"})  # an id still running
        peer.feed({"jsonrpc": "2.0", "id": "fast", "method": "ping"})
        peer.feed({"jsonrpc": "2.0", "id": "f", "method": "fail"})
        peer.feed({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "dropped"}})
        await asyncio.sleep(0)
        release.set()
        await peer.dispatcher.drain()
        answered = [(answer["id"], "result" in answer) for answer in peer.written]
        assert answered == [("kept", False), ("fast", True), ("f", False), ("kept", True)]
        # The id of a cancelled request may be used again at once.
        peer.feed({"jsonrpc": "2.0", "id": "dropped", "method": "ping"})
        assert peer.written[-1] == {"jsonrpc": "2.0", "id": "dropped", "result": {}}

    run(body)


def test_closing_cancels_what_still_runs_and_notify_and_reject_frame_write() -> None:
    async def body() -> None:
        started = asyncio.Event()

        async def forever() -> dict[str, Any]:
            started.set()
            await asyncio.Event().wait()
            return {}

        peer = Peer(lambda method, params, request_id: forever())
        peer.feed({"jsonrpc": "2.0", "id": 1, "method": "forever"})
        await started.wait()
        await peer.dispatcher.aclose()
        peer.dispatcher.notify("notifications/resources/updated", {"uri": "u"})
        peer.dispatcher.reject_frame("frame too long")
        assert peer.written == [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "u"}},
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Invalid Request", "data": "frame too long"},
            },
        ]

    run(body)


def test_a_method_or_id_that_is_not_text_is_refused_and_an_answer_holding_one_still_goes_out() -> None:
    """A lone UTF-16 surrogate (JSON's ``"\\ud800"``) is not text: refused where it comes in
    (``-32600``; without the id when the id holds it), written as its escape (``\\ud800``) where it goes out."""
    peer = Peer(lambda method, params, request_id: {"listed": ["odd\udcff.md"], "\ud800": float("nan")})
    peer.feed('{"jsonrpc":"2.0","id":1,"method":"tools/li\\ud800st"}')
    peer.feed('{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}')
    peer.feed('{"jsonrpc":"2.0","method":"notifications/\\ud800"}')
    peer.feed('{"jsonrpc":"2.0","id":2,"method":"list"}')

    method, request_id, notification, answer = peer.written
    assert (method["id"], method["error"]["code"]) == (1, -32600)
    assert method["error"]["data"] == (
        "`method` holds an unpaired UTF-16 surrogate (\\ud800 at position 8), which is not text: send the text as UTF-8"
    )
    assert (request_id["id"], request_id["error"]["code"]) == (None, -32600)
    assert request_id["error"]["data"].startswith("`id` holds an unpaired UTF-16 surrogate (\\ud800 at position 0)")
    assert (notification["id"], notification["error"]["code"]) == (None, -32600)  # as any invalid message
    assert peer.notifications == []
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"listed": ["odd\\udcff.md"], "\\ud800": None}}


def test_encoding_escapes_lone_surrogates_and_still_refuses_what_json_cannot_hold() -> None:
    assert encode({"a": "x\ud800", "b": "é 😀"}) == '{"a":"x\\\\ud800","b":"é 😀"}'.encode()
    with pytest.raises(ValueError):
        encode({"a": object(), "b": "\ud800"})
