"""Core contracts: channels, params, cards, the tool pipeline, the factory and commands."""

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
    "capability",
    "card_class",
    "card_kinds",
    "dump_cards",
    "load_cards",
]
