"""Teams of LLM agents: role profiles, member actors, the runtime that staffs them, their cards.

* :mod:`~toolcards.team.models` — :class:`RoleProfile`, :class:`TeamMessage` and the team
  events, and the rules for member names.
* :mod:`~toolcards.team.member` — :class:`MemberActor`, a Pykka actor hosting one
  pydantic-ai agent, the observer its cards are bound to.
* :mod:`~toolcards.team.team` — :class:`Team` and :class:`Member`: an application's own
  agents on a team (``toolcards.Team("acme").member("Alice").toolset(...)``).
* :mod:`~toolcards.team.runtime` — :class:`TeamRuntime`: hire, fire, message, wait.
* :mod:`~toolcards.team.tool` — :class:`TeamTool` (kind ``"team"``: hire, fire, roster,
  roles) and :class:`MessagingTool` (kind ``"messaging"``: ``send_message``).

Importing this package loads pydantic, pykka and the core; pydantic-ai loads when the
first member is hired.
"""

from __future__ import annotations

from toolcards.team.member import MemberActor, MemberProxy, running_member
from toolcards.team.models import (
    MESSAGE_MAX,
    NAME_MAX,
    NAME_PATTERN,
    MemberFired,
    MemberHired,
    RoleProfile,
    RunFinished,
    TeamMessage,
    default_member_name,
    find_member,
    normalize_member_name,
    validate_member_name,
)
from toolcards.team.runtime import ModelFactory, TeamRuntime
from toolcards.team.team import Member, Team
from toolcards.team.tool import (
    FireParam,
    HireParam,
    MessagingTool,
    RolesParam,
    RosterParam,
    SendMessageParam,
    TeammatesParam,
    TeamTool,
)

__all__ = [
    "MESSAGE_MAX",
    "NAME_MAX",
    "NAME_PATTERN",
    "FireParam",
    "HireParam",
    "Member",
    "MemberActor",
    "MemberFired",
    "MemberHired",
    "MemberProxy",
    "MessagingTool",
    "ModelFactory",
    "RoleProfile",
    "RolesParam",
    "RosterParam",
    "RunFinished",
    "SendMessageParam",
    "Team",
    "TeamMessage",
    "TeamRuntime",
    "TeamTool",
    "TeammatesParam",
    "default_member_name",
    "find_member",
    "normalize_member_name",
    "running_member",
    "validate_member_name",
]
