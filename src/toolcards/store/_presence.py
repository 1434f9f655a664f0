"""A team's presence in the store: one roster for every process of the team.

:class:`StorePresence` implements :class:`toolcards.actors._presence.Presence` on
``"<team_id>/#roster"``: one ``members`` row per name (address, process and host, joined,
``seen`` and the writer's ``ttl_s``). Every change is one locked write that first catches up,
so a name check and the join it allows are one step, race-free across processes and hosts.

**Renewal.** Each presence renews all its process's members in one write per ``interval_s``.
A member is live while ``now <= seen + ttl_s`` by the reader's clock, the TTL being the
writer's promise, and while its process runs: a reader on the same machine sees at once that
it ended (a ``kill -9``; :mod:`toolcards.actors._process_liveness`), so a restarted server gets
its members' names back instead of waiting out the TTL. Hosts sharing a PostgreSQL store need
clocks that agree well within the TTL (one ahead by more than ``ttl_s - interval_s`` would
expire the others' members until their next beat puts them back).

**Expiry, announced at least once.** An expired member is left out of
:meth:`StorePresence.present` at once. The next beat of any live process removes it and, in the
same locked write, keeps a ``departures`` row; that process publishes
``MemberLeft(reason="expired")`` and deletes the row (:meth:`StorePresence.announced`). A
departure outliving its noter's TTL is claimed and announced again by the next sweeper: at
least once, rarely twice, with the same ``membership``. Clean leaves use the same rows.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from toolcards.actors._address import ActorAddress
from toolcards.actors._events import LeaveReason, MemberEvent, MemberLeft
from toolcards.actors._presence import (
    PresenceFactory,
    PresentMember,
    member_joined,
    member_left,
    new_membership_id,
    new_process_id,
)
from toolcards.actors._process_liveness import machine_mark, process_gone
from toolcards.store._base import CatchUp, Change, Snapshot, Store, Transaction, apply_rows

__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_TTL_S", "ROSTER_NAMESPACE", "StorePresence", "store_presence"]

logger = logging.getLogger("toolcards.store")

ROSTER_NAMESPACE = "#roster"
"""The suffix of a team's roster namespace: ``"<team_id>/#roster"``."""

DEFAULT_INTERVAL_S = 5.0
"""How often a process renews its members by default."""

DEFAULT_TTL_S = 30.0
"""How long a member outlives its process's last renewal by default: six missed beats."""

_MEMBERS = "members"
_DEPARTURES = "departures"

Row = dict[str, Any]


class StorePresence:
    """The presence of team ``team_id`` in ``store``, for one actor system; see the module docstring.

    Args:
        store: The team's store.
        team_id: The team.
        interval_s: How often the orchestrator renews this presence's members (and sweeps).
        ttl_s: How long after its last renewal a member of this presence counts as live;
            more than ``interval_s`` (several times it, so a late beat is not a departure).
        clock: Wall-clock seconds (``time.time``); tests pass a fake.

    Called from the team orchestrator's thread; a lock makes it safe from others too. Every
    method but :meth:`present` writes before it returns, one write whatever the number of
    members; every method may raise :class:`~toolcards.errors.StoreError`.

    Raises:
        ValueError: ``ttl_s`` is not more than ``interval_s``, or ``interval_s`` is not positive.
    """

    def __init__(
        self,
        store: Store,
        team_id: str,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not interval_s > 0 or not ttl_s > interval_s:
            raise ValueError(
                f"presence of team {team_id}: interval_s={interval_s!r} and ttl_s={ttl_s!r} need "
                "0 < interval_s < ttl_s; give a TTL of several intervals, e.g. 5 and 30."
            )
        self.store = store
        self.team_id = team_id
        self.namespace = f"{team_id}/{ROSTER_NAMESPACE}"
        self.interval_s = interval_s
        self.ttl_s = ttl_s
        self._clock = clock
        self._process = new_process_id()
        self._host = socket.gethostname()
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._version = 0
        self._rows: dict[str, dict[str, Row]] = {}  # the namespace at _version
        self._mine: dict[str, ActorAddress] = {}  # this presence's members, by name
        self._displaced: set[str] = set()  # members of ours whose name a live namesake holds

    @property
    def process(self) -> str:
        """This presence's id, ``<host>:<pid>:<random>``."""
        return self._process

    @property
    def beat_interval_s(self) -> float:
        """:attr:`interval_s`: the orchestrator beats this often."""
        return self.interval_s

    def join(self, address: ActorAddress) -> list[MemberEvent]:
        """Add this process's member ``address``, committed before this returns (see
        :meth:`toolcards.actors._presence.Presence.join`).

        Raises:
            ValueError: a live member of another process holds the name; nothing is written.
            StoreError: the write failed; nothing is written.
        """
        with self._lock:
            now = self._clock()
            with self.store.write(self.namespace, since=self._version) as txn:
                self._absorb(txn.catch_up, txn.version)
                changes, events = self._sweep(now)
                held = self._members().get(address.name)
                if held is not None and held["process"] != self._process and self._live(held, now):
                    raise ValueError(self._held_message(address, held, now))
                row = self._row(address, now)
                changes.append(Change(collection=_MEMBERS, key=address.name, value=row))
                txn.stage(changes)
            self._committed(txn, changes)
            self._mine[address.name] = address
            self._displaced.discard(address.name)
            events.append(member_joined(self._member(row)))
            return events

    def leave(self, name: str, reason: LeaveReason) -> list[MemberEvent]:
        """Remove this process's member ``name``, committed before this returns, keeping its
        departure until :meth:`announced`. Returns its ``MemberLeft`` (nothing if the team's
        roster no longer had it as this process's)."""
        with self._lock:
            now = self._clock()
            try:
                with self.store.write(self.namespace, since=self._version) as txn:
                    self._absorb(txn.catch_up, txn.version)
                    changes, events = self._sweep(now)  # while ``name`` is ours, so not as expired
                    held = self._members().get(name)
                    if held is not None and held["process"] == self._process:
                        changes.extend(self._departure(held, reason, now))
                        events.append(member_left(self._member(held), reason))
                    if changes:
                        txn.stage(changes)
            finally:  # renewed no more, even if the write failed: then it expires
                self._mine.pop(name, None)
                self._displaced.discard(name)
            self._committed(txn, changes)
            return events

    def beat(self) -> list[MemberEvent]:
        """Renew this process's members and sweep, in one write (none when this process has no
        members and nothing is due); see :meth:`toolcards.actors._presence.Presence.beat`.

        A member of ours whose name a live member of another process took meanwhile (ours had
        expired: this process was frozen or cut off for longer than the TTL) stays out of the
        team's roster, with a warning, until the name is free again.
        """
        with self._lock:
            now = self._clock()
            if not self._mine:
                catch_up = self.store.read(self.namespace, since=self._version)
                self._absorb(catch_up, catch_up.version)
                if not self._sweep(now)[0]:
                    return []
            with self.store.write(self.namespace, since=self._version) as txn:
                self._absorb(txn.catch_up, txn.version)
                changes, events = self._sweep(now)
                expired = {change.key for change in changes if change.collection == _MEMBERS}
                members = self._members()
                back: list[Row] = []
                for name, address in self._mine.items():
                    held = members.get(name)
                    if held is not None and held["process"] == self._process:
                        row = {**held, "seen": now, "ttl_s": self.ttl_s}
                    elif held is not None and name not in expired:
                        self._warn_displaced(address, held, now)
                        continue
                    else:
                        row = back_row = self._row(address, now)
                        back.append(back_row)
                    self._displaced.discard(name)
                    changes.append(Change(collection=_MEMBERS, key=name, value=row))
                if changes:
                    txn.stage(changes)
            self._committed(txn, changes)
            events.extend(member_joined(self._member(row)) for row in back)
            return events

    def present(self) -> list[PresentMember]:
        """Every live member of the team, every process's, in the order they joined. Reads
        what the other processes committed first (a cheap check when nothing was)."""
        with self._lock:
            catch_up = self.store.read(self.namespace, since=self._version)
            self._absorb(catch_up, catch_up.version)
            now = self._clock()
            rows = sorted(
                (row for row in self._members().values() if self._live(row, now)),
                key=lambda row: (row["joined"], row["name"]),
            )
            return [self._member(row) for row in rows]

    def announced(self, departures: Sequence[MemberLeft]) -> None:
        """Delete the kept departures of ``departures``, now in the team's log (one write)."""
        keys = {event.membership for event in departures}
        with self._lock:
            if not keys & self._rows.get(_DEPARTURES, {}).keys():
                return  # another process announced and deleted them meanwhile
            with self.store.write(self.namespace, since=self._version) as txn:
                self._absorb(txn.catch_up, txn.version)
                kept = self._rows.get(_DEPARTURES, {})
                changes = [Change(collection=_DEPARTURES, key=key, value=None) for key in sorted(keys) if key in kept]
                if changes:
                    txn.stage(changes)
            self._committed(txn, changes)

    # -- internals ---------------------------------------------------------------------------

    def _members(self) -> dict[str, Row]:
        return self._rows.get(_MEMBERS, {})

    def _absorb(self, catch_up: CatchUp | None, version: int) -> None:
        if isinstance(catch_up, Snapshot):
            self._rows = {collection: dict(rows) for collection, rows in catch_up.rows.items()}
        elif catch_up is not None:
            apply_rows(self._rows, catch_up.changes)
        self._version = version

    def _committed(self, txn: Transaction, changes: list[Change]) -> None:
        # Mirrored only after the block committed: a failed commit raises out of the ``with``,
        # and the cache stays at the version before the write.
        if txn.committed is not None:
            apply_rows(self._rows, changes)
            self._version = txn.committed

    def _sweep(self, now: float) -> tuple[list[Change], list[MemberEvent]]:
        """Remove expired members (but this presence's own, which it renews) and claim the
        departures nobody announced in time."""
        changes: list[Change] = []
        events: list[MemberEvent] = []
        for name, row in self._members().items():
            ours = row["process"] == self._process and name in self._mine
            if not ours and not self._live(row, now):
                changes.extend(self._departure(row, "expired", now))
                events.append(member_left(self._member(row), "expired"))
        for key, departure in self._rows.get(_DEPARTURES, {}).items():
            if now > departure["noted"] + departure["noted_ttl_s"]:
                claimed = {**departure, "noted": now, "noted_by": self._process, "noted_ttl_s": self.ttl_s}
                changes.append(Change(collection=_DEPARTURES, key=key, value=claimed))
                events.append(member_left(self._member(departure), departure["reason"]))
        return changes, events

    def _departure(self, row: Row, reason: LeaveReason, now: float) -> list[Change]:
        departure = {**row, "reason": reason, "noted": now, "noted_by": self._process, "noted_ttl_s": self.ttl_s}
        return [
            Change(collection=_MEMBERS, key=row["name"], value=None),
            Change(collection=_DEPARTURES, key=row["membership"], value=departure),
        ]

    def _row(self, address: ActorAddress, now: float) -> Row:
        return {
            "name": address.name,
            "role": address.role,
            "agent_id": address.agent_id,
            "membership": new_membership_id(),
            "process": self._process,
            "host": self._host,
            "pid": self._pid,
            "machine": machine_mark(),
            "joined": now,
            "seen": now,
            "ttl_s": self.ttl_s,
        }

    def _member(self, row: Row) -> PresentMember:
        return PresentMember(
            address=ActorAddress(name=row["name"], role=row["role"], team_id=self.team_id, agent_id=row["agent_id"]),
            membership=row["membership"],
            process=row["process"],
            host=row["host"],
            pid=row["pid"],
            joined=datetime.fromtimestamp(row["joined"], UTC),
            seen=datetime.fromtimestamp(row["seen"], UTC),
        )

    def _held_message(self, address: ActorAddress, held: Row, now: float) -> str:
        return (
            f"{address.handle} is already a member of team {self.team_id}, in process {held['pid']} on host "
            f"{held['host']} (renewed {max(0.0, now - held['seen']):.0f} s ago)."
        )

    def _warn_displaced(self, address: ActorAddress, held: Row, now: float) -> None:
        if address.name in self._displaced:
            return
        self._displaced.add(address.name)
        logger.warning(
            "team %s: %s expired from the team's roster (this process did not renew it for %g s) and "
            "the name was taken: %s It stays out of the team's roster until the name is free.",
            self.team_id,
            address.handle,
            self.ttl_s,
            self._held_message(address, held, now),
        )

    def _live(self, row: Row, now: float) -> bool:
        seen: float = row["seen"]
        ttl: float = row["ttl_s"]
        # A row with this process's pid may be another presence of this process (two actor
        # systems of one team): process_gone never judges it.
        return now <= seen + ttl and not process_gone(row.get("machine"), row["pid"])


def store_presence(
    store: Store | None = None, *, interval_s: float = DEFAULT_INTERVAL_S, ttl_s: float = DEFAULT_TTL_S
) -> PresenceFactory:
    """A presence factory for ``ActorSystem(presence=...)``: each team's roster in ``store``.

    ``None`` means this process's default store, looked up when a team starts.
    ``interval_s`` and ``ttl_s``: see :class:`StorePresence`.

    Added in 0.2.
    """

    def presence(team_id: str) -> StorePresence:
        from toolcards.store._default import default_store

        return StorePresence(
            store if store is not None else default_store(), team_id, interval_s=interval_s, ttl_s=ttl_s
        )

    return presence
