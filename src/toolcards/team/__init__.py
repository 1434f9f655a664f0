"""Teams of LLM agents: role profiles, member actors, the runtime that staffs them, their cards.

:class:`Team` and :class:`Member` put an application's own agents on a team;
:class:`TeamRuntime` hires, fires, messages and waits for LLM members
(:class:`MemberActor`, each hosting one pydantic-ai agent); :class:`MailboxActor` keeps every
member's durable mailbox, reminders and stop requests in the team's store; :class:`TeamTool`
and :class:`MessagingTool` are the cards. Importing this package loads pydantic, pykka and
the core; pydantic-ai loads when the first member is hired.
"""

from __future__ import annotations

from toolcards.team._delivery import mailbox_of
from toolcards.team._mailbox import MailboxProxy
from toolcards.team._member import MemberProxy
from toolcards.team._models import (
    INBOX_MAX,
    MESSAGE_MAX,
    NAME_MAX,
    NAME_PATTERN,
    REMINDER_MAX_S,
    REMINDERS_MAX,
    MailboxMessage,
    MemberFired,
    MemberHired,
    MessagesRead,
    Reminder,
    ReminderCancelled,
    ReminderFired,
    ReminderSet,
    RoleProfile,
    RunFinished,
    SendReport,
    StopDelivered,
    StopRequested,
    TeamMessage,
)
from toolcards.team._runtime import ModelFactory, TeamRuntime
from toolcards.team._team import Member, Team
from toolcards.team._tool import (
    CancelReminderParam,
    FireParam,
    HireParam,
    ListRemindersParam,
    MessagingTool,
    ReadMessagesParam,
    RemindMeParam,
    RolesParam,
    RosterParam,
    SendMessageParam,
    StopMemberParam,
    TeammatesParam,
    TeamTool,
    UnreadMessagesParam,
)

__all__ = [
    "INBOX_MAX",
    "MESSAGE_MAX",
    "NAME_MAX",
    "NAME_PATTERN",
    "REMINDERS_MAX",
    "REMINDER_MAX_S",
    "CancelReminderParam",
    "FireParam",
    "HireParam",
    "ListRemindersParam",
    "MailboxMessage",
    "MailboxProxy",
    "Member",
    "MemberFired",
    "MemberHired",
    "MemberProxy",
    "MessagesRead",
    "MessagingTool",
    "ModelFactory",
    "ReadMessagesParam",
    "RemindMeParam",
    "Reminder",
    "ReminderCancelled",
    "ReminderFired",
    "ReminderSet",
    "RoleProfile",
    "RolesParam",
    "RosterParam",
    "RunFinished",
    "SendMessageParam",
    "SendReport",
    "StopDelivered",
    "StopMemberParam",
    "StopRequested",
    "Team",
    "TeamMessage",
    "TeamRuntime",
    "TeamTool",
    "TeammatesParam",
    "UnreadMessagesParam",
    "mailbox_of",
]
