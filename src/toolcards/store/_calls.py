"""The calls a namespace's writes answered, kept with the writes: what makes a retry exactly-once.

A store-backed actor that applies a call carrying a :class:`~toolcards.core._idempotency.CallKey`
stages one more row in the same transaction as the change: collection :data:`CALLS`, key the
call's key, value ``{"d": digest, "a": answer, "v": version, "t": time}``. The row commits
with the change or not at all, and reaches every process's cache with the catch-ups, like any
row. Before applying a call, the actor — holding the namespace's write lock, caught up —
asks :meth:`CallLog.replay`: a key found means the call was applied already (perhaps by
another process, perhaps before a crash), and its recorded answer is returned instead of
writing again.

Records are kept for the last :data:`CALL_RETENTION` keyed calls of a namespace and at most
:data:`CALL_MAX_AGE_S` seconds; older ones are deleted by the writes that follow, a few at a
time, so a retry arriving later than that is applied as a new call.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from typing import Final

from toolcards.core._idempotency import CallKey
from toolcards.errors import ToolFailed
from toolcards.store._base import Change, JSONValue

__all__ = ["CALLS", "CALL_MAX_AGE_S", "CALL_RETENTION", "CallLog"]

CALLS: Final = "#calls"
"""The collection holding a namespace's call records (no actor names a collection with ``#``)."""
CALL_RETENTION: Final = 8192
"""Keyed calls remembered per namespace."""
CALL_MAX_AGE_S: Final = 24 * 3600.0
"""Seconds a call is remembered, at most."""
_PURGE_EVERY: Final = 64
"""Expired records are looked for once per this many recorded calls."""


class CallLog:
    """The call records of one namespace, mirrored from the store like the actor's own rows.

    Not thread-safe: it belongs to the actor that owns the namespace's cache.
    """

    def __init__(self) -> None:
        self._records: dict[str, tuple[str, JSONValue, int, float]] = {}
        """key → (digest, answer, version, time)."""
        self._since_purge = 0

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        """Whether a call of key ``key`` (a :attr:`CallKey.key`) is recorded, whatever its arguments."""
        return key in self._records

    def absorb(self, change: Change) -> None:
        """Mirror one committed row of :data:`CALLS` (a delete forgets the call)."""
        value = change.value
        if value is None:
            self._records.pop(change.key, None)
        elif isinstance(value, dict):
            self._records[change.key] = (
                str(value.get("d", "")),
                value.get("a"),
                int(value.get("v", 0)),
                float(value.get("t", 0.0)),
            )

    def clear(self) -> None:
        """Forget every record (before a whole snapshot is absorbed)."""
        self._records.clear()

    def replay(self, call: CallKey | None, tool: str) -> JSONValue | None:
        """The answer recorded for ``call``, or ``None`` when it was never applied.

        Raises:
            ToolFailed: the key was recorded with other arguments: the client sent two
                different calls under one key; nothing is written for this one.
        """
        if call is None:
            return None
        found = self._records.get(call.key)
        if found is None:
            return None
        digest, answer, _, _ = found
        if digest != call.digest:
            raise ToolFailed(
                f"This {tool} call reuses the idempotency key of an earlier call with other arguments, so it "
                "was not applied. Send a new call with a new key (a repeat must carry the same arguments)."
            )
        return answer

    def record(self, call: CallKey | None, answer: JSONValue | Callable[[], JSONValue], version: int) -> list[Change]:
        """The rows to stage with a change applied for ``call``: its record and any purge.

        ``answer`` is the call's answer, or a function giving it: called only for a call with a
        key, so a large batch's report is not encoded when nothing keeps it. ``version`` is the
        version the change commits as. Nothing for a call without a key. Call
        :meth:`committed` with the same rows once they are committed.
        """
        if call is None:
            return []
        now = time.time()
        value = {"d": call.digest, "a": answer() if callable(answer) else answer, "v": version, "t": now}
        rows = [Change(collection=CALLS, key=call.key, value=value)]
        self._since_purge += 1
        if len(self._records) >= CALL_RETENTION or self._since_purge >= _PURGE_EVERY:
            self._since_purge = 0
            rows.extend(Change(collection=CALLS, key=key, value=None) for key in self._expired(now))
        return rows

    def purge(self) -> list[Change]:
        """The deletes of every record past the age or count limit (with room made for one more
        record), for a writer that loads its namespace now and then instead of mirroring it."""
        return [Change(collection=CALLS, key=key, value=None) for key in self._expired(time.time())]

    def committed(self, rows: Iterable[Change]) -> None:
        """Mirror rows :meth:`record` gave, now committed."""
        for row in rows:
            self.absorb(row)

    def _expired(self, now: float) -> list[str]:
        """Keys past the age limit, and the oldest beyond the count limit (one record made room for)."""
        records = self._records
        old = [key for key, (_, _, _, at) in records.items() if now - at > CALL_MAX_AGE_S]
        excess = len(records) - len(old) - (CALL_RETENTION - 1)
        if excess > 0:
            expired = set(old)
            kept = ((version, key) for key, (_, _, version, _) in records.items() if key not in expired)
            old += [key for _, key in heapq.nsmallest(excess, kept)]
        return old
