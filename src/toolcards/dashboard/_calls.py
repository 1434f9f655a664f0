"""``CallLog``: the team's last tool calls, every process's, read from the team's event log."""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle

__all__ = ["CALL_LOG_SIZE", "CallLog"]

CALL_LOG_SIZE = 1_000
"""The most recent calls kept and shown."""
_FIRST_ENTRIES = 400
"""Entries of the log read back when the dashboard starts (an entry may hold a batch of calls)."""


class CallLog:
    """The last :data:`CALL_LOG_SIZE` tool-call records of ``team``, oldest first. Thread-safe.

    :meth:`refresh` reads what the log gained since the last look: with the team's log in
    the store (``ActorSystem(journal=store_journals())``), the calls of every process of the
    team; an unchanged log costs the store's cheap version check.
    """

    def __init__(self, team: TeamHandle, size: int = CALL_LOG_SIZE) -> None:
        self._team = team
        self._lock = threading.Lock()
        self._records: deque[dict[str, Any]] = deque(maxlen=size)
        self._seen: int | None = None
        self._last_call = 0

    @property
    def version(self) -> int:
        """The log number of the last call read: changes when calls arrive, not other events."""
        return self._last_call

    def refresh(self) -> int:
        """Read the new entries of the team's log; returns :attr:`version`. Blocks on an ask."""
        with self._lock:
            if self._seen is None:
                self._seen = max(0, self._team.head() - _FIRST_ENTRIES)
            for seq, event in self._team.events(self._seen):
                self._seen = max(self._seen, seq)
                if getattr(event, "kind", None) == "tool_execution":
                    self._records.append(_row(seq, event))
                    self._last_call = seq
            return self._last_call

    def rows(self) -> list[dict[str, Any]]:
        """The kept calls, newest first, as JSON data."""
        with self._lock:
            return list(reversed(self._records))


def _row(seq: int, record: Any) -> dict[str, Any]:
    at = getattr(record, "at", None)
    return {
        "seq": seq,
        "at": at.isoformat() if at is not None else None,
        "agent": getattr(record, "agent", None),
        "tool": str(getattr(record, "tool", "")),
        "channel": str(getattr(record, "channel", "")),
        "success": bool(getattr(record, "success", False)),
        "error": getattr(record, "error", None),
        "latency_ms": round(float(getattr(record, "latency_ms", 0.0)), 2),
        "call_id": getattr(record, "call_id", None),
    }
