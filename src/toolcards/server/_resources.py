"""System prompts as MCP resources and prompts, and notifications when they change.

Each SYSTEM_PROMPT capability of the team (the planning board, the workspace overview...)
is offered twice, so clients that read resources and clients that read prompts both get it:

* a resource at ``toolcards://<team>/<tool_name>`` (``text/markdown``);
* a prompt called ``<tool_name>`` with no arguments, one user message.

The text is rendered for the agent reading it, so "your tasks" means the caller's tasks.

Many clients read neither (pydantic-ai's ``MCPToolset`` among them), so the same sections
are also one tool, :data:`CONTEXT_TOOL` (:func:`context_tool`): every section, rendered for
the caller when it is called.

When the team's state changes (an actor publishes ``StateChanged(source="#PlanningTool")``
on the team's event log), :class:`ResourceNotifier` sends ``notifications/resources/updated``
for the affected resources: to ``subscriptions/listen`` streams (the stateless protocol)
and to connections that called ``resources/subscribe`` (the handshake protocol, on either
server). Which resources a source affects is matched loosely on names (``#PlanningTool`` →
``PlanningTool``'s prompts, ``#WorkspaceActor:x`` → ``WorkspaceTool``'s); a source that
matches no card notifies every prompt resource of the team.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from toolcards.core._channels import Channels
from toolcards.errors import RetriableError, ToolFailed

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = [
    "CONTEXT_TOOL",
    "PROMPT_MIME_TYPE",
    "ResourceNotifier",
    "affected_prompts",
    "context_tool",
    "prompt_name",
    "prompt_uri",
    "render_prompt",
]

logger = logging.getLogger("toolcards.server")

PROMPT_MIME_TYPE = "text/markdown"
CONTEXT_TOOL = "get_team_context"
"""The tool that returns every system prompt section of the caller's cards."""
SCHEME = "toolcards"
_SUFFIX = re.compile(r"(tool|actor|card)$")


def prompt_uri(team_id: str, tool_name: str) -> str:
    """The resource URI of a team's system prompt, ``toolcards://<team>/<tool_name>``."""
    return f"{SCHEME}://{quote(team_id, safe='')}/{quote(tool_name, safe='')}"


def prompt_name(team_id: str, uri: str) -> str | None:
    """The tool name in ``uri``, or ``None`` if ``uri`` is not one of this team's prompt URIs."""
    prefix = f"{SCHEME}://{quote(team_id, safe='')}/"
    if not uri.startswith(prefix):
        return None
    name = unquote(uri[len(prefix) :])
    return name or None


async def render_prompt(tool: Tool) -> str:
    """The text of a SYSTEM_PROMPT tool for its agent, through the pipeline (off the loop).

    A failure renders as one line saying the section is unavailable, as it does for agents.
    """
    try:
        result = await tool.call({}, channel=Channels.SYSTEM_PROMPT)
    except (RetriableError, ToolFailed) as exc:
        logger.warning("system prompt %s failed: %s", tool.name, exc)
        return f"({tool.name} is unavailable: {exc})"
    return "" if result is None else str(result)


def context_tool(
    prompts: Mapping[str, Tool], served: Callable[[str], str], active: Callable[[], None] = lambda: None
) -> Tool:
    """:data:`CONTEXT_TOOL` over ``prompts`` (the caller's SYSTEM_PROMPT tools, in order).

    Each section is rendered through its own pipeline, as an agent's instructions are; a
    failing one renders as a line saying it is unavailable. ``served`` adapts the text to how
    the server offers its tools (facade mode). ``active`` is called at each call: asking for the
    context is the member's work too, and renews the leases of the tasks it holds.
    """
    from toolcards.core._tool import Tool

    def get_team_context() -> str:
        """The team's live context: the plan, what the team knows, your part in it."""
        active()
        sections = []
        for tool in prompts.values():
            try:
                result = tool.call_sync({}, channel=Channels.SYSTEM_PROMPT)
            except (RetriableError, ToolFailed) as exc:
                logger.warning("system prompt %s failed: %s", tool.name, exc)
                result = f"({tool.name} is unavailable: {exc})"
            if result:
                sections.append(str(result))
        return served("\n\n".join(sections) or "The team has no shared context yet.")

    from toolcards.core._hints import ToolHints

    return Tool.from_function(get_team_context, name=CONTEXT_TOOL, hints=ToolHints(title="Team context"))


def _stem(label: str) -> str:
    name = label.lstrip("#@").split(":", 1)[0].lower().replace("_", "")
    return _SUFFIX.sub("", name)


def affected_prompts(source: str, prompts: Mapping[str, str]) -> list[str]:
    """The prompt names (of ``prompts``: name → card class name) a change by ``source`` affects.

    All of them when ``source`` matches no card.
    """
    stem = _stem(source)
    matched = [name for name, card in prompts.items() if stem and _stem(card) == stem]
    return matched or list(prompts)


class ResourceNotifier:
    """Sends resource-updated notifications for a team's state changes.

    Args:
        team_id: The team whose events are watched.
        prompts: Prompt name → the class name of the card producing it.
        bus: The SDK's ``SubscriptionBus`` feeding ``subscriptions/listen`` streams, once
            the SDK server exists (``None`` until then: nothing is published to it).

    :meth:`on_event` is the team subscriber: it runs on the orchestrator's thread and only
    hands the work to the event loop given to :meth:`attach`. Thread-safe.
    """

    def __init__(self, team_id: str, prompts: Mapping[str, str], bus: Any = None) -> None:
        self.team_id = team_id
        self.prompts = dict(prompts)
        self.bus = bus
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._flushing = False
        self._flush_task: asyncio.Task[None] | None = None
        self._connections: dict[int, tuple[Any, set[str]]] = {}

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver notifications on ``loop`` from now on (the loop serving the clients)."""
        self._loop = loop

    # -- legacy per-connection subscriptions ------------------------------------------------

    def subscribe(self, connection: Any, uri: str) -> None:
        """Send ``uri``'s updates to ``connection`` (a handshake-era ``resources/subscribe``):
        anything with ``async send_resource_updated(uri)``."""
        with self._lock:
            _, uris = self._connections.setdefault(id(connection), (connection, set()))
            uris.add(uri)

    def unsubscribe(self, connection: Any, uri: str) -> None:
        """Stop sending ``uri``'s updates to ``connection``."""
        with self._lock:
            entry = self._connections.get(id(connection))
            if entry is not None:
                entry[1].discard(uri)

    def forget(self, connection: Any) -> None:
        """Drop every subscription of ``connection`` (it closed)."""
        with self._lock:
            self._connections.pop(id(connection), None)

    # -- events ----------------------------------------------------------------------------

    def on_event(self, seq: int, event: Any) -> None:
        """Team subscriber: queue notifications for a ``StateChanged`` of this team."""
        if getattr(event, "kind", None) != "state_changed" or getattr(event, "team_id", self.team_id) != self.team_id:
            return
        names = affected_prompts(str(getattr(event, "source", "")), self.prompts)
        if not names:
            return
        uris = [prompt_uri(self.team_id, name) for name in names]
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._queue, uris)
        except RuntimeError:  # the loop closed between the check and the call
            logger.debug("dropped resource notifications for %s: the loop is closed", uris)

    def _queue(self, uris: list[str]) -> None:
        # Runs on the loop. Changes arriving while a flush runs coalesce into the next one.
        self._pending.update(uris)
        if not self._flushing:
            self._flushing = True
            # Held so the task is not collected while it runs.
            self._flush_task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while self._pending:
                uris = sorted(self._pending)
                self._pending.clear()
                if self.bus is not None:
                    from mcp.server.subscriptions import ResourceUpdated

                    for uri in uris:
                        await self.bus.publish(ResourceUpdated(uri=uri))
                with self._lock:
                    targets = [
                        (conn, uri)
                        for conn, subscribed in self._connections.values()
                        for uri in uris
                        if uri in subscribed
                    ]
                for connection, uri in targets:
                    try:
                        await connection.send_resource_updated(uri)
                    except Exception:
                        logger.debug("could not notify a connection of %s", uri, exc_info=True)
        finally:
            self._flushing = False
