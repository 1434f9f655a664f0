"""Cancelling a call: its caller gave up, so its work stops and nothing it had not done yet is done.

A caller cancels a call by cancelling the task awaiting it (an MCP client's
``notifications/cancelled`` or ``tasks/cancel``, an agent run cancelled). A sync handler runs
in a worker thread that Python cannot stop, so the async pipeline
(:meth:`~toolcards.core._tool.Tool.call`) gives every call a :class:`CancelToken`, current in
the handler's thread, and cancels it when the awaiting task is cancelled. Then:

* :func:`check_cancelled` (and :func:`~toolcards.core._deadline.check_deadline`, which loops
  already call) raises :class:`~toolcards.errors.CallCancelled` in the handler's thread, so
  long loops stop where they check;
* the pipeline checks it between its steps (after approval, after waiting for a concurrency
  slot), so a call cancelled while it waited never runs its handler;
* callbacks registered with :meth:`CancelToken.on_cancel` run at once, in the thread that
  cancelled: the sandbox kills a running command's process group, an approval stops waiting
  for its answer.

Work handed to another thread (an actor ask, a sandbox worker) does not inherit the token:
pass :func:`current_cancel` along, as :func:`~toolcards.core._deadline.remaining` is.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from toolcards.errors import CallCancelled

__all__ = ["CancelToken", "cancelling", "check_cancelled", "current_cancel"]

logger = logging.getLogger("toolcards.tool")

CANCELLED_MESSAGE = "The call was cancelled by its caller; its work was stopped."


class CancelToken:
    """One call's cancellation: set once, seen by every thread working for the call. Thread-safe."""

    __slots__ = ("_callbacks", "_cancelled", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled."""
        return self._cancelled

    def cancel(self) -> None:
        """Cancel the call: run every registered callback once, in this thread. Idempotent.

        A callback that raises is logged; the others still run.
        """
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                logger.exception("a cancellation callback failed")

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the call is cancelled (at once if it already is).

        Returns a function that unregisters it (call it when the work it stops has ended).
        The callback runs in the cancelling thread (often the event loop's): it must not block.
        """
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def check(self) -> None:
        """Raise :class:`~toolcards.errors.CallCancelled` if the call was cancelled."""
        if self._cancelled:
            raise CallCancelled(CANCELLED_MESSAGE)

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)


_current: ContextVar[CancelToken | None] = ContextVar("toolcards_cancel", default=None)


def current_cancel() -> CancelToken | None:
    """The token of the call running in this context, or ``None`` outside the async pipeline."""
    return _current.get()


@contextlib.contextmanager
def cancelling(token: CancelToken | None) -> Iterator[CancelToken | None]:
    """Run the ``with`` block as part of the call ``token`` cancels (``None``: none)."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def check_cancelled() -> None:
    """Raise :class:`~toolcards.errors.CallCancelled` if the current call was cancelled.

    One context-variable read when nothing was cancelled.
    """
    token = _current.get()
    if token is not None and token._cancelled:
        raise CallCancelled(CANCELLED_MESSAGE)
