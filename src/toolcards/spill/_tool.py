"""``SpilledOutputTool``: tool outputs too long for their answer, kept whole in the team's store.

A process with a workspace card spills to workspace files; this card is for the others. Bound,
it offers the team's store as the place to keep such outputs
(:data:`~toolcards.core._services.SPILL_TO_STORE`, used when no workspace serves the caller) and
gives the model ``read_spilled_output`` (a tool call and a command), which reads ``limit``
characters from ``offset`` and says where to read on. Any member reads a spill, in any process
sharing the store. Retention is per team: ``max_mb``, ``max_hours``, the oldest first, at most
:data:`~toolcards.spill._stored.SLOTS`. Pages are untrusted output: a spill is whatever the tool
returned.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import Channels
from toolcards.core._observer import ActorToolObserver
from toolcards.core._output import DEFAULT_OUTPUT_BUDGET
from toolcards.core._params import BaseToolParam
from toolcards.core._services import SPILL_TO_STORE
from toolcards.spill._stored import DEFAULT_MAX_HOURS, DEFAULT_MAX_MB, StoredSpills, stored_spills
from toolcards.store._default import default_store

__all__ = ["ReadSpilledOutputParam", "SpilledOutputTool"]

_FOOTER_ROOM = 120
"""Characters of a page's budget left for the line saying where to read on."""


class ReadSpilledOutputParam(BaseToolParam):
    """``read_spilled_output``: offered as a tool and a command."""

    expose: set[Channels] = {Channels.TOOL_CALL, Channels.COMMAND}


class SpilledOutputTool(ToolCard):
    """Keeps tool outputs too long for their answer in the team's store, for teams without a
    workspace card; ``read_spilled_output`` reads them back. The module docstring says more.

    Args:
        max_mb: Text the team keeps at most, in MB of characters (2**20 each); the oldest
            outputs are deleted first. When cards of one process disagree, the smallest applies.
        max_hours: Outputs older than this are deleted (the smallest of a process's cards applies).
    """

    kind: ClassVar[str] = "spilled_output"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    max_mb: int = Field(default=DEFAULT_MAX_MB, ge=1)
    max_hours: float = Field(default=DEFAULT_MAX_HOURS, gt=0)
    read_spilled_output: ReadSpilledOutputParam | bool = True

    _spills: StoredSpills | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        """Offer the team's store as the place to keep outputs over a tool's budget.

        Raises:
            StoreError: the store cannot be opened.
        """
        spills = stored_spills(default_store(), observer.team_id)
        spills.keep(self.max_mb, self.max_hours)
        observer.team.provide(SPILL_TO_STORE, spills)
        self._spills = spills

    @capability("read_spilled_output", untrusted_output=True)
    def read_spilled(
        self,
        spill_id: Annotated[str, Field(max_length=64)],
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1)] = DEFAULT_OUTPUT_BUDGET,
    ) -> str:
        """Read part of a tool output too long for its answer, saved whole.

        Args:
            spill_id: From the cut answer.
            offset: First character, from 0.
            limit: Characters.
        """
        budget = self.param("read_spilled_output", ReadSpilledOutputParam).output_budget or DEFAULT_OUTPUT_BUDGET
        spills = self.bound(self._spills)
        text, total = spills.page(spill_id, offset, min(limit, max(budget - _FOOTER_ROOM, 1)))
        if offset + len(text) < total:
            # End at a line when one ends in the page's last fifth: the next page starts with it.
            line_end = text.rfind("\n", len(text) * 4 // 5)
            text = text[: line_end + 1] if line_end >= 0 else text
        end = offset + len(text)
        where = "the end" if end >= total else f"read on with offset={end}"
        return f"{text}\n(characters {offset:,}-{end:,} of {total:,}; {where})"
