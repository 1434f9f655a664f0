"""``toolcards backup``: a consistent copy of a store in use, and refusals that say what to do."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolcards.cli import main
from toolcards.cli._backup import pg_dump_command
from toolcards.store import SQLiteStore

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from toolcards.store import Change, SQLiteStore

store = SQLiteStore(sys.argv[1])
for i in range(10_000_000):
    # One change set (one version) of three rows: a consistent copy has all three or none.
    store.apply("team/#PlanningTool", [Change(collection="rows", key=f"{i}-{part}", value={"i": i}) for part in "abc"])
    print(i, flush=True)
"""


class Acks:
    """The changes a writer process acknowledged, read as it prints them (so it never blocks)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.seen: list[int] = []
        self._lock = threading.Lock()
        self._enough = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._lock:
                self.seen.append(int(line))
                if len(self.seen) >= 200:
                    self._enough.set()
        self._enough.set()

    def wait_for_200(self) -> None:
        assert self._enough.wait(timeout=120)

    def snapshot(self) -> set[int]:
        with self._lock:
            return set(self.seen)


@pytest.mark.slow
def test_a_backup_taken_while_another_process_writes_is_consistent_and_holds_every_acknowledged_change(
    tmp_path: Path,
) -> None:
    db = tmp_path / "team" / "state.db"
    db.parent.mkdir()
    SQLiteStore(db).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        acks = Acks(writer)
        acks.wait_for_200()
        acknowledged_before = acks.snapshot()
        destination = tmp_path / "backups" / "team.db"
        destination.parent.mkdir()
        env = {**os.environ, "TOOLCARDS_STORE": str(db), "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "ws")}
        backup = subprocess.run(
            [sys.executable, "-m", "toolcards.cli", "backup", str(destination)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        acknowledged_after = acks.snapshot()
    finally:
        writer.kill()
        writer.wait(timeout=60)

    assert backup.returncode == 0, backup.stderr
    assert acknowledged_after > acknowledged_before  # the writer went on while the copy was taken
    assert sorted(p.name for p in destination.parent.iterdir()) == ["team.db"]  # one file, no -wal
    check = sqlite3.connect(destination)
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    check.close()
    store = SQLiteStore(destination)
    snapshot = store.load("team/#PlanningTool")
    store.close()
    rows = snapshot.rows["rows"]
    written = {value["i"] for value in rows.values()}
    assert acknowledged_before <= written
    # One moment of the store: whole change sets, none skipped, and the version that says so.
    assert rows == {f"{i}-{part}": {"i": i} for i in written for part in "abc"}
    assert written == set(range(len(written)))
    assert snapshot.version == len(written)  # one version per change set
    assert f"Copied {db} to {destination}: " in backup.stdout
    assert f"  team/#PlanningTool  version {snapshot.version}" in backup.stdout


def test_an_existing_destination_is_replaced_only_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "state.db"
    store = SQLiteStore(db)
    store.put("team/#PlanningTool", "tasks", {"1": {"description": "Ship"}})
    store.close()
    monkeypatch.setenv("TOOLCARDS_STORE", str(db))
    destination = tmp_path / "copy.db"
    destination.write_text("an older copy")

    assert main(["backup", str(destination)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"toolcards: error: {destination} exists. Pass --force to replace it, or choose another path.\n"
    )
    assert destination.read_text() == "an older copy"

    assert main(["backup", "--force", str(destination)]) == 0
    assert capsys.readouterr().out == (
        f"Copied {db} to {destination}: {destination.stat().st_size:,} bytes, 1 namespace:\n"
        "  team/#PlanningTool  version 1\n"
    )
    copy = SQLiteStore(destination)
    assert copy.load("team/#PlanningTool").rows == {"tasks": {"1": {"description": "Ship"}}}
    copy.close()


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("missing-dir/copy.db", ["does not exist", "mkdir -p"]),
        (".", ["is a directory", "state-backup.db"]),
        ("state.db", ["is the store itself"]),
    ],
)
def test_a_destination_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str, named: list[str]
) -> None:
    SQLiteStore(tmp_path / "state.db").close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    before = sorted(p.name for p in tmp_path.iterdir())

    assert main(["backup", where]) == 2

    error = capsys.readouterr().err
    assert error.startswith("toolcards: error: ") and error.count("\n") == 1
    assert all(word in error for word in named), error
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_missing_store_is_not_created_to_be_backed_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "nowhere.db"))

    assert main(["backup", str(tmp_path / "copy.db")]) == 1

    err = capsys.readouterr().err
    assert f"toolcards backup found no team: its store {tmp_path / 'nowhere.db'} does not exist" in err
    assert f"TOOLCARDS_STORE={tmp_path / 'nowhere.db'}" in err  # the step that chose it
    assert list(tmp_path.iterdir()) == []  # not created, nor anything else


def test_a_postgres_store_gets_the_pg_dump_command_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://toolcards:s3cret@db.internal:5432/team?sslmode=require"

    assert main(["backup", "--store", url, str(tmp_path / "team.dump")]) == 1

    captured = capsys.readouterr()
    assert captured.out == (
        f"PGPASSWORD='***' pg_dump --format=custom --file={tmp_path / 'team.dump'} "
        "'postgresql://toolcards@db.internal:5432/team?sslmode=require'\n"
    )
    assert "pg_dump" in captured.err and "toolcards:***@db.internal" in captured.err
    assert "s3cret" not in captured.out + captured.err
    assert list(tmp_path.iterdir()) == []


def test_pg_dump_command_without_a_password_keeps_the_url() -> None:
    assert pg_dump_command("postgres://team@db/x", Path("/b/x.dump")) == (
        "pg_dump --format=custom --file=/b/x.dump postgres://team@db/x"
    )


def test_a_memory_store_cannot_be_backed_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backup", "--store", ":memory:", str(tmp_path / "copy.db")]) == 1

    assert "no other process can copy it" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
