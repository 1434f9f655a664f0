"""Approval: a capability whose param sets ``requires_approval`` runs only once approved.

Approval is a pipeline step (:class:`~toolcards.core._tool.Tool`) after validation and guards,
before the concurrency limit, timeout and handler, so every channel refuses alike and the
approver sees the arguments really used. A call is approved when its caller says so
(``approved=True``: pydantic-ai's deferred tools, ``serve --approve-all``, ``call
--approve``), when the factory's :data:`Approver` returns ``True``, or when the approver made
current by whoever runs the call (:func:`approving`; the MCP server asks the client's user)
does. Otherwise it raises :class:`ApprovalRequired`, a ``ToolFailed`` telling the model the
call did not run, which each adapter translates (deferred tool requests, an ``isError``
result naming ``--approve-all``, a line naming ``--approve``, text from ``get_tools()``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolcards.core._channels import Channels
from toolcards.errors import ApprovalRequired

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["ApprovalRequest", "ApprovalRequired", "Approver", "approving", "current_approver"]


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """What an :data:`Approver` is asked to approve: one call, about to run."""

    tool: Tool
    """The tool being called (its ``name`` and ``description`` say what it does)."""
    args: Mapping[str, Any]
    """The validated arguments, after every guard's rewrite: exactly what the handler gets."""
    channel: Channels
    """The channel the call came through."""
    agent: str | None
    """The calling agent's handle, when the card is bound to one."""
    call_id: str | None
    """The caller's id of this call, when it gave one."""

    def describe(self) -> str:
        """One line for a human: the tool, the agent and the arguments (long values clipped)."""
        shown = ", ".join(f"{key}={_clip(value)}" for key, value in self.args.items())
        who = f"{self.agent} wants to run" if self.agent else "Run"
        return f"{who} {self.tool.name}({shown})"


Approver = Callable[[ApprovalRequest], bool]
"""Decides a call of a tool that requires approval: ``True`` runs it, ``False`` refuses it.

It may block (to ask a human); on async channels it runs in a worker thread. To refuse
with your own message, raise :class:`ApprovalRequired`; any other exception fails the call
as ``ToolFailed``. The handler runs only after it returned ``True``.
"""


_current: ContextVar[Approver | None] = ContextVar("toolcards_approver", default=None)


def current_approver() -> Approver | None:
    """The approver the caller of the running call made current, or ``None``."""
    return _current.get()


@contextlib.contextmanager
def approving(approver: Approver | None) -> Iterator[None]:
    """Ask ``approver`` about calls run in the ``with`` block whose tool has none of its own.

    The async pipeline copies it into the handler's thread, so the approver runs there (it
    may block on a human). Added in 0.3.
    """
    reset = _current.set(approver)
    try:
        yield
    finally:
        _current.reset(reset)


def not_approved(tool_name: str) -> ApprovalRequired:
    """The refusal of a call nobody approved (no approver was configured)."""
    return ApprovalRequired(
        f"{tool_name} needs a human's approval and was not approved, so it did not run. "
        "Tell the user what you wanted to do and why, and continue without it.",
        deferrable=True,
    )


def declined(tool_name: str) -> ApprovalRequired:
    """The refusal of a call the approver declined."""
    return ApprovalRequired(
        f"The user declined this call of {tool_name}, so it did not run. "
        "Do not repeat it; ask the user how to proceed or continue without it."
    )


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
