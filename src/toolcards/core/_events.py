"""Events that cards, tools and actors publish to observers and subscribers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["StateChanged", "ToolExecutionRecord", "ToolcardsEvent"]


def _now() -> datetime:
    return datetime.now(UTC)


class ToolcardsEvent(BaseModel):
    """Base of every event: what happened, for which team, when."""

    model_config = ConfigDict(frozen=True)

    kind: str
    team_id: str | None = None
    at: datetime = Field(default_factory=_now)


class StateChanged(ToolcardsEvent):
    """A stateful actor committed a non-empty change.

    ``seq`` increases by one per change and is persisted with the state, so it keeps
    increasing across restarts.
    """

    kind: Literal["state_changed"] = "state_changed"
    source: str
    """The actor's name, e.g. ``"#PlanningTool"``."""
    seq: int
    summary: str
    """One line saying what changed, e.g. ``"created tasks 3, 4; deleted task 1"``."""


class ToolExecutionRecord(ToolcardsEvent):
    """One call through the tool pipeline, successful or not."""

    kind: Literal["tool_execution"] = "tool_execution"
    tool: str
    call_id: str
    agent: str | None
    channel: str
    success: bool
    error: str | None = None
    latency_ms: float
