"""``BaseToolParam``: the configuration of one capability of a card."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolcards.core._channels import Channels

__all__ = ["BaseToolParam"]


class BaseToolParam(BaseModel):
    """One capability's configuration.

    Subclasses set the default ``expose`` and add fields that change the capability's
    runtime behaviour (a param field the card never reads is dead configuration). The
    LLM-facing parameters are not mirrored here: they live on the signature of the
    function the card produces.

    The pipeline fields (``requires_approval``, ``timeout_s``, ``max_concurrency``,
    ``output_budget``, ``max_argument_chars``) override the defaults the card declared for
    its capability.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    expose: set[Channels] = Field(default_factory=lambda: {Channels.TOOL_CALL})
    """The channels this capability is offered on."""
    instructions: str | None = None
    """Text appended to the description of every tool and command made from this param."""
    requires_approval: bool = False
    """Calls run only once approved, on every channel (see :mod:`toolcards.core._approval`):
    pydantic-ai defers them, the MCP server asks the client's user (or runs them under
    ``--approve-all``), ``toolcards call`` needs ``--approve``, other callers pass
    ``approved=True`` or a ``ToolFactory(approve=...)``."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Stop waiting for the handler after this many seconds (``None``: the card's default)."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """At most this many calls of this capability run at once (``None``: the card's default)."""
    output_budget: int | None = Field(default=None, ge=100)
    """Characters of output kept before cutting with a notice (``None``: the card's default)."""
    max_argument_chars: int | None = Field(default=None, ge=2)
    """Calls whose arguments, as JSON text, are longer than this are refused before
    validation (``None``: the card's default, else 8,000,000)."""
