"""The read-before-write gate on its own: records, refusals and the cache of read versions."""

from __future__ import annotations

import pytest

from toolcards.core._conversation import Conversation, begin_conversation
from toolcards.errors import RetriableError
from toolcards.workspace._gate import SnapshotCache, WriteGate
from toolcards.workspace._models import content_digest
from toolcards.workspace._text import NotText

ALICE = "team-1/@Alice"
BOB = "team-1/@Bob"
CAROL = "team-2/@Carol"


def refusal(
    gate: WriteGate,
    agent: str,
    path: str,
    current: bytes | None,
    intent: str = "edit",
    conversation: Conversation | None = None,
) -> str:
    with pytest.raises(RetriableError) as info:
        gate.check(agent, path, current, intent, conversation=conversation)  # type: ignore[arg-type]
    return str(info.value)


def test_creating_a_file_needs_no_read() -> None:
    WriteGate().check(ALICE, "new.txt", None, "overwrite")


def test_changing_a_file_never_read_is_refused_with_the_next_step_first() -> None:
    message = refusal(WriteGate(), ALICE, "a.txt", b"x\n", "overwrite")
    assert message.startswith("Call workspace_read on 'a.txt' first")


def test_a_current_full_read_allows_overwrite_and_edit() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"x\n", full=True)
    gate.check(ALICE, "a.txt", b"x\n", "overwrite")
    gate.check(ALICE, "a.txt", b"x\n", "edit")


def test_a_page_read_allows_an_edit_but_not_an_overwrite() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"x\ny\n", full=False)
    gate.check(ALICE, "a.txt", b"x\ny\n", "edit")
    message = refusal(gate, ALICE, "a.txt", b"x\ny\n", "overwrite")
    assert "without offset and limit" in message and "workspace_edit" in message


def test_a_change_by_another_agent_is_named_and_shown_as_a_diff() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"one\ntwo\n", full=True)
    gate.record_read(BOB, "a.txt", b"one\ntwo\n", full=True)
    gate.record_write(BOB, "a.txt", b"one\nTWO\n")
    message = refusal(gate, ALICE, "a.txt", b"one\nTWO\n", "overwrite")
    first, who, *rest = message.split("\n")
    assert first.startswith("Call workspace_read on 'a.txt' again")
    assert who == "It was changed by @Bob through the workspace tools."
    diff = "\n".join(rest)
    assert "-two" in diff and "+TWO" in diff and "--- a/a.txt" in diff


def test_a_change_outside_the_tools_is_called_that() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"one\n", full=True)
    message = refusal(gate, ALICE, "a.txt", b"one\nadded by a command\n")
    assert "changed outside the workspace tools (e.g. by a command)" in message
    assert "+added by a command" in message


def test_a_command_after_another_agent_counts_as_outside() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"one\n", full=True)
    gate.record_write(BOB, "a.txt", b"two\n")
    message = refusal(gate, ALICE, "a.txt", b"three\n")
    assert "outside the workspace tools" in message and "@Bob" not in message


def test_an_agent_of_another_team_is_named_with_its_team() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"one\n", full=True)
    gate.record_write(CAROL, "a.txt", b"two\n")
    assert "changed by team-2/@Carol" in refusal(gate, ALICE, "a.txt", b"two\n")


def test_an_unread_file_names_its_last_writer() -> None:
    gate = WriteGate()
    gate.record_write(BOB, "a.txt", b"two\n")
    assert "@Bob wrote it last" in refusal(gate, ALICE, "a.txt", b"two\n")


def test_own_write_renews_the_record_and_keeps_an_edit_a_page() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"one\n", full=False)
    record = gate.record_write(ALICE, "a.txt", b"two\n")
    assert record.digest == content_digest(b"two\n") and not record.full
    gate.check(ALICE, "a.txt", b"two\n", "edit")
    assert gate.record_write(ALICE, "a.txt", b"three\n", full=True).full
    gate.check(ALICE, "a.txt", b"three\n", "overwrite")


def test_a_version_too_large_to_keep_is_reported_without_a_diff() -> None:
    gate = WriteGate(SnapshotCache(max_bytes=1000, max_file_bytes=10))
    gate.record_read(ALICE, "a.txt", b"a long first version\n", full=True)
    message = refusal(gate, ALICE, "a.txt", b"short\n")
    assert "no longer cached" in message and "---" not in message


@pytest.mark.parametrize("read", [b"\x00\x01", b"caf\xe9\n"], ids=["nul", "latin-1"])
def test_a_version_read_that_was_not_text_is_not_diffed(read: bytes) -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", read, full=True)
    message = refusal(gate, ALICE, "a.txt", b"text now\n")
    assert message.startswith("Call workspace_read on 'a.txt' again")
    assert "binary file" in message and "---" not in message


# -- files that are not text: the refusal stands for the read ------------------------------------


@pytest.mark.parametrize("current", [b"\x89PNG\r\n\x1a\n\x00", b"caf\xe9\n"], ids=["nul", "latin-1"])
def test_an_unseen_file_that_is_not_text_is_replaced_by_the_same_call_again(current: bytes) -> None:
    gate = WriteGate()
    gate.record_write(BOB, "a.bin", b"before\n")  # Bob wrote the path; a command made it binary
    gate.record_write(BOB, "a.bin", current)
    message = refusal(gate, ALICE, "a.bin", current, "overwrite")
    assert message == (
        "Make the same call again to replace 'a.bin'; nothing was written this time. It exists and you had "
        "not seen it; it is not UTF-8 text, so workspace_read cannot show it, and this answer stands for "
        "reading it.\n@Bob wrote it last."
    )
    assert "Call workspace_read" not in message
    gate.check(ALICE, "a.bin", current, "overwrite")  # the same call again


def test_a_file_that_is_not_text_changed_since_it_was_seen_is_refused_once_more_saying_who() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.bin", None, full=True, digest=content_digest(b"\x00v1"))
    message = refusal(gate, ALICE, "a.bin", b"\x00v2", "overwrite")
    first, who = message.split("\n")
    assert first.startswith("Make the same call again to replace 'a.bin'; nothing was written this time. It ")
    assert "changed since you saw it; it is not UTF-8 text, so what changed cannot be shown" in first
    assert who.startswith("It was changed outside the workspace tools")
    gate.check(ALICE, "a.bin", b"\x00v2", "overwrite")


def test_a_text_file_that_became_binary_since_it_was_read_is_refused_the_same_way() -> None:
    gate = WriteGate()
    gate.record_read(ALICE, "a.txt", b"text\n", full=True)
    gate.record_write(BOB, "a.txt", b"\x00bytes")
    message = refusal(gate, ALICE, "a.txt", b"\x00bytes", "overwrite")
    assert message.startswith("Make the same call again to replace 'a.txt'")
    assert message.endswith("It was changed by @Bob through the workspace tools.")
    gate.check(ALICE, "a.txt", b"\x00bytes", "overwrite")


def test_an_edit_of_a_file_that_is_not_text_points_to_the_overwrite_that_goes_through() -> None:
    gate = WriteGate()
    with pytest.raises(NotText) as refused:
        gate.check(ALICE, "a.bin", b"\x00\x01", "edit")
    assert str(refused.value) == (
        "'a.bin' looks binary (it is not UTF-8 text), so it cannot be edited. Overwrite it whole with "
        "workspace_write, or leave it."
    )
    gate.check(ALICE, "a.bin", b"\x00\x01", "overwrite")


def test_a_refusal_of_a_file_that_is_not_text_counts_in_its_conversation_only() -> None:
    gate = WriteGate()
    first, second = begin_conversation("run-1"), begin_conversation("run-2")
    gate.record_read(ALICE, "a.bin", None, full=True, digest=content_digest(b"\x00v1"), conversation=first)
    gate.record_write(ALICE, "a.bin", b"\x00v2", conversation=first)
    # The other run never saw v2: it is told, and that answer is its sight of v2.
    message = refusal(gate, ALICE, "a.bin", b"\x00v2", "overwrite", conversation=second)
    assert message.endswith("It was changed by you, in another run or session working at the same time.")
    gate.check(ALICE, "a.bin", b"\x00v2", "overwrite", conversation=second)


def test_text_files_keep_needing_a_read_however_often_the_change_is_tried() -> None:
    gate = WriteGate()
    for _ in range(2):
        assert refusal(gate, ALICE, "a.txt", b"x\n", "overwrite").startswith("Call workspace_read on 'a.txt' first")
    assert gate.record_of(ALICE, "a.txt") is None


def test_the_refusal_diff_is_capped() -> None:
    gate = WriteGate()
    old = "".join(f"line {n}\n" for n in range(1000)).encode()
    new = "".join(f"LINE {n}\n" for n in range(1000)).encode()
    gate.record_read(ALICE, "big.txt", old, full=True)
    message = refusal(gate, ALICE, "big.txt", new)
    assert "more diff lines cut" in message
    assert len(message.splitlines()) < 220


def test_snapshots_evict_the_least_recently_used_within_the_byte_budget() -> None:
    cache = SnapshotCache(max_bytes=10, max_file_bytes=10)
    cache.add("a", b"aaaa")
    cache.add("b", b"bbbb")
    assert cache.get("a") == b"aaaa"  # now the most recently used
    cache.add("c", b"cccc")
    assert cache.get("b") is None and cache.get("a") == b"aaaa" and cache.get("c") == b"cccc"
    assert len(cache) == 2
    cache.add("huge", b"x" * 11)
    assert cache.get("huge") is None


def test_records_per_agent_are_bounded() -> None:
    gate = WriteGate(max_records_per_agent=2)
    for name in ("a", "b", "c"):
        gate.record_read(ALICE, name, name.encode(), full=True)
    assert gate.record_of(ALICE, "a") is None
    assert gate.record_of(ALICE, "c") is not None


def test_forget_drops_a_path_and_optionally_everything_below() -> None:
    gate = WriteGate()
    for path in ("d/x", "d/sub/y", "dd/z", "d"):
        gate.record_read(ALICE, path, b"1", full=True)
    gate.forget("d", below=True)
    assert [gate.record_of(ALICE, p) is None for p in ("d/x", "d/sub/y", "dd/z", "d")] == [True, True, False, True]
