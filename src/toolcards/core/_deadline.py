"""A call's deadline, so work abandoned by a timeout stops instead of spinning on.

The pipeline runs a handler with a timeout in a worker thread and stops waiting for it
when the time is up; Python cannot kill that thread. So the pipeline also sets the call's
deadline here (a context variable of the handler's thread), and any loop whose length
depends on its input — walking a tree, scanning lines, expanding a pattern — calls
:func:`check_deadline` as it goes: past the deadline it raises
:class:`~toolcards.errors.ToolTimeout`, which ends the abandoned work.

The same check stops a call its caller cancelled (:mod:`toolcards.core._cancel`): a loop that
checks its deadline also stops when nobody waits for its answer any more.

Work handed to another thread (an actor ask) does not inherit the deadline; pass
:func:`remaining` along where such work can run long.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

from toolcards.core._cancel import check_cancelled
from toolcards.errors import ToolTimeout

__all__ = ["check_deadline", "deadline_after", "remaining"]

_deadline: ContextVar[float | None] = ContextVar("toolcards_deadline", default=None)


@contextlib.contextmanager
def deadline_after(seconds: float | None) -> Iterator[None]:
    """Run the ``with`` block with a deadline ``seconds`` from now (``None``: none).

    A deadline already set that comes sooner is kept.
    """
    if seconds is None:
        yield
        return
    new = time.monotonic() + seconds
    current = _deadline.get()
    token = _deadline.set(new if current is None else min(current, new))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the current call's deadline (``None`` when there is none)."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def check_deadline() -> None:
    """Raise :class:`~toolcards.errors.ToolTimeout` if the current call's deadline has passed,
    :class:`~toolcards.errors.CallCancelled` if its caller cancelled it.

    Costs two context-variable reads and a clock read; call it every few hundred
    iterations of a loop rather than on each.

    Changed in 0.3: also raises ``CallCancelled``.
    """
    check_cancelled()
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ToolTimeout("The call ran out of time and its work was stopped. Retry with a smaller request.")
