"""Mailboxes across real OS processes, on SQLite and on a real PostgreSQL server.

Each worker is ``python -m tests.mailbox_worker``: a separate interpreter joining the team
through ``toolcards.Team``, with its own mailbox actor and cache; the store is all they share.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolcards
from tests.mailbox_worker import PEERS, target
from toolcards.store import close_default_stores
from toolcards.team import MessagingTool, ReminderFired

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
WAIT = 300.0
MESSAGES = 1_000


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    location = str(tmp_path / "mail.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    monkeypatch.setenv("TOOLCARDS_STORE", location)
    close_default_stores()
    yield {**os.environ, "TOOLCARDS_STORE": location}
    close_default_stores()


def start(env: dict[str, str], mode: str, team: str, name: str, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.mailbox_worker", mode, team, name, *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = first_line(process.stdout.fileno())
    assert line == "ready", (line, process.stderr.read() if process.stderr else "")
    return process


def first_line(fd: int) -> str:
    """The process's first line, read byte by byte: a buffered read could take the lines after
    it too, which ``communicate`` (reading the descriptor) would then never see."""
    data = b""
    while not data.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
    return data.decode().strip()


def finish(process: subprocess.Popen[str]) -> list[str]:
    out, err = process.communicate(timeout=WAIT)
    assert process.returncode == 0, err
    return out.splitlines()


def test_a_thousand_messages_among_four_processes_are_each_read_exactly_once(store_env: dict[str, str]) -> None:
    per_worker = MESSAGES // PEERS
    workers = [start(store_env, "exchange", "post", f"W{i}", str(i), str(per_worker)) for i in range(PEERS)]
    for worker in workers:  # every worker is in the roster: each may now message the others
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    received: dict[int, list[str]] = {}
    for index, worker in enumerate(workers):
        lines = finish(worker)
        assert lines[-1] == "done", lines[-5:]
        received[index] = [line.removeprefix("got ") for line in lines if line.startswith("got ")]
    everything = Counter(text for texts in received.values() for text in texts)
    sent = {f"W{sender}#{k}" for sender in range(PEERS) for k in range(per_worker)}
    assert len(sent) == MESSAGES
    assert set(everything) == sent  # every message read...
    assert max(everything.values()) == 1  # ...exactly once
    for index, texts in received.items():  # by the member it was sent to
        for text in texts:
            sender, k = text.removeprefix("W").split("#")
            assert target(int(sender), int(k)) == index, text


def test_a_reminder_set_before_its_process_exits_is_delivered_once_by_processes_started_later(
    store_env: dict[str, str],
) -> None:
    setter = start(store_env, "remind", "later", "Alice", "1", "water the plants")
    assert finish(setter)[-1] == "set 1"  # Alice's process has exited; nobody holds the team
    time.sleep(1.5)  # the reminder is overdue before anyone comes back
    # Two processes start at once; either may deliver it, exactly one does.
    couriers = [start(store_env, "watch", "later", f"Courier-{i}", "Alice") for i in range(2)]
    for courier in couriers:
        assert finish(courier)[-1] == "seen"
    reader = start(store_env, "read", "later", "Alice")
    lines = finish(reader)
    assert lines == ["got water the plants", "done"]
    with toolcards.Team("later") as team:
        fired = [event for _, event in team.handle.events() if isinstance(event, ReminderFired)]
        assert [(e.member, e.reminder_id) for e in fired] == [("@Alice", 1)]
        alice = {t.name: t for t in team.member("Alice").factory(MessagingTool()).tools()}
        assert alice["read_messages"].call_sync({}) == "No unread messages."
        assert alice["list_reminders"].call_sync({}) == "You have no pending reminders."


def test_two_processes_reading_one_member_s_mailbox_never_share_a_message(store_env: dict[str, str]) -> None:
    with toolcards.Team("shared") as team:
        team.member("Bob")
        lead = team.member("Lead").commands(MessagingTool())
        for index in range(200):
            lead.dispatch(f"/send_message Bob m{index}")
        readers = [start(store_env, "take", "shared", f"Reader-{i}", "Bob") for i in range(2)]
        for reader in readers:
            assert reader.stdin is not None
            reader.stdin.write("go\n")
            reader.stdin.flush()
        got = [line.removeprefix("got ") for reader in readers for line in finish(reader) if line.startswith("got ")]
    assert sorted(got) == sorted(f"m{index}" for index in range(200))  # each once, none twice
