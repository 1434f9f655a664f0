"""Who is calling: each MCP client is an agent of the served team, with its own bound cards.

An MCP client is known by a name (see :mod:`toolcards.server._app` for where the name comes
from). :class:`AgentSessions` gives each name one :class:`AgentSession`: a
:class:`SessionAgent` registered in the team's roster, and a
:class:`~toolcards.core._factory.ToolFactory` built from fresh copies of the team's cards
bound to that agent. So what the cards stamp (a task's creator, "your tasks", which files
this agent has read before writing) is per client, and two clients editing the same file
get the same protection as two agents in one process.

Sessions end in two ways:

* a client holding a connection (the handshake protocol, over stdio or stateful HTTP)
  takes a *lease*; when its last lease is released the session closes at once;
* a client of the stateless protocol has no connection to end: its session closes after
  ``idle_timeout_s`` without a request (checked by :meth:`AgentSessions.sweep`).

Closing a session removes its agent from the roster (``reason="session ended"``): with the
team's presence in the store, every process of the team sees it gone when the close returns.
A name another live member holds, here or in another process of the team, gets a suffix
(``Alice-2``). Opening and closing block on asks to the team's orchestrator: call them from
a worker thread, never from an event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcards.core._channels import Channels
from toolcards.core._factory import ToolFactory
from toolcards.core._observer import TeamAgent
from toolcards.core._registry import dump_cards, load_cards

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle
    from toolcards.core._card import ToolCard
    from toolcards.core._tool import Tool

__all__ = ["AgentSession", "AgentSessions", "SessionAgent", "agent_name"]

logger = logging.getLogger("toolcards.server")

MAX_NAME_LENGTH = 40
DEFAULT_AGENT_NAME = "mcp-client"
DEFAULT_IDLE_TIMEOUT_S = 900.0


def agent_name(raw: str | None, default: str = DEFAULT_AGENT_NAME) -> str:
    """A roster-safe agent name from what a client declared.

    Keeps letters, digits, ``_``, ``.`` and ``-`` (anything else becomes ``-``), drops a
    leading ``@``/``#`` (``#`` marks tool actors), and cuts to 40 characters. An empty
    result gives ``default``.
    """
    text = (raw or "").strip().lstrip("@#")
    cleaned = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in text)
    cleaned = "-".join(part for part in cleaned.split("-") if part)[:MAX_NAME_LENGTH].strip("-.")
    return cleaned or default


class SessionAgent(TeamAgent):
    """An MCP client as a member of a team; implements
    :class:`~toolcards.core._observer.ActorToolObserver`.

    It has no actor of its own (its roster entry has no ref): the client is the agent,
    and its calls arrive through the server.
    """

    def __init__(self, name: str, team: TeamHandle, *, role: str = "mcp_client", user_id: str | None = None) -> None:
        super().__init__(name, team, role=role, user_id=user_id)

    def notify_event(self, event: Any) -> None:
        """Send a tool call's record to the team's log (batched) and log it at debug level;
        never blocks."""
        logger.debug("%s: %s", self._address.handle, event)
        super().notify_event(event)

    def __repr__(self) -> str:
        return f"SessionAgent({self._address})"


@dataclass(kw_only=True, eq=False)
class AgentSession:
    """One client's agent and its bound tools."""

    agent: SessionAgent
    """The team member the client acts as."""
    factory: ToolFactory
    """The factory of fresh cards bound to :attr:`agent`."""
    tools: dict[str, Tool]
    """The TOOL_CALL tools, by name."""
    prompts: dict[str, Tool]
    """The SYSTEM_PROMPT tools, by name."""
    key: str
    """What the session is kept under: the name the client asked for, or a key its caller
    made (the server's sessions on a client's roots)."""
    asked: str = ""
    """The name the client asked for (the agent's name differs if that one was taken)."""
    last_used: float = 0.0
    """When a request last used it (the sessions' clock)."""
    leases: int = 0
    """Connections holding it open."""
    closed: bool = False
    """Its agent left the roster; a new request opens a new session."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, init=False)

    @property
    def name(self) -> str:
        """The agent's name in the roster."""
        return self.agent.address.name


class AgentSessions:
    """One :class:`AgentSession` per client name, opened on first use. Thread-safe.

    Args:
        team: The team the agents join.
        cards: The team's cards: a callable returning fresh unbound cards on each call
            (``ServeConfig.build_cards``), or cards to copy (through ``dump_cards`` /
            ``load_cards``) for every session.
        user_id: Passed to every agent.
        idle_timeout_s: A session without leases closes after this long without a request
            (``None``: never).
        clock: Seconds, monotonic (tests pass a fake).
    """

    def __init__(
        self,
        team: TeamHandle,
        cards: Callable[[], Sequence[ToolCard]] | Iterable[ToolCard],
        *,
        user_id: str | None = None,
        idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.team = team
        if callable(cards):
            self._make_cards: Callable[[], Sequence[ToolCard]] = cards
        else:
            data = dump_cards(list(cards))
            self._make_cards = lambda: load_cards(data)
        self.user_id = user_id
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, AgentSession] = {}
        self._opening: dict[str, threading.Lock] = {}
        self._catalog: ToolFactory | None = None
        self._closed = False  # set by close_all: a session opened after it is closed at once

    # -- the catalog --------------------------------------------------------------------

    def catalog(self) -> ToolFactory:
        """A factory of the team's cards bound to an agent outside the roster.

        Built once, on first call, and kept: it checks the wiring at start (a bad config
        fails before any client connects), starts the team's tool actors, and lists the
        team's prompts for change notifications. Blocks while binding.

        Raises:
            WiringError: the cards cannot be bound.
        """
        with self._lock:
            if self._catalog is not None:
                return self._catalog
        agent = SessionAgent("#catalog", self.team, role="catalog", user_id=self.user_id)
        factory = ToolFactory(self._make_cards(), observer=agent)
        with self._lock:
            if self._catalog is None:
                self._catalog = factory
            return self._catalog

    # -- sessions -------------------------------------------------------------------------

    def get(self, key: str) -> AgentSession | None:
        """The open session for ``key``, marked as used now, or ``None``. Never blocks long."""
        with self._lock:
            session = self._sessions.get(key)
        if session is not None:
            session.last_used = self._clock()
        return session

    def open(
        self, key: str, *, name: str | None = None, cards: Callable[[], Sequence[ToolCard]] | None = None
    ) -> AgentSession:
        """The session for ``key``, opening it if needed: a roster entry and bound cards.

        ``name`` is the agent's name (default: ``key``) and ``cards`` makes its cards
        (default: the team's); a caller giving them keys such sessions apart itself (the
        server's sessions on a client's roots). Blocks on asks while opening. Concurrent
        callers with the same key get the same session.

        Raises:
            WiringError: the cards cannot be bound to the agent.
            RuntimeError: :meth:`close_all` was called (the server is stopping).

        Changed in 0.3: ``name`` and ``cards``.
        """
        session = self.get(key)
        if session is not None:
            return session
        with self._lock:
            if self._closed:
                raise RuntimeError(f"team {self.team.team_id} is stopping: {key} cannot join")
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            session = self.get(key)
            if session is not None:
                return session
            session = self._start(key, name or key, cards or self._make_cards)
            with self._lock:
                self._sessions[key] = session
                self._opening.pop(key, None)
                closed = self._closed
        if closed:
            # The server began to stop while this one was opening (a cancelled request's
            # thread finishing): it leaves at once rather than outliving the shutdown.
            self._close(session)
            raise RuntimeError(f"team {self.team.team_id} is stopping: {key} cannot join")
        logger.info("agent %s joined team %s", session.agent.address.handle, self.team.team_id)
        return session

    def lease(
        self, key: str, *, name: str | None = None, cards: Callable[[], Sequence[ToolCard]] | None = None
    ) -> AgentSession:
        """:meth:`open` the session and hold it open until :meth:`release` (a connection)."""
        session = self.open(key, name=name, cards=cards)
        with session._lock:
            session.leases += 1
        return session

    def release(self, session: AgentSession) -> None:
        """Drop one lease; the last one closes the session (its connection ended). Blocks."""
        with session._lock:
            session.leases = max(0, session.leases - 1)
            last = session.leases == 0
        if last:
            self._close(session)

    def sweep(self) -> list[str]:
        """Close sessions without leases idle for longer than ``idle_timeout_s``; return their keys.

        Blocks on asks while closing.
        """
        if self.idle_timeout_s is None:
            return []
        cutoff = self._clock() - self.idle_timeout_s
        with self._lock:
            idle = [s for s in self._sessions.values() if s.leases == 0 and s.last_used <= cutoff]
        for session in idle:
            self._close(session)
        return [session.key for session in idle]

    def close_all(self) -> None:
        """Close every session (server shutdown); none opens afterwards. Blocks on asks."""
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.values())
        for session in sessions:
            self._close(session)

    def sessions(self) -> list[AgentSession]:
        """The open sessions."""
        with self._lock:
            return list(self._sessions.values())

    def _start(self, key: str, name: str, cards: Callable[[], Sequence[ToolCard]]) -> AgentSession:
        agent = self._register(name)
        try:
            factory = ToolFactory(cards(), observer=agent)
        except BaseException:
            self._unregister(agent)
            raise
        return AgentSession(
            agent=agent,
            factory=factory,
            tools={tool.name: tool for tool in factory.tools(Channels.TOOL_CALL)},
            prompts={tool.name: tool for tool in factory.tools(Channels.SYSTEM_PROMPT)},
            key=key,
            asked=name,
            last_used=self._clock(),
        )

    def _register(self, key: str) -> SessionAgent:
        # A name already taken by another live member (of this process or another) gets a
        # suffix, so the client still joins rather than failing.
        for attempt in range(1, 100):
            name = key if attempt == 1 else f"{key}-{attempt}"
            agent = SessionAgent(name, self.team, user_id=self.user_id)
            try:
                self.team.register_member(agent.address)
            except ValueError:
                continue
            return agent
        raise RuntimeError(f"no free agent name for {key!r} in team {self.team.team_id}")

    def _close(self, session: AgentSession) -> None:
        with self._lock:
            if self._sessions.get(session.key) is session:
                del self._sessions[session.key]
        with session._lock:
            if session.closed:
                return
            session.closed = True
        self._unregister(session.agent)
        logger.info("agent %s left team %s", session.agent.address.handle, self.team.team_id)

    def _unregister(self, agent: SessionAgent) -> None:
        try:
            self.team.unregister_member(agent.address.name, reason="session ended")
        except Exception:
            # The team may already be stopping; the roster goes with it.
            logger.debug("could not unregister %s", agent.address.handle, exc_info=True)
