"""``ActorSystem`` and ``TeamHandle``: starting, finding and stopping a process's actors."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, overload

import pykka

from toolcards.actors._address import ActorAddress
from toolcards.actors._asking import ask
from toolcards.actors._events import LeaveReason
from toolcards.actors._journal import JournalFactory
from toolcards.actors._orchestrator import EventQueue, EventSubscriber, Orchestrator, Publish, QueuedEvents
from toolcards.actors._presence import PresenceFactory, PresentMember

__all__ = ["ActorSystem", "TeamHandle"]

A = TypeVar("A", bound=pykka.Actor)
P = TypeVar("P", bound=pykka.ActorProxy[Any])


class TeamHandle:
    """A handle on one team's :class:`Orchestrator`, usable from any thread.

    Most methods are asks to the orchestrator and block the calling thread briefly; call
    them from worker threads or sync tools, not from an event loop. :meth:`provide`,
    :meth:`service`, :meth:`note_activity` and :meth:`last_activity` never block.
    """

    def __init__(self, team_id: str, ref: pykka.ActorRef[Orchestrator]) -> None:
        self.team_id = team_id
        self.ref = ref
        self._proxy = ref.proxy()
        self._label = f"orchestrator of team {team_id}"
        self._queued = EventQueue()
        self._services: dict[str, Any] = {}
        self._activity: dict[str, float] = {}
        self.ledger: Any = None
        """The team's ledger in this process (``toolcards.core._ledger.CallLedger``), made by
        the system's ``ledger`` factory; ``None``: calls are not noted. Added in 0.3."""

    # -- in this process, without an ask ---------------------------------------------------

    def provide(self, name: str, service: Any) -> None:
        """Offer ``service`` to the team's other cards in this process under ``name``.

        How one domain reaches another's actor without importing it: the mailbox offers
        ``"mailbox"``, the board ``"path_reservations"``; the first to provide a name keeps it.
        """
        self._services.setdefault(name, service)

    def service(self, name: str) -> Any | None:
        """The service offered under ``name`` in this process, or ``None`` (no such card here)."""
        return self._services.get(name)

    def note_activity(self, member: str) -> None:
        """Record that ``member`` (its handle, ``@Name``) made a tool call now; what renews
        the leases of the tasks it claimed."""
        self._activity[member] = time.monotonic()

    def last_activity(self, member: str) -> float | None:
        """When ``member`` last made a tool call in this process (``time.monotonic()``), if ever."""
        return self._activity.get(member)

    @overload
    def get_or_spawn(self, name: str, actor_class: type[A], *args: Any, proxy: type[P], **kwargs: Any) -> P: ...
    @overload
    def get_or_spawn(self, name: str, actor_class: type[A], *args: Any, **kwargs: Any) -> pykka.ActorProxy[A]: ...
    def get_or_spawn(
        self, name: str, actor_class: type[A], *args: Any, proxy: type[Any] | None = None, **kwargs: Any
    ) -> Any:
        """The team's actor called ``name``, started as ``actor_class(*args, **kwargs)`` if needed.

        Race-free: concurrent callers get the same actor. Returns a proxy, typed as ``proxy``
        when given (a ``pykka.ActorProxy`` subclass declaring the actor's methods with
        ``proxy_method``), so readers and type checkers can follow a call to the actor.
        """
        ref: pykka.ActorRef[A] = ask(self._proxy.get_or_spawn(name, actor_class, *args, **kwargs), actor=self._label)
        return ref.proxy()  # the same object either way: ``proxy`` only types it

    def publish(self, event: Any) -> None:
        """Publish ``event`` to the team's log and subscribers without waiting."""
        self.ref.tell(Publish(event))

    def publish_batched(self, event: Any) -> None:
        """Queue ``event`` for the team's log without waiting; it is written with others in one
        batch within ``BATCH_DELAY_S``. For frequent events: one record per tool call.

        Costs a lock and an append; the orchestrator is sent one message per batch.

        Added in 0.2.
        """
        if self._queued.put(event):
            self.ref.tell(QueuedEvents(self._queued))

    def publish_and_wait(self, event: Any) -> int:
        """Publish ``event`` and return its sequence number."""
        seq: int = ask(self._proxy.publish(event), actor=self._label)
        return seq

    def subscribe(self, subscriber: EventSubscriber) -> Callable[[], None]:
        """Call ``subscriber(seq, event)`` for each later event; returns an unsubscribe function."""
        token: int = ask(self._proxy.subscribe(subscriber), actor=self._label)

        def unsubscribe() -> None:
            if self.ref.is_alive():
                self._proxy.unsubscribe(token)

        return unsubscribe

    def head(self) -> int:
        """The number of the last entry in the team's log (0 for none). Added in 0.2."""
        seq: int = ask(self._proxy.head(), actor=self._label)
        return seq

    def events(self, since: int = 0) -> list[tuple[int, Any]]:
        """Logged events with a sequence number above ``since``."""
        events: list[tuple[int, Any]] = ask(self._proxy.events(since), actor=self._label)
        return events

    def register_member(self, address: ActorAddress, ref: pykka.ActorRef[Any] | None = None) -> None:
        """Add an agent to this process's roster and the team's presence; it is present in
        every process's :meth:`present_members` when this returns (the presence's write is
        committed), and its ``MemberJoined`` is published.

        Raises:
            ValueError: the name is taken by a live member, of this process or of another
                one of the team (the message says where).
        """
        ask(self._proxy.register_member(address, ref), actor=self._label)

    def unregister_member(self, name: str, reason: LeaveReason = "left") -> ActorAddress | None:
        """Remove an agent from this process's roster and the team's presence, publishing its
        ``MemberLeft`` with ``reason``; returns its address (``None``: not a member here).

        Changed in 0.2: ``reason``, and the member leaves every process's roster at once.
        """
        address: ActorAddress | None = ask(self._proxy.unregister_member(name, reason), actor=self._label)
        return address

    def members(self) -> list[ActorAddress]:
        """This process's roster, in the order members joined (:meth:`member_ref` finds their actors)."""
        members: list[ActorAddress] = ask(self._proxy.members(), actor=self._label)
        return members

    def present_members(self) -> list[PresentMember]:
        """The whole team's live members, in every process sharing its presence, in the order
        they joined: name, role, handle, process and host, joined and last seen.

        With the default presence, this process's members only. Reads the presence's store
        (a cheap check when nothing changed) on the orchestrator's thread.

        Added in 0.2.
        """
        present: list[PresentMember] = ask(self._proxy.present_members(), actor=self._label)
        return present

    def member_ref(self, name: str) -> pykka.ActorRef[Any] | None:
        """The actor hosting member ``name``."""
        ref: pykka.ActorRef[Any] | None = ask(self._proxy.member_ref(name), actor=self._label)
        return ref

    def register_profile(self, role: str, profile: Any) -> None:
        """Add or replace a role profile in the team's catalog."""
        ask(self._proxy.register_profile(role, profile), actor=self._label)

    def profiles(self) -> dict[str, Any]:
        """The team's role catalog."""
        profiles: dict[str, Any] = ask(self._proxy.profiles(), actor=self._label)
        return profiles

    def tool_actors(self) -> dict[str, pykka.ActorRef[Any]]:
        """The team's tool actors by name."""
        actors: dict[str, pykka.ActorRef[Any]] = ask(self._proxy.tool_actors(), actor=self._label)
        return actors


class ActorSystem:
    """The actors of one process: one orchestrator per team, created on first use.

    Use it as a context manager, or call :meth:`stop`, so state is flushed on exit.

    Args:
        journal: makes each team's event log. The default keeps each team's last events in
            this process; ``toolcards.store.store_journals()`` keeps them in the team's store,
            shared by every process of the team (``toolcards serve`` and ``toolcards call``
            use that).
        presence: makes each team's presence (who is in the team). The default knows this
            process's members only; ``toolcards.store.store_presence()`` keeps the team's
            roster in its store, one for every process of the team (``toolcards.Team``,
            ``toolcards serve``, ``call`` and ``dashboard`` use that). Added in 0.2.
        ledger: makes each team's ledger from its handle: what every call costs, and the
            budgets that refuse calls (``toolcards.core._ledger``). The default keeps none;
            ``toolcards.store.store_ledgers()`` keeps it in the team's store (``toolcards.Team``,
            ``toolcards serve`` and ``call`` use that). Stopping the system writes what it
            still holds. Added in 0.3.
    """

    def __init__(
        self,
        *,
        journal: JournalFactory | None = None,
        presence: PresenceFactory | None = None,
        ledger: Callable[[TeamHandle], Any] | None = None,
    ) -> None:
        self._journal = journal
        self._presence = presence
        self._ledger = ledger
        self._teams: dict[str, TeamHandle] = {}
        self._lock = threading.Lock()
        self._stopped = False

    def team(self, team_id: str) -> TeamHandle:
        """The team called ``team_id``, starting its orchestrator if needed (thread-safe)."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("this ActorSystem is stopped; create a new one")
            team = self._teams.get(team_id)
            if team is None or not team.ref.is_alive():
                if team is not None and team.ledger is not None:
                    team.ledger.close()  # the team's old handle goes: write what its ledger holds
                log = self._journal(team_id) if self._journal is not None else None
                presence = self._presence(team_id) if self._presence is not None else None
                team = TeamHandle(team_id, Orchestrator.start(team_id, log, presence))
                if self._ledger is not None:
                    team.ledger = self._ledger(team)
                self._teams[team_id] = team
            return team

    def teams(self) -> list[str]:
        """The ids of the teams started in this system."""
        with self._lock:
            return list(self._teams)

    def lookup(self, address: ActorAddress) -> pykka.ActorRef[Any] | None:
        """The actor at ``address``: a team's tool actor (``#name``) or member, if running."""
        with self._lock:
            team = self._teams.get(address.team_id)
        if team is None or not team.ref.is_alive():
            return None
        ref = team.tool_actors().get(address.name) if address.is_tool_actor else team.member_ref(address.name)
        return ref if ref is not None and ref.is_alive() else None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every team in order: agents, then tool actors (flushing state), then orchestrators.

        Members still on a roster leave it (``reason="left"``), so other processes stop seeing
        them at once. Idempotent. Blocks until every actor has stopped or ``timeout`` passed
        per actor.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            teams = list(self._teams.values())
        # From this thread, not the orchestrator's: a member stopping may still ask its
        # orchestrator something, which must be able to answer.
        for team in teams:
            if not team.ref.is_alive():
                if team.ledger is not None:
                    team.ledger.close()
                continue
            # Closed first, so the lists below are complete: a session binding or a call
            # finishing meanwhile cannot start an actor that nobody would stop.
            ask(team._proxy.close_to_newcomers(), actor=team._label)
            members: list[pykka.ActorRef[Any]] = ask(team._proxy.member_refs(), actor=team._label)
            for ref in members:
                ref.stop(block=True, timeout=timeout)
            for ref in team.tool_actors().values():
                ref.stop(block=True, timeout=timeout)
            if team.ledger is not None:
                team.ledger.close()  # after the members: their last calls are written
            team.ref.stop(block=True, timeout=timeout)

    def __enter__(self) -> ActorSystem:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
