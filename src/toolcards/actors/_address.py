"""``ActorAddress``: where an agent or tool actor lives, in a form that serialises."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ActorAddress"]


class ActorAddress(BaseModel):
    """A serialisable address: which team, which actor, in which role.

    Agents are named like people (``"Alice"``); team-wide tool actors carry a ``#``
    (``"#PlanningTool"``). :attr:`handle` is how other agents and rendered text refer to
    the actor (``"@Alice"``, ``"#PlanningTool"``).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    role: str = "agent"
    team_id: str
    agent_id: str | None = None

    @property
    def handle(self) -> str:
        """``@name`` for agents, the name itself for ``#`` tool actors and ``@``-prefixed names."""
        return self.name if self.name[:1] in ("@", "#") else f"@{self.name}"

    @property
    def is_tool_actor(self) -> bool:
        """Whether this is a team-wide tool actor (name starting with ``#``)."""
        return self.name.startswith("#")

    def __str__(self) -> str:
        return f"{self.team_id}/{self.handle}"
