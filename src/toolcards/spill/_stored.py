"""Outputs over a tool's budget, kept whole in the team's store: :class:`StoredSpills`.

For a team whose process has no workspace card; the spilled-output card offers it as the
:data:`~toolcards.core._services.SPILL_TO_STORE` service, and ``read_spilled_output`` pages it
by character in any process of the team. A team keeps at most :data:`SLOTS` spills: the index
namespace ``"<team>/#SpilledOutput"`` holds one row per slot in use, and each slot is a
namespace of its own (``"<team>/#SpilledOutput/<slot>"``, the text in rows of
:data:`CHUNK_CHARS`), so a page loads one slot and the namespaces never grow in number.

Saving chooses a slot under the index's write lock (after deleting spills past ``max_hours``,
then the oldest until the new one fits ``max_mb`` and a slot is free), so concurrent processes
never choose the same one. A spill id is ``"<slot>-<8 hex digits>"``, so a reader of a reused
or expired slot is told the spill is no longer kept. Everything blocks on the store; a
:class:`~toolcards.errors.StoreError` is raised as the store raised it.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
import weakref
from typing import Any

from toolcards.errors import RetriableError, ToolFailed
from toolcards.store._base import Change, Delta, Snapshot, Store, apply_rows

__all__ = [
    "CHUNK_CHARS",
    "DEFAULT_MAX_HOURS",
    "DEFAULT_MAX_MB",
    "SLOTS",
    "StoredSpills",
    "stored_spills",
]

SLOTS = 64
"""Spilled outputs a team keeps in its store at most."""

CHUNK_CHARS = 256 * 1024
"""Characters of a spilled output per stored row."""

DEFAULT_MAX_MB = 64
"""Text kept at most by default, in MB of characters (2**20 characters each)."""

DEFAULT_MAX_HOURS = 24.0
"""Hours a spilled output is kept at most by default."""

_MIB = 1024 * 1024
_SPILL_ID = re.compile(r"(\d{1,2})-[0-9a-f]{8}")


class StoredSpills:
    """The spilled outputs of one team in one store: a :class:`~toolcards.core._spill.SpillSink`
    whose outputs ``read_spilled_output`` reads back.

    Get it with :func:`stored_spills`. Thread-safe.
    """

    reader = "read_spilled_output"

    def __init__(self, store: Store, team_id: str) -> None:
        self._store = store
        self._index = f"{team_id}/#SpilledOutput"
        self._lock = threading.Lock()
        self._max_mb = DEFAULT_MAX_MB
        self._max_hours = DEFAULT_MAX_HOURS
        self._configured = False
        self._cached: tuple[str, int, dict[str, dict[str, Any]]] | None = None

    @property
    def max_hours(self) -> float:
        """Hours a spilled output is kept at most."""
        return self._max_hours

    def keep(self, max_mb: int, max_hours: float) -> None:
        """Apply a card's retention: the smallest of the cards' settings applies."""
        with self._lock:
            if self._configured:
                max_mb, max_hours = min(max_mb, self._max_mb), min(max_hours, self._max_hours)
            self._max_mb, self._max_hours, self._configured = max_mb, max_hours, True

    def __call__(self, text: str, *, tool: str, call_id: str, agent: str | None, from_line: int, from_char: int) -> str:
        """Keep ``text``; return the sentences saying how to read it on from character ``from_char``.

        Raises:
            ToolFailed: it is longer than the team keeps.
            StoreError: the store failed (nothing is kept, or the slot reads as gone).
        """
        spill_id = self.save(text, tool=tool)
        return (
            f"It is saved whole as spilled output {spill_id!r}, kept for up to {_hours(self._max_hours)}. "
            f"Read on with read_spilled_output(spill_id={spill_id!r}, offset={from_char})."
        )

    def save(self, text: str, *, tool: str) -> str:
        """Keep ``text``, an output of ``tool``; return its spill id.

        Raises:
            ToolFailed: it is longer than ``max_mb`` allows.
            StoreError: the store failed.
        """
        chars = len(text)
        max_chars = self._max_mb * _MIB
        if chars > max_chars:
            raise ToolFailed(
                f"it has {chars:,} characters, more than the {max_chars:,} the team keeps of spilled outputs"
            )
        now = time.time()
        with self._store.write(self._index, since=0) as txn:
            slots = _slots(txn.catch_up)
            slot, freed = _choose(slots, chars, max_chars, now - self._max_hours * 3600)
            spill_id = f"{slot}-{secrets.token_hex(4)}"
            row = {"id": spill_id, "tool": tool, "chars": chars, "at": now}
            txn.stage(
                [
                    *(Change(collection="slots", key=str(n), value=None) for n in freed),
                    Change(collection="slots", key=str(slot), value=row),
                ]
            )
        for n in sorted({*freed, slot}):
            self._store.drop(self._slot(n))
        chunks = (
            Change(
                collection="chunks",
                key=f"{spill_id}/{start // CHUNK_CHARS:05d}",
                value=text[start : start + CHUNK_CHARS],
            )
            for start in range(0, chars, CHUNK_CHARS)
        )
        self._store.apply(self._slot(slot), [Change(collection="meta", key="spill", value=row), *chunks])
        return spill_id

    def page(self, spill_id: str, offset: int, limit: int) -> tuple[str, int]:
        """Characters ``offset`` to ``offset + limit`` of the spilled output ``spill_id``, and
        its length.

        Raises:
            RetriableError: the id is not one, the output is no longer kept, or ``offset`` is
                past its end.
            StoreError: the store failed.
        """
        found = _SPILL_ID.fullmatch(spill_id)
        if found is None or int(found[1]) >= SLOTS:
            raise RetriableError(
                f"{spill_id!r} is not a spill id. Copy it from the answer that was cut, e.g. '3-9f2c41d0'."
            )
        rows = self._rows(self._slot(int(found[1])))
        meta = rows.get("meta", {}).get("spill")
        if (
            not isinstance(meta, dict)
            or meta.get("id") != spill_id
            or meta["at"] < time.time() - self._max_hours * 3600
        ):
            raise RetriableError(
                f"Spilled output {spill_id!r} is no longer kept: spilled outputs are kept for up to "
                f"{_hours(self._max_hours)}, and the oldest are deleted first when newer ones need the room. "
                "Make the call that produced it again."
            )
        chars: int = meta["chars"]
        if offset >= chars and chars:
            raise RetriableError(
                f"offset {offset:,} is past the end: spilled output {spill_id!r} has {chars:,} characters."
            )
        chunks = rows.get("chunks", {})
        parts: list[str] = []
        first, end = offset // CHUNK_CHARS, min(offset + limit, chars)
        for index in range(first, (end - 1) // CHUNK_CHARS + 1):
            part = chunks.get(f"{spill_id}/{index:05d}")
            if not isinstance(part, str):
                raise RetriableError(
                    f"Spilled output {spill_id!r} is being replaced. Make the call that produced it again."
                )
            parts.append(part)
        joined = "".join(parts)
        start = offset - first * CHUNK_CHARS
        return joined[start : start + (end - offset)], chars

    def _rows(self, namespace: str) -> dict[str, dict[str, Any]]:
        """The rows of a slot: loaded once, then checked for changes cheaply (pages of one
        output are read one after another)."""
        with self._lock:
            cached = self._cached
        if cached is not None and cached[0] == namespace:
            change = self._store.read(namespace, since=cached[1])
            if isinstance(change, Delta) and change.empty:
                return cached[2]
        snapshot = self._store.load(namespace)
        with self._lock:
            self._cached = (namespace, snapshot.version, snapshot.rows)
        return snapshot.rows

    def _slot(self, slot: int) -> str:
        return f"{self._index}/{slot}"


def _slots(catch_up: Snapshot | Delta | None) -> dict[int, dict[str, Any]]:
    """The index's slots in use: slot → its row."""
    rows: dict[str, dict[str, Any]] = {}
    if isinstance(catch_up, Snapshot):
        rows = catch_up.rows
    elif catch_up is not None:
        apply_rows(rows, catch_up.changes)
    return {int(key): value for key, value in rows.get("slots", {}).items() if isinstance(value, dict)}


def _choose(slots: dict[int, dict[str, Any]], chars: int, max_chars: int, oldest: float) -> tuple[int, list[int]]:
    """A free slot for ``chars`` more characters, and the slots freed to make room: those
    written before ``oldest``, then the oldest until the new output fits ``max_chars`` and a
    slot is free."""
    live = {n: row for n, row in slots.items() if row.get("at", 0) >= oldest}
    freed = sorted(slots.keys() - live.keys())
    total = sum(row.get("chars", 0) for row in live.values())
    for n in sorted(live, key=lambda n: (live[n].get("at", 0), n)):
        if total + chars <= max_chars and len(live) < SLOTS:
            break
        total -= live.pop(n).get("chars", 0)
        freed.append(n)
    return min(n for n in range(SLOTS) if n not in live), freed


_registry: weakref.WeakKeyDictionary[Store, dict[str, StoredSpills]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def stored_spills(store: Store, team_id: str) -> StoredSpills:
    """The :class:`StoredSpills` of ``team_id`` in ``store``, made on first use; one per team
    and store in a process."""
    with _registry_lock:
        teams = _registry.setdefault(store, {})
        spills = teams.get(team_id)
        if spills is None:
            spills = teams[team_id] = StoredSpills(store, team_id)
        return spills


def _hours(hours: float) -> str:
    return f"{hours:g} hour{'' if hours == 1 else 's'}"
