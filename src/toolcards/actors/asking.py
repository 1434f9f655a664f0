"""Asking actors: pykka's errors translated once, at the boundary.

pykka raises ``ActorDeadError`` when an actor is stopped and ``Timeout`` when an answer
does not come in time. Both become :class:`toolcards.errors.ActorUnavailable` here, with
the actor's name, so callers never need to import pykka to handle them.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pykka

from toolcards.errors import ActorUnavailable

__all__ = ["ask", "ask_async"]

T = TypeVar("T")


def ask(future: pykka.Future[T], *, actor: str, timeout: float | None = None) -> T:
    """Wait for an actor's answer in the calling thread (blocks it, never an event loop).

    Raises:
        ActorUnavailable: the actor is stopped or did not answer within ``timeout``.
        Exception: whatever the actor's method raised, unchanged.
    """
    try:
        return future.get(timeout=timeout)
    except pykka.ActorDeadError as exc:
        raise ActorUnavailable(f"{actor} is stopped; its team may be shutting down.") from exc
    except pykka.Timeout as exc:
        raise ActorUnavailable(f"{actor} did not answer within {timeout} s.") from exc


async def ask_async(future: pykka.Future[T], *, actor: str, timeout: float | None = None) -> T:
    """Await an actor's answer without blocking the event loop.

    pykka's own ``await future`` blocks the loop while it waits; this waits in a worker
    thread instead.
    """
    import asyncio

    result: Any = await asyncio.to_thread(ask, future, actor=actor, timeout=timeout)
    return result  # type: ignore[no-any-return]
