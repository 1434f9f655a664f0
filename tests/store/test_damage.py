"""A damaged or foreign store file says so, in words, and nothing in it is lost or overwritten."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolcards.core.factory import ToolFactory
from toolcards.errors import StoreError
from toolcards.planning import PlanningTool
from toolcards.store import SQLiteStore
from toolcards.testing import FakeObserver

REPO = Path(__file__).resolve().parents[2]


def committed_but_not_checkpointed(db: Path, tasks: int) -> None:
    """A process commits ``tasks`` rows and dies by SIGKILL: they sit in the -wal file only."""
    code = (
        "import os, signal, sys\n"
        "from toolcards.store import SQLiteStore\n"
        "store = SQLiteStore(sys.argv[1])\n"
        f"for i in range({tasks}):\n"
        "    store.put('team/#PlanningTool', 'tasks', {str(i): {'id': i, 'description': 'x' * 100}})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(db)], cwd=REPO, check=False, timeout=120)
    assert done.returncode == -signal.SIGKILL


def test_an_emptied_database_beside_its_log_is_refused_and_the_log_kept(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    committed_but_not_checkpointed(db, 300)
    wal = db.with_name("state.db-wal")
    logged = wal.read_bytes()
    assert len(logged) > 30_000
    db.write_bytes(b"")

    with pytest.raises(StoreError) as raised:
        SQLiteStore(db)

    message = str(raised.value)
    assert "the database file is empty but its write-ahead log state.db-wal holds" in message
    assert "Restore state.db from a backup" in message
    assert wal.read_bytes() == logged
    assert db.stat().st_size == 0


def test_a_missing_database_beside_its_log_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    committed_but_not_checkpointed(db, 10)
    db.unlink()

    with pytest.raises(StoreError, match="the database file is missing but its write-ahead log"):
        SQLiteStore(db)
    assert not db.exists()


def test_the_log_of_a_killed_writer_is_recovered_when_the_database_is_intact(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    committed_but_not_checkpointed(db, 300)

    store = SQLiteStore(db)
    assert len(store.load("team/#PlanningTool").rows["tasks"]) == 300
    store.close()


def test_a_database_of_another_program_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.close()
    before = db.read_bytes()

    with pytest.raises(StoreError, match=r"a SQLite database of another program \(tables: invoices\)"):
        SQLiteStore(db)

    assert db.read_bytes() == before  # still in rollback-journal mode: not switched to WAL
    assert not db.with_name("app.db-wal").exists()


def damage_a_page(db: Path) -> None:
    store = SQLiteStore(db)
    store.put("team-1/#PlanningTool", "tasks", {str(i): {"id": i, "pad": "p" * 500} for i in range(200)})
    store.close()  # checkpointed: the rows are in the main file now
    data = bytearray(db.read_bytes())
    page = 4096
    for offset in range(3 * page, 3 * page + 64):
        data[offset] = 0xFF
    db.write_bytes(bytes(data))


def test_a_damaged_page_reaches_the_caller_as_a_store_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "state.db"
    damage_a_page(db)
    monkeypatch.setenv("TOOLCARDS_STORE", str(db))

    with FakeObserver("Alice", "team-1") as alice, pytest.raises(StoreError) as raised:
        ToolFactory([PlanningTool()], observer=alice)

    message = str(raised.value)
    assert str(db) in message
    assert "malformed" in message or "not a valid toolcards database" in message
    assert "restore" in message.lower()


def test_a_page_damaged_while_serving_fails_each_call_with_the_cause(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = SQLiteStore(db)
    store.put("ns", "t", {str(i): {"pad": "p" * 500} for i in range(200)})
    version = store.load("ns").version
    store.close()
    damage_a_page(db)
    reopened = SQLiteStore(db)
    try:
        with pytest.raises(StoreError, match=r"malformed|not a valid toolcards database"):
            reopened.load("team-1/#PlanningTool")
        assert version == 1
    finally:
        reopened.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file_is_one_line_naming_it(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    SQLiteStore(db).close()
    db.chmod(0)
    try:
        with pytest.raises(StoreError, match=str(db)):
            SQLiteStore(db)
    finally:
        db.chmod(0o600)
