"""toolcards: serializable capability cards for teams of LLM agents.

Only the error tree (plain Python) and the library logger are set up at import. Every
other public name is imported on first use: the core (cards, channels, the pipeline, the
factory) when it is first named, a domain card (``WorkspaceTool``, ``PlanningTool``, ...)
when it is, so ``import toolcards`` loads no pydantic, no pykka and no domain
(``python -m bench import`` measures it). ``from toolcards import ToolCard`` loads what
the card needs and nothing more.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from toolcards._lazy_names import lazy_names
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
    from toolcards.actors._address import ActorAddress
    from toolcards.actors._system import ActorSystem, TeamHandle
    from toolcards.core._approval import ApprovalRequest, Approver
    from toolcards.core._card import Capability, ToolCard, capability
    from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
    from toolcards.core._commands import CommandArg, CommandDescriptor, CommandRegistry
    from toolcards.core._events import StateChanged, ToolExecutionRecord
    from toolcards.core._factory import ToolFactory
    from toolcards.core._guards import Guard, GuardContext
    from toolcards.core._observer import ActorToolObserver, TeamAgent, TeamManagementToolObserver, ToolObserver
    from toolcards.core._params import BaseToolParam
    from toolcards.core._registry import card_kinds, dump_cards, load_cards
    from toolcards.core._tool import Tool
    from toolcards.knowledge_graph._tool import KnowledgeGraphTool
    from toolcards.mcp._tool import MCPTool
    from toolcards.metadata._tool import MetadataTool
    from toolcards.model._tool import ModelTool
    from toolcards.planning._tool import PlanningTool
    from toolcards.sandbox._tool import ExecTool
    from toolcards.search._tool import SearchTool
    from toolcards.skills._tool import SkillsTool
    from toolcards.spill._tool import SpilledOutputTool
    from toolcards.team._team import Member, Team
    from toolcards.team._tool import MessagingTool, TeamTool
    from toolcards.usage._tool import UsageTool
    from toolcards.workspace._tool import WorkspaceTool

logging.getLogger("toolcards").addHandler(logging.NullHandler())

_LAZY = {
    "COMMAND": "toolcards.core._channels",
    "SYSTEM_PROMPT": "toolcards.core._channels",
    "TOOL_CALL": "toolcards.core._channels",
    "ActorAddress": "toolcards.actors._address",
    "ActorSystem": "toolcards.actors._system",
    "ActorToolObserver": "toolcards.core._observer",
    "ApprovalRequest": "toolcards.core._approval",
    "Approver": "toolcards.core._approval",
    "BaseToolParam": "toolcards.core._params",
    "Capability": "toolcards.core._card",
    "Channels": "toolcards.core._channels",
    "CommandArg": "toolcards.core._commands",
    "CommandDescriptor": "toolcards.core._commands",
    "CommandRegistry": "toolcards.core._commands",
    "Guard": "toolcards.core._guards",
    "GuardContext": "toolcards.core._guards",
    "Member": "toolcards.team._team",
    "StateChanged": "toolcards.core._events",
    "Team": "toolcards.team._team",
    "TeamHandle": "toolcards.actors._system",
    "TeamAgent": "toolcards.core._observer",
    "TeamManagementToolObserver": "toolcards.core._observer",
    "Tool": "toolcards.core._tool",
    "ToolCard": "toolcards.core._card",
    "ToolExecutionRecord": "toolcards.core._events",
    "ToolFactory": "toolcards.core._factory",
    "ToolObserver": "toolcards.core._observer",
    "capability": "toolcards.core._card",
    "card_kinds": "toolcards.core._registry",
    "dump_cards": "toolcards.core._registry",
    "load_cards": "toolcards.core._registry",
}
"""Public name → the module that defines it, imported when the name is first used. The
built-in cards are found through the card registry (:data:`toolcards.core._registry.BUILTIN_CARDS`)."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from toolcards._version import __version__

        return __version__
    return _lazy_getattr(name)


def _builtin_card_module(name: str) -> str | None:
    from toolcards.core._registry import BUILTIN_CARDS

    for path in BUILTIN_CARDS.values():
        module, _, class_name = path.partition(":")
        if class_name == name:
            return module
    return None


_lazy_getattr, __dir__ = lazy_names(globals(), _LAZY, _builtin_card_module)


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
