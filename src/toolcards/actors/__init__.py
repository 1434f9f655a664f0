"""The actor runtime on pykka: teams, their orchestrators, addresses, presence and asks.

The journal protocol is plain Python and imported eagerly. ``ActorAddress``, the presence and
the events (pydantic models) and the rest (which load pykka) are imported on first use, so
``import toolcards`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards._lazy_names import lazy_names
from toolcards.actors._journal import EventJournal, JournalFactory, MemoryJournal

if TYPE_CHECKING:
    from toolcards.actors._address import ActorAddress
    from toolcards.actors._asking import ask, ask_async
    from toolcards.actors._events import LeaveReason, MemberEvent, MemberJoined, MemberLeft
    from toolcards.actors._orchestrator import EventSubscriber, Orchestrator
    from toolcards.actors._presence import MemoryPresence, Presence, PresenceFactory, PresentMember
    from toolcards.actors._system import ActorSystem, TeamHandle

_LAZY = {
    "ActorAddress": "toolcards.actors._address",
    "ActorSystem": "toolcards.actors._system",
    "EventSubscriber": "toolcards.actors._orchestrator",
    "LeaveReason": "toolcards.actors._events",
    "MemberEvent": "toolcards.actors._events",
    "MemberJoined": "toolcards.actors._events",
    "MemberLeft": "toolcards.actors._events",
    "MemoryPresence": "toolcards.actors._presence",
    "Orchestrator": "toolcards.actors._orchestrator",
    "Presence": "toolcards.actors._presence",
    "PresenceFactory": "toolcards.actors._presence",
    "PresentMember": "toolcards.actors._presence",
    "TeamHandle": "toolcards.actors._system",
    "ask": "toolcards.actors._asking",
    "ask_async": "toolcards.actors._asking",
}


__getattr__, __dir__ = lazy_names(globals(), _LAZY)


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
