"""The conversation a call belongs to: the run or session of a member's work that made it.

One member may work in several conversations at once: two pydantic-ai runs of one agent (a web
app answering two requests as that member), two MCP clients connected under one name. What one
of them read, the other has not seen, so state that remembers what a member has seen (the
workspace's write gate) keeps it per conversation as well. The adapters make a call's
conversation current while its handler runs, as they pass idempotency keys: the run id for
pydantic-ai (:class:`~toolcards.pydantic_ai.CardToolset`), the connection for MCP over stdio
(:class:`~toolcards.server._connection.McpConnection`), or the request itself where the caller
names none (:meth:`TeamServer.call <toolcards.server._app.TeamServer.call>`: the SDK's HTTP
server, which then tells apart only calls running at the same time).
A call made without one (an orchestrator's command, :meth:`Tool.call_sync
<toolcards.core._tool.Tool.call_sync>` from code) belongs to no conversation.

A conversation knows when it began, as a :func:`moment`: what its member learned before then
may be in its history (an earlier run's messages, a client's before it reconnected); what its
member learned after it began, elsewhere, it has not seen. An actor runs its messages in a
context of its own, so it never sees the caller's: pass :func:`current_conversation` along, as
the workspace card does to its actor.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Conversation", "begin_conversation", "conversing", "current_conversation", "moment"]

_moments = itertools.count(1)


def moment() -> int:
    """A number greater than every one this process gave out before: the order of events
    across threads (``next`` on an ``itertools.count`` is one step under the GIL)."""
    return next(_moments)


@dataclass(frozen=True, slots=True)
class Conversation:
    """One run or session of a member's work."""

    id: str
    """Unique in the process: a pydantic-ai run id, or one made for a connection or request."""
    began: int
    """The :func:`moment` its adapter first saw it."""


def begin_conversation(id: str | None = None) -> Conversation:
    """A conversation beginning now, named ``id`` (default: a new unique name)."""
    return Conversation(id=id if id is not None else uuid.uuid4().hex, began=moment())


_current: ContextVar[Conversation | None] = ContextVar("toolcards_conversation", default=None)


def current_conversation() -> Conversation | None:
    """The conversation of the call running in this context, or ``None`` when it has none."""
    return _current.get()


@contextlib.contextmanager
def conversing(conversation: Conversation | None) -> Iterator[None]:
    """Run the ``with`` block as part of ``conversation`` (``None``: of none)."""
    token = _current.set(conversation)
    try:
        yield
    finally:
        _current.reset(token)
