"""pydantic-ai adapter: attach a factory's cards to an ``Agent``.

* ``Agent(model, toolsets=[CardToolset(factory)])`` (or ``factory.toolset()``): the tools,
  and the system-prompt sections as instructions rendered before every request.
* ``Agent(model, capabilities=[TeamContext(factory)])``: the same tools, with the context
  kept out of the prompt's prefix, so provider prompt caches keep hitting while it changes.
* ``factory.toolset(tool_search=True)`` (a :class:`CatalogToolset`): a few tools listed, the
  others found with ``search_tools`` and loaded on demand, MCP servers' tools included.
* ``Agent(model, capabilities=[ModelSwitch(factory)])``: each request runs on the model the
  cards chose (``ModelTool``'s ``switch_model``).
"""

from toolcards.pydantic_ai._catalog import CatalogToolset
from toolcards.pydantic_ai._context import TeamContext
from toolcards.pydantic_ai._model_switch import ModelSwitch
from toolcards.pydantic_ai._toolset import CardToolset, ContextMode

__all__ = ["CardToolset", "CatalogToolset", "ContextMode", "ModelSwitch", "TeamContext"]
