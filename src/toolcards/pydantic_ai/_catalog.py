"""``CatalogToolset``: a few tools listed, the rest found by search and loaded on demand.

An agent with sixty tools pays for sixty definitions on every request. Wrapped in a
``CatalogToolset`` (``member.toolset(..., tool_search=True)``) it is shown a fixed small set:
``search_tools(query)`` (ranked by :mod:`toolcards.core._catalog`, as the MCP facade ranks;
hits scoring at least :data:`LOAD_SHARE` of the best are loaded), ``describe_tool(name)``
(which loads the tool), the ``hot_tools`` and the cards' ``context_tools``. ``docs/tool-search.md``
describes the answers.

A loaded tool's definition is sent with every later request and called directly. What was
loaded is read from the conversation itself (the meta tool's result ``metadata``, which no
model reads), so it holds across runs continuing the history and a new conversation starts
small. Loaded definitions are appended in the order found, so each request's tool list starts
with the previous one's and prompt caches keep their prefix. It wraps any toolset, MCP
toolsets included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import ModelRequest, ToolReturn, ToolReturnPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from toolcards.core._catalog import (
    DESCRIBE_TOOL,
    SEARCH_TOOLS,
    CatalogEntry,
    CatalogTool,
    ToolCatalog,
    did_you_mean,
)
from toolcards.core._channels import Channels
from toolcards.core._tool import Tool
from toolcards.errors import RetriableError
from toolcards.pydantic_ai._arguments import PASS_THROUGH

__all__ = ["LOADED_KEY", "LOAD_SHARE", "SEARCH_HITS", "CatalogToolset", "loaded_tool_names"]

LOADED_KEY = "toolcards.loaded"
"""The ``metadata`` key of a ``search_tools`` / ``describe_tool`` result that names the tools it loaded."""
SEARCH_HITS = 3
"""The tools one search shows: a query names one need; a second need is a second search."""
LOAD_SHARE = 0.6
"""A search loads the hits scoring at least this share of the best hit's score (the best always):
the tools the query is about, not every tool it brushed against."""

_META_NAMES = frozenset({SEARCH_TOOLS, DESCRIBE_TOOL})


def loaded_tool_names(messages: Iterable[Any]) -> list[str]:
    """The tools loaded in a conversation, in the order they were first loaded."""
    loaded: dict[str, None] = {}
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if (
                isinstance(part, ToolReturnPart)
                and part.tool_name in _META_NAMES
                and isinstance(part.metadata, dict)
                and isinstance(names := part.metadata.get(LOADED_KEY), list)
            ):
                loaded.update(dict.fromkeys(name for name in names if isinstance(name, str)))
    return list(loaded)


def _meta_tools(toolset: CatalogToolset) -> dict[str, Tool]:
    """``search_tools`` and ``describe_tool`` as pipeline tools: their signatures are the schemas.

    Each returns ``{"text": what the model reads, "loaded": the tools it loads}``.
    """

    def search_tools(query: str) -> dict[str, Any]:
        """Find tools for a task, best first; the best become callable.

        Args:
            query: The task, e.g. 'edit a file'.
        """
        catalog = toolset.catalog()
        hits = catalog.search(query, SEARCH_HITS)
        best = hits[0]["score"]
        loaded: dict[str, None] = {}
        names: list[str] = []
        found: list[str] = []
        for hit in hits:
            entry = catalog.entry_of(hit)
            load = hit["score"] >= LOAD_SHARE * best
            if load:
                loaded[hit["name"]] = None
                if entry is not None:
                    loaded.update(dict.fromkeys(entry.tools))
            if entry is not None:
                call = f"{hit['name']}({', '.join(f'{k}={v!r}' for k, v in hit['arguments'].items())})"
                found.append(f"{call}{'' if load else ' (describe_tool loads it)'}: {hit['summary']}")
            elif load:
                names.append(hit["name"])
            else:
                found.append(f"{hit['name']} (describe_tool loads it): {hit['summary']}")
        lines = [f"Loaded: {', '.join(names)}."] if names else []
        lines += [f"Found: {line}" for line in found]
        return {"text": "\n".join(lines), "loaded": list(loaded)}

    def describe_tool(name: str) -> dict[str, Any]:
        """One tool's description; the tool becomes callable."""
        tool = toolset.catalog().resolve(name)
        return {"text": f"{tool.name} is loaded: {tool.description}", "loaded": [tool.name]}

    return {
        SEARCH_TOOLS: Tool.from_function(search_tools, name=SEARCH_TOOLS),
        DESCRIBE_TOOL: Tool.from_function(describe_tool, name=DESCRIBE_TOOL),
    }


@dataclass
class CatalogToolset(WrapperToolset[Any]):
    """``wrapped``'s tools behind ``search_tools`` and ``describe_tool`` (see the module docstring).

    Args:
        wrapped: The toolset whose tools are searched: a ``CardToolset``, or a
            ``CombinedToolset`` of it and MCP toolsets. Its instructions pass through.
        hot_tools: Tools always listed, by name. A name no wrapped toolset has is a
            ``UserError`` at the first request (``factory.toolset()`` checks the cards' own
            tools at once).
        entries: Called at each search for what cards offer besides their tools
            (``ToolFactory.catalog_entries``).
        max_retries: Retries the model gets for a search it can fix (no words, a bad limit).

    Raises:
        UserError: a wrapped tool is called ``search_tools`` or ``describe_tool``.
    """

    hot_tools: frozenset[str] = frozenset()
    entries: Callable[[], Sequence[CatalogEntry]] | None = None
    max_retries: int = 2
    _catalog: ToolCatalog[CatalogTool] | None = field(default=None, init=False, repr=False)
    _catalog_key: tuple[tuple[str, str], ...] | None = field(default=None, init=False, repr=False)
    _metas: dict[str, Tool] = field(default_factory=dict, init=False, repr=False)
    _meta_definitions: dict[str, ToolsetTool[Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.hot_tools = frozenset(self.hot_tools)
        self._metas = _meta_tools(self)
        self._meta_definitions = {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name, description=tool.description, parameters_json_schema=tool.parameters_schema
                ),
                max_retries=self.max_retries,
                args_validator=PASS_THROUGH,
            )
            for name, tool in self._metas.items()
        }

    @property
    def label(self) -> str:
        return f"CatalogToolset({self.wrapped.label})"

    def catalog(self) -> ToolCatalog[CatalogTool]:
        """The catalog of the wrapped tools as last listed.

        Raises:
            RetriableError: no request has listed the tools yet (a search before any request).
        """
        if self._catalog is None:
            raise RetriableError("The tools are not listed yet; search again.")
        return self._catalog

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        found = await self.wrapped.get_tools(ctx)
        clash = sorted(_META_NAMES & found.keys())
        if clash:
            raise UserError(
                f"{self.wrapped.label} has a tool called {', '.join(clash)}, which tool search uses; "
                "rename it or turn tool search off."
            )
        self._index(found)
        unknown = sorted(self.hot_tools - found.keys())
        if unknown:
            hints = [
                f"{name} (did you mean {', '.join(close)}?)" if (close := did_you_mean(name, found)) else name
                for name in unknown
            ]
            raise UserError(f"hot_tools names tools the agent does not have: {', '.join(hints)}.")
        listed: dict[str, ToolsetTool[Any]] = dict(self._meta_definitions)
        listed.update((name, tool) for name, tool in found.items() if name in self.hot_tools)
        for name in loaded_tool_names(ctx.messages):
            if name in found and name not in listed:
                listed[name] = found[name]
        return listed

    def _index(self, found: dict[str, ToolsetTool[Any]]) -> None:
        key = tuple((name, tool.tool_def.description or "") for name, tool in found.items())
        if key == self._catalog_key:
            return
        tools = {
            name: CatalogTool(
                name=name,
                description=tool.tool_def.description or "",
                parameters_schema=tool.tool_def.parameters_json_schema,
            )
            for name, tool in found.items()
        }
        self._catalog, self._catalog_key = ToolCatalog(tools, self.entries), key

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        meta = self._metas.get(name) if tool.toolset is self else None
        if meta is None:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        try:
            result = await meta.call(tool_args, channel=Channels.TOOL_CALL, call_id=ctx.tool_call_id)
        except RetriableError as exc:
            raise ModelRetry(str(exc)) from exc
        return ToolReturn(return_value=result["text"], metadata={LOADED_KEY: result["loaded"]})
