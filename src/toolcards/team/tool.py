"""The team cards: :class:`TeamTool` (hire and fire members, the roster, the hireable roles) and :class:`MessagingTool`.

``TeamTool`` (kind ``"team"``) needs a
:class:`~toolcards.core.observer.TeamManagementToolObserver` — a member allowed to change
its team, such as an :class:`~toolcards.team.member.MemberActor`. What the model sees:

* ``hire_team_member(role, name=None)`` and ``fire_team_member(name)`` as tool calls;
* the roster (every member with its role, the agent itself marked "you") and the roles it
  may hire, as system prompt sections re-rendered before every model request;
* all four as commands (``/hire_team_member builder``, ``/team_roster``, ...).

``MessagingTool`` (kind ``"messaging"``) needs an
:class:`~toolcards.core.observer.ActorToolObserver`. It offers ``send_message(to, text)``,
which puts a :class:`~toolcards.team.models.TeamMessage` in the teammate's mailbox and
returns at once — it never waits for the teammate's run, so two members messaging each
other cannot deadlock — and a ``teammates`` prompt listing who can be messaged.

Cost per model request: TeamTool ~180 tokens of tool definitions, plus its prompts (~20
tokens and one line per member and per hireable role); MessagingTool ~110 tokens, plus
~40 and a few per teammate.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import pykka
from pydantic import Field

from toolcards.actors.address import ActorAddress
from toolcards.core.card import ToolCard, capability
from toolcards.core.channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core.hints import ToolHints
from toolcards.core.observer import ActorToolObserver, TeamManagementToolObserver
from toolcards.core.params import BaseToolParam
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.team.models import MESSAGE_MAX, NAME_MAX, TeamMessage, find_member

__all__ = [
    "FireParam",
    "HireParam",
    "MessagingTool",
    "RolesParam",
    "RosterParam",
    "SendMessageParam",
    "TeamTool",
    "TeammatesParam",
]


class HireParam(BaseToolParam):
    """``hire_team_member``: start a new member of a hireable role."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class FireParam(BaseToolParam):
    """``fire_team_member``: stop a member and remove it from the roster."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class RosterParam(BaseToolParam):
    """``team_roster``: the team's members, the agent itself marked."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class RolesParam(BaseToolParam):
    """``hireable_roles``: the roles the agent may hire, with their descriptions."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


def _offered(card: ToolCard, field: str) -> bool:
    param = card.param(field)
    return param is not None and Channels.TOOL_CALL in param.expose


class TeamTool(ToolCard):
    """Hire and fire team members, with the roster and the hireable roles in context.

    For an agent allowed to change its team; the module docstring says what the model sees.
    """

    kind: ClassVar[str] = "team"
    requires_observer: ClassVar[type | None] = TeamManagementToolObserver

    hire_team_member: HireParam | bool = True
    fire_team_member: FireParam | bool = True
    team_roster: RosterParam | bool = True
    hireable_roles: RolesParam | bool = True

    def _manager(self) -> TeamManagementToolObserver:
        manager: TeamManagementToolObserver = self.get_observer()  # checked by the factory at bind
        return manager

    @capability("hire_team_member", mutates=True, hints=ToolHints(title="Hire member"))
    def hire(
        self,
        role: Annotated[str, Field(min_length=1, max_length=NAME_MAX)],
        name: Annotated[str | None, Field(max_length=NAME_MAX + 1)] = None,
    ) -> str:
        """Hire a new team member; returns the name to address them by.

        Args:
            role: One of the roles you can hire.
            name: Their name (letters, digits, - or _); omit it to get one like Builder-2.
        """
        observer = self._manager()
        try:
            member = observer.hire_member(role, name)
        except WiringError as exc:
            # The role's profile is broken (cards, model): only a developer can fix that.
            raise ToolFailed(f"Role {role!r} cannot be hired: {exc}. Tell the user.") from exc
        return f"Hired {member.handle} ({member.role})."

    @capability("fire_team_member", mutates=True, hints=ToolHints(title="Fire member", destructive=True))
    def fire(self, name: Annotated[str, Field(min_length=1, max_length=NAME_MAX + 1)]) -> str:
        """Fire a team member: they stop working and leave the team.

        Args:
            name: The member's name, e.g. Builder-2.
        """
        member = self._manager().fire_member(name)
        return f"Fired {member.handle} ({member.role}); they stop after their current turn."

    @capability("team_roster", hints=ToolHints(title="Team roster"))
    def render_roster(self) -> str:
        """The team's members and their roles; you are marked."""
        observer = self._manager()
        me = observer.address.name
        lines = [f"- {m.handle} ({m.role}{', you' if m.name == me else ''})" for m in observer.roster()]
        if not lines:
            return "Team roster: nobody yet."
        return "\n".join([f"Team roster ({len(lines)}):", *lines])

    @capability("hireable_roles", hints=ToolHints(title="Roles to hire"))
    def render_roles(self) -> str:
        """The roles you can hire, with what each does."""
        roles = self._manager().hireable_roles()
        if not roles:
            return "No role can be hired."
        how = " with hire_team_member" if _offered(self, "hire_team_member") else ""
        return "\n".join([f"Roles you can hire{how}:", *(f"- {role}: {text}" for role, text in sorted(roles.items()))])


class SendMessageParam(BaseToolParam):
    """``send_message``: deliver a message to a teammate's mailbox without waiting."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class TeammatesParam(BaseToolParam):
    """``teammates``: who the agent can message."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class MessagingTool(ToolCard):
    """Messages between team members, with the list of teammates in context.

    The module docstring says what the model sees.

    Every :class:`~toolcards.team.member.MemberActor` gets one unless its role's cards
    configure their own.
    """

    kind: ClassVar[str] = "messaging"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    send_message: SendMessageParam | bool = True
    teammates: TeammatesParam | bool = True

    def _member(self) -> ActorToolObserver:
        member: ActorToolObserver = self.get_observer()  # checked by the factory at bind
        return member

    @capability("send_message", mutates=True, hints=ToolHints(title="Send message"))
    def send(
        self,
        to: Annotated[str, Field(min_length=1, max_length=NAME_MAX + 1)],
        text: Annotated[str, Field(min_length=1, max_length=MESSAGE_MAX)],
    ) -> str:
        """Send a message to a teammate. It is delivered at once; their answer comes as a new message.

        Args:
            to: The teammate's name, e.g. Builder-2.
            text: What you need or report, with the context they lack.
        """
        observer = self._member()
        me = observer.address
        members = observer.team.members()
        target = find_member(members, to)
        others = [m for m in members if m.name != me.name]
        if target is None:
            raise RetriableError(f"No teammate called {to!r}. {_choices(others)}")
        if target.name == me.name:
            raise RetriableError(f"{to!r} is you; messages go to teammates. {_choices(others)}")
        ref = observer.team.member_ref(target.name)
        if ref is None:
            raise RetriableError(f"{target.handle} does not read messages. {_choices(others, but=target.name)}")
        message = TeamMessage(team_id=observer.team_id, sender=me.handle, recipient=target.handle, text=text)
        try:
            ref.tell(message)
        except pykka.ActorDeadError:
            raise RetriableError(f"{target.handle} has left the team. {_choices(others, but=target.name)}") from None
        observer.team.publish(message)
        return f"Sent to {target.handle}."

    @capability("teammates", hints=ToolHints(title="Your teammates"))
    def render_teammates(self) -> str:
        """Who you can message, and how replies reach you."""
        observer = self._member()
        me = observer.address.name
        others = [f"{m.handle} ({m.role})" for m in observer.team.members() if m.name != me]
        listing = ", ".join(others) if others else "nobody yet"
        if not _offered(self, "send_message"):
            return f"Your teammates: {listing}."
        return (
            f"Your teammates: {listing}. Their messages arrive as 'Message from @Name'. "
            "Your final answer goes to the user, not to teammates: reply to them with send_message."
        )


def _choices(members: list[ActorAddress], *, but: str | None = None) -> str:
    names = [m.handle for m in members if m.name != but]
    if not names:
        return "You have no teammates to message."
    return f"Teammates: {', '.join(names)}. Retry with one of these names."
