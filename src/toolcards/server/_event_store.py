"""Resumable HTTP streams: the events recently sent on each SSE stream, to send again.

A streamable-HTTP client that lost a stream (a dropped connection, a proxy timeout) opens it
again with ``GET`` and ``Last-Event-ID``: the SDK's transport then asks the server's event
store for what followed that event on the same stream. :class:`ReplayBuffer` is that store,
in memory and bounded: the last :data:`MAX_EVENTS` events of the server, none older than
:data:`MAX_AGE_S`. A client coming back later than that, or naming an event this server never
sent, gets an empty stream and goes on from there (what it missed is lost, as a stream
without resumability would lose it). Events are not shared between processes.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

if TYPE_CHECKING:
    from mcp_types import JSONRPCMessage

__all__ = ["MAX_AGE_S", "MAX_EVENTS", "ReplayBuffer"]

MAX_EVENTS = 1024
"""Events kept, all streams together (a tool result is at most a few tens of KB)."""
MAX_AGE_S = 600.0
"""Events older than this are dropped."""


class ReplayBuffer(EventStore):
    """The SDK's ``EventStore``, in memory, bounded (see the module docstring). Use it from
    the event loop serving HTTP."""

    def __init__(
        self, *, max_events: int = MAX_EVENTS, max_age_s: float = MAX_AGE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._events: OrderedDict[str, tuple[StreamId, JSONRPCMessage | None, float]] = OrderedDict()
        self._max_events = max_events
        self._max_age_s = max_age_s
        self._clock = clock
        self._prefix = secrets.token_hex(4)  # ids from another server (a restart) are unknown here
        self._numbers = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Keep ``message`` (``None``: a priming event) as the next event of ``stream_id``."""
        event_id = f"{self._prefix}-{next(self._numbers)}"
        now = self._clock()
        self._events[event_id] = (stream_id, message, now)
        self._trim(now)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the events of ``last_event_id``'s stream that followed it; that stream's id, or
        ``None`` when the event is unknown (too old, or never sent here)."""
        self._trim(self._clock())
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (stream, message, _) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id

    def _trim(self, now: float) -> None:
        while self._events and (
            len(self._events) > self._max_events or next(iter(self._events.values()))[2] < now - self._max_age_s
        ):
            self._events.popitem(last=False)

    # No __len__: the SDK tests the store for truth (``if self._event_store``), and an empty
    # store must still count as one.

    def __repr__(self) -> str:
        return f"ReplayBuffer({len(self._events)} events)"

    def snapshot(self) -> list[tuple[str, Any]]:
        """``(event id, stream id)`` of every event kept, oldest first (for tests)."""
        return [(event_id, stream) for event_id, (stream, _, _) in self._events.items()]
