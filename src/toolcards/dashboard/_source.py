"""``TeamSource``: everything the dashboard shows of one team, as JSON data with versions.

The cards' views (:mod:`toolcards.core._views`) are read through a
:class:`~toolcards.core._factory.ToolFactory` of the team's cards bound to a
:class:`~toolcards.dashboard._viewer.TeamViewer`, as ``toolcards call`` binds them; only cards
offering views are bound (a sandbox is never started to be looked at). Three views come from
the team itself: ``team.calls`` (every process's last calls,
:class:`~toolcards.dashboard._calls.CallLog`), ``team.usage`` (the ledger, when kept) and
``team.roster`` (every process's present members, the role catalog, and the call statistics
of every agent seen, marked ``present`` or not). ``knowledge_graph.graph`` comes with entity
positions (:class:`~toolcards.dashboard._layout.GraphLayout`, once per graph version). Every
method blocks (actor asks, disk): call them from a worker thread.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolcards.core._factory import ToolFactory
from toolcards.dashboard._calls import CallLog
from toolcards.dashboard._layout import GraphLayout
from toolcards.dashboard._viewer import TeamViewer
from toolcards.errors import RetriableError

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle
    from toolcards.core._card import ToolCard
    from toolcards.core._views import View

__all__ = ["CALLS_VIEW", "GRAPH_VIEW", "ROSTER_VIEW", "USAGE_VIEW", "TeamSource", "UnknownView"]

logger = logging.getLogger("toolcards.dashboard")

CALLS_VIEW = "team.calls"
ROSTER_VIEW = "team.roster"
GRAPH_VIEW = "knowledge_graph.graph"
USAGE_VIEW = "team.usage"


class UnknownView(LookupError):
    """The team has no view of that name (its config has no such card)."""


class TeamSource:
    """The views of ``team`` whose cards are ``cards`` (fresh, unbound: they are bound here)."""

    def __init__(self, team: TeamHandle, cards: Sequence[ToolCard]) -> None:
        self.team = team
        self.viewer = TeamViewer(team)
        self.factory = ToolFactory([card for card in cards if type(card).offers_views()], observer=self.viewer)
        self.card_views: dict[str, View] = self.factory.views()
        self.calls = CallLog(team)
        self.layout = GraphLayout()
        self._parameters = {
            name: frozenset(inspect.signature(view.render).parameters) for name, view in self.card_views.items()
        }

    @property
    def team_id(self) -> str:
        """The team shown."""
        return self.team.team_id

    def names(self) -> list[str]:
        """Every view this team has, the team's own two included."""
        own = [CALLS_VIEW, ROSTER_VIEW] + ([USAGE_VIEW] if self.team.ledger is not None else [])
        return sorted([*self.card_views, *own])

    def versions(self) -> dict[str, Hashable]:
        """Every view's version now; a view whose version cannot be read gets an error stamp."""
        versions: dict[str, Hashable] = {}
        for name, view in self.card_views.items():
            try:
                versions[name] = view.current_version()
            except Exception as exc:  # one broken view must not stop the others' updates
                logger.debug("version of %s failed: %s", name, exc)
                versions[name] = ("error", type(exc).__name__)
        calls = self.calls.refresh()
        versions[CALLS_VIEW] = calls
        try:
            versions[ROSTER_VIEW] = self._roster_version(calls)
        except Exception as exc:  # the presence's store out of reach: the other views go on
            logger.debug("version of %s failed: %s", ROSTER_VIEW, exc)
            versions[ROSTER_VIEW] = ("error", type(exc).__name__)
        if self.team.ledger is not None:
            try:
                versions[USAGE_VIEW] = self.team.ledger.version()
            except Exception as exc:  # the store out of reach: the other views go on
                logger.debug("version of %s failed: %s", USAGE_VIEW, exc)
                versions[USAGE_VIEW] = ("error", type(exc).__name__)
        return versions

    def version(self, name: str) -> Hashable:
        """The version of view ``name`` now.

        Raises:
            UnknownView: the team has no such view.
        """
        if name == CALLS_VIEW:
            return self.calls.refresh()
        if name == ROSTER_VIEW:
            return self._roster_version(self.calls.refresh())
        if name == USAGE_VIEW and self.team.ledger is not None:
            version: int = self.team.ledger.version()
            return version
        view = self._view(name)
        return view.current_version()

    def render(self, name: str, params: Mapping[str, str] | None = None) -> Any:
        """The data of view ``name`` with ``params`` (query parameters, as text).

        Raises:
            UnknownView: the team has no such view.
            RetriableError: a parameter the view does not take, or the view's own refusal
                (a file that is gone, a path outside the workspace).
            ToolFailed: the view could not be read.
        """
        params = dict(params or {})
        if name == CALLS_VIEW:
            self.calls.refresh()
            return {"calls": self.calls.rows()}
        if name == ROSTER_VIEW:
            self.calls.refresh()
            return self._roster()
        if name == USAGE_VIEW and self.team.ledger is not None:
            return self._usage()
        view = self._view(name)
        unknown = sorted(set(params) - self._parameters[name])
        if unknown:
            raise RetriableError(f"The view {name} takes no parameter {', '.join(unknown)}.")
        version = view.current_version()
        data = view.render(**params)
        if name == GRAPH_VIEW:
            data = self._with_positions(version, data)
        return data

    def warm(self) -> None:
        """Lay out the graph once, so the first person to open the graph view does not wait
        for a layout from nothing (~0.3 s at 2,000 entities; later changes cost what changed).
        Run it in a background thread at start; a failure is only logged."""
        if GRAPH_VIEW not in self.card_views:
            return
        try:
            self.render(GRAPH_VIEW)
        except Exception as exc:  # the team may be stopping; the page will render it anyway
            logger.debug("warming the graph's layout failed: %s", exc)

    def close(self) -> None:
        """Nothing to release: the viewer holds no actor of its own (the team's stop them)."""

    # -- internals ---------------------------------------------------------------------------

    def _view(self, name: str) -> View:
        view = self.card_views.get(name)
        if view is None:
            raise UnknownView(f"Team {self.team_id} has no view {name!r}; it has {', '.join(self.names())}.")
        return view

    def _with_positions(self, version: Hashable, graph: dict[str, Any]) -> dict[str, Any]:
        names = [entity["name"] for entity in graph.get("entities", [])]
        edges = [(relation["from_entity"], relation["to_entity"]) for relation in graph.get("relations", [])]
        positions = self.layout.positions(version, names, edges)
        return {**graph, "positions": {name: [round(x, 3), round(y, 3)] for name, (x, y) in positions.items()}}

    def _usage(self) -> dict[str, Any]:
        ledger = self.team.ledger
        report = ledger.usage()
        budgets = []
        for budget in ledger.budgets():
            used = ledger.used(budget.scope, budget.name)
            limit, share = budget.fullest(used)
            budgets.append(
                {
                    **budget.model_dump(mode="json"),
                    "label": budget.label,
                    "fullest": limit,
                    "share": round(share, 4),
                    "used": used.model_dump(mode="json"),
                }
            )
        return {**report.model_dump(mode="json"), "budgets": budgets}

    def _roster_version(self, calls: int) -> Hashable:
        # Renewals count: the page shows when each member was last seen.
        return (calls, tuple((member.membership, member.seen) for member in self.team.present_members()))

    def _roster(self) -> dict[str, Any]:
        present = self.team.present_members()
        members = [
            {
                "name": member.name,
                "handle": member.handle,
                "role": member.role,
                "host": member.host,
                "pid": member.pid,
                "joined": member.joined.isoformat(),
                "seen": member.seen.isoformat(),
            }
            for member in present
        ]
        here = {member.handle for member in present}
        roles = {role: str(getattr(profile, "description", "")) for role, profile in self.team.profiles().items()}
        seen: dict[str, dict[str, Any]] = {}
        for call in self.calls.rows():  # newest first
            agent = call.get("agent")
            if not agent:
                continue
            entry = seen.setdefault(
                agent,
                {"handle": agent, "calls": 0, "failed": 0, "last_call": call.get("at"), "present": agent in here},
            )
            entry["calls"] += 1
            entry["failed"] += 0 if call.get("success") else 1
        return {"team_id": self.team_id, "members": members, "roles": roles, "agents_seen": list(seen.values())}
