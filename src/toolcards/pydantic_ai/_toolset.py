"""``CardToolset``: a factory's tools and system prompts as one pydantic-ai toolset.

The toolset owns validation (the pipeline every channel uses), so the model sees the schema
MCP clients see and the same bad input gets the same message everywhere. Translation at this
boundary: ``RetriableError`` → ``ModelRetry``; ``ToolFailed`` → pydantic-ai ``ToolFailed``;
the pipeline's ``ApprovalRequired`` → pydantic-ai's ``ApprovalRequired`` (the run ends with
``DeferredToolRequests`` and resumes with the decision; an approved call runs with
``approved=True``), unless the factory's ``approve`` hook decides at once.

System prompts become the toolset's instructions, re-evaluated before every model request in a
worker thread (they may ask actors), one named part per section. ``context`` says how a changed
section reaches the model: ``"rewrite"`` renders the instructions afresh each request,
``"append"`` keeps the first version and appends each change as an instruction delta (so the
prompt's start stays byte-identical for provider caches), ``"off"`` sends none
(:class:`~toolcards.pydantic_ai.TeamContext` gives them instead). ``docs/tokens.md`` says which
to choose.

**Conversations** (:mod:`toolcards.core._conversation`): each run is one, named by its run id and
begun at its first model request, current while its tool calls run; state that remembers what
a member has seen (the workspace's write gate) tells two runs of one member apart by it.

**Steering** (:mod:`toolcards.core._steering`), whatever ``context`` is: texts the cards hand
over (messages, due reminders) join the next model request as user messages, once each; a stop
request fails the next tool call with the text the model reads and ends the run with
:class:`~toolcards.errors.MemberStopped` before the next model request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry
from pydantic_ai.exceptions import ToolFailed as PydanticAIToolFailed
from pydantic_ai.messages import InstructionPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from toolcards.core._approval import ApprovalRequired as CallNotApproved
from toolcards.core._channels import Channels
from toolcards.core._conversation import Conversation, begin_conversation, conversing
from toolcards.errors import RetriableError, ToolFailed, WiringError
from toolcards.pydantic_ai._arguments import PASS_THROUGH

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcards.core._factory import ToolFactory
    from toolcards.core._steering import StopRequest

__all__ = ["CardToolset", "ContextMode", "factory_toolset"]

ContextMode = Literal["append", "rewrite", "off"]
"""How a changed system-prompt section reaches the model (see the module docstring); ``"off"``:
the toolset gives no instructions (``TeamContext`` gives them instead)."""

_STOPPED_RUNS_KEPT = 64
"""Runs remembered as stopped at a tool call, until their next model request ends them."""

_RUNS_KEPT = 1024
"""Runs whose conversation (and when it began) is remembered, the least recently active
forgotten first."""


class CardToolset(AbstractToolset[Any]):
    """Every TOOL_CALL tool of a :class:`~toolcards.core._factory.ToolFactory`, plus its
    SYSTEM_PROMPT sections as instructions."""

    def __init__(
        self,
        factory: ToolFactory,
        *,
        max_retries: int = 2,
        id: str | None = "toolcards",
        context: ContextMode = "rewrite",
    ) -> None:
        if context not in ("append", "rewrite", "off"):
            raise ValueError(f"context must be 'append', 'rewrite' or 'off', not {context!r}")
        self.factory = factory
        self.max_retries = max_retries
        self.context: ContextMode = context
        self._id = id
        self._tools = {tool.name: tool for tool in factory.tools(Channels.TOOL_CALL)}
        self._prompts = factory.get_system_prompts()
        self._prompt_names = [tool.name for tool in factory.tools(Channels.SYSTEM_PROMPT)]
        self._definitions: dict[str, ToolsetTool[Any]] | None = None
        self._steering = factory.steers
        self._stopped: dict[str, StopRequest] = {}
        """Run id → the stop a tool call of that run delivered; its next model request raises it."""
        self._runs: OrderedDict[str, Conversation] = OrderedDict()
        """Run id → the run's conversation, begun at its first model request."""

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def label(self) -> str:
        cards = ", ".join(type(card).__name__ for card in self.factory.cards)
        return f"CardToolset({cards})"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # Called before each model request: the first one of a run is when the run began.
        self._conversation(ctx)
        if self._definitions is None:
            self._definitions = {
                name: ToolsetTool(
                    toolset=self,
                    tool_def=ToolDefinition(
                        name=name,
                        description=tool.description,
                        parameters_json_schema=tool.parameters_schema,
                    ),
                    max_retries=self.max_retries,
                    args_validator=PASS_THROUGH,  # the pipeline validates
                )
                for name, tool in self._tools.items()
            }
        return self._definitions

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        target = self._tools[name]
        if self._steering:
            stop = self._stopped.get(ctx.run_id or "") or await asyncio.to_thread(self.factory.take_stop)
            if stop is not None:
                self._remember_stop(ctx.run_id, stop)
                raise PydanticAIToolFailed(stop.for_model())
        try:
            with conversing(self._conversation(ctx)):
                return await target.call(
                    tool_args,
                    channel=Channels.TOOL_CALL,
                    call_id=ctx.tool_call_id,
                    approved=ctx.tool_call_approved,
                    idempotency_key=_idempotency_key(ctx),
                )
        except CallNotApproved as exc:
            if exc.deferrable:
                raise ApprovalRequired(metadata={"tool": name, "args": tool_args}) from exc
            raise PydanticAIToolFailed(str(exc)) from exc
        except RetriableError as exc:
            raise ModelRetry(str(exc)) from exc
        except ToolFailed as exc:
            raise PydanticAIToolFailed(str(exc)) from exc

    async def get_instructions(self, ctx: RunContext[Any]) -> list[InstructionPart] | None:
        render = bool(self._prompts) and self.context != "off"
        # Texts are taken only where they can be delivered: a context without a run's message
        # queue (a synthetic one) cannot take them.
        steer = self._steering and getattr(ctx, "pending_messages", None) is not None
        stopped = self._stopped.pop(ctx.run_id, None) if ctx.run_id else None
        if stopped is not None:
            raise stopped.error()
        if not render and not steer:
            return None
        stop, texts, sections = await asyncio.to_thread(self._before_request, render, steer)
        if stop is not None:
            raise stop.error()
        for text in texts:
            ctx.enqueue(text)
        if not render:
            return None
        # Named parts of an addressable toolset: pydantic-ai appends a changed one as a delta
        # (append), or re-renders the prefix (rewrite). An empty section is kept in append mode,
        # so its withdrawal is recorded rather than silently dropped.
        append = self.context == "append" and self._id is not None
        mode: Literal["append", "rewrite"] = "append" if append else "rewrite"
        parts = [
            InstructionPart(content=section or "", dynamic=True, name=name, on_change=mode)
            for name, section in zip(self._prompt_names, sections, strict=True)
            if section or mode == "append"
        ]
        return parts or None

    def _before_request(self, render: bool, steer: bool) -> tuple[StopRequest | None, list[str], list[str | None]]:
        """In a worker thread: a stop request, else the texts to deliver, then the sections.

        The sections are rendered after the texts were taken, so a section announcing unread
        messages no longer counts those the model is about to read.
        """
        if steer:
            stop = self.factory.take_stop()
            if stop is not None:
                return stop, [], []
        texts = self.factory.deliveries() if steer else []
        sections = [prompt() for prompt in self._prompts] if render else []
        return None, texts, sections

    def _conversation(self, ctx: RunContext[Any]) -> Conversation | None:
        """The conversation of ``ctx``'s run, begun now if this is the first time it is seen;
        ``None`` for a context outside a run (no run id)."""
        run_id = ctx.run_id
        if run_id is None:
            return None
        conversation = self._runs.get(run_id)
        if conversation is None:
            conversation = self._runs[run_id] = begin_conversation(run_id)
            while len(self._runs) > _RUNS_KEPT:
                self._runs.popitem(last=False)
        else:
            # A run still going is kept with its beginning (unless another thread's new run
            # has just pushed it out).
            with contextlib.suppress(KeyError):
                self._runs.move_to_end(run_id)
        return conversation

    def _remember_stop(self, run_id: str | None, stop: StopRequest) -> None:
        if run_id is None:
            return
        self._stopped[run_id] = stop
        while len(self._stopped) > _STOPPED_RUNS_KEPT:
            del self._stopped[next(iter(self._stopped))]


def factory_toolset(
    factory: ToolFactory,
    *,
    max_retries: int = 2,
    context: ContextMode = "rewrite",
    tool_search: bool = False,
    hot_tools: Iterable[str] = (),
) -> AbstractToolset[Any]:
    """What :meth:`ToolFactory.toolset <toolcards.core._factory.ToolFactory.toolset>` returns:
    a :class:`CardToolset`, or with ``tool_search`` a
    :class:`~toolcards.pydantic_ai.CatalogToolset` around it and the cards' MCP toolsets.

    Raises:
        WiringError: ``hot_tools`` without ``tool_search``, or naming a tool the cards do not
            have (when no MCP toolset could have it).
    """
    cards = CardToolset(factory, max_retries=max_retries, context=context)
    hot = frozenset(hot_tools)
    if not tool_search:
        if hot:
            raise WiringError("hot_tools lists tools kept in view by tool search: pass tool_search=True too.")
        return cards
    from pydantic_ai.toolsets import CombinedToolset

    from toolcards.pydantic_ai._catalog import CatalogToolset

    extra = factory.get_toolsets()
    unknown = sorted(hot - {tool.name for tool in factory.tools(Channels.TOOL_CALL)})
    if unknown and not extra:
        raise WiringError(
            f"hot_tools names tools these cards do not offer: {', '.join(unknown)}. "
            "Give names of their tool-call tools."
        )
    wrapped: AbstractToolset[Any] = CombinedToolset([cards, *extra]) if extra else cards
    return CatalogToolset(
        wrapped, hot_tools=hot | factory.context_tools(), entries=factory.catalog_entries, max_retries=max_retries
    )


def _idempotency_key(ctx: RunContext[Any]) -> str | None:
    """The key that names this tool call when it is made again: the run, its step and the
    call's id.

    The run id is fresh per run and stays the same when a durable workflow executes the run
    again, and the step tells apart calls of providers that number their ids per response
    (``call_0``); so a repeat of this call has this key and no other call does.
    """
    if ctx.run_id is None or ctx.tool_call_id is None:
        return None
    return f"{ctx.run_id}/{ctx.run_step}/{ctx.tool_call_id}"
