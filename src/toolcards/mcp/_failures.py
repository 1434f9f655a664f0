"""Translate MCP client failures once, at the boundary.

fastmcp and the MCP SDK report a dead server as whatever the layer that noticed raised: a
``RuntimeError`` wrapping an ``httpx2.ConnectError`` or ``FileNotFoundError``, an
``MCPError``, an exception group from a task group, a ``TimeoutError``. This module turns
them into messages that name the server and the cause:

* :func:`describe_failure` — ``"ConnectError: All connection attempts failed"`` for any of
  those shapes;
* :func:`toolcards_error_in` — a toolcards error carried inside one (an OAuth sign-in that
  cannot happen, an unset variable), which must reach the caller unchanged;
* :func:`translated` — wraps a toolset so a connection failure during an agent run raises
  :class:`~toolcards.errors.ToolFailed` naming the server (instead of a raw transport
  error), and a failure during one tool call becomes a failed tool result the model reads
  (pydantic-ai's ``ToolFailed``) while the run goes on. pydantic-ai's own signals
  (``ModelRetry``, ``ToolFailed``, ...) pass through untouched.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from toolcards.errors import ToolcardsError, ToolFailed

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

__all__ = ["describe_failure", "timed_out", "toolcards_error_in", "translated"]

logger = logging.getLogger(__name__)

_FASTMCP_CONNECT_PREFIX = "Client failed to connect: "


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and everything it wraps: causes, contexts and exception-group members."""
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if any(current is known for known in seen):
            continue
        seen.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return seen


def toolcards_error_in(exc: BaseException) -> ToolcardsError | None:
    """The first toolcards error among ``exc`` and what it wraps, or ``None``."""
    for cause in _causes(exc):
        if isinstance(cause, ToolcardsError):
            return cause
    return None


def timed_out(exc: BaseException) -> bool:
    """Whether a timeout is among ``exc`` and what it wraps."""
    return any(isinstance(cause, TimeoutError) for cause in _causes(exc))


def describe_failure(exc: BaseException) -> str:
    """``"<type>: <message>"`` of the failure that matters inside ``exc``.

    Exception groups are unwrapped to their first member, and fastmcp's
    ``RuntimeError("Client failed to connect: ...")`` to its cause.
    """
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    text = str(leaf).strip()
    if text.startswith(_FASTMCP_CONNECT_PREFIX) and leaf.__cause__ is not None:
        return describe_failure(leaf.__cause__)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _is_control_flow(exc: BaseException) -> bool:
    # pydantic-ai's own signals (ModelRetry, ToolFailed, CallDeferred, ApprovalRequired,
    # UserError) already mean what they should to the agent.
    return type(exc).__module__.split(".")[0] == "pydantic_ai"


def _connection_failure(label: str, exc: Exception) -> ToolcardsError:
    own = toolcards_error_in(exc)
    if own is not None:
        return own
    return ToolFailed(f"Could not connect to MCP server {label}: {describe_failure(exc)}.")


def translated(toolset: AbstractToolset[Any], server_label: str) -> AbstractToolset[Any]:
    """``toolset`` behind the translation described in the module docstring."""
    wrapper: AbstractToolset[Any] = _translated_class()(wrapped=toolset, server_label=server_label)
    return wrapper


@functools.cache
def _translated_class() -> type[Any]:
    from dataclasses import dataclass

    from pydantic_ai.exceptions import ToolFailed as FailedToolResult
    from pydantic_ai.toolsets import WrapperToolset

    @dataclass
    class MCPFailuresTranslated(WrapperToolset[Any]):
        server_label: str = ""

        async def __aenter__(self) -> MCPFailuresTranslated:
            try:
                await self.wrapped.__aenter__()
            except Exception as exc:
                if _is_control_flow(exc):
                    raise
                raise _connection_failure(self.server_label, exc) from exc
            return self

        async def __aexit__(self, *args: Any) -> bool | None:
            try:
                return await self.wrapped.__aexit__(*args)
            except Exception as exc:
                if _is_control_flow(exc):
                    raise
                # Closing a connection to a server that died must not fail a run that is
                # otherwise over; a failure of the run itself still propagates (None).
                logger.warning(
                    "Closing the connection to MCP server %s failed: %s", self.server_label, describe_failure(exc)
                )
                return None

        async def get_tools(self, ctx: Any) -> dict[str, Any]:
            try:
                return await self.wrapped.get_tools(ctx)
            except Exception as exc:
                if _is_control_flow(exc):
                    raise
                raise _connection_failure(self.server_label, exc) from exc

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            try:
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
            except Exception as exc:
                if _is_control_flow(exc):
                    raise
                own = toolcards_error_in(exc)  # e.g. a sign-in that is needed again
                raise FailedToolResult(
                    str(own)
                    if own is not None
                    else f"MCP server {self.server_label} failed during the call ({describe_failure(exc)}). "
                    "It may be down: continue without this tool or try again later."
                ) from exc

    return MCPFailuresTranslated
