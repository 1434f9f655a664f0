"""The team's durable mailboxes: :class:`MailboxActor`, a cache of the store namespace that holds them.

Every member of a team, in any process or host sharing the team's store, has a mailbox in
``"<team_id>/#Mailbox"``: ``messages`` (one row per unread
:class:`~toolcards.team._models.MailboxMessage`, key ``<member>/<number>``), ``boxes`` (per
member ``{"last": n, "read": n}``: its last message and its delivery cursor), ``reminders``
(pending :class:`~toolcards.team._models.Reminder` rows), ``stops`` (members asked to stop),
``meta`` (the next reminder id) and ``#calls`` (:class:`~toolcards.store._calls.CallLog`, which
makes a keyed send, read or reminder exactly-once).

**Exactly once.** A read (:meth:`MailboxActor.take`) holds the namespace's write lock, catches
up, and in one transaction hands over the oldest unread messages, advances the cursor and
deletes them: two processes never hand one message twice, and a read message is kept nowhere
(the event log keeps what was sent). A send to a mailbox holding
:data:`~toolcards.team._models.INBOX_MAX` unread messages is refused, naming the bound. A
member that leaves keeps its mailbox for whoever joins later with its name.

**Reminders** are due at an absolute time. Every process keeps one timer
(:mod:`toolcards.actors._timers`) for the soonest reminder it knows, and a tick every
:data:`TICK_S` to catch up with other processes; whichever fires first moves the reminder into
its member's mailbox in one transaction, so a reminder is delivered once, by any live process,
even after its setter exited, and even into a full mailbox (at most
:data:`~toolcards.team._models.REMINDERS_MAX` pending per member). Member actors
:meth:`~MailboxActor.listen` to be called back when a message or stop request reaches them
(from another process: at the next tick). Cards reach the actor through
:mod:`toolcards.team._delivery`, which also resolves recipients.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._timers import ActorTimer
from toolcards.core._events import ToolcardsEvent
from toolcards.core._idempotency import CallKey
from toolcards.core._steering import StopRequest
from toolcards.errors import RetriableError
from toolcards.store._base import Change, Store
from toolcards.store._codec import JSONText
from toolcards.store._namespace_actor import NamespaceActor
from toolcards.team._models import (
    INBOX_MAX,
    MESSAGE_MAX,
    REMINDERS_MAX,
    MailboxMessage,
    MessagesRead,
    Reminder,
    ReminderCancelled,
    ReminderFired,
    ReminderSet,
    SendReport,
    StopDelivered,
    StopRequested,
    TeamMessage,
)

__all__ = ["MAILBOX_ACTOR_NAME", "READ_MAX_CHARS", "TICK_S", "MailboxActor", "MailboxProxy"]

logger = logging.getLogger(__name__)

MAILBOX_ACTOR_NAME = "#Mailbox"
"""The actor's name in a team, and the suffix of its store namespace."""
TICK_S = 0.5
"""How often each process catches up with the mailboxes: messages and stop requests for its
members, reminders other processes set."""
READ_MAX_CHARS = 16_000
"""Characters of message text one read hands over at most (at least one message); the rest
stay unread for the next read."""

_MESSAGES = "messages"
_BOXES = "boxes"
_REMINDERS = "reminders"
_STOPS = "stops"
_META = "meta"
_META_KEY = "mailbox"

Listener = Callable[[], None]
"""Called (under the mailbox's lock: it must not block) when its member has news."""


class MailboxActor(NamespaceActor):
    """The mailboxes of one team, as this process sees them; methods run one at a time.

    A cache of the namespace ``"<team_id>/#Mailbox"`` (see the module docstring). Every write
    takes the namespace's lock, catches up, checks and commits before it answers; every read
    first asks the store, cheaply, whether anything changed. Members are named without ``@``
    (``"Bob"``).

    Args:
        team_id: the team; the namespace is ``f"{team_id}/#Mailbox"``.
        store: where the mailboxes are kept; it must outlive the actor.
        publish: called with each event (a message sent, messages read, a reminder set, fired
            or cancelled, a stop requested or delivered), under the actor's lock: it must not
            block; an exception it raises is logged and ignored.

    The namespace is loaded by the constructor, in the thread that starts the actor, so a store
    that cannot be read fails the card's bind instead of leaving a dead actor.
    """

    def __init__(self, team_id: str, store: Store, publish: Callable[[ToolcardsEvent], None] | None = None) -> None:
        super().__init__(team_id, MAILBOX_ACTOR_NAME, store, publish)
        self._unread: dict[str, dict[int, MailboxMessage]] = {}
        """Member → number → unread message (read ones are deleted)."""
        self._boxes: dict[str, tuple[int, int]] = {}
        """Member → (number of its last message, its cursor: the number of the last one read)."""
        self._reminders: dict[int, Reminder] = {}
        self._stops: dict[str, dict[str, Any]] = {}
        self._next_reminder = 1
        self._listeners: dict[str, dict[int, Listener]] = {}
        self._listener_ids = 0
        self._news: set[str] = set()
        """Members with a new message or stop request since their listeners were last called."""
        self._tick = ActorTimer()
        self._due_timer = ActorTimer()
        self._due_at: float | None = None
        self._started = False
        self._load()

    # -- lifecycle ---------------------------------------------------------------------

    def on_start(self) -> None:
        """Start the tick and the timer of the soonest reminder; runs on the actor's thread."""
        self._started = True
        self._schedule_tick()
        self._settle()

    def on_stop(self) -> None:
        """Cancel the timers. Every acknowledged write is in the store already."""
        self._started = False
        super().on_stop()

    def on_receive(self, message: Any) -> Any:
        """Handle the tick and the reminder timer; other messages go to pykka's default."""
        if isinstance(message, _Tick):
            self._on_tick()
            return None
        if isinstance(message, _Due):
            self._on_due()
            return None
        return super().on_receive(message)

    # -- messages ----------------------------------------------------------------------

    def post(self, sender: str, recipients: Sequence[str], text: str, *, call: CallKey | None = None) -> SendReport:
        """Put one message from ``sender`` in the mailbox of each of ``recipients`` (names).

        A mailbox holding :data:`~toolcards.team._models.INBOX_MAX` unread messages is skipped
        and reported in :attr:`SendReport.full`; the others get the message, numbered after
        their last. Recipients are not checked against the roster here (the caller resolved
        them): a mailbox exists for any name.

        Args:
            sender: a handle (``"@Ann"``), an actor's name or a label (``"user"``).
            recipients: member names, each once.
            text: 1 to :data:`~toolcards.team._models.MESSAGE_MAX` characters.
            call: the call's idempotency key: a send made again with it answers its first
                report (``replayed``) without sending twice, in any process.

        Raises:
            RetriableError: ``text`` is empty or too long.
            StoreError / OutcomeUnknown: the transaction failed (nothing was sent) or its
                outcome was lost (send again with the same ``call``).

        Committed before it returns (nothing is committed when every mailbox was full); one
        store transaction. Listeners of the recipients in this process are called.
        """
        if not text or len(text) > MESSAGE_MAX:
            raise RetriableError(f"A message has 1 to {MESSAGE_MAX} characters; this one has {len(text)}.")
        names = list(dict.fromkeys(recipients))
        with self._writing() as txn:
            replayed = self._calls.replay(call, "send_message")
            if replayed is not None:
                return SendReport.model_validate(replayed).model_copy(update={"replayed": True})
            sent = datetime.now(UTC)
            messages: list[MailboxMessage] = []
            full: dict[str, int] = {}
            for name in names:
                waiting = len(self._unread.get(name, ()))
                if waiting >= INBOX_MAX:
                    full[name] = waiting
                    continue
                last, _ = self._boxes.get(name, (0, 0))
                messages.append(MailboxMessage(recipient=name, number=last + 1, sender=sender, text=text, sent=sent))
            report = SendReport(delivered=[m.recipient for m in messages], full=full)
            if not messages:
                return report
            calls = self._calls.record(call, report.model_dump(mode="json"), txn.version + 1)
            txn.stage([*self._message_rows(messages), *calls])
        for message in messages:
            self._put_message(message)
        self._calls.committed(calls)
        for message in messages:
            self._publish_event(
                TeamMessage(team_id=self._team_id, sender=sender, recipient=f"@{message.recipient}", text=text)
            )
        self._settle()
        return report

    def take(
        self, member: str, *, limit_chars: int = READ_MAX_CHARS, call: CallKey | None = None
    ) -> tuple[list[MailboxMessage], int]:
        """Hand over ``member``'s oldest unread messages, exactly once; returns them and how
        many stay unread.

        As many as fit in ``limit_chars`` characters of text (at least one), oldest first. The
        member's cursor advances past them and they are deleted, in one transaction: no other
        call, here or in another process, gets them again. ``call`` makes a retry of a keyed
        read answer the same messages (see :meth:`post`).

        Cheap when nothing is unread: a catch-up check, no write.

        Raises:
            StoreError / OutcomeUnknown: the transaction failed (nothing was handed over) or
                its outcome was lost (read again with the same ``call``).
        """
        self._refresh()
        replayed = self._calls.replay(call, "read_messages")
        if replayed is not None:
            return _taken(replayed)
        if not self._unread.get(member):
            return [], 0
        with self._writing() as txn:
            replayed = self._calls.replay(call, "read_messages")
            if replayed is not None:
                return _taken(replayed)
            waiting = sorted(self._unread.get(member, {}).values(), key=lambda m: m.number)
            page: list[MailboxMessage] = []
            size = 0
            for message in waiting:
                if page and size + len(message.text) > limit_chars:
                    break
                page.append(message)
                size += len(message.text)
            if not page:
                return [], 0
            remaining = len(waiting) - len(page)
            last, _ = self._boxes[member]
            answer = {"m": [m.model_dump(mode="json") for m in page], "r": remaining}
            calls = self._calls.record(call, answer, txn.version + 1)
            rows = [Change(collection=_MESSAGES, key=_message_key(m), value=None) for m in page]
            rows.append(Change(collection=_BOXES, key=member, value={"last": last, "read": page[-1].number}))
            txn.stage([*rows, *calls])
        box = self._unread.get(member, {})
        for message in page:
            box.pop(message.number, None)
        self._boxes[member] = (last, page[-1].number)
        self._calls.committed(calls)
        self._publish_event(
            MessagesRead(team_id=self._team_id, member=f"@{member}", count=len(page), remaining=remaining)
        )
        self._settle()
        return page, remaining

    def unread(self, member: str) -> tuple[int, list[str]]:
        """How many messages ``member`` has unread, and from whom (senders in order of first
        message; a reminder as ``"a reminder"``). After a cheap catch-up."""
        self._refresh()
        box = self._unread.get(member, {})
        senders = [("a reminder" if m.reminder is not None else m.sender) for m in _in_order(box)]
        return len(box), list(dict.fromkeys(senders))

    def unread_counts(self) -> dict[str, int]:
        """Member → unread count, for every member with unread messages. After a catch-up."""
        self._refresh()
        return {member: len(box) for member, box in self._unread.items() if box}

    # -- stop requests ----------------------------------------------------------------

    def request_stop(self, by: str, member: str, reason: str, *, call: CallKey | None = None) -> None:
        """Ask ``member`` to stop its run: the request waits in the store until its agent's
        next step boundary takes it (:meth:`take_stop`), in whichever process it runs.

        A second request before the first is taken replaces it. Committed before it returns;
        listeners of ``member`` in this process are called.
        """
        with self._writing() as txn:
            if self._calls.replay(call, "stop_member") is not None:
                return
            value = {"by": by, "reason": reason, "at": time.time()}
            calls = self._calls.record(call, True, txn.version + 1)
            txn.stage([Change(collection=_STOPS, key=member, value=value), *calls])
        self._stops[member] = value
        self._news.add(member)
        self._calls.committed(calls)
        self._publish_event(StopRequested(team_id=self._team_id, member=f"@{member}", by=by, reason=reason))
        self._settle()

    def take_stop(self, member: str) -> StopRequest | None:
        """The stop request waiting for ``member``, taken (deleted) in one transaction so it is
        delivered once; ``None`` when there is none (a cheap catch-up check, no write)."""
        self._refresh()
        if member not in self._stops:
            return None
        with self._writing() as txn:
            value = self._stops.get(member)
            if value is None:
                return None
            txn.stage([Change(collection=_STOPS, key=member, value=None)])
        self._stops.pop(member, None)
        stop = StopRequest(member=f"@{member}", by=str(value.get("by", "")), reason=str(value.get("reason", "")))
        self._publish_event(StopDelivered(team_id=self._team_id, member=stop.member, by=stop.by, reason=stop.reason))
        return stop

    # -- reminders ---------------------------------------------------------------------

    def remind(self, member: str, text: str, due: float, *, call: CallKey | None = None) -> Reminder:
        """Set a reminder for ``member``: ``text`` arrives in its mailbox at ``due`` (seconds
        since the epoch). The caller checked ``due`` and ``text``.

        Raises:
            RetriableError: ``member`` has :data:`~toolcards.team._models.REMINDERS_MAX`
                reminders pending already.

        Committed before it returns; this process's timer is moved if it is the soonest.
        """
        with self._writing() as txn:
            replayed = self._calls.replay(call, "remind_me")
            if replayed is not None:
                return Reminder.model_validate(replayed)
            pending = sum(1 for r in self._reminders.values() if r.member == member)
            if pending >= REMINDERS_MAX:
                raise RetriableError(
                    f"You have {pending} reminders pending, the most one member may have. "
                    "Cancel one with cancel_reminder (list_reminders shows them), then retry."
                )
            reminder = Reminder(id=self._next_reminder, member=member, text=text, due=due, created=time.time())
            calls = self._calls.record(call, reminder.model_dump(mode="json"), txn.version + 1)
            txn.stage(
                [
                    Change(collection=_REMINDERS, key=str(reminder.id), value=JSONText(reminder.model_dump_json())),
                    Change(collection=_META, key=_META_KEY, value={"next_reminder": reminder.id + 1}),
                    *calls,
                ]
            )
        self._reminders[reminder.id] = reminder
        self._next_reminder = reminder.id + 1
        self._calls.committed(calls)
        self._publish_event(
            ReminderSet(team_id=self._team_id, member=f"@{member}", reminder_id=reminder.id, due=reminder.due_at)
        )
        self._settle()
        return reminder

    def reminders(self, member: str) -> list[Reminder]:
        """``member``'s pending reminders, soonest first (after a cheap catch-up)."""
        self._refresh()
        return sorted((r for r in self._reminders.values() if r.member == member), key=lambda r: (r.due, r.id))

    def cancel_reminder(self, member: str, reminder_id: int, *, call: CallKey | None = None) -> Reminder:
        """Cancel ``member``'s reminder ``reminder_id`` before it falls due; returns it.

        Raises:
            RetriableError: no pending reminder of ``member`` has that id (unknown, already
                delivered, or someone else's); the message lists ``member``'s ids.

        Committed before it returns.
        """
        with self._writing() as txn:
            replayed = self._calls.replay(call, "cancel_reminder")
            if replayed is not None:
                return Reminder.model_validate(replayed)
            reminder = self._reminders.get(reminder_id)
            if reminder is None or reminder.member != member:
                mine = sorted(r.id for r in self._reminders.values() if r.member == member)
                listed = f"Your pending reminders: {', '.join(map(str, mine))}." if mine else "You have none pending."
                raise RetriableError(
                    f"You have no pending reminder {reminder_id} (it was delivered, cancelled, or is not yours). "
                    f"{listed} list_reminders shows them."
                )
            calls = self._calls.record(call, reminder.model_dump(mode="json"), txn.version + 1)
            txn.stage([Change(collection=_REMINDERS, key=str(reminder_id), value=None), *calls])
        self._reminders.pop(reminder_id, None)
        self._calls.committed(calls)
        self._publish_event(ReminderCancelled(team_id=self._team_id, member=f"@{member}", reminder_id=reminder_id))
        self._settle()
        return reminder

    # -- this process's members --------------------------------------------------------

    def listen(self, member: str, listener: Listener) -> int:
        """Call ``listener()`` whenever a message or a stop request reaches ``member``'s mailbox
        (at once if something waits there already); returns the id :meth:`unlisten` takes.

        ``listener`` runs under the actor's lock, on whichever thread runs the actor: it must
        return at once (send an actor a message)."""
        self._listener_ids += 1
        self._listeners.setdefault(member, {})[self._listener_ids] = listener
        self._refresh()
        if self._unread.get(member) or member in self._stops:
            self._news.add(member)
        self._settle()
        return self._listener_ids

    def unlisten(self, listener_id: int) -> None:
        """Stop calling the listener :meth:`listen` returned ``listener_id`` for."""
        for member, listeners in list(self._listeners.items()):
            if listeners.pop(listener_id, None) is not None and not listeners:
                del self._listeners[member]

    # -- the tick and the reminder timer -----------------------------------------------

    def _schedule_tick(self) -> None:
        self._tick.tell_later(self.actor_ref, TICK_S, _Tick())

    def _on_tick(self) -> None:
        """Catch up (waking this process's members for news), and deliver due reminders."""
        try:
            self._refresh()
            self._deliver_due()
        except Exception:
            log = logger.debug if self._store.closed else logger.exception
            log("The tick of %s failed; the next one tries again.", self._namespace)
        finally:
            self._schedule_tick()

    def _on_due(self) -> None:
        self._due_at = None
        try:
            self._deliver_due()
        except Exception:
            log = logger.debug if self._store.closed else logger.exception
            log("Delivering the reminders of %s failed; the next tick tries again.", self._namespace)
            # No timer until a delivery succeeds: a failing store is retried by the tick, not in a loop.
            self._due_at = min((r.due for r in self._reminders.values()), default=None)
            return
        self._settle()

    def _deliver_due(self) -> None:
        """Move every reminder that fell due into its member's mailbox, in one transaction
        (a reminder another process delivered first is found gone after the catch-up)."""
        now = time.time()
        if not any(r.due <= now for r in self._reminders.values()):
            return
        with self._writing() as txn:
            now = time.time()
            due = sorted((r for r in self._reminders.values() if r.due <= now), key=lambda r: (r.due, r.id))
            if not due:
                return
            lasts: dict[str, int] = {}
            messages = []
            for reminder in due:
                last = lasts.get(reminder.member, self._boxes.get(reminder.member, (0, 0))[0]) + 1
                lasts[reminder.member] = last
                messages.append(
                    MailboxMessage(
                        recipient=reminder.member,
                        number=last,
                        sender=f"@{reminder.member}",
                        text=reminder.text,
                        sent=reminder.due_at,
                        reminder=reminder.id,
                    )
                )
            rows = self._message_rows(messages)
            rows += [Change(collection=_REMINDERS, key=str(r.id), value=None) for r in due]
            txn.stage(rows)
        delivered = time.time()
        for reminder, message in zip(due, messages, strict=True):
            self._reminders.pop(reminder.id, None)
            self._put_message(message)
            self._publish_event(
                ReminderFired(
                    team_id=self._team_id,
                    member=f"@{reminder.member}",
                    reminder_id=reminder.id,
                    due=reminder.due_at,
                    late_s=max(0.0, delivered - reminder.due),
                )
            )
        self._settle()

    def _schedule_due(self) -> None:
        """Keep one timer, at the soonest reminder this process knows of."""
        soonest = min((r.due for r in self._reminders.values()), default=None)
        if soonest == self._due_at:
            return
        self._due_timer.cancel()
        self._due_at = soonest
        if soonest is not None:
            self._due_timer.tell_later(self.actor_ref, soonest - time.time(), _Due())

    def _cancel_timers(self) -> None:
        self._tick.cancel()
        self._due_timer.cancel()

    # -- the store ---------------------------------------------------------------------

    def _refresh(self) -> bool:
        """Catch up with what other processes committed, then settle; whether anything was."""
        if not super()._refresh():
            return False
        self._settle()
        return True

    def _settle(self) -> None:
        """After a change: call the listeners of members with news, move the reminder timer."""
        news, self._news = self._news, set()
        for member in news:
            for listener in list(self._listeners.get(member, {}).values()):
                try:
                    listener()
                except Exception:
                    logger.exception("A mailbox listener of @%s failed.", member)
        if self._started:
            self._schedule_due()

    def _clear(self) -> None:
        self._unread.clear()
        self._boxes.clear()
        self._reminders.clear()
        self._stops.clear()
        self._next_reminder = 1

    def _absorb_changes(self, changes: Sequence[Change]) -> list[str]:
        """Apply committed rows to memory (no texts here have vectors)."""
        for change in changes:
            collection, value = change.collection, change.value
            if collection == _MESSAGES:
                member, _, number = change.key.rpartition("/")
                if value is None:
                    self._unread.get(member, {}).pop(int(number), None)
                else:
                    self._put_message(MailboxMessage.model_validate(value))
            elif collection == _BOXES:
                if value is None:
                    self._boxes.pop(change.key, None)
                else:
                    self._boxes[change.key] = (int(value.get("last", 0)), int(value.get("read", 0)))
            elif collection == _REMINDERS:
                if value is None:
                    self._reminders.pop(int(change.key), None)
                else:
                    reminder = Reminder.model_validate(value)
                    self._reminders[reminder.id] = reminder
                    self._next_reminder = max(self._next_reminder, reminder.id + 1)
            elif collection == _STOPS:
                if value is None:
                    self._stops.pop(change.key, None)
                else:
                    self._stops[change.key] = dict(value)
                    self._news.add(change.key)
            elif collection == _META and change.key == _META_KEY and value is not None:
                self._next_reminder = max(self._next_reminder, int(value.get("next_reminder", 1)))
        return []

    def _put_message(self, message: MailboxMessage) -> None:
        self._unread.setdefault(message.recipient, {})[message.number] = message
        last, read = self._boxes.get(message.recipient, (0, 0))
        self._boxes[message.recipient] = (max(last, message.number), read)
        self._news.add(message.recipient)

    def _message_rows(self, messages: Sequence[MailboxMessage]) -> list[Change]:
        """The rows of new messages: each message, and its mailbox's last number."""
        rows = [
            Change(collection=_MESSAGES, key=_message_key(m), value=JSONText(m.model_dump_json())) for m in messages
        ]
        lasts: dict[str, int] = {}
        for message in messages:
            lasts[message.recipient] = max(lasts.get(message.recipient, 0), message.number)
        for member, last in lasts.items():
            _, read = self._boxes.get(member, (0, 0))
            rows.append(Change(collection=_BOXES, key=member, value={"last": last, "read": read}))
        return rows


class _Tick:
    """The timer's message: catch up and deliver due reminders."""


class _Due:
    """The reminder timer's message: the soonest reminder this process knows of is due."""


def _message_key(message: MailboxMessage) -> str:
    return f"{message.recipient}/{message.number}"


def _in_order(box: dict[int, MailboxMessage]) -> list[MailboxMessage]:
    return [box[number] for number in sorted(box)]


def _taken(answer: Any) -> tuple[list[MailboxMessage], int]:
    return [MailboxMessage.model_validate(m) for m in answer.get("m", [])], int(answer.get("r", 0))


class MailboxProxy(ActorMemberMixin, pykka.ActorProxy[MailboxActor]):
    """A typed proxy of :class:`MailboxActor`: each method returns a ``pykka.Future`` of its result."""

    post = proxy_method(MailboxActor.post)
    take = proxy_method(MailboxActor.take)
    unread = proxy_method(MailboxActor.unread)
    unread_counts = proxy_method(MailboxActor.unread_counts)
    request_stop = proxy_method(MailboxActor.request_stop)
    take_stop = proxy_method(MailboxActor.take_stop)
    remind = proxy_method(MailboxActor.remind)
    reminders = proxy_method(MailboxActor.reminders)
    cancel_reminder = proxy_method(MailboxActor.cancel_reminder)
    listen = proxy_method(MailboxActor.listen)
    unlisten = proxy_method(MailboxActor.unlisten)
