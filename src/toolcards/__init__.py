"""toolcards: serializable capability cards for teams of LLM agents.

Only the error tree (plain Python) and the library logger are set up at import. Every
other public name is imported on first use: the core (cards, channels, the pipeline, the
factory) when it is first named, a domain card (``WorkspaceTool``, ``PlanningTool``, ...)
when it is, so ``import toolcards`` loads no pydantic, no pykka and no domain
(``python -m bench import`` measures it). ``from toolcards import ToolCard`` loads what
the card needs and nothing more.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from toolcards.errors import (
    ActorUnavailable,
    ApprovalRequired,
    BudgetExceeded,
    CallCancelled,
    CommandNotRecognized,
    GuardError,
    MemberStopped,
    ObserverGone,
    OutcomeUnknown,
    RetriableError,
    StoreError,
    ToolcardsError,
    ToolFailed,
    ToolTimeout,
    WiringError,
)

if TYPE_CHECKING:
    from toolcards.actors.address import ActorAddress
    from toolcards.actors.system import ActorSystem, TeamHandle
    from toolcards.core.approval import ApprovalRequest, Approver
    from toolcards.core.card import Capability, ToolCard, capability
    from toolcards.core.channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
    from toolcards.core.commands import CommandArg, CommandDescriptor, CommandRegistry
    from toolcards.core.events import StateChanged, ToolExecutionRecord
    from toolcards.core.factory import ToolFactory
    from toolcards.core.guards import Guard, GuardContext
    from toolcards.core.observer import ActorToolObserver, TeamAgent, TeamManagementToolObserver, ToolObserver
    from toolcards.core.params import BaseToolParam
    from toolcards.core.registry import card_kinds, dump_cards, load_cards
    from toolcards.core.tool import Tool
    from toolcards.knowledge_graph.tool import KnowledgeGraphTool
    from toolcards.mcp.tool import MCPTool
    from toolcards.metadata.tool import MetadataTool
    from toolcards.model.tool import ModelTool
    from toolcards.planning.tool import PlanningTool
    from toolcards.sandbox.tool import ExecTool
    from toolcards.search.tool import SearchTool
    from toolcards.skills.tool import SkillsTool
    from toolcards.spill.tool import SpilledOutputTool
    from toolcards.team.team import Member, Team
    from toolcards.team.tool import MessagingTool, TeamTool
    from toolcards.usage.tool import UsageTool
    from toolcards.workspace.tool import WorkspaceTool

logging.getLogger("toolcards").addHandler(logging.NullHandler())

_LAZY = {
    "COMMAND": "toolcards.core.channels",
    "SYSTEM_PROMPT": "toolcards.core.channels",
    "TOOL_CALL": "toolcards.core.channels",
    "ActorAddress": "toolcards.actors.address",
    "ActorSystem": "toolcards.actors.system",
    "ActorToolObserver": "toolcards.core.observer",
    "ApprovalRequest": "toolcards.core.approval",
    "Approver": "toolcards.core.approval",
    "BaseToolParam": "toolcards.core.params",
    "Capability": "toolcards.core.card",
    "Channels": "toolcards.core.channels",
    "CommandArg": "toolcards.core.commands",
    "CommandDescriptor": "toolcards.core.commands",
    "CommandRegistry": "toolcards.core.commands",
    "Guard": "toolcards.core.guards",
    "GuardContext": "toolcards.core.guards",
    "Member": "toolcards.team.team",
    "StateChanged": "toolcards.core.events",
    "Team": "toolcards.team.team",
    "TeamHandle": "toolcards.actors.system",
    "TeamAgent": "toolcards.core.observer",
    "TeamManagementToolObserver": "toolcards.core.observer",
    "Tool": "toolcards.core.tool",
    "ToolCard": "toolcards.core.card",
    "ToolExecutionRecord": "toolcards.core.events",
    "ToolFactory": "toolcards.core.factory",
    "ToolObserver": "toolcards.core.observer",
    "capability": "toolcards.core.card",
    "card_kinds": "toolcards.core.registry",
    "dump_cards": "toolcards.core.registry",
    "load_cards": "toolcards.core.registry",
}
"""Public name → the module that defines it, imported when the name is first used. The
built-in cards are found through the card registry (:data:`toolcards.core.registry.BUILTIN_CARDS`)."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # importlib.metadata is slow to import: read the version only when asked.
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("toolcards")
        except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
            value = "0.0.0"
        globals()[name] = value
        return value
    module = _LAZY.get(name) or _builtin_card_module(name)
    if module is None:
        raise AttributeError(f"module 'toolcards' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _builtin_card_module(name: str) -> str | None:
    from toolcards.core.registry import BUILTIN_CARDS

    for path in BUILTIN_CARDS.values():
        module, _, class_name = path.partition(":")
        if class_name == name:
            return module
    return None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "BudgetExceeded",
    "CallCancelled",
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
    "Member",
    "MemberStopped",
    "MessagingTool",
    "MetadataTool",
    "ModelTool",
    "ObserverGone",
    "OutcomeUnknown",
    "PlanningTool",
    "RetriableError",
    "SearchTool",
    "SkillsTool",
    "SpilledOutputTool",
    "StateChanged",
    "StoreError",
    "Team",
    "TeamAgent",
    "TeamHandle",
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
    "UsageTool",
    "WiringError",
    "WorkspaceTool",
    "__version__",
    "capability",
    "card_kinds",
    "dump_cards",
    "load_cards",
]
