"""The actor runtime on pykka: teams, their orchestrators, addresses and asks."""

from toolcards.actors.address import ActorAddress
from toolcards.actors.ask import ask, ask_async
from toolcards.actors.orchestrator import EventSubscriber, Orchestrator
from toolcards.actors.system import ActorSystem, Team

__all__ = ["ActorAddress", "ActorSystem", "EventSubscriber", "Orchestrator", "Team", "ask", "ask_async"]
