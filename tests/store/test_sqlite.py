"""SQLiteStore: durability across restarts and SIGKILL, several processes, and error translation."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, cast

import pytest

from toolcards.errors import StoreError
from toolcards.store import Change, SQLiteStore


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection, to look at the file or hold its lock as another program would."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def test_restart_restores_state_exactly(db_path: Path) -> None:
    state: dict[str, dict[str, Any]] = {
        "tasks": {str(i): {"id": i, "title": f"task {i} ✓", "deps": [i - 1] if i else []} for i in range(50)},
        "meta": {"seq": 50, "ratio": 1 / 3},
    }
    store = SQLiteStore(db_path)
    for collection, rows in state.items():
        store.put("team/#Planning", collection, rows)
    store.put("team/#Planning", "tasks", {"0": None})
    store.close()

    reopened = SQLiteStore(str(db_path))

    expected = {"meta": state["meta"], "tasks": {k: v for k, v in state["tasks"].items() if k != "0"}}
    assert reopened.load("team/#Planning").rows == expected
    reopened.close()


def test_file_uses_wal_and_a_portable_versioned_records_table(db_path: Path) -> None:
    SQLiteStore(db_path).close()

    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = conn.execute("PRAGMA table_info(records)").fetchall()
    assert [(name, kind, pk) for _, name, kind, _, _, pk in columns] == [
        ("namespace", "TEXT", 1),
        ("collection", "TEXT", 2),
        ("key", "TEXT", 3),
        ("value", "TEXT", 0),
        ("version", "INTEGER", 0),
    ]


def test_rows_are_stored_one_per_value_as_json_text(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    store.put("ns", "tasks", {"1": {"a": "é"}, "2": [1, 2]})
    store.close()

    with raw(db_path) as conn:
        rows = conn.execute("SELECT namespace, collection, key, value FROM records ORDER BY key").fetchall()
    assert rows == [("ns", "tasks", "1", '{"a":"é"}'), ("ns", "tasks", "2", "[1,2]")]


def test_two_stores_on_one_file_see_each_others_commits(db_path: Path) -> None:
    first, second = SQLiteStore(db_path), SQLiteStore(db_path, synchronous="full")
    first.put("ns", "t", {"from": "first"})
    second.put("ns", "t", {"also": "second"})

    assert first.load("ns").rows == second.load("ns").rows == {"t": {"also": "second", "from": "first"}}
    first.close()
    second.close()


def test_default_path_honours_toolcards_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "custom").mkdir()  # an explicit path's directory is not created for it
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "custom" / "db.sqlite"))

    store = SQLiteStore()

    assert store.path == tmp_path / "custom" / "db.sqlite"
    assert store.path.is_file()
    store.close()


def test_path_and_repr(db_path: Path) -> None:
    store = SQLiteStore(db_path, synchronous="full")

    assert store.path == db_path
    assert repr(store) == f"SQLiteStore({str(db_path)!r}, synchronous='full')"
    assert not store.closed
    store.close()
    assert store.closed


def test_unknown_synchronous_mode_is_refused(db_path: Path) -> None:
    with pytest.raises(ValueError, match="'off'"):
        SQLiteStore(db_path, synchronous=cast(Any, "off"))


# --- error translation -------------------------------------------------------------------------

# A missing directory, or a path under a file: tests/store/test_default.py, for every road to a path.


def test_directory_in_place_of_the_file_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a directory") as raised:
        SQLiteStore(tmp_path)

    assert str(tmp_path) in str(raised.value)
    assert isinstance(raised.value.__cause__, sqlite3.Error)


def test_file_that_is_not_a_database_raises_store_error(db_path: Path) -> None:
    db_path.write_bytes(b"these are somebody's notes, not a database\n" * 200)

    with pytest.raises(StoreError, match=r"is not a SQLite database .* nothing was written"):
        SQLiteStore(db_path)

    assert db_path.read_bytes().startswith(b"these are")
    assert not db_path.with_name(db_path.name + "-wal").exists()


def test_newer_schema_is_refused(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    with raw(db_path) as conn:
        conn.execute("PRAGMA user_version=99")

    with pytest.raises(StoreError, match="schema version 99"):
        SQLiteStore(db_path)


def test_row_written_by_another_program_raises_store_error_naming_it(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    with raw(db_path) as conn:
        conn.execute("INSERT INTO records VALUES ('ns', 'tasks', '7', 'not json', 0)")

    with pytest.raises(StoreError, match="tasks/7"):
        store.load("ns")
    store.close()


def test_write_lock_held_past_busy_timeout_raises_and_writes_nothing(db_path: Path) -> None:
    store = SQLiteStore(db_path, busy_timeout=0.05)
    store.put("ns", "t", {"k": "before"})
    other = raw(db_path)
    other.execute("BEGIN IMMEDIATE")

    with pytest.raises(StoreError, match="busy timeout") as raised:
        store.put("ns", "t", {"k": "after"})

    assert str(db_path) in str(raised.value)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert store.load("ns").rows == {"t": {"k": "before"}}  # readers are not blocked by a writer
    other.execute("ROLLBACK")
    other.close()
    store.put("ns", "t", {"k": "after"})
    assert store.load("ns").rows == {"t": {"k": "after"}}
    store.close()


def test_writer_waits_for_a_lock_released_within_busy_timeout(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    other = raw(db_path)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO records VALUES ('ns', 't', 'other', '1', 0)")
    release = threading.Timer(0.2, lambda: other.execute("COMMIT"))
    release.start()

    store.put("ns", "t", {"mine": 2})

    release.join()
    other.close()
    assert store.load("ns").rows == {"t": {"mine": 2, "other": 1}}
    store.close()


def test_failure_inside_the_transaction_rolls_back_every_change(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    store.put("ns", "t", {"a": "before"})
    # Upserts run before deletes, so a delete that cannot be bound fails mid-transaction.
    unbindable = cast(str, ("not", "a", "string"))

    with pytest.raises(StoreError) as raised:
        store.apply(
            "ns",
            [
                Change(collection="t", key="a", value="after"),
                Change(collection="t", key="b", value="new"),
                Change(collection="t", key=unbindable, value=None),
            ],
        )

    assert isinstance(raised.value.__cause__, sqlite3.Error)
    assert store.load("ns").rows == {"t": {"a": "before"}}
    store.put("ns", "t", {"a": "usable afterwards"})
    assert store.load("ns").rows == {"t": {"a": "usable afterwards"}}
    store.close()


def test_key_a_database_cannot_hold_raises_store_error(db_path: Path) -> None:
    store = SQLiteStore(db_path)

    with pytest.raises(StoreError, match="lone surrogates"):
        store.put("ns", "t", {"\udcff": 1})
    with pytest.raises(StoreError, match="lone surrogates"):
        store.load("\udcff")
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_store_cannot_be_used_in_a_forked_child(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    store.put("ns", "t", {"k": 1})

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code only
        code = 1
        try:
            store.load("ns")
        except StoreError as exc:
            code = 0 if "forked child" in str(exc) else 2
        store.close()
        os._exit(code)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert store.load("ns").rows == {"t": {"k": 1}}  # the parent's connection is untouched
    store.close()


# --- several processes, and SIGKILL ------------------------------------------------------------

WRITER = """
import sys
from toolcards.store import Change, SQLiteStore

store = SQLiteStore(sys.argv[1])
name = sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[3])):
    store.put("shared", "rows", {f"{name}-{i}": {"by": name, "i": i}})
    if i % 50 == 0:
        store.load("shared")
store.close()
print("done", flush=True)
"""


@pytest.mark.slow
def test_processes_writing_one_file_at_once_lose_nothing(db_path: Path) -> None:
    rounds = 300
    store = SQLiteStore(db_path)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db_path), name, str(rounds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for i in range(rounds):
        store.put("shared", "rows", {f"parent-{i}": {"by": "parent", "i": i}})
    results = [writer.communicate(timeout=60) for writer in writers]

    assert [(w.returncode, out) for w, (out, _) in zip(writers, results, strict=True)] == [(0, "done\n")] * 2, [
        err for _, err in results
    ]
    rows = store.load("shared").rows["rows"]
    assert len(rows) == 3 * rounds
    assert all(rows[f"{name}-{i}"] == {"by": name, "i": i} for name in ("p1", "p2", "parent") for i in range(rounds))
    store.close()


KILLED_WRITER = """
import sys
from toolcards.store import Change, SQLiteStore

store = SQLiteStore(sys.argv[1], synchronous=sys.argv[2])
for i in range(10_000_000):
    store.apply("ns", [Change(collection="rows", key=f"{i}-{part}", value={"i": i, "part": part}) for part in "abc"])
    print(i, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("synchronous", ["normal", "full"])
def test_sigkill_loses_no_acknowledged_change(db_path: Path, synchronous: str) -> None:
    SQLiteStore(db_path).close()  # created up front, so the child only writes
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db_path), synchronous],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acked: list[int] = []
    for line in child.stdout:
        acked.append(int(line))
        if len(acked) == 200:
            child.send_signal(signal.SIGKILL)
            break
    # Acks already in the pipe (or read ahead into the buffer) were printed after their apply
    # returned: they count too. Read through the same file object so none is skipped.
    acked += [int(line) for line in child.stdout.read().split()]
    child.wait(timeout=60)
    assert child.stderr is not None
    err = child.stderr.read()

    assert child.returncode == -signal.SIGKILL, err
    assert len(acked) >= 200
    store = SQLiteStore(db_path)
    rows = store.load("ns").rows.get("rows", {})
    store.close()
    written = {int(key.split("-")[0]) for key in rows}
    assert set(acked) <= written
    # Each change set is all there or not at all, and only the one in flight may lack its ack.
    assert written == set(range(len(written)))
    assert len(written) - max(acked) - 1 in (0, 1)
    assert rows == {f"{i}-{p}": {"i": i, "part": p} for i in written for p in "abc"}


# --- a clean exit leaves the main file whole ---------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def main_file_alone(db: Path, elsewhere: Path) -> Path:
    """Copy ``db`` without its ``-wal`` or ``-shm``, as ``cp state.db`` does; returns the copy."""
    elsewhere.mkdir()
    copy = elsewhere / db.name
    copy.write_bytes(db.read_bytes())
    return copy


@pytest.mark.slow
def test_after_toolcards_call_exits_the_main_file_alone_holds_every_task(tmp_path: Path) -> None:
    db = tmp_path / "team" / "state.db"
    db.parent.mkdir()
    SQLiteStore(db).close()  # toolcards call reads a team, it never starts one
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces"), "TOOLCARDS_STORE": str(db)}
    for task in ("Ship the release", "Write the notes"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolcards.cli",
                "call",
                "/update_planning",
                f'create_tasks=[{{"description": "{task}"}}]',
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    copy = main_file_alone(db, tmp_path / "copy")
    store = SQLiteStore(copy)
    tasks = store.load("default/#PlanningTool").rows["tasks"]
    store.close()
    assert sorted(task["description"] for task in tasks.values()) == ["Ship the release", "Write the notes"]


HOLDER = """
import sys
from toolcards.store import SQLiteStore

store = SQLiteStore(sys.argv[1])
store.load("ns")
print("open", flush=True)
sys.stdin.readline()
store.close()
"""

WRITES_AND_CLOSES = """
import sys
from toolcards.store import SQLiteStore

store = SQLiteStore(sys.argv[1])
for i in range(200):
    store.put("ns", "rows", {str(i): {"i": i}})
store.close()
"""


@pytest.mark.slow
def test_a_writer_exiting_beside_an_idle_process_leaves_every_row_in_the_main_file(
    db_path: Path, tmp_path: Path
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        done = subprocess.run(
            [sys.executable, "-c", WRITES_AND_CLOSES, str(db_path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

        # The holder still has the file open: the writer's close was not the last one.
        copy = main_file_alone(db_path, tmp_path / "copy")
        store = SQLiteStore(copy)
        rows = store.load("ns").rows.get("rows", {})
        store.close()
        assert rows == {str(i): {"i": i} for i in range(200)}
    finally:
        holder.communicate("\n", timeout=60)


def test_close_does_not_wait_for_a_reader_holding_an_old_snapshot(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(db_path, busy_timeout=600)
    store.put("ns", "rows", {"before": 1})
    reader = raw(db_path)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM records").fetchone() == (1,)  # a snapshot, held
    store.put("ns", "rows", {"after": 2})

    caplog.set_level(logging.DEBUG, logger="toolcards.store")
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(timeout=120)  # with a wait for the reader, this close would take 600 s

    assert not closer.is_alive()
    assert store.closed
    assert any("checkpoint" in record.getMessage() and str(db_path) in record.getMessage() for record in caplog.records)
    reader.execute("COMMIT")
    reader.close()
    reopened = SQLiteStore(db_path)
    assert reopened.load("ns").rows == {"rows": {"before": 1, "after": 2}}
    reopened.close()


DEFAULT_STORE_LEFT_OPEN = """
import threading
from toolcards.store import default_store

store = default_store()
store.put("ns", "rows", {str(i): i for i in range(100)})
# Held by a thread still running at exit, as an actor's thread may hold it: never freed.
threading.Thread(target=lambda held=store: threading.Event().wait(), daemon=True).start()
"""


@pytest.mark.slow
def test_a_process_exiting_with_its_default_store_open_leaves_the_rows_in_the_main_file(
    db_path: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "TOOLCARDS_STORE": str(db_path), "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "ws")}
    done = subprocess.run(
        [sys.executable, "-c", DEFAULT_STORE_LEFT_OPEN],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    copy = main_file_alone(db_path, tmp_path / "copy")
    store = SQLiteStore(copy)
    assert store.load("ns").rows == {"rows": {str(i): i for i in range(100)}}
    store.close()
