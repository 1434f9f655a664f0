"""toolcards: serializable capability cards for teams of LLM agents.

The core (cards, channels, the tool pipeline, the factory) and the error tree are
imported eagerly; domain cards (``WorkspaceTool``, ``PlanningTool``, ...) are imported on
first use, so ``import toolcards`` loads no domain and no heavy dependency.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from toolcards.actors.address import ActorAddress
from toolcards.core import (
    COMMAND,
    SYSTEM_PROMPT,
    TOOL_CALL,
    ActorToolObserver,
    ApprovalRequest,
    Approver,
    BaseToolParam,
    Capability,
    Channels,
    CommandArg,
    CommandDescriptor,
    CommandRegistry,
    Guard,
    GuardContext,
    StateChanged,
    TeamAgent,
    TeamManagementToolObserver,
    Tool,
    ToolCard,
    ToolExecutionRecord,
    ToolFactory,
    ToolObserver,
    capability,
    card_kinds,
    dump_cards,
    load_cards,
)
from toolcards.errors import (
    ActorUnavailable,
    ApprovalRequired,
    CommandNotRecognized,
    GuardError,
    ObserverGone,
    RetriableError,
    StoreError,
    ToolcardsError,
    ToolFailed,
    ToolTimeout,
    WiringError,
)

if TYPE_CHECKING:
    from toolcards.actors.system import ActorSystem, Team
    from toolcards.knowledge_graph.tool import KnowledgeGraphTool
    from toolcards.mcp.tool import MCPTool
    from toolcards.planning.tool import PlanningTool
    from toolcards.sandbox.tool import ExecTool
    from toolcards.search.tool import SearchTool
    from toolcards.team.tool import TeamTool
    from toolcards.workspace.tool import WorkspaceTool

logging.getLogger("toolcards").addHandler(logging.NullHandler())

_LAZY = {
    "ActorSystem": "toolcards.actors.system",
    "Team": "toolcards.actors.system",
    "ExecTool": "toolcards.sandbox.tool",
    "KnowledgeGraphTool": "toolcards.knowledge_graph.tool",
    "MCPTool": "toolcards.mcp.tool",
    "PlanningTool": "toolcards.planning.tool",
    "SearchTool": "toolcards.search.tool",
    "TeamTool": "toolcards.team.tool",
    "WorkspaceTool": "toolcards.workspace.tool",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # importlib.metadata costs ~30 ms: read the version only when asked.
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("toolcards")
        except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
            value = "0.0.0"
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcards' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "COMMAND",
    "SYSTEM_PROMPT",
    "TOOL_CALL",
    "ActorAddress",
    "ActorSystem",
    "ActorToolObserver",
    "ActorUnavailable",
    "ApprovalRequest",
    "ApprovalRequired",
    "Approver",
    "BaseToolParam",
    "Capability",
    "Channels",
    "CommandArg",
    "CommandDescriptor",
    "CommandNotRecognized",
    "CommandRegistry",
    "ExecTool",
    "Guard",
    "GuardContext",
    "GuardError",
    "KnowledgeGraphTool",
    "MCPTool",
    "ObserverGone",
    "PlanningTool",
    "RetriableError",
    "SearchTool",
    "StateChanged",
    "StoreError",
    "Team",
    "TeamAgent",
    "TeamManagementToolObserver",
    "TeamTool",
    "Tool",
    "ToolCard",
    "ToolExecutionRecord",
    "ToolFactory",
    "ToolFailed",
    "ToolObserver",
    "ToolTimeout",
    "ToolcardsError",
    "WiringError",
    "WorkspaceTool",
    "__version__",
    "capability",
    "card_kinds",
    "dump_cards",
    "load_cards",
]
