"""A call's progress, for callers that asked to hear it (MCP's ``notifications/progress``).

A long handler (a shell command, a grep over a large tree, a graph batch) calls
:func:`report_progress` as it goes. Whoever runs the call and wants to hear it (the MCP
server, when the client sent a ``progressToken``) makes the call's reporter current with
:func:`reporting`; without one, :func:`report_progress` costs one context-variable read.

A :class:`ProgressReporter` passes at most one report per ``min_interval_s`` (a few a
second) and only reports that move forward, so a handler may report on every step. Work
handed to another thread (a sandbox worker) does not inherit the reporter: pass
:func:`current_progress` along.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["ProgressReporter", "ProgressSink", "current_progress", "report_progress", "reporting"]

ProgressSink = Callable[[float, "float | None", "str | None"], None]
"""Sends one report: ``(progress, total, message)``. Called from any thread; must not block."""

DEFAULT_INTERVAL_S = 0.25
"""At most four reports a second."""


class ProgressReporter:
    """Passes one call's reports to ``sink``: increasing, at most one per ``min_interval_s``.

    Thread-safe. :meth:`close` it when the call has ended: a report that comes later (from a
    worker still winding down) is dropped, so none follows the call's answer.
    """

    def __init__(
        self,
        sink: ProgressSink,
        *,
        min_interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink
        self._interval = min_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_progress: float | None = None
        self._last_sent = float("-inf")
        self._closed = False

    def report(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send ``progress`` (of ``total``, when known) unless too soon or not forward.

        Returns whether it was sent.
        """
        with self._lock:
            now = self._clock()
            if self._closed or now - self._last_sent < self._interval:
                return False
            if self._last_progress is not None and progress <= self._last_progress:
                return False
            self._last_progress, self._last_sent = progress, now
        self._sink(progress, total, message)
        return True

    def close(self) -> None:
        """The call ended: send nothing more."""
        with self._lock:
            self._closed = True


_current: ContextVar[ProgressReporter | None] = ContextVar("toolcards_progress", default=None)


def current_progress() -> ProgressReporter | None:
    """The reporter of the call running in this context, or ``None`` when nobody listens."""
    return _current.get()


@contextlib.contextmanager
def reporting(reporter: ProgressReporter | None) -> Iterator[ProgressReporter | None]:
    """Run the ``with`` block with ``reporter`` as the call's reporter (its owner closes it)."""
    reset = _current.set(reporter)
    try:
        yield reporter
    finally:
        _current.reset(reset)


def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Report the current call's progress, when someone listens (see the module docstring)."""
    reporter = _current.get()
    if reporter is not None:
        reporter.report(progress, total, message)
