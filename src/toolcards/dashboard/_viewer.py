"""``TeamViewer``: the observer the dashboard binds a team's cards to, only to read their views."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcards.core._observer import TeamAgent

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle

__all__ = ["VIEWER_NAME", "TeamViewer"]

VIEWER_NAME = "dashboard"


class TeamViewer(TeamAgent):
    """Someone looking at ``team``: cards bound to it offer their views (read-only).

    It does not join the roster (nobody can message it, it creates nothing), and it calls
    no tool, so it has no records to log.
    """

    def __init__(self, team: TeamHandle) -> None:
        super().__init__(VIEWER_NAME, team, role="dashboard")

    def notify_event(self, event: Any) -> None:
        """Ignore ``event``: a viewer calls no tool."""
