"""How slowly, and how much, an HTTP client may send before its connection is closed.

uvicorn bounds neither the time a request's headers take to arrive nor the pace of its body:
its keep-alive timer runs only between requests, and any byte received stops it. A client
that opens connections and sends a header byte now and then (slowloris), or a body slower
than any real client would, holds its connection, a file descriptor and a slot of the event
loop for as long as it likes; with enough of them nobody else is served.

:class:`ClientLimits` is what a request may take; :mod:`toolcards.server._limited_protocol`
enforces it on every connection of :func:`~toolcards.server._http.serve_asgi` (``toolcards
serve`` and ``toolcards dashboard``, whose ``--header-timeout``, ``--body-timeout``,
``--body-min-rate`` and ``--max-header-bytes`` set it). Only what the client sends is timed:
once a request has arrived, the answer may take as long as it takes, so long tool calls and
event streams (a GET on ``/mcp``, the dashboard's ``/api/events``) live on.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClientLimits"]


@dataclass(frozen=True, kw_only=True)
class ClientLimits:
    """Limits on what one client sends over one connection.

    Raises:
        ValueError: a limit is not a positive number; the message names it.
    """

    header_timeout_s: float = 10.0
    """A request's line and headers must all have arrived this long after the connection
    opened, or after the previous response on a kept-alive connection. Otherwise the
    connection is closed: after a ``408`` if part of a request had come, silently if none had
    (an idle kept-alive connection, usually closed earlier by uvicorn's 5 s keep-alive)."""
    body_timeout_s: float = 10.0
    """A request's body must be complete ``body_timeout_s + received / body_min_rate`` seconds
    after its headers (Apache's ``mod_reqtimeout`` rule): a body that keeps arriving at
    ``body_min_rate`` or faster is never cut; one that stalls is cut at most this long, plus
    what it had sent divided by the rate, after it began. Time in which the server is not
    reading (the application has not yet taken what arrived) does not count."""
    body_min_rate: float = 1024.0
    """Bytes per second, on average, a request's body must arrive at (see ``body_timeout_s``)."""
    max_header_bytes: int = 16 * 1024
    """The request line and headers together; more is answered ``400`` and the connection
    closed (h11's own bound, made explicit)."""

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "body_min_rate", "max_header_bytes"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"ClientLimits.{name} must be a positive number, not {value!r}.")
