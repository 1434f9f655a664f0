"""``ModelSwitch``: the model a member's cards chose, used from the agent's next model request.

pydantic-ai asks a capability's model selector before every model request step
(``AbstractCapability.get_model``), the same seam its own ``SelectModel`` uses; the selection
is resolved like any model (a string through the providers, profiles and settings of the
model chosen). ``ModelSwitch(factory)`` is that selector for a factory's cards: before each
request it asks them (``ToolFactory.model_selector``: ``ModelTool`` reads the member's choice
from the store, so a switch made by another process counts too, and builds it) and returns

* the model chosen, when there is one;
* otherwise the model the run started with (the agent's own, or ``run(model=...)``).

So a ``switch_model`` call takes effect at the very next request of the same run::

    factory = team.member("Alice").factory(ModelTool(roster=...), PlanningTool())
    agent = Agent("openai:gpt-5-mini", toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])

A team runtime's members get it without asking (``TeamRuntime``), and ``TeamContext`` includes it.

The card, not this selector, decides whether its choice can be built. It builds the choice
through ``resolve`` (handed over as ``selected_model(resolve=...)``), and when that fails it
answers with its default, or with no choice at all. So a choice that cannot be built never
reaches pydantic-ai and never fails a run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError

if TYPE_CHECKING:
    from pydantic_ai.capabilities import ModelSelector
    from pydantic_ai.models import Model, ModelSelectionContext

    from toolcards.core._factory import ToolFactory

__all__ = ["ModelSwitch"]


@dataclass
class ModelSwitch(AbstractCapability[Any]):
    """Run each model request on the model the factory's cards chose (see the module docstring).

    Args:
        factory: The bound cards; without a card that chooses (``ModelTool``) this capability
            selects nothing.
        resolve: Turns a roster value into the model to use before pydantic-ai does (a team
            runtime maps the names of its registered models); handed to the choosing card,
            which builds its choice through it. By default a value goes to pydantic-ai as it is.
    """

    factory: ToolFactory
    resolve: Callable[[Any], Any] | None = None
    _base: Any = field(default=None, init=False, repr=False)

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        """A copy per run: the model a run started with is that run's."""
        return dataclasses.replace(self)

    def get_model(self) -> ModelSelector[Any] | None:
        """A selector asked before every model request, or ``None`` when no card chooses."""
        chosen = self.factory.model_selector()
        if chosen is None:
            return None

        async def select(ctx: ModelSelectionContext[Any]) -> Model | str:
            if ctx.run_step <= 1 or self._base is None:
                self._base = ctx.model
            choice = await asyncio.to_thread(chosen, resolve=self.resolve)  # the card reads the store, builds
            if choice is None:
                if self._base is None:
                    raise UserError("No model to run: give the agent a model, or a default to ModelTool.")
                return self._base  # type: ignore[no-any-return]
            return choice  # type: ignore[no-any-return]

        return select
