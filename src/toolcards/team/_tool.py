"""The team cards: :class:`TeamTool` (hire and fire members, the roster, the hireable roles) and :class:`MessagingTool`.

``TeamTool`` (kind ``"team"``) needs a
:class:`~toolcards.core._observer.TeamManagementToolObserver`, a member allowed to change its
team such as a :class:`~toolcards.team._member.MemberActor`: ``hire_team_member`` and
``fire_team_member`` are tool calls, the roster and the hireable roles are system prompt
sections, and all four are commands.

``MessagingTool`` (kind ``"messaging"``) needs an
:class:`~toolcards.core._observer.ActorToolObserver`, any member of a team in any process, MCP
sessions included; every member has a durable mailbox (:mod:`toolcards.team._mailbox`). Its
capabilities (messages, reminders, ``stop_member``) are listed in ``docs/cards/team.md``. Sends
never wait for the recipient's run, so two members messaging each other cannot deadlock. With
``steering`` (the default) a pydantic-ai agent gets new messages before its next model request
(:mod:`toolcards.core._steering`); others call ``read_messages``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._idempotency import current_call
from toolcards.core._observer import ActorToolObserver, TeamManagementToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.core._steering import StopRequest
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.team._delivery import mailbox_of, resolve_recipients, teammates_of
from toolcards.team._mailbox import MAILBOX_ACTOR_NAME, MailboxProxy
from toolcards.team._models import MESSAGE_MAX, NAME_MAX, REMINDER_MAX_S, MailboxMessage
from toolcards.team._render import (
    render_full_refusal,
    render_messages,
    render_reminder_set,
    render_reminders,
    render_sent,
    render_unread,
)

__all__ = [
    "CancelReminderParam",
    "FireParam",
    "HireParam",
    "ListRemindersParam",
    "MessagingTool",
    "ReadMessagesParam",
    "RemindMeParam",
    "RolesParam",
    "RosterParam",
    "SendMessageParam",
    "StopMemberParam",
    "TeamTool",
    "TeammatesParam",
    "UnreadMessagesParam",
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
    """``send_message``: deliver a message to a teammate's mailbox (or a role's) without waiting."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ReadMessagesParam(BaseToolParam):
    """``read_messages``: hand over the unread messages, each once."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class UnreadMessagesParam(BaseToolParam):
    """``unread_messages``: how many messages wait unread, and from whom, in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class TeammatesParam(BaseToolParam):
    """``teammates``: who the agent can message."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class RemindMeParam(BaseToolParam):
    """``remind_me``: a message to oneself, delivered at a time."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ListRemindersParam(BaseToolParam):
    """``list_reminders``: the agent's pending reminders."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class CancelReminderParam(BaseToolParam):
    """``cancel_reminder``: drop one of the agent's pending reminders."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class StopMemberParam(BaseToolParam):
    """``stop_member``: end a member's run at its next step (an orchestrator's command)."""

    expose: set[Channels] = {COMMAND}


class MessagingTool(ToolCard):
    """Messages, reminders and stop requests between team members, through durable mailboxes.

    The module docstring says what the model sees. Every
    :class:`~toolcards.team._member.MemberActor` gets one unless its role's cards configure
    their own; an MCP server's members get one when the served config lists it.
    """

    kind: ClassVar[str] = "messaging"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    send_message: SendMessageParam | bool = True
    read_messages: ReadMessagesParam | bool = True
    unread_messages: UnreadMessagesParam | bool = True
    teammates: TeammatesParam | bool = True
    remind_me: RemindMeParam | bool = True
    list_reminders: ListRemindersParam | bool = True
    cancel_reminder: CancelReminderParam | bool = True
    stop_member: StopMemberParam | bool = True
    steering: bool = True
    """Hand new messages to a pydantic-ai agent before its next model request, mid-run; with
    ``False`` they wait for ``read_messages`` (a runtime member still gets them as its next run)."""
    _mailbox: MailboxProxy | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        member: ActorToolObserver = observer
        self._mailbox = mailbox_of(member.team)

    @property
    def mailbox(self) -> MailboxProxy:
        """The team's mailbox actor in this process (after binding)."""
        return self.bound(self._mailbox)

    def _member(self) -> ActorToolObserver:
        member: ActorToolObserver = self.get_observer()  # checked by the factory at bind
        return member

    # -- what runtimes use -----------------------------------------------------------------

    def take_messages(self) -> list[MailboxMessage]:
        """The member's oldest unread messages (up to a read's size), handed over once: its
        cursor advances in the store. Blocks briefly (an ask)."""
        messages, _ = self.ask(self.mailbox.take(self._member().address.name), actor=MAILBOX_ACTOR_NAME)
        return messages

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` when a message or a stop request reaches the member, from any
        process of the team (under the mailbox's lock: it must return at once); returns the
        function that stops it."""
        listener_id = self.ask(self.mailbox.listen(self._member().address.name, listener), actor=MAILBOX_ACTOR_NAME)
        mailbox = self.mailbox

        def unlisten() -> None:
            mailbox.unlisten(listener_id)

        return unlisten

    # -- steering (toolcards.core._steering) --------------------------------------------------

    def deliveries(self) -> list[str]:
        """The member's new messages, each once, for its next model request (with ``steering``).

        Nothing for a member that is leaving its team (a fired runtime member): its messages
        stay in its mailbox."""
        if not self.steering or getattr(self._member(), "leaving", False):
            return []
        return [message.as_prompt() for message in self.take_messages()]

    def take_stop(self) -> StopRequest | None:
        """The stop request waiting for the member, taken; ``None`` (a cheap check) when there
        is none."""
        stop: StopRequest | None = self.ask(
            self.mailbox.take_stop(self._member().address.name), actor=MAILBOX_ACTOR_NAME
        )
        return stop

    # -- capabilities ------------------------------------------------------------------------

    @capability("send_message", mutates=True, hints=ToolHints(title="Send message"))
    def send(
        self,
        to: Annotated[str, Field(min_length=1, max_length=NAME_MAX + 1)],
        text: Annotated[str, Field(min_length=1, max_length=MESSAGE_MAX)],
    ) -> str:
        """Send a message to a teammate, or to every member of a role. It arrives at once; answers come as messages.

        Args:
            to: A teammate's name (e.g. Builder-2) or a role (e.g. builder).
            text: What you need or report, with the context they lack.
        """
        me = self._member().address
        call = current_call()
        try:
            recipients, role = resolve_recipients(self._member().team, to, me=me.name)
        except RetriableError:
            # A retry whose recipient has left since its first send went out: the mailbox
            # answers the first send (nothing is sent to no one), else the refusal stands.
            if call is None:
                raise
            report = self.ask(self.mailbox.post(me.handle, [], text, call=call), actor=MAILBOX_ACTOR_NAME)
            if not report.replayed:
                raise
            return render_sent(report)
        report = self.ask(
            self.mailbox.post(me.handle, [m.name for m in recipients], text, call=call),
            actor=MAILBOX_ACTOR_NAME,
        )
        if not report.delivered:
            raise RetriableError(render_full_refusal(report.full))
        return render_sent(report, role=role)

    @capability("read_messages", mutates=True)
    def read(self) -> str:
        """Read your unread messages; each is shown once."""
        messages, remaining = self.ask(
            self.mailbox.take(self._member().address.name, call=current_call()), actor=MAILBOX_ACTOR_NAME
        )
        return render_messages(messages, remaining, read_tool=self._tool_if_offered("read_messages"))

    @capability("unread_messages")
    def render_unread(self) -> str:
        """Your unread messages: how many, and from whom."""
        count, senders = self.ask(self.mailbox.unread(self._member().address.name), actor=MAILBOX_ACTOR_NAME)
        return render_unread(count, senders, read_tool=self._tool_if_offered("read_messages"))

    @capability("teammates", hints=ToolHints(title="Your teammates"))
    def render_teammates(self) -> str:
        """Who you are, who you can message, and how replies reach you."""
        observer = self._member()
        me = observer.address.name
        others = [f"{m.handle} ({m.role})" for m in teammates_of(observer.team) if m.name != me]
        listing = ", ".join(others) if others else "nobody yet"
        # Your own name first: a client whose name was taken joined under another (@Ann-2),
        # and has no other way to learn it.
        you = f"You are {observer.address.handle}."
        if not _offered(self, "send_message"):
            return f"{you} Your teammates: {listing}."
        return (
            f"{you} Your teammates: {listing}. Their messages arrive as 'Message from @Name'. "
            "Your final answer goes to the user, not to teammates: reply to them with send_message "
            "(a name, or a role to reach all its members)."
        )

    @capability("remind_me", mutates=True)
    def remind(
        self,
        text: Annotated[str, Field(min_length=1, max_length=MESSAGE_MAX)],
        after_s: float | None = None,
        at: datetime | None = None,
    ) -> str:
        """Set a reminder: text comes back to you as a message after after_s seconds, or at a time.

        Args:
            text: What to remind yourself of.
            after_s: Seconds from now.
            at: A time (ISO 8601; UTC if it has no zone).
        """
        due = _due_time(after_s, at, time.time())
        reminder = self.ask(
            self.mailbox.remind(self._member().address.name, text, due, call=current_call()),
            actor=MAILBOX_ACTOR_NAME,
        )
        return render_reminder_set(reminder)

    @capability("list_reminders")
    def show_reminders(self) -> str:
        """Your pending reminders, soonest first, with their ids."""
        reminders = self.ask(self.mailbox.reminders(self._member().address.name), actor=MAILBOX_ACTOR_NAME)
        return render_reminders(reminders)

    @capability("cancel_reminder", mutates=True, hints=ToolHints(destructive=True, idempotent=True))
    def cancel(self, reminder_id: int) -> str:
        """Cancel one of your pending reminders."""
        reminder = self.ask(
            self.mailbox.cancel_reminder(self._member().address.name, reminder_id, call=current_call()),
            actor=MAILBOX_ACTOR_NAME,
        )
        return f"Cancelled reminder {reminder.id}."

    @capability("stop_member", mutates=True, hints=ToolHints(destructive=True))
    def stop(
        self,
        name: Annotated[str, Field(min_length=1, max_length=NAME_MAX + 1)],
        reason: Annotated[str, Field(min_length=1, max_length=1000)],
    ) -> str:
        """Stop a member's run at its next step (a tool call or a model request); it reads the reason.

        Args:
            name: The member's name, e.g. Builder-2.
            reason: Why it must stop; the member reads it.
        """
        observer = self._member()
        targets, role = resolve_recipients(observer.team, name, me=observer.address.name)
        if role is not None:
            raise RetriableError(
                f"{name!r} is a role; stop_member stops one member. Members of {role}: "
                f"{', '.join(m.handle for m in targets)}. Retry with one of these names."
            )
        target = targets[0]
        self.ask(
            self.mailbox.request_stop(observer.address.handle, target.name, reason, call=current_call()),
            actor=MAILBOX_ACTOR_NAME,
        )
        return (
            f"Asked {target.handle} to stop: its run ends at its next step (a tool call or a model request), "
            "wherever it runs."
        )

    def _tool_if_offered(self, field: str) -> str | None:
        return field if _offered(self, field) else None


def _due_time(after_s: float | None, at: datetime | None, now: float) -> float:
    """When a reminder falls due (seconds since the epoch), from exactly one of ``after_s`` and ``at``.

    Raises:
        RetriableError: both or neither are given, the delay is not positive or too long, or the
            time is past or too far ahead; the message says what to give instead.
    """
    longest = f"at most {REMINDER_MAX_S / 86400:.0f} days ({REMINDER_MAX_S:.0f} s)"
    if (after_s is None) == (at is None):
        which = "both" if after_s is not None else "neither"
        raise RetriableError(
            f"You gave {which} of after_s and at: give exactly one, after_s (seconds from now) or at (a time)."
        )
    if after_s is not None:
        if not math.isfinite(after_s) or after_s <= 0:
            raise RetriableError(f"after_s={after_s!r} is not a delay: give a positive number of seconds, {longest}.")
        if after_s > REMINDER_MAX_S:
            raise RetriableError(f"after_s={after_s:g} is too far ahead: {longest}.")
        return now + after_s
    assert at is not None
    moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    due = moment.timestamp()
    current = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if due <= now:
        raise RetriableError(
            f"at={moment.isoformat()} is in the past (it is now {current}): give a later time, or after_s."
        )
    if due - now > REMINDER_MAX_S:
        raise RetriableError(f"at={moment.isoformat()} is too far ahead (it is now {current}): {longest}.")
    return due
