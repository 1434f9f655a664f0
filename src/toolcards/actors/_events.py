"""The events the runtime publishes itself: members joining and leaving the team's roster.

The team orchestrator publishes them, and it may import nothing above the actors, so they
cannot subclass the core's ``ToolcardsEvent``; they carry its fields (``kind``, ``team_id``,
``at``), which is what the event log and its readers use.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from toolcards.actors._address import ActorAddress

__all__ = ["LeaveReason", "MemberEvent", "MemberJoined", "MemberLeft"]


def _now() -> datetime:
    return datetime.now(UTC)


LeaveReason: TypeAlias = Literal["left", "session ended", "fired", "expired"]
"""Why a member left the roster: it (or its team object) ``left``; its MCP client's ``session
ended``; it was ``fired`` from a team runtime; or its process stopped renewing its presence and
the member ``expired``."""


class MemberEvent(BaseModel):
    """A member's arrival in, or departure from, the team's roster (every process's)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    team_id: str
    at: datetime = Field(default_factory=_now)
    """When the event was published (for an expiry: when a live process noticed it)."""
    member: ActorAddress
    """Who: name, role, team."""
    membership: str
    """This stay's id, new at every join: a :class:`MemberJoined` and the :class:`MemberLeft`
    ending the same stay carry the same one, and a departure announced twice carries it twice."""
    process: str
    """The id of the presence the member was in (one per team per actor system, so one per
    process in practice): ``<host>:<pid>:<random>``."""
    host: str
    """The host of that process."""
    pid: int
    """Its process id on :attr:`host`."""


class MemberJoined(MemberEvent):
    """A member joined the team's roster (or was put back by its own process after it expired)."""

    kind: Literal["member_joined"] = "member_joined"


class MemberLeft(MemberEvent):
    """A member left the team's roster.

    Published by the member's own process, except when ``reason`` is ``"expired"``: then
    by whichever live process of the team noticed first. Delivery is at least once: a
    departure is announced again when the process that noted it dies before it reaches the
    log, so consumers that must count departures deduplicate by :attr:`membership`.
    """

    kind: Literal["member_left"] = "member_left"
    reason: LeaveReason
