"""Who a message is for, and the team's mailbox as cards, the runtime and other domains reach it.

* :func:`mailbox_of` — the team's :class:`~toolcards.team._mailbox.MailboxActor` in this process,
  which also offers the team's :data:`~toolcards.core._services.MAILBOX` service here;
* :func:`resolve_recipients` — a name or a role, against the whole team's roster (every
  process's members: the team's presence);
* :func:`deliver` — both: a message to a member or a role, from anyone (the runtime's
  ``send``, the board telling a task's owner it is ready).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from toolcards.actors._asking import ask
from toolcards.core._services import MAILBOX
from toolcards.errors import RetriableError
from toolcards.team._mailbox import MAILBOX_ACTOR_NAME, MailboxActor, MailboxProxy
from toolcards.team._models import SendReport, find_member, normalize_member_name
from toolcards.team._render import render_full_refusal, render_teammate_choices

if TYPE_CHECKING:
    from toolcards.actors._address import ActorAddress
    from toolcards.actors._system import TeamHandle

__all__ = ["deliver", "mailbox_of", "resolve_recipients", "teammates_of"]


def mailbox_of(team: TeamHandle) -> MailboxProxy:
    """The team's mailbox actor in this process (started on first use, race-free), which also
    offers the team's :data:`~toolcards.core._services.MAILBOX` service in this process.

    Blocks briefly (an ask to the orchestrator; the first call loads the namespace).

    Raises:
        StoreError: the team's store cannot be read.
    """
    from toolcards.store._default import default_store

    proxy = team.get_or_spawn(
        MAILBOX_ACTOR_NAME, MailboxActor, team.team_id, default_store(), team.publish_batched, proxy=MailboxProxy
    )
    team.provide(MAILBOX, functools.partial(_deliver, team, proxy))
    return proxy


def teammates_of(team: TeamHandle, present: list[ActorAddress] | None = None) -> list[ActorAddress]:
    """The team's live members in every process (its presence, or ``present`` when the caller
    asked it already), then this process's members the presence does not list yet (its write
    failed), in the order they joined. Blocks briefly (asks to the orchestrator)."""
    listed = present if present is not None else [m.address for m in team.present_members()]
    present_by_name = {m.name: m for m in listed}
    for member in team.members():
        present_by_name.setdefault(member.name, member)
    return list(present_by_name.values())


def resolve_recipients(team: TeamHandle, to: str, *, me: str | None = None) -> tuple[list[ActorAddress], str | None]:
    """Who ``to`` names among the team's live members: one member (by name, exactly or ignoring
    case), else every member of the role ``to`` (but ``me``); and the role, when it was one.

    Raises:
        RetriableError: ``to`` names ``me``, or no live member or role (left members
            included: a member that left reads no messages until it joins again); the message
            lists the teammates and their roles.
    """
    present = [m.address for m in team.present_members()]
    found = find_member(present, to)
    if found is not None and found.name != me:  # the common case: one ask
        return [found], None
    members = teammates_of(team, present)
    target = find_member(members, to)
    others = [m for m in members if m.name != me]
    if target is not None:
        if target.name == me:
            raise RetriableError(f"{to!r} is you; name another member. {render_teammate_choices(others)}")
        return [target], None
    wanted = normalize_member_name(to).lower()
    of_role = [m for m in others if m.role.lower() == wanted]
    if of_role:
        return of_role, of_role[0].role
    raise RetriableError(f"No teammate or role called {to!r}. {render_teammate_choices(others)}")


def deliver(team: TeamHandle, to: str, text: str, *, sender: str) -> SendReport:
    """Leave ``text`` from ``sender`` in the mailbox of member ``to`` (or of every member of the
    role ``to``), in whichever process of the team it runs; returns at once.

    Raises:
        RetriableError: ``to`` names no live member or role, or every mailbox it names is full
            (the message says which and the bound), or ``text`` is empty or too long.
        StoreError: the store failed; nothing was sent.
    """
    return _deliver(team, mailbox_of(team), to, text, sender=sender)


def _deliver(team: TeamHandle, mailbox: MailboxProxy, to: str, text: str, *, sender: str) -> SendReport:
    """:func:`deliver` to a known mailbox; the :data:`~toolcards.core._services.MAILBOX` service."""
    recipients, _ = resolve_recipients(team, to)
    report: SendReport = ask(mailbox.post(sender, [m.name for m in recipients], text), actor=MAILBOX_ACTOR_NAME)
    if not report.delivered:
        raise RetriableError(render_full_refusal(report.full))
    return report
