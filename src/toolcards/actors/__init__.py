"""The actor runtime on pykka: teams, their orchestrators, addresses, presence and asks.

The journal protocol is plain Python and imported eagerly. ``ActorAddress``, the presence and
the events (pydantic models) and the rest (which load pykka) are imported on first use, so
``import toolcards`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolcards.actors.journal import EventJournal, JournalFactory, MemoryJournal

if TYPE_CHECKING:
    from toolcards.actors.address import ActorAddress
    from toolcards.actors.asking import ask, ask_async
    from toolcards.actors.events import LeaveReason, MemberEvent, MemberJoined, MemberLeft
    from toolcards.actors.orchestrator import EventSubscriber, Orchestrator
    from toolcards.actors.presence import MemoryPresence, Presence, PresenceFactory, PresentMember
    from toolcards.actors.system import ActorSystem, TeamHandle

_LAZY = {
    "ActorAddress": "toolcards.actors.address",
    "ActorSystem": "toolcards.actors.system",
    "EventSubscriber": "toolcards.actors.orchestrator",
    "LeaveReason": "toolcards.actors.events",
    "MemberEvent": "toolcards.actors.events",
    "MemberJoined": "toolcards.actors.events",
    "MemberLeft": "toolcards.actors.events",
    "MemoryPresence": "toolcards.actors.presence",
    "Orchestrator": "toolcards.actors.orchestrator",
    "Presence": "toolcards.actors.presence",
    "PresenceFactory": "toolcards.actors.presence",
    "PresentMember": "toolcards.actors.presence",
    "TeamHandle": "toolcards.actors.system",
    "ask": "toolcards.actors.asking",
    "ask_async": "toolcards.actors.asking",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcards.actors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ActorAddress",
    "ActorSystem",
    "EventJournal",
    "EventSubscriber",
    "JournalFactory",
    "LeaveReason",
    "MemberEvent",
    "MemberJoined",
    "MemberLeft",
    "MemoryJournal",
    "MemoryPresence",
    "Orchestrator",
    "Presence",
    "PresenceFactory",
    "PresentMember",
    "TeamHandle",
    "ask",
    "ask_async",
]
