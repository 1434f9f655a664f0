"""The text a member's model reads about its mailbox: sends, unread messages, reminders, refusals.

Written from the data (:mod:`toolcards.team._models`), in one place, so every channel (tool
calls, commands, MCP, the context section) words the same thing the same way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

from toolcards.actors._address import ActorAddress
from toolcards.team._models import INBOX_MAX, MailboxMessage, Reminder, SendReport

__all__ = [
    "render_full_refusal",
    "render_messages",
    "render_reminder_set",
    "render_reminders",
    "render_sent",
    "render_teammate_choices",
    "render_unread",
]


def render_sent(report: SendReport, *, role: str | None = None) -> str:
    """What the sender reads after a send: who got it, and whose full mailbox refused it."""
    handles = [f"@{name}" for name in report.delivered]
    if role is not None:
        people = "member" if len(handles) == 1 else "members"
        text = f"Sent to the {len(handles)} {people} of role {role}: {', '.join(handles)}."
    else:
        text = f"Sent to {', '.join(handles)}."
    if report.full:
        text += " " + render_full_refusal(report.full, sent=False)
    if report.replayed:
        text = f"This call was already applied; nothing was sent again. {text}"
    return text


def render_full_refusal(full: dict[str, int], *, sent: bool = True) -> str:
    """Why a send did not reach the mailboxes in ``full`` (name → unread count)."""
    parts = [f"@{name} has {count} unread" for name, count in full.items()]
    lead = "Nothing was sent: " if sent else "Not sent to "
    whose = "their mailbox is" if len(full) == 1 else "their mailboxes are"
    return (
        f"{lead}{'; '.join(parts)} ({whose} full: at most {INBOX_MAX} unread messages each). "
        "Wait until they have read their messages, then send again."
    )


def render_messages(messages: Sequence[MailboxMessage], remaining: int, *, read_tool: str | None) -> str:
    """A page of messages as ``read_messages`` returns them (each shown once)."""
    if not messages:
        return "No unread messages."
    blocks = [message.as_prompt() for message in messages]
    if remaining:
        again = f": call {read_tool} again" if read_tool else ""
        blocks.append(f"({remaining} more unread{again}.)")
    return "\n\n".join(blocks)


def render_unread(count: int, senders: Sequence[str], *, read_tool: str | None) -> str:
    """The context line announcing unread messages (``""`` when there are none)."""
    if not count:
        return ""
    noun = "message" if count == 1 else "messages"
    how = f" — {read_tool}" if read_tool else ""
    return f"{count} unread {noun} from {', '.join(senders)}{how}"


def render_reminder_set(reminder: Reminder, *, now: float | None = None) -> str:
    """What a member reads after setting ``reminder``."""
    left = reminder.due - (time.time() if now is None else now)
    return f"Reminder {reminder.id} set for {_utc(reminder.due)} (in {_duration(left)}); it will arrive as a message."


def render_reminders(reminders: Sequence[Reminder], *, now: float | None = None) -> str:
    """A member's pending reminders, soonest first."""
    if not reminders:
        return "You have no pending reminders."
    clock = time.time() if now is None else now
    lines = [f"Your reminders ({len(reminders)}):"]
    lines += [f"- {r.id}: {_utc(r.due)} (in {_duration(r.due - clock)}): {_first_line(r.text)}" for r in reminders]
    return "\n".join(lines)


def render_teammate_choices(members: Sequence[ActorAddress], *, but: str | None = None) -> str:
    """The names and roles a sender may use, for a refusal."""
    others = [m for m in members if m.name != but]
    if not others:
        return "You have no teammates to message."
    names = ", ".join(f"{m.handle} ({m.role})" for m in others)
    return f"Teammates: {names}. Retry with one of these names, or a role to reach all its members."


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
