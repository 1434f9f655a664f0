"""Asking actors: pykka's errors translated once, at the boundary.

pykka raises ``ActorDeadError`` when an actor is stopped and ``Timeout`` when an answer
does not come in time. Both become :class:`toolcards.errors.ActorUnavailable` here, with
the actor's name, so callers never need to import pykka to handle them.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pykka

from toolcards.errors import ActorUnavailable

__all__ = ["actor_error", "ask", "ask_async"]

T = TypeVar("T")


def ask(future: pykka.Future[T], *, actor: str, timeout: float | None = None) -> T:
    """Wait for an actor's answer in the calling thread (blocks it, never an event loop).

    Raises:
        ActorUnavailable: the actor is stopped or did not answer within ``timeout``.
        Exception: whatever the actor's method raised, unchanged.
    """
    try:
        return future.get(timeout=timeout)
    except (pykka.ActorDeadError, pykka.Timeout) as exc:
        error = actor_error(exc, actor=actor, timeout=timeout)
        assert error is not None
        raise error from exc


def actor_error(exc: BaseException, *, actor: str, timeout: float | None = None) -> ActorUnavailable | None:
    """``exc`` as :class:`ActorUnavailable` if it is pykka's (a stopped actor, no answer in
    time), else ``None``. The one place that knows pykka's errors; the tool pipeline asks it
    about whatever a handler let escape without :func:`ask`."""
    if isinstance(exc, pykka.ActorDeadError):
        return ActorUnavailable(f"{actor} is stopped; its team may be shutting down.")
    if isinstance(exc, pykka.Timeout):
        return ActorUnavailable(f"{actor} did not answer within {timeout} s.")
    return None


async def ask_async(future: pykka.Future[T], *, actor: str, timeout: float | None = None) -> T:
    """Await an actor's answer without blocking the event loop.

    pykka's own ``await future`` blocks the loop while it waits; this waits in a worker
    thread instead.
    """
    import asyncio

    result: Any = await asyncio.to_thread(ask, future, actor=actor, timeout=timeout)
    return result  # type: ignore[no-any-return]
