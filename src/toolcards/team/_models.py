"""The team's data: role profiles, the messages members exchange, team events, and name rules.

Plain pydantic (no pykka), so profiles and events serialise and cross threads freely:

* :class:`RoleProfile` — what a member of a role is: its model, instructions and cards.
  Profiles live in the team orchestrator's catalog, keyed by role.
* :class:`TeamMessage` — a message to a member; also published to the team's event log.
* :class:`MailboxMessage`, :class:`Reminder`, :class:`SendReport` — what a member's durable
  mailbox holds (:mod:`toolcards.team._mailbox`), and what a send did.
* :class:`MemberHired`, :class:`MemberFired`, :class:`RunFinished` — what the team runtime
  publishes, for dashboards and tests; :class:`MessagesRead`, :class:`ReminderSet`,
  :class:`ReminderFired`, :class:`ReminderCancelled`, :class:`StopRequested` and
  :class:`StopDelivered` — what the mailbox publishes.
* Member names: :func:`validate_member_name`, :func:`default_member_name`,
  :func:`find_member`, :func:`normalize_member_name`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcards.actors._address import ActorAddress
from toolcards.core._events import ToolcardsEvent
from toolcards.errors import RetriableError

__all__ = [
    "INBOX_MAX",
    "MESSAGE_MAX",
    "NAME_MAX",
    "NAME_PATTERN",
    "REMINDERS_MAX",
    "REMINDER_MAX_S",
    "MailboxMessage",
    "MemberFired",
    "MemberHired",
    "MessagesRead",
    "Reminder",
    "ReminderCancelled",
    "ReminderFired",
    "ReminderSet",
    "RoleProfile",
    "RunFinished",
    "SendReport",
    "StopDelivered",
    "StopRequested",
    "TeamMessage",
    "default_member_name",
    "find_member",
    "normalize_member_name",
    "validate_member_name",
]

NAME_MAX = 40
"""The longest member name or role."""
NAME_PATTERN = r"^[A-Za-z0-9_-]{1,40}$"
"""Member names and roles: letters, digits, ``-`` and ``_``, at most :data:`NAME_MAX`."""
MESSAGE_MAX = 8000
"""The longest message a member may send, in characters."""
INBOX_MAX = 200
"""Unread messages a member's mailbox holds; a send to a full mailbox is refused."""
REMINDERS_MAX = 50
"""Reminders a member may have pending at once."""
REMINDER_MAX_S = 30 * 24 * 3600.0
"""The furthest ahead a reminder may be set, in seconds (30 days)."""

_NAME = re.compile(NAME_PATTERN)


class RoleProfile(BaseModel):
    """What a member of ``role`` is: the model it runs, what it is told, the cards it gets.

    ``cards`` is card config in the :func:`~toolcards.core._registry.load_cards` format:
    ``[{"kind": "planning"}, ...]``, or ``dump_cards([PlanningTool(), ...])``.
    Every member also gets a messaging card (``send_message``) unless ``cards`` configures
    one itself (``{"kind": "messaging", ...}``).

    ``model`` is a name registered with ``TeamRuntime(models={...})`` or a pydantic-ai model
    string such as ``"openai:gpt-4o"``. Only ``hireable`` roles can be hired by members
    through :class:`~toolcards.team._tool.TeamTool`; the application may hire any role.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Annotated[str, Field(pattern=NAME_PATTERN)]
    """The role's name, e.g. ``"builder"``; generated member names derive from it."""
    description: str
    """One line saying what members of this role do (shown to agents that may hire them)."""
    model: Annotated[str, Field(min_length=1)]
    """A registered model factory's name, or a pydantic-ai model string."""
    instructions: str = ""
    """The role's standing instructions, part of every member's system prompt."""
    cards: list[dict[str, Any]] = Field(default_factory=list)
    """The cards members of this role get, as config dicts (``kind`` plus fields)."""
    hireable: bool = True
    """Whether team members may hire this role (the application always may)."""


class TeamMessage(ToolcardsEvent):
    """A message to a team member: delivered to its mailbox and logged as a team event.

    ``sender`` is a member's handle (``"@Lead"``) or a free label for someone outside the
    team (``"user"``); ``recipient`` is the member's handle.
    """

    kind: Literal["team_message"] = "team_message"
    sender: str
    recipient: str
    text: str

    def as_prompt(self) -> str:
        """The text the recipient's model reads: who wrote, then the message."""
        return f"Message from {self.sender}:\n{self.text}"


class MailboxMessage(BaseModel):
    """One unread message in a member's durable mailbox (:mod:`toolcards.team._mailbox`)."""

    model_config = ConfigDict(frozen=True)

    recipient: str
    """The member it is for, by name (``"Bob"``)."""
    number: int
    """Its place in the recipient's mailbox: 1 for the first message it was ever sent, then one
    more per message; the member's cursor is the number of the last one it read."""
    sender: str
    """A member's handle (``"@Ann"``), an actor's name (``"#PlanningTool"``) or a free label
    (``"user"``); for a reminder, the member itself."""
    text: str
    """What was sent."""
    sent: datetime
    """When it was sent (UTC); for a reminder, when it fell due."""
    reminder: int | None = None
    """The id of the reminder it delivers; ``None`` for a message."""

    def as_prompt(self) -> str:
        """The text the recipient's model reads: who wrote (or which reminder), then the text."""
        if self.reminder is not None:
            due = self.sent.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            return f"Reminder {self.reminder} you set, due {due}:\n{self.text}"
        return f"Message from {self.sender}:\n{self.text}"


class Reminder(BaseModel):
    """A reminder a member set for itself: a message its mailbox receives at :attr:`due`."""

    model_config = ConfigDict(frozen=True)

    id: int
    """The team-wide id that ``cancel_reminder`` takes."""
    member: str
    """The member who set it, by name; only it may list or cancel it."""
    text: str
    """What the member will read when it falls due."""
    due: float
    """When it falls due, in seconds since the epoch (every host reads one time)."""
    created: float
    """When it was set, in seconds since the epoch."""

    @property
    def due_at(self) -> datetime:
        """:attr:`due` as a UTC datetime."""
        return datetime.fromtimestamp(self.due, UTC)


class SendReport(BaseModel):
    """What one send did: who got the message and whose full mailbox refused it."""

    model_config = ConfigDict(frozen=True)

    delivered: list[str] = Field(default_factory=list)
    """The recipients whose mailbox took it, by name."""
    full: dict[str, int] = Field(default_factory=dict)
    """Recipient name → its unread count, for each mailbox that was full (nothing sent there)."""
    replayed: bool = False
    """The send was a retry of a keyed call already applied: this is its first answer."""


class MessagesRead(ToolcardsEvent):
    """A member read messages from its mailbox (a ``read_messages`` call, or delivery to its run)."""

    kind: Literal["messages_read"] = "messages_read"
    member: str
    """The reader's handle."""
    count: int
    """How many messages it got."""
    remaining: int = 0
    """How many stayed unread (past one read's size)."""


class ReminderSet(ToolcardsEvent):
    """A member set a reminder."""

    kind: Literal["reminder_set"] = "reminder_set"
    member: str
    """The member's handle."""
    reminder_id: int
    """The reminder's id."""
    due: datetime
    """When it falls due (UTC)."""


class ReminderFired(ToolcardsEvent):
    """A reminder fell due and is in its member's mailbox; published by the process that put it there."""

    kind: Literal["reminder_fired"] = "reminder_fired"
    member: str
    """The member's handle."""
    reminder_id: int
    """The reminder's id."""
    due: datetime
    """When it was due (UTC)."""
    late_s: float
    """Seconds between its due time and its arrival in the mailbox."""


class ReminderCancelled(ToolcardsEvent):
    """A member cancelled one of its reminders before it fell due."""

    kind: Literal["reminder_cancelled"] = "reminder_cancelled"
    member: str
    """The member's handle."""
    reminder_id: int
    """The reminder's id."""


class StopRequested(ToolcardsEvent):
    """Someone asked that a member stop its run (``stop_member``); it stops at its next boundary."""

    kind: Literal["stop_requested"] = "stop_requested"
    member: str
    """The member's handle."""
    by: str
    """Who asked."""
    reason: str
    """Why."""


class StopDelivered(ToolcardsEvent):
    """A stop request reached its member: its run ends (or it had none running)."""

    kind: Literal["stop_delivered"] = "stop_delivered"
    member: str
    """The member's handle."""
    by: str
    """Who asked."""
    reason: str
    """Why."""


class MemberHired(ToolcardsEvent):
    """A member joined the team."""

    kind: Literal["member_hired"] = "member_hired"
    member: ActorAddress
    hired_by: str | None = None
    """The handle of the member that hired it; ``None`` when the application did."""


class MemberFired(ToolcardsEvent):
    """A member was fired: it left the roster and its actor is stopping."""

    kind: Literal["member_fired"] = "member_fired"
    member: ActorAddress
    fired_by: str | None = None
    """The handle of the member that fired it; ``None`` when the application did."""


class RunFinished(ToolcardsEvent):
    """A member finished handling one message: its final reply, or why its run failed."""

    kind: Literal["run_finished"] = "run_finished"
    member: str
    """The member's handle."""
    sender: str
    """Who sent the message that started the run."""
    output: str | None = None
    error: str | None = None


def normalize_member_name(name: str) -> str:
    """``name`` without surrounding spaces and a leading ``@`` (``" @Ann"`` → ``"Ann"``)."""
    return name.strip().removeprefix("@").strip()


def validate_member_name(name: str) -> str:
    """The normalised ``name`` if it is a valid member name.

    Raises:
        RetriableError: ``name`` has characters other than letters, digits, ``-`` and
            ``_``, or is empty or longer than :data:`NAME_MAX`.
    """
    cleaned = normalize_member_name(name)
    if not _NAME.match(cleaned):
        raise RetriableError(
            f"Invalid name {name!r}: use 1-{NAME_MAX} letters, digits, '-' or '_' (e.g. Builder-2), "
            "or omit the name to get one generated."
        )
    return cleaned


def default_member_name(role: str, taken: Iterable[str]) -> str:
    """The first free ``<Role>-<n>`` name (``"builder"`` → ``"Builder-1"``, then ``"Builder-2"``).

    ``taken`` is compared case-insensitively; the role is title-cased word by word
    (``"qa_engineer"`` → ``"QaEngineer-1"``) and cut so the name fits :data:`NAME_MAX`.
    """
    stem = "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]+", role) if part) or "Member"
    used = {name.lower() for name in taken}
    number = 1
    while True:
        suffix = f"-{number}"
        candidate = stem[: NAME_MAX - len(suffix)] + suffix
        if candidate.lower() not in used:
            return candidate
        number += 1


def find_member(members: Iterable[ActorAddress], name: str) -> ActorAddress | None:
    """The member called ``name`` (a leading ``@`` is ignored), exactly or else ignoring case.

    Returns ``None`` when no member, or more than one member ignoring case, matches.
    """
    wanted = normalize_member_name(name)
    candidates = list(members)
    for member in candidates:
        if member.name == wanted:
            return member
    folded = [member for member in candidates if member.name.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None
