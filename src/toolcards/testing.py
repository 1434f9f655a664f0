"""``FakeObserver``: a team member without an LLM, for binding cards in tests and examples.

It implements :class:`~toolcards.core._observer.ActorToolObserver` on a real
:class:`~toolcards.actors.ActorSystem`, so cards backed by actors work exactly as in a
team, and it records every event it is notified of::

    with FakeObserver("Alice") as alice:
        factory = ToolFactory([PlanningTool()], observer=alice)
        ...
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from toolcards.actors._system import ActorSystem
from toolcards.core._observer import TeamAgent

__all__ = ["FakeObserver"]


class FakeObserver(TeamAgent):
    """An agent called ``name`` in team ``team_id``, recording the events it receives.

    Several observers may share one ``system`` (and so one team). An observer that created
    its own system stops it on :meth:`close`.
    """

    def __init__(
        self,
        name: str = "Tester",
        team_id: str = "test-team",
        *,
        system: ActorSystem | None = None,
        role: str = "agent",
        user_id: str | None = None,
    ) -> None:
        self._owns_system = system is None
        self.system = system or ActorSystem()
        super().__init__(name, self.system.team(team_id), role=role, user_id=user_id)
        self._lock = threading.Lock()
        self.events: list[Any] = []

    def notify_event(self, event: Any) -> None:
        """Record ``event`` (thread-safe)."""
        with self._lock:
            self.events.append(event)

    def close(self) -> None:
        """Stop the actor system if this observer created it."""
        if self._owns_system:
            self.system.stop()

    def __enter__(self) -> FakeObserver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
