"""A team's presence: who is in the team right now, in every process that serves it.

The :class:`~toolcards.actors._orchestrator.Orchestrator` keeps the roster of its own process
(members and the actors hosting them, used for refs) and reports every join and leave to its
team's :class:`Presence`, which answers for the whole team: :meth:`Presence.present` lists
every process's members. :class:`MemoryPresence` (the default) knows this process only.
``toolcards.store.StorePresence`` keeps one row per member in the team's store, renewed by its
process every few seconds, so every process of the team (and every host, on PostgreSQL) sees
one roster; the runtime sits below the store, so it is passed in through
``ActorSystem(presence=...)``, like the event journal.

**Live.** A member is *live* while its process renews it: a row whose last renewal is older
than its process's time to live (the TTL) is a member of a process that stopped (killed,
frozen, cut off from the store); it is left out of :meth:`Presence.present` at once and
removed, with a :class:`~toolcards.actors._events.MemberLeft` ``reason="expired"``, by the
first live process that sweeps. Names are unique among live members team-wide: joining with
a name a live member of another process holds raises ``ValueError``; a name held by an
expired member is taken over.
"""

from __future__ import annotations

import os
import secrets
import socket
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from toolcards.actors._address import ActorAddress
from toolcards.actors._events import LeaveReason, MemberEvent, MemberJoined, MemberLeft

__all__ = [
    "MemoryPresence",
    "Presence",
    "PresenceFactory",
    "PresentMember",
    "member_joined",
    "member_left",
    "new_membership_id",
    "new_process_id",
]


class PresentMember(BaseModel):
    """One member of the team as the team's presence knows it, whichever process it is in."""

    model_config = ConfigDict(frozen=True)

    address: ActorAddress
    """Name, role and team."""
    membership: str
    """This stay's id (see :attr:`~toolcards.actors._events.MemberEvent.membership`)."""
    process: str
    """The id of the presence it joined through: ``<host>:<pid>:<random>``."""
    host: str
    """The host its process runs on."""
    pid: int
    """Its process id on :attr:`host`."""
    joined: datetime
    """When it joined (UTC)."""
    seen: datetime
    """When its process last renewed it (UTC); for this process's own members in a
    :class:`MemoryPresence`, now."""

    @property
    def name(self) -> str:
        """The member's name, ``"Alice"``."""
        return self.address.name

    @property
    def role(self) -> str:
        """The member's role."""
        return self.address.role

    @property
    def handle(self) -> str:
        """How others refer to it: ``"@Alice"``."""
        return self.address.handle


@runtime_checkable
class Presence(Protocol):
    """Who is in one team, across the processes sharing it; one per team per actor system.

    Called only from the team orchestrator's thread, one call at a time. Every method may
    block on the store behind it (a shared presence writes before it returns) and may raise
    what that store raises; the orchestrator logs such failures and carries on with its own
    roster. Events returned are for the orchestrator to publish to the team's log, after
    which it calls :meth:`announced` with the departures among them.
    """

    @property
    def process(self) -> str:
        """This presence's id, which members it joins carry (:attr:`PresentMember.process`)."""

    @property
    def beat_interval_s(self) -> float | None:
        """How often the orchestrator calls :meth:`beat`; ``None``: never (nothing to renew)."""

    def join(self, address: ActorAddress) -> list[MemberEvent]:
        """Add ``address`` as a member of this process; it is present when this returns.

        Returns the events to publish: a :class:`~toolcards.actors._events.MemberJoined`,
        after a ``MemberLeft(reason="expired")`` for an expired namesake it replaced.

        Raises:
            ValueError: a live member of another process holds the name (the message says
                which process and host).
        """

    def leave(self, name: str, reason: LeaveReason) -> list[MemberEvent]:
        """Remove this process's member ``name``; gone from :meth:`present` when this returns.

        Returns its :class:`~toolcards.actors._events.MemberLeft`, or nothing if it was not
        present (unknown here, or already expired and announced by another process).
        """

    def beat(self) -> list[MemberEvent]:
        """Renew this process's members and sweep: remove members whose process stopped
        renewing them, and put back this process's members found missing.

        Returns the events to publish: ``MemberLeft(reason="expired")`` for each member
        removed (and for departures whose announcer died), ``MemberJoined`` for each put back.
        """

    def present(self) -> list[PresentMember]:
        """Every live member of the team, every process's, in the order they joined."""

    def announced(self, departures: Sequence[MemberLeft]) -> None:
        """``departures`` (returned by the methods above) are in the team's log now: stop
        keeping them for another process to announce."""


PresenceFactory = Callable[[str], Presence]
"""Makes the presence of the team with the given id."""


def new_process_id() -> str:
    """A new presence id, ``<host>:<pid>:<random>``: unique even where pids are reused."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def new_membership_id() -> str:
    """A new id for one stay of one member."""
    return uuid.uuid4().hex


def member_joined(member: PresentMember) -> MemberJoined:
    """The event of ``member`` joining."""
    return MemberJoined(
        team_id=member.address.team_id,
        member=member.address,
        membership=member.membership,
        process=member.process,
        host=member.host,
        pid=member.pid,
    )


def member_left(member: PresentMember, reason: LeaveReason) -> MemberLeft:
    """The event of ``member`` leaving for ``reason``."""
    return MemberLeft(
        team_id=member.address.team_id,
        member=member.address,
        membership=member.membership,
        process=member.process,
        host=member.host,
        pid=member.pid,
        reason=reason,
    )


class MemoryPresence:
    """The presence of a team served by this process alone: its own members, nothing to renew.

    What a team's roster was before presence was shared; the default of
    :class:`~toolcards.actors.ActorSystem`. Nothing is persisted and no other process sees it.
    """

    def __init__(self, team_id: str) -> None:
        self.team_id = team_id
        self._process = new_process_id()
        self._host = socket.gethostname()
        self._pid = os.getpid()
        self._members: dict[str, PresentMember] = {}

    @property
    def process(self) -> str:
        """This presence's id."""
        return self._process

    @property
    def beat_interval_s(self) -> None:
        """``None``: a process's own members need no renewal."""
        return None

    def join(self, address: ActorAddress) -> list[MemberEvent]:
        """Add ``address``; ``ValueError`` if a member of that name is here already."""
        if address.name in self._members:
            raise ValueError(f"{address.handle} is already a member of team {self.team_id}.")
        now = datetime.now(UTC)
        member = PresentMember(
            address=address,
            membership=new_membership_id(),
            process=self._process,
            host=self._host,
            pid=self._pid,
            joined=now,
            seen=now,
        )
        self._members[address.name] = member
        return [member_joined(member)]

    def leave(self, name: str, reason: LeaveReason) -> list[MemberEvent]:
        """Remove member ``name``; its ``MemberLeft``, or nothing if it is not here."""
        member = self._members.pop(name, None)
        return [member_left(member, reason)] if member is not None else []

    def beat(self) -> list[MemberEvent]:
        """Nothing to renew or sweep."""
        return []

    def present(self) -> list[PresentMember]:
        """This process's members, in the order they joined, seen now."""
        now = datetime.now(UTC)
        return [member.model_copy(update={"seen": now}) for member in self._members.values()]

    def announced(self, departures: Sequence[MemberLeft]) -> None:
        """Nothing is kept for another process to announce."""
