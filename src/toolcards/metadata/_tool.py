"""``MetadataTool``: the team's business context, in every member's context, set by the team's people.

``team_metadata`` (system prompt, command) shows the fields and notes before every request;
``set_metadata(fields, text)`` is a command. Metadata comes from the card's config
(``fields``, ``text``: what a deployment knows) and the team's store
(``"<team>/#MetadataTool"``, which ``set_metadata`` changes for every member of every process;
:mod:`toolcards.metadata._render` merges the two). The block is read from the store before
each render, cheaply when nothing changed, so a change shows at every member's next request.

``set_metadata`` is not a model's tool by default: what every member reads as the business's
own statement should not be rewritten by one member's model from something it read. Add
``TOOL_CALL`` to its ``expose`` when a member should keep it (a coordinator recording what the
customer decided).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, PrivateAttr, field_validator

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.errors import RetriableError
from toolcards.metadata._actor import METADATA_ACTOR_NAME, MetadataActor, MetadataProxy
from toolcards.metadata._models import TEXT_MAX, TeamMetadata, field_name_problem, value_problem
from toolcards.metadata._render import render_metadata
from toolcards.store._default import default_store

__all__ = ["MetadataTool", "SetMetadataParam", "TeamMetadataParam"]


class TeamMetadataParam(BaseToolParam):
    """The team's metadata in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class SetMetadataParam(BaseToolParam):
    """Change the team's metadata (a command by default; add TOOL_CALL to let the model)."""

    expose: set[Channels] = {COMMAND}


class MetadataTool(ToolCard):
    """The team's business context: named fields and notes, from the config and the store."""

    kind: ClassVar[str] = "metadata"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    fields: dict[str, str] = Field(default_factory=dict)
    """Short named facts (``customer: Acme``), shown in this order; a field set in the store
    with the same name replaces its value."""
    text: str = Field(default="", max_length=TEXT_MAX)
    """Notes in Markdown, shown after the fields; notes set in the store replace them."""
    team_metadata: TeamMetadataParam | bool = True
    set_metadata: SetMetadataParam | bool = True
    _board: MetadataProxy | None = PrivateAttr(default=None)
    _rendered: tuple[int, str | None] | None = PrivateAttr(default=None)

    @field_validator("fields")
    @classmethod
    def _valid_fields(cls, fields: dict[str, str]) -> dict[str, str]:
        problems = [
            p for name, value in fields.items() for p in (field_name_problem(name), value_problem(name, value)) if p
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return fields

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        self._board = agent.team.get_or_spawn(
            METADATA_ACTOR_NAME, MetadataActor, agent.team_id, default_store(), proxy=MetadataProxy
        )

    @property
    def board(self) -> MetadataProxy:
        """The team's metadata actor (after binding)."""
        return self.bound(self._board)

    def metadata(self) -> TeamMetadata:
        """What the team's store holds now."""
        return self.ask(self.board.metadata(), actor=METADATA_ACTOR_NAME)

    @capability("team_metadata")
    def show(self) -> str | None:
        """The team's business context."""
        stored = self.metadata()
        cached = self._rendered
        if cached is not None and cached[0] == stored.version:
            return cached[1]
        block = render_metadata(self.fields, self.text, stored)
        self._rendered = (stored.version, block)
        return block

    @capability("set_metadata", mutates=True, hints=ToolHints(destructive=True, idempotent=True))
    def change(self, fields: dict[str, str] | None = None, text: str | None = None) -> str:
        """Set the team's business context for every member.

        Args:
            fields: Named facts to set; an empty value removes one.
            text: Notes in Markdown, replacing the earlier notes; empty removes them.
        """
        if not fields and text is None:
            raise RetriableError("Nothing to set: give fields (name → value) or text.")
        problems = [
            p
            for name, value in (fields or {}).items()
            for p in (field_name_problem(name), value_problem(name, value))
            if p
        ]
        if text is not None and len(text) > TEXT_MAX:
            problems.append(f"text: {len(text)} characters; the notes have at most {TEXT_MAX}")
        if problems:
            raise RetriableError("Nothing was changed: " + "; ".join(problems) + ".")
        stored = self.ask(self.board.update(dict(fields or {}), text), actor=METADATA_ACTOR_NAME)
        return render_metadata(self.fields, self.text, stored) or "The team has no metadata now."
