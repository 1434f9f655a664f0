"""One timer thread per process: callbacks run at a time, for every actor that needs one.

Leases that expire, reminders that fall due, a board that must look for other processes'
claims now and then: each needs to act at a time, and a thread (or ``threading.Timer``) per
need would grow with the teams and cards of a process. :func:`call_at` and
:func:`call_later` schedule a callback on the process's one timer thread instead, which
sleeps until the earliest one is due. An actor that wakes itself (a tick, a reminder)
keeps an :class:`ActorTimer`, which tells it a message at a time if it is still alive then.

Callbacks run on that thread, one after another, so they must return at once: the usual
callback sends an actor a message (``actor_ref.tell(...)``) and the actor does the work on
its own thread. An exception a callback raises is logged and the thread goes on. The thread
is a daemon, started with the first schedule; after ``fork()`` the child starts with none
scheduled.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pykka

__all__ = ["ActorTimer", "TimerHandle", "call_at", "call_later"]

logger = logging.getLogger("toolcards.actors")


@dataclass(order=True)
class TimerHandle:
    """A scheduled callback; :meth:`cancel` it if it is no longer wanted."""

    when: float
    """Its time, on the ``time.monotonic()`` clock."""
    _order: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        """Do not run the callback (a no-op once it ran)."""
        self.cancelled = True


class _Timers:
    def __init__(self) -> None:
        self._heap: list[TimerHandle] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle(when, next(self._order), callback)
        with self._wake:
            heapq.heappush(self._heap, handle)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolcards-timers", daemon=True)
                self._thread.start()
            elif self._heap[0] is handle:
                self._wake.notify()
        return handle

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0].when > time.monotonic():
                    timeout = self._heap[0].when - time.monotonic() if self._heap else None
                    self._wake.wait(timeout)
                handle = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            try:
                handle.callback()
            except Exception:
                logger.exception("a timer callback failed")

    def reset_after_fork(self) -> None:
        self._heap = []
        self._wake = threading.Condition()
        self._thread = None


_timers = _Timers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_timers.reset_after_fork)


def call_at(when: float, callback: Callable[[], None]) -> TimerHandle:
    """Run ``callback`` on the timer thread at ``when`` (``time.monotonic()`` clock), or at once
    if that is past. It must return quickly (send a message, set an event)."""
    return _timers.schedule(when, callback)


def call_later(delay_s: float, callback: Callable[[], None]) -> TimerHandle:
    """Run ``callback`` on the timer thread ``delay_s`` seconds from now (see :func:`call_at`)."""
    return _timers.schedule(time.monotonic() + max(0.0, delay_s), callback)


class ActorTimer:
    """One pending message an actor tells itself later: its tick or its soonest deadline.

    :meth:`tell_later` replaces the pending message, if any; :meth:`cancel` drops it, and an
    actor calls it from ``on_stop`` and ``on_failure`` so a stopped actor leaves nothing
    scheduled. The message is told only if the actor is still alive when it falls due.
    """

    def __init__(self) -> None:
        self._handle: TimerHandle | None = None

    def tell_later(self, actor_ref: pykka.ActorRef[Any], delay_s: float, message: object) -> None:
        """Tell ``actor_ref`` ``message`` ``delay_s`` seconds from now, replacing any pending one."""
        self.cancel()

        def tell() -> None:
            if actor_ref.is_alive():
                actor_ref.tell(message)

        self._handle = call_later(delay_s, tell)

    def cancel(self) -> None:
        """Drop the pending message, if any (a no-op once it was told)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
