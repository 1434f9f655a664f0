"""Actors whose idle mailbox is served by the thread that waits on it.

A pykka ask costs two thread hand-offs (caller to actor, actor back to caller), which on a busy
machine can cost more than the work itself (``docs/architecture.md``). :class:`CallerRunsActor`
removes both when nothing stands in the way: an ask is queued without waking the actor's
thread; the caller that blocks on the answer (``future.get()`` without timeout) takes the
actor's serial lock and runs the messages at the head of the mailbox itself, up to its own;
otherwise (a stop or custom message at the head, the actor not started, a timeout) it wakes the
actor's thread as pykka does. An ask nobody waits on is handed to the actor's thread within
``_Watch.PERIOD_S`` by one watching thread per process.

What made the actor safe stays true: messages run one at a time, under one lock, in order;
``on_start`` runs first and ``on_stop`` last; answers, errors and ``ActorDeadError`` reach
callers as before (an error is logged only at DEBUG: :mod:`toolcards.actors._returned_errors`).
Two things differ, and opting-in actors must not depend on them: a method may run on a caller's
thread (no thread identity or thread-locals; SQLite connections use
``check_same_thread=False``), and messages run in a ``contextvars`` context of their own, so a
caller's context (a tool call's deadline) does not leak in. A ``get(timeout=...)`` never runs
messages, since a method it ran could not be abandoned; attribute writes, stops and custom
messages are left to the actor's thread.
"""

from __future__ import annotations

import contextvars
import logging
import os
import queue
import sys
import threading
import time
import weakref
from collections import deque
from typing import Any

import pykka
from pykka import messages

from toolcards.actors._returned_errors import log_returned

__all__ = ["CallerRunsActor"]

logger = logging.getLogger("toolcards.actors")

_CALLER_RUNNABLE = (messages.ProxyCall, messages.ProxyGetAttr)
"""Messages a waiting caller may run: they touch the actor's own state only. A stop, an
attribute write and a custom message are left to the actor's thread."""


class _Answer(pykka.ThreadingFuture[Any]):
    """The future of an ask to a :class:`CallerRunsActor`.

    Its ask is queued *unannounced*: the actor's thread is not woken for it. Whoever comes
    for the answer announces it: ``get()`` runs the queued messages itself (after the one
    running now, if any), and when it cannot (or with a timeout) wakes the actor's thread and
    waits. For a future
    nobody reads (dropped, or kept), :data:`_WATCH` wakes the actor's thread within
    ``_Watch.PERIOD_S``.
    """

    actor: CallerRunsActor | None = None
    """The actor that will answer; set when the ask is queued."""
    unannounced = False
    """Queued without waking the actor's thread, which nobody has done since."""

    def get(self, *, timeout: float | None = None) -> Any:
        actor = self.actor
        if actor is not None and self._result is None and self._get_hook is None:
            if timeout is None:
                actor._run_queued_until(self)
            if self._result is None and self.unannounced:
                self.unannounced = False
                actor._mailbox.ring()
        return super().get(timeout=timeout)


class _Mailbox(queue.Queue):  # type: ignore[type-arg]
    """The actor's inbox: FIFO; asks are queued without waking the actor's thread."""

    def __init__(self, actor: CallerRunsActor) -> None:
        super().__init__()
        # Weak: the actor holds its mailbox, and a cycle would keep a stopped actor's whole
        # state alive until a full garbage collection, which then frees it at some later call.
        self._actor = weakref.ref(actor)

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        """Queue ``item``; wake the actor's thread unless it is an ask (unbounded, never blocks)."""
        reply_to = item.reply_to
        with self.mutex:
            self.queue.append(item)
            self.unfinished_tasks += 1
            if not isinstance(reply_to, _Answer):
                self.not_empty.notify()
                return
            reply_to.actor = self._actor()
            reply_to.unannounced = True
        _WATCH.watch(self)

    def ring(self) -> None:
        """Wake the actor's thread."""
        with self.mutex:
            self.not_empty.notify()

    def ring_if_unannounced(self) -> None:
        """Wake the actor's thread if an ask queued here is still unannounced."""
        with self.mutex:
            if any(isinstance(item.reply_to, _Answer) and item.reply_to.unannounced for item in self.queue):
                self.not_empty.notify()

    def wait_not_empty(self) -> None:
        """Block until a message is queued (without taking it)."""
        with self.not_empty:
            while not self.queue:
                self.not_empty.wait()

    def take(self) -> Any | None:
        """The message at the head, removed, or ``None`` when the mailbox is empty."""
        with self.mutex:
            return self._take_locked() if self.queue else None

    def take_caller_runnable(self) -> Any | None:
        """The message at the head if a caller may run it (see ``_CALLER_RUNNABLE``), else ``None``."""
        with self.mutex:
            items: deque[Any] = self.queue
            if items and items[0].reply_to is not None and isinstance(items[0].message, _CALLER_RUNNABLE):
                return self._take_locked()
            return None

    def _take_locked(self) -> Any:
        item = self.queue.popleft()
        self.not_full.notify()
        return item


class _Watch:
    """The backstop for asks nobody comes for: a future kept but never read.

    One daemon thread per process. It sleeps until an ask is queued unannounced, then every
    :attr:`PERIOD_S` wakes the actors whose mailboxes still hold one, and sleeps again when a
    round finds none. Asks that are read at once (nearly all) never involve it beyond
    adding their mailbox to a set.
    """

    PERIOD_S = 0.01

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._mailboxes: set[_Mailbox] = set()
        self._thread: threading.Thread | None = None

    def watch(self, mailbox: _Mailbox) -> None:
        """Look at ``mailbox`` in the next round (called after an ask is queued there)."""
        if mailbox in self._mailboxes:
            # Already due in the coming round: the ask was queued before this check, and the
            # round takes the set before it looks at the mailbox, so it will see the ask.
            return
        with self._lock:
            idle = not self._mailboxes
            self._mailboxes.add(mailbox)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolcards-mailbox-watch", daemon=True)
                self._thread.start()
            elif idle:
                self._lock.notify()

    def forget(self) -> None:
        """Start over in a forked child: the thread was not forked, the mailboxes are the parent's."""
        self._lock = threading.Condition()
        self._mailboxes = set()
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._mailboxes:
                    self._lock.wait()
            time.sleep(self.PERIOD_S)
            self._ring_round()

    def _ring_round(self) -> None:
        # A method of its own so that the round's mailboxes leave with its frame: kept in the
        # loop's, the last round's would keep their actors (a stopped graph, say) alive while
        # the thread sleeps.
        with self._lock:
            mailboxes, self._mailboxes = self._mailboxes, set()
        for mailbox in mailboxes:
            mailbox.ring_if_unannounced()


_WATCH = _Watch()
os.register_at_fork(after_in_child=_WATCH.forget)


class CallerRunsActor(pykka.ThreadingActor):
    """A pykka ``ThreadingActor`` whose waiting callers run its queued messages themselves.

    Subclass it instead of ``pykka.ThreadingActor``; nothing else changes for callers
    (``proxy.method(...).get()``, :func:`toolcards.actors.ask`). See the module docstring for
    what a subclass must not rely on.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._serial = threading.Lock()
        """Held while a message runs, by the actor's thread or by a caller."""
        self._context = contextvars.Context()
        """The context every message runs in, whichever thread runs it."""
        self._ready = False
        """Set once ``on_start`` has run; until then only the actor's thread runs messages."""
        super().__init__(*args, **kwargs)

    def _create_actor_inbox(self) -> _Mailbox:  # type: ignore[override]
        # Called by pykka's constructor; kept typed here for the loop and the callers.
        self._mailbox = _Mailbox(self)
        return self._mailbox

    @staticmethod
    def _create_future() -> _Answer:
        return _Answer()

    # -- the actor's thread -----------------------------------------------------------

    def _actor_loop_setup(self) -> None:
        with self._serial:
            super()._actor_loop_setup()
            self._ready = True

    def _actor_loop_running(self) -> None:
        mailbox = self._mailbox
        while not self.actor_stopped.is_set():
            mailbox.wait_not_empty()
            with self._serial:
                envelope = mailbox.take()
                if envelope is None:  # a caller ran it
                    continue
                try:
                    self._context.run(self._run, envelope)
                except BaseException:  # as pykka: anything but an Exception stops every actor
                    logger.debug("%r in %s. Stopping all actors.", sys.exc_info()[1], self)
                    self._stop()
                    pykka.ActorRegistry.stop_all()

    # -- a waiting caller's thread ----------------------------------------------------

    def _run_queued_until(self, answer: _Answer) -> None:
        """Run queued messages in this thread until ``answer`` is set.

        Waits for the actor's lock when a message is running (one wake-up when it is
        released, against two when the actor's thread answers). Returns without running
        anything when the actor has not started or has stopped, and stops at a message a
        caller may not run; the caller then wakes the actor's thread and waits for it.
        """
        self._serial.acquire()
        try:
            mailbox = self._mailbox
            while answer._result is None and self._ready and not self.actor_stopped.is_set():
                envelope = mailbox.take_caller_runnable()
                if envelope is None:
                    return
                try:
                    self._context.run(self._run, envelope)
                except BaseException:
                    # KeyboardInterrupt or SystemExit in this caller's thread: the message's
                    # own waiter is answered with it, and it propagates here. The actor runs on.
                    if envelope.reply_to._result is None:
                        envelope.reply_to.set_exception()
                    raise
        finally:
            self._serial.release()

    # -- either thread ----------------------------------------------------------------

    def _run(self, envelope: Any) -> None:
        """One message, answered: what pykka's loop does for each, minus stopping on a BaseException."""
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None:
                envelope.reply_to.set(response)
        except Exception as exc:
            if envelope.reply_to is not None:
                # The caller's to report (a refusal is the model's to read): one DEBUG line,
                # never pykka's INFO traceback carrying the message (file text, say).
                log_returned(self, exc)
                envelope.reply_to.set_exception()
            else:
                self._handle_failure(*sys.exc_info())
                try:
                    self.on_failure(*sys.exc_info())
                except Exception:
                    self._handle_failure(*sys.exc_info())
