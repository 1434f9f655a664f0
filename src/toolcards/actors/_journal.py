"""A team's event log: where the orchestrator appends events and numbers them.

The :class:`~toolcards.actors._orchestrator.Orchestrator` appends every published event to
its team's :class:`EventJournal` and hands subscribers the sequence number the journal gave
it. :class:`MemoryJournal` (the default) keeps the last events of one process.
``toolcards.store.StoreJournal`` keeps them in the team's store, so every process of a team
appends to one log with one gapless sequence and sees the events of the others (the
runtime sits below the store, so the store-backed journal is passed in through
``ActorSystem(journal=...)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["EVENT_LOG_SIZE", "EventJournal", "JournalFactory", "MemoryJournal"]

EVENT_LOG_SIZE = 10_000
"""Events a journal keeps; older ones are forgotten."""


@runtime_checkable
class EventJournal(Protocol):
    """An append-only, numbered log of one team's events. Called from the orchestrator's thread."""

    @property
    def shared(self) -> bool:
        """Whether other processes append to this log too (the orchestrator then watches it)."""

    def head(self) -> int:
        """The sequence number of the last event appended (0 for none)."""

    def append(self, event: Any) -> int:
        """Append ``event``; return its sequence number (1, 2, ... with no gap, team-wide)."""

    def append_all(self, events: Sequence[Any]) -> int:
        """Append ``events`` as one entry of the log, in one write; they share the number returned.

        For frequent events (one per tool call) that need not be numbered one by one.
        Added in 0.2.
        """

    def since(self, seq: int) -> list[tuple[int, Any]]:
        """Events numbered above ``seq`` that the log still keeps, oldest first."""


JournalFactory = Callable[[str], EventJournal]
"""Makes the journal of the team with the given id."""


class MemoryJournal:
    """The last :data:`EVENT_LOG_SIZE` events of one process, numbered from 1."""

    def __init__(self, size: int = EVENT_LOG_SIZE) -> None:
        self._events: deque[tuple[int, Any]] = deque(maxlen=size)
        self._seq = 0

    @property
    def shared(self) -> bool:
        """Always ``False``: no other process sees this log."""
        return False

    def head(self) -> int:
        """The number of the last event appended."""
        return self._seq

    def append(self, event: Any) -> int:
        """Number ``event`` and keep it."""
        self._seq += 1
        self._events.append((self._seq, event))
        return self._seq

    def append_all(self, events: Sequence[Any]) -> int:
        """Number ``events`` as one entry (they share the number) and keep them."""
        self._seq += 1
        self._events.extend((self._seq, event) for event in events)
        return self._seq

    def since(self, seq: int) -> list[tuple[int, Any]]:
        """Kept events numbered above ``seq``."""
        return [(number, event) for number, event in self._events if number > seq]
