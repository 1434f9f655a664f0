"""``TeamContext``: a factory's tools, with the team's context kept out of the prompt's prefix.

Provider prompt caches reuse a request's start only when it is byte-identical to an earlier
one, and re-rendering the plan into the instructions (``context="rewrite"``) changes that start
whenever the board does. ``TeamContext`` keeps it still: the instructions hold the context as
the run started; before each request the system-prompt sections are rendered again and, when
something changed, one ``[context update]`` with only the changed lines is appended to the
conversation; after :attr:`TeamContext.full_every` updates, or when the changes would be longer
than the whole, the update carries the whole context, so the model never assembles the state
from many pieces.

Attach it as a capability, ``Agent(model, capabilities=[TeamContext(factory)])``; it carries
the factory's tools (a ``CardToolset`` without instructions) and the model the cards chose
(:class:`~toolcards.pydantic_ai.ModelSwitch`). What the model has seen is tracked per run.
``docs/tokens.md`` compares it with the other modes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelRequest, UserPromptPart

from toolcards.core._channels import Channels
from toolcards.pydantic_ai._model_switch import ModelSwitch
from toolcards.pydantic_ai._toolset import CardToolset

if TYPE_CHECKING:
    from pydantic_ai.capabilities import ModelSelector
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.toolsets import AbstractToolset

    from toolcards.core._factory import ToolFactory

__all__ = ["FULL_EVERY", "ContextTracker", "TeamContext"]

FULL_EVERY = 8
"""Updates after which the next one carries the whole context again."""

UPDATE_RULES = (
    "The team context above is as it was when this conversation started. Later messages that "
    "start with [context update] change it: a 'now:' line is new or replaces the earlier line "
    "with the same label (a task's #id, or the words before its first colon); a 'gone:' line no "
    "longer holds. An update marked 'whole context' replaces everything before it."
)

_TASK = re.compile(r"^- #(\d+) ")
_LABEL = re.compile(r"^([^:#\n]{1,40}):")


def line_label(line: str) -> str | None:
    """What a line is about, so its new version can replace the old: ``#12``, ``Owners``, or ``None``."""
    task = _TASK.match(line)
    if task:
        return f"#{task.group(1)}"
    label = _LABEL.match(line)
    return label.group(1) if label else None


@dataclass
class ContextTracker:
    """What the model has seen of each section, and the compact update that brings it up to date."""

    full_every: int = FULL_EVERY
    shown: dict[str, list[str]] = field(default_factory=dict)
    """Section name → its lines as the model last saw them."""
    updates_since_full: int = 0

    def baseline(self, sections: Sequence[tuple[str, str]]) -> str:
        """The context as a whole (for the instructions); it becomes what the model has seen."""
        self.shown = {name: text.splitlines() for name, text in sections}
        self.updates_since_full = 0
        return "\n\n".join(text for _, text in sections if text)

    def update(self, sections: Sequence[tuple[str, str]]) -> str | None:
        """The ``[context update]`` text for ``sections`` as they are now, or ``None`` if nothing changed."""
        changed: list[str] = []
        for name, text in sections:
            old, new = self.shown.get(name, []), text.splitlines()
            if old == new:
                continue
            old_set, new_set = set(old), set(new)
            added = [line for line in new if line not in old_set]
            relabelled = {label for line in added if (label := line_label(line)) is not None}
            gone = [line for line in old if line not in new_set and line_label(line) not in relabelled]
            changed += [f"now: {line}" for line in added] + [f"gone: {line}" for line in gone]
        if not changed:
            return None
        whole = "\n\n".join(text for _, text in sections if text)
        self.updates_since_full += 1
        self.shown = {name: text.splitlines() for name, text in sections}
        delta = "\n".join(changed)
        if self.updates_since_full > self.full_every or len(delta) >= len(whole):
            self.updates_since_full = 0
            return f"[context update: whole context]\n{whole}"
        return f"[context update]\n{delta}"


@dataclass
class TeamContext(AbstractCapability[Any]):
    """A factory's tools and its system-prompt sections, cache-friendly (see the module docstring).

    Args:
        factory: the bound cards.
        full_every: updates after which the whole context is sent again.
        max_retries: retries the model gets for a tool call it can fix.
    """

    factory: ToolFactory
    full_every: int = FULL_EVERY
    max_retries: int = 2
    _tracker: ContextTracker = field(default_factory=ContextTracker, init=False, repr=False)
    _baseline: str | None = field(default=None, init=False, repr=False)
    _toolset: CardToolset | None = field(default=None, init=False, repr=False)
    _model_switch: ModelSwitch | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._tracker = ContextTracker(full_every=self.full_every)
        self._toolset = CardToolset(self.factory, max_retries=self.max_retries, context="off")
        self._model_switch = ModelSwitch(self.factory)
        names = [tool.name for tool in self.factory.tools(Channels.SYSTEM_PROMPT)]
        self._sections = list(zip(names, self.factory.get_system_prompts(), strict=True))

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        """A fresh copy per run: what the model has seen belongs to one conversation."""
        return dataclasses.replace(self)

    def get_model(self) -> ModelSelector[Any] | None:
        """The model the cards chose (``ModelTool``), from the next request on (:class:`ModelSwitch`)."""
        assert self._model_switch is not None
        return self._model_switch.get_model()

    def get_toolset(self) -> AbstractToolset[Any] | None:
        """The factory's tools, without instructions (this capability provides them)."""
        return self._toolset

    def get_instructions(self) -> Any:
        """The context as the run found it, then how updates work; the same on every request."""

        async def instructions(ctx: RunContext[Any]) -> str | None:
            baseline = await self._ensure_baseline()
            return f"{baseline}\n\n{UPDATE_RULES}" if baseline else None

        return instructions

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Add what changed since the model last looked to the request about to be sent."""
        if self._baseline is None:
            await self._ensure_baseline()
            return request_context
        update = self._tracker.update(await self._render())
        if update is None or not request_context.messages:
            return request_context
        last = request_context.messages[-1]
        if not isinstance(last, ModelRequest):
            return request_context
        updated = dataclasses.replace(last, parts=[*last.parts, UserPromptPart(content=update)])
        request_context.messages[-1] = updated
        # Kept in the run's history, so the next request starts with exactly this one.
        for index in range(len(ctx.messages) - 1, -1, -1):
            if ctx.messages[index] is last:
                ctx.messages[index] = updated
                break
        return request_context

    async def _ensure_baseline(self) -> str:
        if self._baseline is None:
            self._baseline = self._tracker.baseline(await self._render())
        return self._baseline

    async def _render(self) -> list[tuple[str, str]]:
        # Sections may ask actors: off the event loop.
        return await asyncio.to_thread(lambda: [(name, prompt() or "") for name, prompt in self._sections])
