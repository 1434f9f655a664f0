"""Durable mailboxes in one process: sends, reads exactly once, bounds, reminders, stop requests,
events, and every bad input refused with a clear message and nothing changed."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from toolcards import COMMAND, TOOL_CALL, RetriableError, Tool, ToolFactory
from toolcards.actors import ActorSystem
from toolcards.core._services import MAILBOX
from toolcards.store import default_store
from toolcards.team import (
    MessagesRead,
    MessagingTool,
    ReminderCancelled,
    ReminderFired,
    ReminderSet,
    StopDelivered,
    StopRequested,
    TeamMessage,
    mailbox_of,
)
from toolcards.testing import FakeObserver

TEAM = "team-1"
NAMESPACE = f"{TEAM}/#Mailbox"
WAIT = 30.0


@pytest.fixture
def members(system: ActorSystem) -> dict[str, FakeObserver]:
    """Alice (lead), Bob and Cid (builders): in the roster, none with an actor of its own."""
    made = {}
    for name, role in (("Alice", "lead"), ("Bob", "builder"), ("Cid", "builder")):
        observer = FakeObserver(name, TEAM, system=system, role=role)
        observer.team.register_member(observer.address)
        made[name] = observer
    return made


def tools_of(observer: FakeObserver, **fields: Any) -> dict[str, Tool]:
    return {tool.name: tool for tool in ToolFactory([MessagingTool(**fields)], observer=observer).tools()}


def call(tools: dict[str, Tool], tool: str, /, **arguments: Any) -> str:
    result = tools[tool].call_sync(arguments, channel=COMMAND if tool == "stop_member" else TOOL_CALL)
    return str(result)


def version() -> int:
    return default_store().version(NAMESPACE)


def events(observer: FakeObserver, kind: type[Any]) -> list[Any]:
    deadline = time.monotonic() + WAIT
    while True:  # the mailbox publishes batched: wait for the batch to reach the log
        found = [event for _, event in observer.team.events() if isinstance(event, kind)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_message_is_read_once_and_announced_until_then(members: dict[str, FakeObserver]) -> None:
    alice, bob = tools_of(members["Alice"]), tools_of(members["Bob"])
    assert call(alice, "send_message", to="Bob", text="write the parser") == "Sent to @Bob."
    assert call(alice, "send_message", to="@bob", text="and its tests") == "Sent to @Bob."
    unread = {tool.name: tool for tool in ToolFactory([MessagingTool()], observer=members["Bob"]).tools()}
    assert unread["unread_messages"].call_sync({}) == "2 unread messages from @Alice — read_messages"
    assert call(bob, "read_messages") == "Message from @Alice:\nwrite the parser\n\nMessage from @Alice:\nand its tests"
    assert call(bob, "read_messages") == "No unread messages."
    assert unread["unread_messages"].call_sync({}) == ""
    sent = events(members["Alice"], TeamMessage)
    assert [(e.sender, e.recipient, e.text) for e in sent] == [
        ("@Alice", "@Bob", "write the parser"),
        ("@Alice", "@Bob", "and its tests"),
    ]
    assert [(e.member, e.count) for e in events(members["Bob"], MessagesRead)] == [("@Bob", 2)]


def test_the_announcement_names_no_tool_the_model_cannot_call(members: dict[str, FakeObserver]) -> None:
    call(tools_of(members["Alice"]), "send_message", to="Bob", text="hi")
    quiet = tools_of(members["Bob"], read_messages=False)
    assert quiet["unread_messages"].call_sync({}) == "1 unread message from @Alice"


def test_a_role_reaches_every_present_member_of_it_but_the_sender(members: dict[str, FakeObserver]) -> None:
    alice, bob, cid = (tools_of(members[name]) for name in ("Alice", "Bob", "Cid"))
    assert call(alice, "send_message", to="builder", text="stand-up") == (
        "Sent to the 2 members of role builder: @Bob, @Cid."
    )
    assert call(bob, "send_message", to="builder", text="from a builder") == (
        "Sent to the 1 member of role builder: @Cid."
    )
    assert call(bob, "read_messages") == "Message from @Alice:\nstand-up"
    assert call(cid, "read_messages").count("Message from") == 2


def test_a_member_that_left_is_refused_and_reads_its_mailbox_when_it_rejoins(
    members: dict[str, FakeObserver],
) -> None:
    alice = tools_of(members["Alice"])
    call(alice, "send_message", to="Bob", text="before you left")
    members["Bob"].team.unregister_member("Bob")
    before = version()
    with pytest.raises(RetriableError, match=re.escape("No teammate or role called 'Bob'. Teammates: @Cid (builder).")):
        call(alice, "send_message", to="Bob", text="are you there?")
    assert version() == before
    members["Bob"].team.register_member(members["Bob"].address)
    assert call(tools_of(members["Bob"]), "read_messages") == "Message from @Alice:\nbefore you left"


def test_a_full_mailbox_refuses_naming_the_bound_and_the_count(
    members: dict[str, FakeObserver], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolcards.team._mailbox
    import toolcards.team._render

    monkeypatch.setattr(toolcards.team._mailbox, "INBOX_MAX", 3)
    monkeypatch.setattr(toolcards.team._render, "INBOX_MAX", 3)
    alice = tools_of(members["Alice"])
    for index in range(3):
        call(alice, "send_message", to="Bob", text=f"message {index}")
    before = version()
    with pytest.raises(RetriableError) as refused:
        call(alice, "send_message", to="Bob", text="one too many")
    assert str(refused.value) == (
        "Nothing was sent: @Bob has 3 unread (their mailbox is full: at most 3 unread messages each). "
        "Wait until they have read their messages, then send again."
    )
    assert version() == before
    # A role reaches the mailboxes with room, and says whose was full.
    assert call(alice, "send_message", to="builder", text="to all") == (
        "Sent to the 1 member of role builder: @Cid. Not sent to @Bob has 3 unread (their mailbox is full: "
        "at most 3 unread messages each). Wait until they have read their messages, then send again."
    )
    call(tools_of(members["Bob"]), "read_messages")
    assert call(alice, "send_message", to="Bob", text="room again") == "Sent to @Bob."


def test_send_mistakes_are_refused_and_change_nothing(members: dict[str, FakeObserver]) -> None:
    alice = tools_of(members["Alice"])
    before = version()
    teammates = "Teammates: @Bob (builder), @Cid (builder)."
    with pytest.raises(RetriableError, match=re.escape(f"No teammate or role called 'Zed'. {teammates}")):
        call(alice, "send_message", to="Zed", text="hi")
    with pytest.raises(RetriableError, match=re.escape(f"'@alice' is you; name another member. {teammates}")):
        call(alice, "send_message", to="@alice", text="hi")
    with pytest.raises(RetriableError, match="text"):
        call(alice, "send_message", to="Bob", text="x" * 8001)
    with pytest.raises(RetriableError, match="text"):
        call(alice, "send_message", to="Bob", text="")
    assert version() == before


def test_a_keyed_send_made_again_is_applied_once(members: dict[str, FakeObserver]) -> None:
    alice = tools_of(members["Alice"])
    answers = [
        alice["send_message"].call_sync({"to": "Bob", "text": "once"}, idempotency_key="client-key-1") for _ in range(2)
    ]
    assert answers == ["Sent to @Bob.", "This call was already applied; nothing was sent again. Sent to @Bob."]
    assert call(tools_of(members["Bob"]), "read_messages") == "Message from @Alice:\nonce"


def test_a_keyed_send_made_again_after_its_recipient_left_answers_the_first_send(
    members: dict[str, FakeObserver],
) -> None:
    alice = tools_of(members["Alice"])
    arguments = {"to": "Bob", "text": "before you left"}
    assert alice["send_message"].call_sync(arguments, idempotency_key="k-1") == "Sent to @Bob."
    members["Bob"].team.unregister_member("Bob")
    before = version()
    again = alice["send_message"].call_sync(arguments, idempotency_key="k-1")
    assert again == "This call was already applied; nothing was sent again. Sent to @Bob."
    # A new call to the member who left is still refused.
    with pytest.raises(RetriableError, match="No teammate or role called 'Bob'"):
        alice["send_message"].call_sync(arguments, idempotency_key="k-2")
    assert version() == before


def test_concurrent_reads_of_one_member_never_share_a_message(members: dict[str, FakeObserver]) -> None:
    alice = tools_of(members["Alice"])
    for index in range(60):
        call(alice, "send_message", to="Bob", text=f"m{index}")
    got: list[str] = []
    lock = threading.Lock()

    def reader() -> None:
        bob = tools_of(members["Bob"])
        while True:
            text = call(bob, "read_messages")
            if text == "No unread messages.":
                return
            with lock:
                got.extend(re.findall(r"\bm\d+\b", text))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert sorted(got) == sorted(f"m{index}" for index in range(60))


def test_the_mailbox_service_reaches_a_member_for_another_domain(members: dict[str, FakeObserver]) -> None:
    mailbox_of(members["Alice"].team)
    service = members["Alice"].team.service(MAILBOX)
    assert service is not None
    service("@Bob", "Task 3 is ready.", sender="#PlanningTool")
    assert call(tools_of(members["Bob"]), "read_messages") == "Message from #PlanningTool:\nTask 3 is ready."
    with pytest.raises(RetriableError, match="No teammate or role called '@Zed'"):
        service("@Zed", "Task 4 is ready.", sender="#PlanningTool")


# -- reminders ------------------------------------------------------------------------------


def test_a_reminder_arrives_once_as_a_message(members: dict[str, FakeObserver]) -> None:
    bob = tools_of(members["Bob"])
    answer = call(bob, "remind_me", text="check the build", after_s=0.3)
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.fullmatch(rf"Reminder 1 set for {when} \(in 0 s\); it will arrive as a message\.", answer)
    assert eventually(lambda: call(bob, "list_reminders") == "You have no pending reminders.")
    text = call(bob, "read_messages")
    assert re.fullmatch(r"Reminder 1 you set, due [\d: -]+ UTC:\ncheck the build", text), text
    assert call(bob, "read_messages") == "No unread messages."
    fired = events(members["Bob"], ReminderFired)
    assert [(e.member, e.reminder_id) for e in fired] == [("@Bob", 1)]
    assert fired[0].late_s >= 0
    assert [e.reminder_id for e in events(members["Bob"], ReminderSet)] == [1]


def test_reminders_are_listed_and_cancelled_by_their_owner_only(members: dict[str, FakeObserver]) -> None:
    bob, cid = tools_of(members["Bob"]), tools_of(members["Cid"])
    at = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    call(bob, "remind_me", text="later", at=at.isoformat())
    call(bob, "remind_me", text="sooner\nwith details", after_s=600)
    listing = call(bob, "list_reminders")
    assert listing.startswith("Your reminders (2):\n- 2: ")
    assert "(in 10 min): sooner" in listing and f"- 1: {at:%Y-%m-%d %H:%M:%S} UTC (in 2.0 h): later" in listing
    before = version()
    with pytest.raises(RetriableError) as refused:
        call(cid, "cancel_reminder", reminder_id=1)
    assert str(refused.value) == (
        "You have no pending reminder 1 (it was delivered, cancelled, or is not yours). You have none pending. "
        "list_reminders shows them."
    )
    with pytest.raises(RetriableError, match=re.escape("no pending reminder 9 ") + ".*Your pending reminders: 1, 2."):
        call(bob, "cancel_reminder", reminder_id=9)
    assert version() == before
    assert call(bob, "cancel_reminder", reminder_id=1) == "Cancelled reminder 1."
    assert call(bob, "list_reminders").startswith("Your reminders (1):\n- 2: ")
    assert [e.reminder_id for e in events(members["Bob"], ReminderCancelled)] == [1]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"after_s": 10, "at": "2099-01-01T00:00:00Z"}, "You gave both of after_s and at: give exactly one"),
        ({}, "You gave neither of after_s and at: give exactly one"),
        ({"after_s": 0}, "after_s=0.0 is not a delay: give a positive number of seconds, at most 30 days"),
        ({"after_s": -5}, "after_s=-5.0 is not a delay"),
        ({"after_s": 1e12}, "after_s=1e+12 is too far ahead: at most 30 days (2592000 s)."),
        ({"at": "2001-01-01T00:00:00Z"}, "at=2001-01-01T00:00:00+00:00 is in the past (it is now "),
        ({"at": "2001-01-01T00:00:00"}, "at=2001-01-01T00:00:00+00:00 is in the past"),
        ({"at": "2099-01-01T00:00:00+02:00"}, "at=2099-01-01T00:00:00+02:00 is too far ahead"),
        ({"after_s": "soon"}, "after_s"),
        ({"at": "tomorrow"}, "at"),
    ],
)
def test_bad_reminders_are_refused_and_change_nothing(
    members: dict[str, FakeObserver], arguments: dict[str, Any], message: str
) -> None:
    bob = tools_of(members["Bob"])
    before = version()
    with pytest.raises(RetriableError, match=re.escape(message)):
        call(bob, "remind_me", text="something", **arguments)
    assert version() == before
    assert call(bob, "list_reminders") == "You have no pending reminders."


def test_a_reminder_text_over_the_limit_and_an_infinite_delay_are_refused(members: dict[str, FakeObserver]) -> None:
    commands = ToolFactory([MessagingTool()], observer=members["Bob"]).command_registry()
    before = version()
    with pytest.raises(RetriableError, match="text"):
        call(tools_of(members["Bob"]), "remind_me", text="x" * 8001, after_s=5)
    with pytest.raises(RetriableError, match="after_s=inf is not a delay"):
        tools_of(members["Bob"])["remind_me"].call_sync({"text": "x", "after_s": float("inf")})
    assert "Error:" in commands.dispatch("/remind_me now after_s=-1")
    assert version() == before


def test_a_member_may_have_a_bounded_number_of_reminders(
    members: dict[str, FakeObserver], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolcards.team._mailbox

    monkeypatch.setattr(toolcards.team._mailbox, "REMINDERS_MAX", 2)
    bob = tools_of(members["Bob"])
    call(bob, "remind_me", text="one", after_s=600)
    call(bob, "remind_me", text="two", after_s=600)
    with pytest.raises(RetriableError, match=r"You have 2 reminders pending, the most one member may have\."):
        call(bob, "remind_me", text="three", after_s=600)
    call(tools_of(members["Cid"]), "remind_me", text="Cid's own", after_s=600)


# -- stop requests --------------------------------------------------------------------------


def test_a_stop_request_is_taken_once(members: dict[str, FakeObserver]) -> None:
    alice = tools_of(members["Alice"])
    answer = call(alice, "stop_member", name="Bob", reason="the plan changed")
    assert answer.startswith("Asked @Bob to stop: its run ends at its next step")
    card = MessagingTool()
    ToolFactory([card], observer=members["Bob"])
    stop = card.take_stop()
    assert stop is not None
    assert (stop.member, stop.by, stop.reason) == ("@Bob", "@Alice", "the plan changed")
    assert stop.for_model().startswith("You were stopped by @Alice: the plan changed. Stop working")
    assert card.take_stop() is None
    assert [(e.member, e.by) for e in events(members["Alice"], StopRequested)] == [("@Bob", "@Alice")]
    assert [(e.member, e.reason) for e in events(members["Alice"], StopDelivered)] == [("@Bob", "the plan changed")]


def test_stop_member_mistakes_are_refused_and_change_nothing(members: dict[str, FakeObserver]) -> None:
    alice = tools_of(members["Alice"])
    before = version()
    with pytest.raises(RetriableError, match=re.escape("No teammate or role called 'Zed'")):
        call(alice, "stop_member", name="Zed", reason="r")
    with pytest.raises(RetriableError, match=re.escape("'builder' is a role; stop_member stops one member.")):
        call(alice, "stop_member", name="builder", reason="r")
    with pytest.raises(RetriableError, match=re.escape("'Alice' is you")):
        call(alice, "stop_member", name="Alice", reason="r")
    with pytest.raises(RetriableError, match="reason"):
        call(alice, "stop_member", name="Bob", reason="")
    assert version() == before
    assert TOOL_CALL not in alice["stop_member"].channels  # an orchestrator's command by default
