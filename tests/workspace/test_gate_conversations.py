"""The write gate and one agent's several conversations (concurrent runs, sessions).

An agent's record of a file is shared by its conversations; each also keeps what it saw
itself, so a run that has not seen the version its agent learned in another run since it began
is refused, while a later run (which may know it from its history) and calls without a
conversation are judged as the agent.
"""

from __future__ import annotations

import pytest

from toolcards.core._conversation import Conversation, begin_conversation
from toolcards.errors import RetriableError
from toolcards.workspace._gate import WriteGate

ALICE = "team-1/@Alice"
BOB = "team-1/@Bob"
BASE = b"base\n"


def refusal(gate: WriteGate, path: str, current: bytes, conversation: Conversation | None, agent: str = ALICE) -> str:
    with pytest.raises(RetriableError) as info:
        gate.check(agent, path, current, "overwrite", conversation=conversation)
    return str(info.value)


def test_interleaved_runs_of_one_agent_cannot_overwrite_each_other() -> None:
    gate = WriteGate()
    one, two = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=one)
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=two)
    gate.check(ALICE, "notes.txt", BASE, "overwrite", conversation=one)
    gate.record_write(ALICE, "notes.txt", b"base\nrun 1\n", conversation=one)

    message = refusal(gate, "notes.txt", b"base\nrun 1\n", two)
    first, who, *rest = message.split("\n")
    assert first == (
        "Call workspace_read on 'notes.txt' again, then redo your change: it changed since this run or session "
        "of yours read it, so nothing was written."
    )
    assert who.startswith("It was changed by you, in another run or session working at the same time")
    diff = "\n".join(rest)
    assert diff.startswith("What changed since your read:") and "+run 1" in diff
    # An edit is refused the same way, and the run that wrote goes on.
    with pytest.raises(RetriableError):
        gate.check(ALICE, "notes.txt", b"base\nrun 1\n", "edit", conversation=two)
    gate.check(ALICE, "notes.txt", b"base\nrun 1\n", "overwrite", conversation=one)

    # Once it has read the new version, the second run may change it.
    gate.record_read(ALICE, "notes.txt", b"base\nrun 1\n", full=True, conversation=two)
    gate.check(ALICE, "notes.txt", b"base\nrun 1\n", "overwrite", conversation=two)


def test_a_run_begun_after_another_wrote_may_know_it_from_its_history() -> None:
    gate = WriteGate()
    first = begin_conversation("run-1")
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=first)
    gate.record_write(ALICE, "notes.txt", b"base\nmore\n", conversation=first)
    later = begin_conversation("run-2")  # e.g. the next agent.run with the first one's messages
    gate.check(ALICE, "notes.txt", b"base\nmore\n", "overwrite", conversation=later)
    gate.check(ALICE, "notes.txt", b"base\nmore\n", "edit", conversation=later)


def test_a_run_that_never_read_the_file_is_refused_a_version_written_after_it_began() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=begin_conversation("earlier"))
    waiting = begin_conversation("run-1")  # knows BASE from its history
    gate.record_write(ALICE, "notes.txt", b"base\nrun 2\n", conversation=begin_conversation("run-2"))
    message = refusal(gate, "notes.txt", b"base\nrun 2\n", waiting)
    assert "it changed after this run or session began" in message
    assert "(This run or session has not read it, so what changed cannot be shown.)" in message


def test_a_version_another_agent_wrote_and_another_run_read_is_not_known_to_this_run() -> None:
    gate = WriteGate()
    one, two = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=one)
    gate.record_read(BOB, "notes.txt", BASE, full=True)
    gate.record_write(BOB, "notes.txt", b"base\nbob\n")
    gate.record_read(ALICE, "notes.txt", b"base\nbob\n", full=True, conversation=two)
    message = refusal(gate, "notes.txt", b"base\nbob\n", one)
    assert "It was changed by @Bob through the workspace tools." in message
    assert "+bob" in message


def test_rereading_an_unchanged_file_in_another_run_refuses_nothing() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=begin_conversation("earlier"))
    one, two = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=two)
    gate.record_read(ALICE, "notes.txt", BASE, full=False, conversation=two)  # a page of the same version
    gate.check(ALICE, "notes.txt", BASE, "edit", conversation=one)


def test_calls_without_a_conversation_are_judged_as_their_agent() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "notes.txt", BASE, full=True)
    gate.record_read(ALICE, "notes.txt", BASE, full=True)
    gate.record_write(ALICE, "notes.txt", b"base\none\n")
    gate.check(ALICE, "notes.txt", b"base\none\n", "overwrite")  # as before: the agent's own write
    gate.record_write(ALICE, "notes.txt", b"base\none\ntwo\n", conversation=begin_conversation("run-1"))
    gate.check(ALICE, "notes.txt", b"base\none\ntwo\n", "overwrite")


def test_a_change_made_without_a_conversation_during_a_run_is_unseen_by_it() -> None:
    gate = WriteGate()
    run = begin_conversation("run-1")
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=run)
    gate.record_write(ALICE, "notes.txt", b"base\ncommand\n")  # an orchestrator's command as Alice
    assert "another request, connection or command acting as you" in refusal(gate, "notes.txt", b"base\ncommand\n", run)


def test_what_a_run_saw_follows_a_move_and_goes_with_a_delete() -> None:
    gate = WriteGate()
    one, two = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_read(ALICE, "a.txt", BASE, full=True, conversation=one)
    gate.record_write(ALICE, "a.txt", b"base\ntwo\n", conversation=two)
    gate.record_read(ALICE, "a.txt", b"base\ntwo\n", full=True, conversation=one)
    gate.move("a.txt", "b.txt")
    gate.check(ALICE, "b.txt", b"base\ntwo\n", "overwrite", conversation=one)
    gate.forget("b.txt")
    assert gate.record_of(ALICE, "b.txt") is None


def test_a_forgotten_run_keeps_its_beginning_and_is_asked_to_read_again() -> None:
    gate = WriteGate(max_conversations=2)
    first, second, third = (begin_conversation(f"run-{n}") for n in (1, 2, 3))
    gate.record_read(ALICE, "notes.txt", BASE, full=True, conversation=first)
    gate.record_read(ALICE, "other.txt", BASE, full=True, conversation=second)
    gate.record_write(ALICE, "notes.txt", b"base\nthree\n", conversation=third)  # forgets the first run
    assert "changed after this run or session began" in refusal(gate, "notes.txt", b"base\nthree\n", first)


def test_a_run_keeps_a_bounded_number_of_files() -> None:
    gate = WriteGate(max_records_per_conversation=2)
    one, two = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_write(ALICE, "a.txt", b"base\ntwo\n", conversation=two)
    gate.record_read(ALICE, "a.txt", b"base\ntwo\n", full=True, conversation=one)
    gate.check(ALICE, "a.txt", b"base\ntwo\n", "overwrite", conversation=one)
    for name in ("b.txt", "c.txt"):
        gate.record_read(ALICE, name, BASE, full=True, conversation=one)
    # The oldest of the run's files was forgotten: it is asked to read it again.
    with pytest.raises(RetriableError):
        gate.check(ALICE, "a.txt", b"base\ntwo\n", "overwrite", conversation=one)
