"""The channels a capability can reach an agent through."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["COMMAND", "SYSTEM_PROMPT", "TOOL_CALL", "Channels"]


class Channels(StrEnum):
    """Where a capability is exposed.

    MCP toolsets are not a channel: a card that wraps an external server returns them
    from ``get_toolsets()``.
    """

    TOOL_CALL = "tool_call"
    """A function the LLM may call."""
    SYSTEM_PROMPT = "system_prompt"
    """Text injected into the LLM's context before every model request."""
    COMMAND = "command"
    """A function an orchestrator (or a human, as a slash command) calls from code."""


TOOL_CALL = Channels.TOOL_CALL
SYSTEM_PROMPT = Channels.SYSTEM_PROMPT
COMMAND = Channels.COMMAND
