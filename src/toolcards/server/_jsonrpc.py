"""JSON-RPC 2.0 over a stream of frames: parsing, dispatch, responses, cancellation.

A :class:`Dispatcher` is fed one frame (one JSON text) at a time and writes its answers
through the ``write`` function it was given. It knows nothing of MCP's methods; it keeps
JSON-RPC's rules:

* a frame that is not JSON gets a ``-32700`` parse error, one that is not a request or a
  notification gets ``-32600`` (both with ``id: null``, since no id could be read); batches
  (arrays) are refused with ``-32600`` too: MCP removed them;
* a request gets exactly one response, whose ``id`` is the request's, of the same JSON type;
  a notification never gets one;
* ``params``, when present, must be an object (MCP names every parameter): ``-32602``;
* ``method`` and a string ``id`` must be text: one holding a lone UTF-16 surrogate (JSON's
  ``"\\ud800"``, :mod:`toolcards.core._surrogates`) gets ``-32600``, with ``id: null`` when
  the id is the one that is not text (it could not be sent back);
* a handler refuses with :class:`RequestError` (its code, message and data go out as they
  are); any other exception is logged and answered ``-32603`` without its details;
* ``notifications/cancelled`` (MCP's cancellation) cancels the request's task, and its
  response is never sent, even if it was about to be;
* requests run concurrently: what a handler returns at once (a ``dict``) is answered at
  once, in frame order; what it returns as an awaitable runs in its own task, so a slow
  call never holds up a ``ping`` behind it;
* this side may send requests too (:meth:`Dispatcher.request`: MCP's ``elicitation/create``
  and ``roots/list``), with ids of its own (``"s1"``, ``"s2"``...); the peer's responses are
  matched to them, and a response to no request of ours is dropped.

Frames are encoded compactly as UTF-8 without a newline; the transport adds its framing.
NaN and infinity, which JSON cannot carry, go out as ``null`` (as JavaScript's
``JSON.stringify`` sends them); a string holding a lone surrogate, which UTF-8 cannot carry,
goes out with the surrogate written as its escape (``\\ud800``), so one odd file name in an
answer never fails it; a value JSON has no form for (an object, bytes that are not UTF-8)
fails the encoding, and a result that does is answered ``-32603``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from pydantic_core import to_json

from toolcards.core._surrogates import Surrogate, escape_surrogates, find_surrogate

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Dispatcher",
    "RequestError",
    "RequestId",
    "encode",
]

logger = logging.getLogger("toolcards.server")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

CANCELLED = "notifications/cancelled"

RequestId = str | int
"""A request's id: JSON-RPC allows strings and numbers; MCP excludes null, and a float or
a boolean would not survive every client's round trip, so both are refused."""


class RequestError(Exception):
    """A request refused with a JSON-RPC error: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def wire(self) -> dict[str, Any]:
        """The ``error`` member of the response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


Params = Mapping[str, Any] | None
OnRequest = Callable[[str, Params, RequestId], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""``(method, params, id)``: a result now, or an awaitable of one; raises :class:`RequestError`."""
OnNotification = Callable[[str, Params], None]
"""``(method, params)``: runs at once; what it raises is logged, never answered."""


def encode(message: Mapping[str, Any]) -> bytes:
    """One frame's bytes: compact JSON, UTF-8; NaN and infinity become ``null``, and a lone
    surrogate in a string is written as its escape (``\\ud800``).

    Raises:
        ValueError: ``message`` holds a value JSON has no form for.
    """
    # pydantic-core writes UTF-8 bytes directly: a 55 KB file read encodes in a third of the
    # time json.dumps and str.encode take together.
    try:
        return to_json(message, inf_nan_mode="null")
    except ValueError:
        # Looked for only once the encoding failed: a frame that encodes pays nothing.
        escaped = escape_surrogates(message)
        if escaped is message:
            raise
    return to_json(escaped, inf_nan_mode="null")


def _invalid_envelope(version: Any, method: Any, bad_id: bool, id_not_text: Surrogate | None) -> str | None:
    """Why a message is neither a request nor a notification (``None`` when it is one):
    ``bad_id`` says its id is of no allowed type, ``id_not_text`` where its string id holds a
    lone surrogate."""
    if version != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(method, str):
        return "method must be a string"
    if bad_id:
        return "id must be a string or an integer"
    for name, found in (("method", find_surrogate(method)), ("id", id_not_text)):
        if found is not None:
            return f"{found.describe(name)}: send the text as UTF-8"
    return None


class Dispatcher:
    """Dispatches the frames of one connection (see the module docstring for the rules).

    Args:
        write: Sends one encoded frame to the peer. Called on the event loop only.
        on_request: Answers a request (see :data:`OnRequest`).
        on_notification: Takes a notification (``notifications/cancelled`` is handled here).

    Use it from one event loop: :meth:`feed` each frame, :meth:`notify` to send a
    notification, and :meth:`aclose` when the peer is gone.
    """

    def __init__(self, write: Callable[[bytes], None], on_request: OnRequest, on_notification: OnNotification) -> None:
        self._write = write
        self._on_request = on_request
        self._on_notification = on_notification
        self._running: dict[RequestId, asyncio.Task[None]] = {}
        self._asked: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0

    # -- inbound ------------------------------------------------------------------------------

    def feed(self, frame: bytes | str) -> None:
        """Handle one frame: answer it, start its task, or take its notification."""
        try:
            message = json.loads(frame)
        except (ValueError, RecursionError) as exc:  # a hostile nesting depth is a parse error too
            self._error(None, PARSE_ERROR, "Parse error", f"not a JSON text: {str(exc)[:200]}")
            return
        if not isinstance(message, dict):
            what = "batches are not supported" if isinstance(message, list) else "a message must be a JSON object"
            self._error(None, INVALID_REQUEST, "Invalid Request", what)
            return
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            self._response(message)
            return
        has_id = "id" in message
        request_id = message.get("id")
        valid_id = isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
        id_not_text = find_surrogate(request_id) if isinstance(request_id, str) else None
        reason = _invalid_envelope(message.get("jsonrpc"), method, has_id and not valid_id, id_not_text)
        if reason is not None:
            # An id that is not text could not be sent back: the answer goes without one.
            echoed = request_id if valid_id and id_not_text is None else None
            self._error(echoed, INVALID_REQUEST, "Invalid Request", reason)
            return
        assert isinstance(method, str)
        params = message.get("params")
        if not has_id:
            self._notification(method, params)
            return
        assert isinstance(request_id, (str, int))
        if params is not None and not isinstance(params, dict):
            self._error(request_id, INVALID_PARAMS, "Invalid request parameters", "params must be an object")
            return
        if request_id in self._running:
            self._error(request_id, INVALID_REQUEST, "Invalid Request", "this id is in use by a running request")
            return
        try:
            answer = self._on_request(method, params, request_id)
        except RequestError as exc:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": exc.wire()})
            return
        except Exception:
            logger.exception("%s failed", method)
            self._error(request_id, INTERNAL_ERROR, "Internal server error")
            return
        if isinstance(answer, dict):
            self._respond(request_id, answer)
            return
        task = asyncio.ensure_future(self._answer(request_id, method, answer))
        self._running[request_id] = task
        task.add_done_callback(functools.partial(self._finished, request_id, answer))

    def _finished(self, request_id: RequestId, answer: Awaitable[Any], task: asyncio.Task[None]) -> None:
        # Only this task's entry: after a cancellation the peer may reuse the id at once.
        if self._running.get(request_id) is task:
            del self._running[request_id]
        if isinstance(answer, Coroutine):
            answer.close()  # cancelled before it started: closed, so it is not reported as never awaited

    def _notification(self, method: str, params: Any) -> None:
        if not isinstance(params, (dict, type(None))):
            logger.debug("dropped %s: params must be an object", method)
            return
        if method == CANCELLED:
            request_id = (params or {}).get("requestId")
            task = self._running.pop(request_id, None) if isinstance(request_id, (str, int)) else None
            if task is not None:
                task.cancel()
            return
        try:
            self._on_notification(method, params)
        except Exception:
            logger.exception("notification %s failed", method)

    async def _answer(self, request_id: RequestId, method: str, answer: Awaitable[dict[str, Any]]) -> None:
        try:
            result = await answer
        except asyncio.CancelledError:
            return  # cancelled by the peer (no response) or at close
        except RequestError as exc:
            if self._running.get(request_id) is asyncio.current_task():
                self._send({"jsonrpc": "2.0", "id": request_id, "error": exc.wire()})
            return
        except Exception:
            logger.exception("%s failed", method)
            result = None
        if self._running.get(request_id) is not asyncio.current_task():
            return  # cancelled while finishing: the peer no longer waits for it
        if result is None:
            self._error(request_id, INTERNAL_ERROR, "Internal server error")
        else:
            self._respond(request_id, result)

    def _response(self, message: Mapping[str, Any]) -> None:
        request_id = message.get("id")
        future = self._asked.pop(request_id, None) if isinstance(request_id, str) else None
        if future is None or future.done():
            return  # not ours, or its asker gave up
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RequestError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
            )
        elif isinstance(message.get("result"), dict):
            future.set_result(message["result"])
        else:
            future.set_exception(RequestError(INVALID_REQUEST, "Invalid Request", "the result must be an object"))

    # -- outbound -----------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a request to the peer and wait for its result.

        Cancelling the awaiting task sends the peer ``notifications/cancelled`` for it.

        Raises:
            RequestError: the peer answered with an error (its code, message and data), or
                the connection closed first (``-32603``).
        """
        self._next_id += 1
        request_id = f"s{self._next_id}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._asked[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        try:
            return await future
        except asyncio.CancelledError:
            if self._asked.pop(request_id, None) is not None:
                self.notify(CANCELLED, {"requestId": request_id, "reason": "no longer needed"})
            raise

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to the peer."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def reject_frame(self, reason: str) -> None:
        """Answer a frame the transport could not read whole (too long) with ``-32600``."""
        self._error(None, INVALID_REQUEST, "Invalid Request", reason)

    def _respond(self, request_id: RequestId, result: Mapping[str, Any]) -> None:
        try:
            frame = encode({"jsonrpc": "2.0", "id": request_id, "result": result})
        except (TypeError, ValueError) as exc:  # a result JSON cannot carry: say so, do not die
            logger.exception("the result of request %r is not JSON", request_id)
            self._error(request_id, INTERNAL_ERROR, "Internal server error", f"the result is not JSON: {exc}")
            return
        self._write(frame)

    def _error(self, request_id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "id": request_id, "error": RequestError(code, message, data).wire()})

    def _send(self, message: Mapping[str, Any]) -> None:
        self._write(encode(message))

    # -- lifecycle ----------------------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every running request has been answered (or cancelled)."""
        while self._running:
            # Not gather: cancelling this wait (a signal) must leave the requests running, for
            # aclose to stop and answer them.
            await asyncio.wait(list(self._running.values()))

    async def aclose(self, reason: str | None = None) -> None:
        """The peer is gone, or this side stops: fail what we asked the peer, cancel the running
        requests and wait until they have stopped.

        With ``reason`` (this side stops while the peer still listens), each request cancelled
        here is answered with an error carrying it, so the peer is not left waiting.
        """
        asked, self._asked = self._asked, {}
        for future in asked.values():
            if not future.done():
                future.set_exception(RequestError(INTERNAL_ERROR, "Connection closed"))
        running = list(self._running.items())
        self._running.clear()
        for _, task in running:
            task.cancel()
        if running:
            await asyncio.gather(*(task for _, task in running), return_exceptions=True)
        if reason is not None:
            for request_id, _ in running:
                self._error(request_id, INTERNAL_ERROR, "Server stopping", reason)
