"""What a card hands an agent between the steps of its run: texts to read now, a request to stop.

Two hooks of :class:`~toolcards.core._card.ToolCard`, gathered by the
:class:`~toolcards.core._factory.ToolFactory` and called by the adapters at an agent's step
boundaries:

* :meth:`~toolcards.core._card.ToolCard.deliveries` — texts the agent reads before its next
  model request (a teammate's message, a reminder that fell due). The pydantic-ai toolset adds
  each to that request as a user message, so an agent mid-run is *steered* without waiting for
  its run to end.
* :meth:`~toolcards.core._card.ToolCard.take_stop` — a :class:`StopRequest`: an orchestrator
  asked that the agent stop. The pydantic-ai toolset fails the tool call it finds it at with
  :meth:`StopRequest.for_model` and raises :class:`~toolcards.errors.MemberStopped` before the
  next model request; the MCP server answers the session's next tool call with that text.

Both hand over what they return once: a card marks it delivered (the messaging card advances
the member's cursor in the store), so no text reaches an agent twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolcards.errors import MemberStopped

__all__ = ["StopRequest"]


@dataclass(frozen=True, kw_only=True)
class StopRequest:
    """An orchestrator's request that a member stop its run, with the reason it reads."""

    member: str
    """The member to stop, as its handle (``"@Builder-1"``)."""
    by: str
    """Who asked: a handle, or a label such as ``"user"``."""
    reason: str
    """Why, in the asker's words; the member's model reads it."""

    def for_model(self) -> str:
        """What the stopped member's model reads in place of a tool result."""
        return (
            f"You were stopped by {self.by}: {self.reason}. Stop working: make no more tool calls and end "
            "your turn, saying that you were stopped and why."
        )

    def error(self) -> MemberStopped:
        """The exception that ends the member's run, for the application around it."""
        return MemberStopped(self.member, self.by, self.reason)
