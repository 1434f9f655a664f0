"""What a card is bound to: the agent (or team member) that uses it.

Cards ask only for what they need. A card that only reports events needs a
:class:`ToolObserver`; one backed by team-wide actors needs an
:class:`ActorToolObserver`; the team card needs a :class:`TeamManagementToolObserver`.
The factory checks the observer against each card's ``requires_observer`` when binding.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from toolcards.actors._address import ActorAddress

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle

__all__ = ["ActorToolObserver", "TeamAgent", "TeamManagementToolObserver", "ToolObserver", "log_tool_call"]

logger = logging.getLogger("toolcards.observer")


@runtime_checkable
class ToolObserver(Protocol):
    """Receives the events a card's tools produce (execution records, state changes)."""

    def notify_event(self, event: Any) -> None:
        """Handle one event. Called from whichever thread ran the tool; must not block long."""


@runtime_checkable
class ActorToolObserver(ToolObserver, Protocol):
    """An agent that is a member of a team of actors."""

    @property
    def address(self) -> ActorAddress:
        """This agent's own address (its name is stamped on what it creates)."""

    @property
    def team(self) -> TeamHandle:
        """The team's orchestrator: roster, ``get_or_spawn`` of tool actors, events."""

    @property
    def team_id(self) -> str:
        """The team this agent belongs to."""

    @property
    def user_id(self) -> str | None:
        """The human the team works for, when known."""


@runtime_checkable
class TeamManagementToolObserver(ActorToolObserver, Protocol):
    """An agent allowed to change its team: hire, fire, list members and roles."""

    def hire_member(self, role: str, name: str | None = None) -> ActorAddress:
        """Start a member of ``role``; raises ``RetriableError`` naming valid roles or a taken name."""

    def fire_member(self, name: str) -> ActorAddress:
        """Stop member ``name``; raises ``RetriableError`` listing members if unknown."""

    def roster(self) -> list[ActorAddress]:
        """The team's members."""

    def hireable_roles(self) -> dict[str, str]:
        """Role → one-line description, for the roles this agent may hire."""


class TeamAgent:
    """A team member that is not an actor of its own — a test agent, an MCP client session —
    implementing :class:`ActorToolObserver` with the identity it was given.

    The records of its tool calls go to the team's event log (:func:`log_tool_call`), so
    with a shared log every process of the team sees them (the dashboard's call log).
    """

    def __init__(self, name: str, team: TeamHandle, *, role: str = "agent", user_id: str | None = None) -> None:
        self._address = ActorAddress(name=name, role=role, team_id=team.team_id, agent_id=name)
        self._team = team
        self._user_id = user_id

    @property
    def address(self) -> ActorAddress:
        """This agent's address; its handle is stamped on what it creates."""
        return self._address

    @property
    def team(self) -> TeamHandle:
        """The team's orchestrator handle."""
        return self._team

    @property
    def team_id(self) -> str:
        """The team this agent belongs to."""
        return self._address.team_id

    @property
    def user_id(self) -> str | None:
        """The human the team works for, when known."""
        return self._user_id

    def notify_event(self, event: Any) -> None:
        """Send the record of a tool call to the team's log (batched, never blocks)."""
        log_tool_call(self._team, event)


def log_tool_call(team: TeamHandle, event: Any) -> None:
    """Queue ``event`` for ``team``'s log if it is the record of a tool call worth keeping,
    and note the calling member's activity (:meth:`TeamHandle.note_activity`).

    System-prompt sections render before every model request: only their failures are
    logged, so the log shows what agents did rather than what they read. The record is
    written with others in one batch (``TeamHandle.publish_batched``): the call is not held up.
    """
    from toolcards.core._events import ToolExecutionRecord

    if not isinstance(event, ToolExecutionRecord):
        return
    if event.channel == "system_prompt" and event.success:
        return
    if event.agent:
        team.note_activity(event.agent)
    try:
        team.publish_batched(event)
    except Exception:  # a team that stopped: its log is gone, the call itself succeeded
        logger.debug("record of %s dropped: the team is stopped", event.tool)
