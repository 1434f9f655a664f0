"""Guards: policy checks that run on every call before the handler.

A guard receives a :class:`GuardContext` and either allows the call (returns ``None``),
rewrites its arguments (returns new ones, validated again), or denies it by raising
:class:`toolcards.errors.GuardError` with a message saying how to comply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolcards.core._channels import Channels

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["Guard", "GuardContext"]


@dataclass(frozen=True, kw_only=True)
class GuardContext:
    """What a guard sees of a call."""

    tool: Tool
    """The tool being called."""
    args: Mapping[str, Any]
    """The validated arguments (after any earlier guard's rewrite)."""
    channel: Channels
    """The channel the call came through."""
    agent: str | None
    """The calling agent's name, when the card is bound to one."""


Guard = Callable[[GuardContext], Mapping[str, Any] | None]
"""Allow (``None``), rewrite (new arguments), or deny (raise ``GuardError``) a call."""
