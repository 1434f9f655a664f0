"""A damaged or foreign store file says so, in words, and nothing in it is lost or overwritten."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolcards.core._factory import ToolFactory
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
    assert "Restore state.db from a copy made by `toolcards backup`" in message
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


# --- what is looked at before anything is written ---------------------------------------------


def made_by_another_program(db: Path, *statements: str) -> bytes:
    """A database made by plain sqlite3, in its default rollback-journal mode; returns its bytes."""
    conn = sqlite3.connect(db, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()
    assert db.read_bytes()[18:20] == b"\x01\x01"  # rollback-journal mode
    return db.read_bytes()


@pytest.mark.parametrize(
    ("statements", "described"),
    [
        pytest.param(
            ["CREATE TABLE records (id INTEGER PRIMARY KEY, title TEXT)", "INSERT INTO records VALUES (1, 'a')"],
            "tables: records",
            id="a table named like ours",
        ),
        pytest.param(
            [
                "CREATE TABLE records (namespace TEXT, collection TEXT, key TEXT, value TEXT)",
                "CREATE TABLE namespaces (namespace TEXT, version INTEGER, purged INTEGER)",
                "PRAGMA application_id = 1094863686",
            ],
            "application_id 1094863686; tables: namespaces, records",
            id="our tables with another program's id",
        ),
        pytest.param(["PRAGMA user_version = 7"], "no tables; user_version 7", id="no tables but a version"),
        pytest.param(["PRAGMA application_id = 42"], "application_id 42; no tables", id="no tables but an id"),
        pytest.param(["CREATE VIEW answer AS SELECT 42 AS value"], "views: answer", id="only a view"),
    ],
)
def test_a_foreign_database_is_refused_with_its_bytes_and_journal_mode_unchanged(
    tmp_path: Path, statements: list[str], described: str
) -> None:
    db = tmp_path / "app.db"
    before = made_by_another_program(db, *statements)

    with pytest.raises(StoreError) as raised:
        SQLiteStore(db)

    message = str(raised.value)
    assert f"Store {db} is a SQLite database of another program ({described})" in message
    assert "toolcards writes nothing to it" in message
    assert db.read_bytes() == before  # its journal mode is in these bytes: still rollback-journal
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, -shm or -journal


def test_a_foreign_database_in_wal_mode_is_refused_leaving_nothing_beside_it(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    made_by_another_program(db, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    before = db.read_bytes()

    with pytest.raises(StoreError, match=r"of another program \(tables: invoices\)"):
        SQLiteStore(db)

    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_newer_toolcards_schema_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    before = made_by_another_program(
        db,
        "CREATE TABLE records (namespace TEXT, collection TEXT, key TEXT, value TEXT, version INTEGER, extra TEXT)",
        "CREATE TABLE namespaces (namespace TEXT, version INTEGER, purged INTEGER)",
        "CREATE TABLE snapshots (namespace TEXT, data BLOB)",
        "PRAGMA user_version = 3",
    )

    with pytest.raises(StoreError, match="schema version 3 is newer than this toolcards understands"):
        SQLiteStore(db)

    assert db.read_bytes() == before


def test_an_empty_sqlite_database_is_taken_as_a_new_store(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    made_by_another_program(db, "CREATE TABLE scratch (x)", "DROP TABLE scratch")

    store = SQLiteStore(db)
    store.put("ns", "rows", {"a": 1})
    store.close()

    assert SQLiteStore(db).load("ns").rows == {"rows": {"a": 1}}


# --- a store whose data was probably lost ------------------------------------------------------


def test_an_empty_file_without_a_log_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.write_bytes(b"")

    with pytest.raises(StoreError) as raised:
        SQLiteStore(db)

    message = str(raised.value)
    assert f"Store {db} is an empty file (0 bytes) with no write-ahead log beside it" in message
    assert "its data was probably lost" in message
    assert "toolcards backup" in message
    assert f"delete {db}" in message
    assert db.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


KILLED_BEFORE_A_CHECKPOINT = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE records (namespace TEXT NOT NULL, collection TEXT NOT NULL, key TEXT NOT NULL, "
             "value TEXT, version INTEGER NOT NULL, PRIMARY KEY (namespace, collection, key)) WITHOUT ROWID")
conn.execute("CREATE TABLE namespaces (namespace TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, "
             "purged INTEGER NOT NULL) WITHOUT ROWID")
conn.execute("INSERT INTO records VALUES ('team/#PlanningTool', 'tasks', '1', '{}', 1)")
conn.execute("PRAGMA user_version=2")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_main_file_copied_without_the_log_holding_its_tables_is_refused(tmp_path: Path) -> None:
    # How a store was made before it was created whole: switched to WAL first, so its tables
    # and rows stayed in the -wal until a checkpoint.
    db = tmp_path / "live" / "state.db"
    db.parent.mkdir()
    done = subprocess.run([sys.executable, "-c", KILLED_BEFORE_A_CHECKPOINT, str(db)], check=False, timeout=60)
    assert done.returncode == -signal.SIGKILL
    copy = tmp_path / "copy" / "state.db"
    copy.parent.mkdir()
    copy.write_bytes(db.read_bytes())  # the main file alone, as `cp state.db` would
    before = copy.read_bytes()

    with pytest.raises(StoreError) as raised:
        SQLiteStore(copy)

    message = str(raised.value)
    assert f"Store {copy} is a SQLite database in WAL mode with no tables" in message
    assert "state.db-wal" in message and "toolcards backup" in message
    assert copy.read_bytes() == before
    # Beside its log, the same file is the store it always was.
    store = SQLiteStore(db)
    assert store.load("team/#PlanningTool").rows == {"tasks": {"1": {}}}
    store.close()


def test_a_new_store_has_its_tables_in_the_main_file_from_the_start(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = SQLiteStore(db)  # held open: nothing checkpointed at a close
    try:
        image = sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True)  # the main file alone
        tables = {name for (name,) in image.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        (version,) = image.execute("PRAGMA user_version").fetchone()
        image.close()
    finally:
        store.close()
    assert tables == {"records", "namespaces"}
    assert version == 2


CREATOR = """
import sys
from pathlib import Path
from toolcards.store import SQLiteStore

directory, name = Path(sys.argv[1]), sys.argv[2]
print("ready", flush=True)
for line in sys.stdin:
    path = directory / line.strip()
    try:
        store = SQLiteStore(path)
        store.put("ns", "rows", {name: path.name})
        store.close()
        print("ok", flush=True)
    except Exception as exc:
        print(f"failed {path.name}: {exc}", flush=True)
"""


@pytest.mark.slow
def test_processes_creating_one_store_at_once_all_open_it(tmp_path: Path) -> None:
    names = [f"p{i}" for i in range(4)]
    creators = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, str(tmp_path), name],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        for name in names
    ]
    try:
        for creator in creators:
            assert creator.stdout is not None and creator.stdout.readline() == "ready\n"
        for round_ in range(25):
            # Every process is told the same new file at once: they race to create it.
            for creator in creators:
                assert creator.stdin is not None
                creator.stdin.write(f"round-{round_}.db\n")
                creator.stdin.flush()
            answers = [creator.stdout.readline().strip() for creator in creators if creator.stdout is not None]
            assert answers == ["ok"] * len(creators), answers
            store = SQLiteStore(tmp_path / f"round-{round_}.db")
            assert store.load("ns").rows == {"rows": dict.fromkeys(names, f"round-{round_}.db")}
            store.close()
    finally:
        for creator in creators:
            if creator.stdin is not None:
                creator.stdin.close()
            creator.wait(timeout=60)
