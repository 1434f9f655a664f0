"""The ``Orchestrator`` actor: one per team, owning who is in it and which tool actors serve it.

An actor handles one message at a time, so :meth:`Orchestrator.get_or_spawn` is race-free: two
agents binding the same card at once get the same ``#PlanningTool``.

Events go to the team's :class:`~toolcards.actors._journal.EventJournal`. Frequent ones (a
record of every tool call) are published batched (:meth:`Orchestrator.publish_batched`): a
``TeamHandle`` queues them in an :class:`EventQueue` and sends one message per batch, and within
:data:`BATCH_DELAY_S` they reach the journal in one write, so calls are never held up by the
log and the orchestrator's thread is woken once per batch. With a journal shared across
processes, subscribers also get other processes' events every :data:`WATCH_INTERVAL_S`.

The roster is this process's members; every join and leave is also reported to the team's
:class:`~toolcards.actors._presence.Presence` (which answers for every process) and published
as :class:`~toolcards.actors._events.MemberJoined` or :class:`~toolcards.actors._events.MemberLeft`.
One timer per orchestrator renews and sweeps a shared presence every
``presence.beat_interval_s``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pykka

from toolcards.actors._address import ActorAddress
from toolcards.actors._events import LeaveReason, MemberEvent, MemberLeft
from toolcards.actors._journal import EventJournal, MemoryJournal
from toolcards.actors._journal_failures import JournalFailures
from toolcards.actors._presence import MemoryPresence, Presence, PresentMember
from toolcards.actors._returned_errors import ReturnedErrorFilter  # noqa: F401  (attaches it to pykka's logger)

__all__ = [
    "BATCH_DELAY_S",
    "MAX_BATCH",
    "WATCH_INTERVAL_S",
    "EventQueue",
    "EventSubscriber",
    "Orchestrator",
    "Publish",
    "PublishBatched",
    "QueuedEvents",
]

logger = logging.getLogger("toolcards.actors")

EventSubscriber = Callable[[int, Any], None]
"""Called with ``(seq, event)`` for every event published to the team, on the orchestrator's thread."""

WATCH_INTERVAL_S = 0.25
"""How often a shared journal is checked for other processes' events while someone subscribes."""

BATCH_DELAY_S = 0.05
"""Longest a batched event waits before its batch is written to the journal."""

MAX_BATCH = 512
"""A batch this large is written at once, without waiting."""


class Orchestrator(pykka.ThreadingActor):
    """One team's roster, role catalog, tool actors and event log.

    Every method runs on the orchestrator's own thread, one message at a time. None of
    them blocks for long: spawning an actor only starts its thread (its ``on_start`` runs
    there, not here), and subscribers are expected to return quickly. Joins, leaves and
    the presence's beats wait for one write to the presence's store (and the event log's).
    """

    def __init__(self, team_id: str, journal: EventJournal | None = None, presence: Presence | None = None) -> None:
        super().__init__()
        self.team_id = team_id
        self._members: dict[str, tuple[ActorAddress, pykka.ActorRef[Any] | None]] = {}
        self._presence: Presence = presence if presence is not None else MemoryPresence(team_id)
        self._tool_actors: dict[str, pykka.ActorRef[Any]] = {}
        self._profiles: dict[str, Any] = {}
        self._journal: EventJournal = journal if journal is not None else MemoryJournal()
        self._journal_failures = JournalFailures(team_id)
        self._local_seq = 0
        self._subscribers: dict[int, EventSubscriber] = {}
        self._next_token = 1
        # Watching a shared journal: the last number handed to subscribers, the numbers
        # this process appended since (already handed over), and the timer's stop flag.
        self._watched = 0
        self._own: set[int] = set()
        self._watching: threading.Event | None = None
        # Batched events waiting for the journal, and the timer thread's wake-up and stop flags.
        self._batch: list[Any] = []
        self._queues: list[EventQueue] = []  # queues told about since the last flush
        self._batch_due: threading.Event | None = None
        self._stopping = threading.Event()
        # Set when the system begins to stop: what joins or starts after the system took its
        # list of the team's actors would be stopped by no one and keep the process alive.
        self._closed_to_newcomers = False

    def on_start(self) -> None:
        """Start renewing the team's presence, if it needs renewing (runs on the actor's thread)."""
        interval = self._presence.beat_interval_s
        if interval is None:
            return
        stop = self._stopping
        ref = self.actor_ref

        def tick() -> None:
            while not stop.wait(interval):
                try:
                    ref.tell(_Beat())
                except pykka.ActorDeadError:
                    return

        threading.Thread(target=tick, name=f"{self.team_id} presence", daemon=True).start()

    def on_stop(self) -> None:
        """Members still on the roster leave (``reason="left"``), then write the waiting batch and
        stop the timers. Blocks on the presence's store and the event log."""
        for name in list(self._members):
            self.unregister_member(name)
        self._flush()
        self._stopping.set()
        if self._watching is not None:
            self._watching.set()
        if self._batch_due is not None:
            self._batch_due.set()

    def close_to_newcomers(self) -> None:
        """The system is stopping: from now on no tool actor starts and no member joins (each
        is refused with ``RuntimeError``), so the actors the system stops are all there are."""
        self._closed_to_newcomers = True

    # -- tool actors --------------------------------------------------------------------

    def get_or_spawn(self, name: str, actor_class: type[pykka.Actor], *args: Any, **kwargs: Any) -> pykka.ActorRef[Any]:
        """Return the running actor called ``name``, starting ``actor_class(*args, **kwargs)`` if none is.

        A stopped actor of that name is replaced.

        Raises:
            TypeError: the running actor is not an ``actor_class`` (two cards disagree about
                what ``name`` is).
            RuntimeError: the team is stopping and ``name`` is not running.
        """
        ref = self._tool_actors.get(name)
        if ref is not None and ref.is_alive():
            if not issubclass(ref.actor_class, actor_class):
                raise TypeError(
                    f"{name} in team {self.team_id} is a {ref.actor_class.__name__}, not a "
                    f"{actor_class.__name__}; give one of them another name."
                )
            return ref
        if self._closed_to_newcomers:
            raise RuntimeError(f"team {self.team_id} is stopping: {name} is not started again")
        ref = actor_class.start(*args, **kwargs)
        self._tool_actors[name] = ref
        return ref

    def tool_actors(self) -> dict[str, pykka.ActorRef[Any]]:
        """The team's tool actors by name (alive or not)."""
        return dict(self._tool_actors)

    # -- roster -------------------------------------------------------------------------

    def register_member(self, address: ActorAddress, ref: pykka.ActorRef[Any] | None = None) -> None:
        """Add an agent to this process's roster and the team's presence, and publish its
        :class:`~toolcards.actors._events.MemberJoined`.

        A member whose actor died is replaced (it leaves first). When the presence cannot be
        written (its store is out of reach) the failure is logged and the member joins this
        process's roster alone; the presence's next beat puts it in the team's.

        Raises:
            ValueError: a live member holds the name: one of this process, or one of another
                process the presence knows is live (the message says where).
            RuntimeError: the team is stopping (``ref``, if given, is stopped).
        """
        if self._closed_to_newcomers:
            if ref is not None:
                ref.stop(block=False)  # nobody else would: it is on no roster
            raise RuntimeError(f"team {self.team_id} is stopping: {address.handle} cannot join")
        current = self._members.get(address.name)
        if current is not None:
            if current[1] is None or current[1].is_alive():
                raise ValueError(f"{address.handle} is already a member of team {self.team_id}.")
            self.unregister_member(address.name)
        try:
            events = self._presence.join(address)
        except ValueError:
            raise
        except Exception as exc:
            logger.warning(
                "team %s: %s joins this process's roster only for now; the team's could not take it: %s",
                self.team_id,
                address.handle,
                exc,
            )
            events = []
        self._members[address.name] = (address, ref)
        self._announce(events)

    def unregister_member(self, name: str, reason: LeaveReason = "left") -> ActorAddress | None:
        """Remove an agent from this process's roster and the team's presence, and publish its
        :class:`~toolcards.actors._events.MemberLeft` with ``reason``.

        Returns its address, or ``None`` if it is not a member here. When the presence cannot
        be written the failure is logged: the member is no longer renewed, so it leaves the
        team's roster when its presence expires (``reason="expired"``).
        """
        entry = self._members.pop(name, None)
        if entry is None:
            return None
        try:
            events = self._presence.leave(name, reason)
        except Exception as exc:
            logger.warning(
                "team %s: %s left this process's roster; the team's could not take it and will let it expire: %s",
                self.team_id,
                entry[0].handle,
                exc,
            )
            events = []
        self._announce(events)
        return entry[0]

    def members(self) -> list[ActorAddress]:
        """This process's roster, in the order members joined."""
        return [address for address, _ in self._members.values()]

    def present_members(self) -> list[PresentMember]:
        """Every live member of the team, in every process the presence knows, in the order they
        joined. Reads the presence's store; its failure is raised."""
        return self._presence.present()

    def _beat(self) -> None:
        try:
            events = self._presence.beat()
        except Exception as exc:
            logger.warning("team %s: renewing the team's presence failed: %s", self.team_id, exc)
            return
        self._announce(events)

    def _announce(self, events: list[MemberEvent]) -> None:
        for event in events:
            self.publish(event)
        departures = [event for event in events if isinstance(event, MemberLeft)]
        if not departures:
            return
        try:
            self._presence.announced(departures)
        except Exception as exc:  # another process announces them again: at least once
            logger.warning("team %s: the presence could not note departures as announced: %s", self.team_id, exc)

    def member_ref(self, name: str) -> pykka.ActorRef[Any] | None:
        """The actor hosting member ``name``, if it is an actor."""
        entry = self._members.get(name)
        return entry[1] if entry else None

    # -- role catalog ---------------------------------------------------------------------

    def register_profile(self, role: str, profile: Any) -> None:
        """Add or replace the profile members of ``role`` are created from."""
        self._profiles[role] = profile

    def profiles(self) -> dict[str, Any]:
        """Every registered role profile, by role."""
        return dict(self._profiles)

    # -- events ---------------------------------------------------------------------------

    def publish(self, event: Any) -> int:
        """Append ``event`` to the team's journal, notify subscribers, return its sequence number.

        Batched events published before it are written first, so the log keeps their order.
        If the journal cannot take it (a store failure), the failure is logged (one line:
        :class:`~toolcards.actors._journal_failures.JournalFailures`) and the event still
        reaches this process's subscribers, numbered after the last one seen.
        """
        self._flush()
        try:
            seq = self._journal.append(event)
        except Exception as exc:
            self._journal_failures.write_failed(1, exc)
            seq = max(self._local_seq, self._watched) + 1
        else:
            self._journal_failures.write_worked()
            self._own.add(seq)
        self._local_seq = max(self._local_seq, seq)
        self._deliver(seq, event)
        return seq

    def publish_batched(self, event: Any) -> None:
        """Queue ``event`` for the journal: within :data:`BATCH_DELAY_S` it is written with the
        others queued meanwhile, in one write, then handed to subscribers.

        An event whose ``team_id`` is ``None`` (a tool's record) is stamped with this team's.
        """
        self._batch.append(self._stamped(event))
        if len(self._batch) >= MAX_BATCH:
            self._flush()
        elif len(self._batch) == 1:
            self._wake_batch_timer()

    def take_queued(self, queue: EventQueue) -> None:
        """Take ``queue``'s events into the batch at the next flush (at once past :data:`MAX_BATCH`)."""
        if queue not in self._queues:
            self._queues.append(queue)
        if len(queue) + len(self._batch) >= MAX_BATCH:
            self._flush()
        else:
            self._wake_batch_timer()

    def _stamped(self, event: Any) -> Any:
        # An event whose team_id is None (a tool's record) is stamped with this team's.
        if getattr(event, "team_id", "") is None and hasattr(event, "model_copy"):
            event = event.model_copy(update={"team_id": self.team_id})
        return event

    def _wake_batch_timer(self) -> None:
        if self._batch_due is None:
            due = self._batch_due = threading.Event()
            stopping = self._stopping
            ref = self.actor_ref

            def timer() -> None:
                while True:
                    due.wait()
                    if stopping.is_set():
                        return
                    time.sleep(BATCH_DELAY_S)
                    due.clear()
                    try:
                        ref.tell(_Flush())
                    except pykka.ActorDeadError:
                        return

            threading.Thread(target=timer, name=f"{self.team_id} event batch", daemon=True).start()
        self._batch_due.set()

    def _flush(self) -> None:
        """Write the waiting batch as one journal entry and hand its events to subscribers."""
        queues, self._queues = self._queues, []
        for queue in queues:
            self._batch.extend(self._stamped(event) for event in queue.take())
        if not self._batch:
            return
        events, self._batch = self._batch, []
        try:
            seq = self._journal.append_all(events)
        except Exception as exc:
            self._journal_failures.write_failed(len(events), exc)
            seq = max(self._local_seq, self._watched) + 1
        else:
            self._journal_failures.write_worked()
            self._own.add(seq)
        self._local_seq = max(self._local_seq, seq)
        for event in events:
            self._deliver(seq, event)

    def subscribe(self, subscriber: EventSubscriber) -> int:
        """Register ``subscriber``; returns a token for :meth:`unsubscribe`.

        With a shared journal, this starts watching it for the events of other processes.
        """
        token = self._next_token
        self._next_token += 1
        self._subscribers[token] = subscriber
        if self._journal.shared and self._watching is None:
            self._start_watching()
        return token

    def unsubscribe(self, token: int) -> None:
        """Remove a subscriber (unknown tokens are ignored)."""
        self._subscribers.pop(token, None)

    def head(self) -> int:
        """The number of the last entry in the team's journal (every process's)."""
        self._flush()
        return self._journal.head()

    def events(self, since: int = 0) -> list[tuple[int, Any]]:
        """Events with a sequence number above ``since`` still in the journal (every process's)."""
        self._flush()
        return self._journal.since(since)

    def on_receive(self, message: Any) -> Any:
        """Handle fire-and-forget messages sent with ``tell``."""
        if isinstance(message, Publish):
            return self.publish(message.event)
        if isinstance(message, PublishBatched):
            self.publish_batched(message.event)
            return None
        if isinstance(message, QueuedEvents):
            self.take_queued(message.queue)
            return None
        if isinstance(message, _Flush):
            self._flush()
            return None
        if isinstance(message, _Watch):
            self._watch()
        elif isinstance(message, _Beat):
            self._beat()
        return None

    def _deliver(self, seq: int, event: Any) -> None:
        for token, subscriber in list(self._subscribers.items()):
            try:
                subscriber(seq, event)
            except Exception:
                logger.exception("event subscriber %s of team %s failed", token, self.team_id)

    def _start_watching(self) -> None:
        try:
            self._watched = self._journal.head()
        except Exception as exc:
            self._journal_failures.read_failed(exc)
            return
        self._journal_failures.read_worked()
        self._own = {seq for seq in self._own if seq > self._watched}
        stop = self._watching = threading.Event()
        ref = self.actor_ref

        def tick() -> None:
            while not stop.wait(WATCH_INTERVAL_S):
                try:
                    ref.tell(_Watch())
                except pykka.ActorDeadError:
                    return

        threading.Thread(target=tick, name=f"{self.team_id} event watch", daemon=True).start()

    def _watch(self) -> None:
        if not self._subscribers:
            return
        self._flush()  # this process's batch goes first, so its events are not seen twice
        try:
            events = self._journal.since(self._watched)
        except Exception as exc:
            self._journal_failures.read_failed(exc)
            return
        self._journal_failures.read_worked()
        for seq, event in events:
            self._watched = max(self._watched, seq)
            if seq in self._own:  # this process's, handed over when it was written
                continue
            self._deliver(seq, event)
        self._own = {seq for seq in self._own if seq > self._watched}

    def member_refs(self) -> list[pykka.ActorRef[Any]]:
        """The actors hosting members, for an orderly shutdown."""
        return [ref for _, ref in self._members.values() if ref is not None]


class _Watch:
    """The watch timer's tick: look for other processes' events."""

    __slots__ = ()


class _Flush:
    """The batch timer's tick: write the waiting batch."""

    __slots__ = ()


class _Beat:
    """The presence timer's tick: renew this process's members, sweep out expired ones."""

    __slots__ = ()


class Publish:
    """A fire-and-forget publish message for :meth:`Orchestrator.on_receive`."""

    __slots__ = ("event",)

    def __init__(self, event: Any) -> None:
        self.event = event


class PublishBatched:
    """A fire-and-forget message for :meth:`Orchestrator.publish_batched`."""

    __slots__ = ("event",)

    def __init__(self, event: Any) -> None:
        self.event = event


class EventQueue:
    """Events queued for the orchestrator's next batch by another thread. Thread-safe.

    :meth:`put` says when the orchestrator must be told (a :class:`QueuedEvents` message):
    when the queue was empty, and again every :data:`MAX_BATCH` events. The orchestrator
    :meth:`take` s everything at its flush, so while a batch fills no message is sent.
    """

    __slots__ = ("_events", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Any] = []

    def put(self, event: Any) -> bool:
        """Queue ``event``; ``True`` when the orchestrator must be told about the queue."""
        with self._lock:
            self._events.append(event)
            count = len(self._events)
        return count == 1 or count % MAX_BATCH == 0

    def take(self) -> list[Any]:
        """Every queued event, in order; the queue is empty afterwards."""
        with self._lock:
            events, self._events = self._events, []
        return events

    def __len__(self) -> int:
        return len(self._events)


class QueuedEvents:
    """A fire-and-forget message: ``queue`` holds events for the next batch."""

    __slots__ = ("queue",)

    def __init__(self, queue: EventQueue) -> None:
        self.queue = queue
