"""``toolcards call`` when the team's event log cannot be written: the answer is printed, the exit
code is the call's, and the event log's failure is one line on stderr, without a traceback.

The event log lives in the team's store (SQLite by default). To make writing it fail in a real
process, even for root (CI runs as root, and root ignores file permissions), the call runs
with ``RLIMIT_FSIZE`` at the size of the store's largest file: it can read, and any write that
grows a file fails (EFBIG), as on a full disk. For that write to have to grow the write-ahead
log, the test holds a read transaction open on the database from before the log was written:
SQLite then neither checkpoints nor restarts the log, so every new commit is appended at its end.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import REPO
from toolcards.store import SQLiteStore

pytestmark = pytest.mark.slow

ECHO_TEAM = "team_id: cli-team\nimports: [tests.server.cards]\ncards:\n  - kind: test_echo\n"
NOTES_TEAM = "team_id: cli-team\nimports: [tests.server.cards]\ncards:\n  - kind: test_notes\n"


def call(
    config: Path, env: dict[str, str], *command: str, max_file_size: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit_file_size() -> None:
        if max_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_size, max_file_size))

    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", "call", "--config", str(config), *command],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit_file_size,
    )


def test_an_event_log_that_cannot_be_written_is_one_line_after_the_answer(tmp_path: Path) -> None:
    store = tmp_path / "state.db"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TOOLCARDS_STORE": str(store),
        "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"),
    }
    (tmp_path / "echo.yaml").write_text(ECHO_TEAM)
    (tmp_path / "notes.yaml").write_text(NOTES_TEAM)
    SQLiteStore(store).close()  # call reads a team, never starts one
    assert call(tmp_path / "echo.yaml", env, "/echo", "first").returncode == 0

    reader = sqlite3.connect(store)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        for _ in range(2):  # the log grows past the size of the shared-memory file (32 KiB)
            assert call(tmp_path / "notes.yaml", env, "/add_note", "n" * 40_000).returncode == 0
        largest = max(path.stat().st_size for path in tmp_path.glob("state.db*"))

        done = call(tmp_path / "echo.yaml", env, "/echo", "hello", max_file_size=largest)
    finally:
        reader.rollback()
        reader.close()

    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    assert "Traceback" not in done.stderr
    # One line per thing that could not be written: the event log, and the roster the call joins.
    lines = done.stderr.splitlines()
    assert all(line.startswith("toolcards: team cli-team: ") for line in lines)
    assert [line for line in lines if "#roster" in line] == [
        line for line in lines if "roster only for now; the team's could not take it" in line
    ]
    ledger = [line for line in lines if "ledger" in line]
    assert len(ledger) <= 1  # the call's own cost, which the same store could not take either
    (line,) = [line for line in lines if "#roster" not in line and line not in ledger]
    assert "could not be written to the event log" in line
    assert str(store) in line and "'cli-team/#events'" in line  # where
    assert "disk I/O error" in line or "disk is full" in line  # why, as SQLite tells it
