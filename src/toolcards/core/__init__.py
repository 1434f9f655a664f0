"""Core contracts: channels, params, cards, the tool pipeline, the factory and commands.

Names are imported from their module on first use, so importing one core module (say
``toolcards.core.channels``) does not load the rest, and ``import toolcards`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcards.core.approval import ApprovalRequest, ApprovalRequired, Approver
    from toolcards.core.card import Capability, ToolCard, capability
    from toolcards.core.channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
    from toolcards.core.commands import CommandArg, CommandDescriptor, CommandRegistry
    from toolcards.core.events import StateChanged, ToolcardsEvent, ToolExecutionRecord
    from toolcards.core.factory import ToolFactory
    from toolcards.core.guards import Guard, GuardContext
    from toolcards.core.observer import ActorToolObserver, TeamAgent, TeamManagementToolObserver, ToolObserver
    from toolcards.core.params import BaseToolParam
    from toolcards.core.registry import card_class, card_kinds, dump_cards, load_cards
    from toolcards.core.tool import Tool
    from toolcards.core.views import FileBytes, View, view

_LAZY = {
    "COMMAND": "toolcards.core.channels",
    "SYSTEM_PROMPT": "toolcards.core.channels",
    "TOOL_CALL": "toolcards.core.channels",
    "ActorToolObserver": "toolcards.core.observer",
    "ApprovalRequest": "toolcards.core.approval",
    "ApprovalRequired": "toolcards.core.approval",
    "Approver": "toolcards.core.approval",
    "BaseToolParam": "toolcards.core.params",
    "Capability": "toolcards.core.card",
    "FileBytes": "toolcards.core.views",
    "Channels": "toolcards.core.channels",
    "CommandArg": "toolcards.core.commands",
    "CommandDescriptor": "toolcards.core.commands",
    "CommandRegistry": "toolcards.core.commands",
    "Guard": "toolcards.core.guards",
    "GuardContext": "toolcards.core.guards",
    "StateChanged": "toolcards.core.events",
    "TeamAgent": "toolcards.core.observer",
    "TeamManagementToolObserver": "toolcards.core.observer",
    "Tool": "toolcards.core.tool",
    "ToolCard": "toolcards.core.card",
    "ToolExecutionRecord": "toolcards.core.events",
    "ToolFactory": "toolcards.core.factory",
    "ToolObserver": "toolcards.core.observer",
    "ToolcardsEvent": "toolcards.core.events",
    "View": "toolcards.core.views",
    "capability": "toolcards.core.card",
    "card_class": "toolcards.core.registry",
    "card_kinds": "toolcards.core.registry",
    "dump_cards": "toolcards.core.registry",
    "load_cards": "toolcards.core.registry",
    "view": "toolcards.core.views",
}
"""Public name → the module that defines it, imported when the name is first used."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcards.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "COMMAND",
    "SYSTEM_PROMPT",
    "TOOL_CALL",
    "ActorToolObserver",
    "ApprovalRequest",
    "ApprovalRequired",
    "Approver",
    "BaseToolParam",
    "Capability",
    "Channels",
    "CommandArg",
    "CommandDescriptor",
    "CommandRegistry",
    "FileBytes",
    "Guard",
    "GuardContext",
    "StateChanged",
    "TeamAgent",
    "TeamManagementToolObserver",
    "Tool",
    "ToolCard",
    "ToolExecutionRecord",
    "ToolFactory",
    "ToolObserver",
    "ToolcardsEvent",
    "View",
    "capability",
    "card_class",
    "card_kinds",
    "dump_cards",
    "load_cards",
    "view",
]
