"""``Team`` and ``Member``: an application's own agents on a team, in three lines.

::

    import toolcards
    from pydantic_ai import Agent
    from toolcards.planning import PlanningTool
    from toolcards.workspace import WorkspaceTool

    team = toolcards.Team("acme")
    alice = team.member("Alice", role="builder")
    agent = Agent("openai:gpt-4o", toolsets=[alice.toolset(PlanningTool(), WorkspaceTool())])

The agent keeps its own tools and instructions; the toolset adds the cards' tools and their
context, rendered for Alice before every model request. Every agent of team ``acme``, in any
process or host sharing its store (:mod:`toolcards.fs._locations`), MCP clients included,
shares one board, graph and workspace; each call is stamped with the member and logged.

**Lifetime.** Every :class:`Team` of a process runs in one shared
:class:`~toolcards.actors.ActorSystem`, started by the first team and stopped when the last is
closed (``with``, :meth:`Team.close`, ``await team.aclose()``) or the main thread ends: a
script that simply exits loses nothing, since every acknowledged write is in the store before
the tool answers. The toolset never blocks an event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from toolcards.actors._system import ActorSystem, TeamHandle
from toolcards.core._observer import TeamAgent
from toolcards.errors import RetriableError, WiringError
from toolcards.team._models import NAME_MAX, validate_member_name

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

    from toolcards.core._approval import Approver
    from toolcards.core._card import ToolCard
    from toolcards.core._commands import CommandRegistry
    from toolcards.core._factory import ToolFactory
    from toolcards.pydantic_ai import CardToolset
    from toolcards.pydantic_ai._toolset import ContextMode
    from toolcards.team._runtime import ModelFactory, TeamRuntime

__all__ = ["Member", "Team"]

TEAM_NAME_MAX = 100


class _SharedSystem:
    """The process's one actor system for :class:`Team`, counted by the teams using it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._system: ActorSystem | None = None
        self._users = 0
        self._watching = False

    def acquire(self) -> ActorSystem:
        with self._lock:
            if self._system is None:
                from toolcards.store import store_journals, store_ledgers, store_presence

                self._system = ActorSystem(journal=store_journals(), presence=store_presence(), ledger=store_ledgers())
            self._users += 1
            if not self._watching:
                self._watching = True
                threading.Thread(target=self._stop_at_exit, name="toolcards-exit", daemon=True).start()
            return self._system

    def release(self, system: ActorSystem) -> None:
        with self._lock:
            if system is not self._system:
                return
            self._users -= 1
            if self._users > 0:
                return
            self._system = None
        system.stop()

    def _stop_at_exit(self) -> None:
        # The main thread ending is when Python joins the remaining threads; the actors'
        # threads would keep the process alive, so they are stopped (and their state and
        # the event log flushed) first. concurrent.futures stops its workers at this point too.
        threading.main_thread().join()
        with self._lock:
            system, self._system, self._users = self._system, None, 0
        if system is not None:
            system.stop()


_shared = _SharedSystem()


class Team:
    """A team this process takes part in: ``toolcards.Team("acme")``.

    Args:
        name: The team's name (its id): every process naming the same team on the same store
            shares its board, graph, workspace and event log. 1 to 100 characters.
        user_id: The human the team works for, passed to cards.
        system: An :class:`~toolcards.actors.ActorSystem` of your own to run the team's
            actors in (you stop it); by default the process's shared one, which keeps the
            team's event log and roster in its store.

    Use it as a context manager (``with`` or ``async with``), or call :meth:`close` /
    :meth:`aclose`, when the team's work in this process is done. Thread-safe.

    Raises:
        WiringError: ``name`` is empty or too long.
    """

    def __init__(self, name: str, *, user_id: str | None = None, system: ActorSystem | None = None) -> None:
        if not isinstance(name, str) or not name.strip() or len(name) > TEAM_NAME_MAX:
            raise WiringError(
                f"Team name {name!r} is not valid: give 1 to {TEAM_NAME_MAX} characters, e.g. toolcards.Team('acme')."
            )
        self._name = name.strip()
        self._user_id = user_id
        self._owned = system is None
        self._system = _shared.acquire() if system is None else system
        self._lock = threading.Lock()
        self._members: dict[str, Member] = {}
        self._runtimes: list[TeamRuntime] = []
        self._closed = False
        try:
            self._handle = self._system.team(self._name)
        except BaseException:
            self._release_system()
            raise

    @property
    def name(self) -> str:
        """The team's name (its id in the store, the dashboard and every process)."""
        return self._name

    @property
    def handle(self) -> TeamHandle:
        """The team's orchestrator in this process: roster, event log, tool actors."""
        return self._handle

    @property
    def system(self) -> ActorSystem:
        """The actor system the team's actors run in."""
        return self._system

    def __repr__(self) -> str:
        return f"Team({self._name!r})"

    def member(self, name: str, *, role: str = "agent") -> Member:
        """The member ``name`` of this team, joining the team's roster on first call.

        Calling it again with the same name returns the same member. Its cards are bound
        with :meth:`Member.toolset` (for a pydantic-ai agent), :meth:`Member.factory` or
        :meth:`Member.commands`.

        The member is in the team's roster, seen by every process of the team
        (:meth:`~toolcards.actors.TeamHandle.present_members`), until :meth:`close` (or its
        process ends: killed, it drops out at the next look from its machine, and from other
        hosts once its presence expires, 30 s by default).

        Raises:
            WiringError: the name is not valid, the team is closed, or a live member already
                has the name: another member of this process, or of another process of the team.
        """
        try:
            checked = validate_member_name(name)
        except RetriableError:
            # Not the model-facing refusal: it offers to leave the name out, which this call cannot.
            raise WiringError(
                f"team.member({name!r}): a member name is 1-{NAME_MAX} letters, digits, '-' or '_' (e.g. Builder-2)."
            ) from None
        with self._lock:
            if self._closed:
                raise WiringError(f"Team {self._name!r} is closed: open it again with toolcards.Team({self._name!r}).")
            found = self._members.get(checked.lower())
            if found is not None:
                return found
            member = Member(checked, self, role=role)
            try:
                self._handle.register_member(member.address)
            except ValueError as exc:
                hint = f"team.member({checked + '-2'!r})"
                raise WiringError(f"{exc} Give this agent another name, e.g. {hint}.") from None
            self._members[checked.lower()] = member
            return member

    def members(self) -> list[Member]:
        """The members this :class:`Team` object made, in the order they joined."""
        with self._lock:
            return list(self._members.values())

    def runtime(self, *, models: Mapping[str, ModelFactory] | None = None) -> TeamRuntime:
        """A :class:`~toolcards.team.TeamRuntime` on this team: members hosted as actors,
        hired by role and messaged; stopped with the team."""
        from toolcards.team._runtime import TeamRuntime

        runtime = TeamRuntime(self._handle, models=models, user_id=self._user_id)
        with self._lock:
            self._runtimes.append(runtime)
        return runtime

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        """Leave the team: members leave the roster (every process sees them gone when this
        returns), runtimes stop their members, and the actors stop once no :class:`Team` of
        the process uses them. Idempotent; blocks while actors stop. The team's state stays
        in its store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            members, self._members = list(self._members.values()), {}
            runtimes, self._runtimes = self._runtimes, []
        for runtime in runtimes:
            runtime.stop()
        for member in members:
            member._leave()
        self._release_system()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Team:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Team:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _release_system(self) -> None:
        if self._owned:
            _shared.release(self._system)


class Member(TeamAgent):
    """One agent of a :class:`Team`, made by :meth:`Team.member`: the observer its cards bind to.

    It is an :class:`~toolcards.core._observer.ActorToolObserver`: what it creates is stamped
    with its handle (``@Alice``), and the records of its calls go to the team's event log.
    """

    def __init__(self, name: str, team: Team, *, role: str = "agent") -> None:
        super().__init__(name, team.handle, role=role, user_id=team._user_id)

    def __repr__(self) -> str:
        return f"Member({self.address.handle} of team {self.team_id!r})"

    @overload
    def toolset(
        self,
        *cards: ToolCard,
        context: ContextMode = "rewrite",
        max_retries: int = 2,
        approve: Approver | None = None,
        tool_search: Literal[False] = False,
        hot_tools: Iterable[str] = (),
    ) -> CardToolset: ...
    @overload
    def toolset(
        self,
        *cards: ToolCard,
        context: ContextMode = "rewrite",
        max_retries: int = 2,
        approve: Approver | None = None,
        tool_search: bool,
        hot_tools: Iterable[str] = (),
    ) -> AbstractToolset[Any]: ...
    def toolset(
        self,
        *cards: ToolCard,
        context: ContextMode = "rewrite",
        max_retries: int = 2,
        approve: Approver | None = None,
        tool_search: bool = False,
        hot_tools: Iterable[str] = (),
    ) -> AbstractToolset[Any]:
        """One pydantic-ai toolset of ``cards`` bound to this member:
        ``Agent(model, toolsets=[member.toolset(PlanningTool())])``.

        Its tools join the agent's own; the cards' context (the plan, the graph summary)
        reaches the model as instructions before every request (``context``: see
        :class:`~toolcards.pydantic_ai.CardToolset`). ``tool_search=True`` shows the model
        ``search_tools``, ``describe_tool`` and the ``hot_tools`` instead of every tool, and
        loads what it finds (:class:`~toolcards.pydantic_ai.CatalogToolset`; the tools of the
        cards' MCP servers included).

        Raises:
            WiringError: a card cannot be bound (the message names the card and the fix), or
                ``hot_tools`` is given without ``tool_search`` or names a tool no card offers.
        """
        return self.factory(*cards, approve=approve).toolset(
            context=context, max_retries=max_retries, tool_search=tool_search, hot_tools=hot_tools
        )

    def factory(self, *cards: ToolCard, approve: Approver | None = None) -> ToolFactory:
        """A :class:`~toolcards.core._factory.ToolFactory` of ``cards`` bound to this member:
        every channel (tools, context, commands, MCP toolsets)."""
        from toolcards.core._factory import ToolFactory

        if not cards:
            raise WiringError(
                "Give the member at least one card, e.g. member.toolset(PlanningTool()) "
                "(from toolcards.planning import PlanningTool)."
            )
        return ToolFactory(list(cards), observer=self, approve=approve)

    def commands(self, *cards: ToolCard, approve: Approver | None = None) -> CommandRegistry:
        """The slash commands of ``cards``, run as this member:
        ``member.commands(PlanningTool()).dispatch("/get_planning")``."""
        return self.factory(*cards, approve=approve).command_registry()

    def _leave(self) -> None:
        # The team's actors may be stopping already: the roster goes with them.
        with contextlib.suppress(Exception):
            self.team.unregister_member(self.address.name, reason="left")
