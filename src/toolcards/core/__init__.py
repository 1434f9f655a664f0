"""Core contracts: channels, params, cards, the tool pipeline, the factory and commands.

Names are imported from their module on first use, so importing one core module (say
``toolcards.core._channels``) does not load the rest, and ``import toolcards`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards._lazy_names import lazy_names

if TYPE_CHECKING:
    from toolcards.core._approval import ApprovalRequest, ApprovalRequired, Approver
    from toolcards.core._card import Capability, ToolCard, capability
    from toolcards.core._catalog import CatalogEntry
    from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
    from toolcards.core._commands import CommandArg, CommandDescriptor, CommandRegistry
    from toolcards.core._deadline import check_deadline
    from toolcards.core._events import StateChanged, ToolcardsEvent, ToolExecutionRecord
    from toolcards.core._factory import ToolFactory
    from toolcards.core._guards import Guard, GuardContext
    from toolcards.core._observer import ActorToolObserver, TeamAgent, TeamManagementToolObserver, ToolObserver
    from toolcards.core._params import BaseToolParam
    from toolcards.core._progress import report_progress
    from toolcards.core._registry import card_class, card_kinds, dump_cards, load_cards
    from toolcards.core._tool import Tool
    from toolcards.core._views import FileBytes, View, view

_LAZY = {
    "CatalogEntry": "toolcards.core._catalog",
    "check_deadline": "toolcards.core._deadline",
    "report_progress": "toolcards.core._progress",
    "COMMAND": "toolcards.core._channels",
    "SYSTEM_PROMPT": "toolcards.core._channels",
    "TOOL_CALL": "toolcards.core._channels",
    "ActorToolObserver": "toolcards.core._observer",
    "ApprovalRequest": "toolcards.core._approval",
    "ApprovalRequired": "toolcards.core._approval",
    "Approver": "toolcards.core._approval",
    "BaseToolParam": "toolcards.core._params",
    "Capability": "toolcards.core._card",
    "FileBytes": "toolcards.core._views",
    "Channels": "toolcards.core._channels",
    "CommandArg": "toolcards.core._commands",
    "CommandDescriptor": "toolcards.core._commands",
    "CommandRegistry": "toolcards.core._commands",
    "Guard": "toolcards.core._guards",
    "GuardContext": "toolcards.core._guards",
    "StateChanged": "toolcards.core._events",
    "TeamAgent": "toolcards.core._observer",
    "TeamManagementToolObserver": "toolcards.core._observer",
    "Tool": "toolcards.core._tool",
    "ToolCard": "toolcards.core._card",
    "ToolExecutionRecord": "toolcards.core._events",
    "ToolFactory": "toolcards.core._factory",
    "ToolObserver": "toolcards.core._observer",
    "ToolcardsEvent": "toolcards.core._events",
    "View": "toolcards.core._views",
    "capability": "toolcards.core._card",
    "card_class": "toolcards.core._registry",
    "card_kinds": "toolcards.core._registry",
    "dump_cards": "toolcards.core._registry",
    "load_cards": "toolcards.core._registry",
    "view": "toolcards.core._views",
}
"""Public name → the module that defines it, imported when the name is first used."""


__getattr__, __dir__ = lazy_names(globals(), _LAZY)


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
    "CatalogEntry",
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
    "check_deadline",
    "dump_cards",
    "load_cards",
    "report_progress",
    "view",
]
