"""open_store picks an implementation by location; default_store is shared per process and path."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from toolcards.errors import StoreError
from toolcards.store import (
    MEMORY,
    MemoryStore,
    SQLiteStore,
    Store,
    close_default_stores,
    default_store,
    open_store,
)


def test_memory_location_opens_a_memory_store() -> None:
    store = open_store(MEMORY)

    assert isinstance(store, MemoryStore)
    assert open_store(":memory:") is not store


@pytest.mark.parametrize("kind", [str, Path])
def test_path_opens_sqlite_at_that_path(tmp_path: Path, kind: type[str] | type[Path]) -> None:
    store = open_store(kind(tmp_path / "x.db"))

    assert isinstance(store, SQLiteStore)
    assert store.path == tmp_path / "x.db"
    store.close()


def test_none_opens_sqlite_at_the_configured_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "configured.db"))

    store = open_store()

    assert isinstance(store, SQLiteStore)
    assert store.path == tmp_path / "configured.db"
    store.close()


def test_without_override_the_database_lives_in_the_internal_dir(tmp_path: Path) -> None:
    store = open_store(None)

    assert isinstance(store, SQLiteStore)
    assert store.path == tmp_path / "workspaces" / ".toolcards" / "state.db"
    store.close()


def test_open_store_translates_failures(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="missing"):
        open_store(tmp_path / "missing" / "state.db")


def test_default_store_is_shared_and_writes_to_the_configured_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "shared.db"))

    store = default_store()
    store.put("ns", "t", {"k": 1})

    assert default_store() is store
    reader = open_store(tmp_path / "shared.db")
    assert reader.load("ns").rows == {"t": {"k": 1}}
    reader.close()


def test_default_store_follows_a_changed_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "one.db"))
    first = default_store()
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "two.db"))
    second = default_store()
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "one.db"))

    assert first is not second
    assert default_store() is first


def test_closed_default_store_is_replaced() -> None:
    first = default_store()
    first.close()

    second = default_store()

    assert second is not first
    second.put("ns", "t", {"k": 1})
    assert second.load("ns").rows == {"t": {"k": 1}}


def test_close_default_stores_closes_them_and_starts_over() -> None:
    first = default_store()

    close_default_stores()
    close_default_stores()

    with pytest.raises(StoreError, match="closed"):
        first.load("ns")
    assert default_store() is not first


def test_concurrent_first_calls_open_one_store() -> None:
    seen: list[Store] = []
    start = threading.Barrier(8)

    def call() -> None:
        start.wait()
        seen.append(default_store())

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(seen) == 8
    assert len({id(store) for store in seen}) == 1


def test_default_store_reports_an_unusable_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-directory").mkdir()
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "a-directory"))

    with pytest.raises(StoreError, match="TOOLCARDS_STORE"):
        default_store()


def _open_sqlite_at(how: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """Open the SQLite store at ``path`` the way ``how`` names: each road a user can take to it."""
    if how == "SQLiteStore(path)":
        return SQLiteStore(path)
    if how == "open_store('sqlite:///path')":
        return open_store(f"sqlite://{path}")
    monkeypatch.setenv("TOOLCARDS_STORE", str(path))
    return {"SQLiteStore()": SQLiteStore, "open_store()": open_store, "default_store()": default_store}[how]()


ROADS = ["SQLiteStore(path)", "open_store('sqlite:///path')", "SQLiteStore()", "open_store()", "default_store()"]


@pytest.mark.parametrize("how", ROADS)
def test_an_explicit_path_in_a_missing_directory_is_refused_naming_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    missing = tmp_path / "no-such-dir" / "team"
    path = missing / "state.db"

    with pytest.raises(StoreError) as raised:
        _open_sqlite_at(how, path, monkeypatch)

    message = str(raised.value)
    assert f"Store {path}: the directory {missing} does not exist" in message
    assert f"mkdir -p {missing}" in message
    assert "correct the path" in message
    assert not (tmp_path / "no-such-dir").exists()  # nothing created on the way to refusing


@pytest.mark.parametrize("how", ROADS)
def test_an_explicit_path_under_a_file_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    (tmp_path / "a-file").write_text("notes")
    path = tmp_path / "a-file" / "state.db"

    with pytest.raises(StoreError, match=rf"Store {path}: {tmp_path / 'a-file'} is not a directory\. Correct the path"):
        _open_sqlite_at(how, path, monkeypatch)

    assert (tmp_path / "a-file").read_text() == "notes"


def test_the_default_location_is_created_with_the_workspaces_root(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    assert not root.exists()

    store = default_store()

    assert isinstance(store, SQLiteStore)
    assert store.path == root / ".toolcards" / "state.db"
    assert store.path.is_file()


def test_a_default_location_that_cannot_be_created_names_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "a-file" / "workspaces"))

    with pytest.raises(StoreError, match="TOOLCARDS_WORKSPACES_ROOT") as raised:
        default_store()

    assert "TOOLCARDS_STORE" in str(raised.value)
    assert isinstance(raised.value.__cause__, OSError)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_gets_its_own_default_store() -> None:
    parent_store = default_store()
    parent_store.put("ns", "t", {"from": "parent"})

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code only
        code = 1
        try:
            child_store = default_store()
            if child_store is not parent_store and child_store.load("ns").rows == {"t": {"from": "parent"}}:
                child_store.put("ns", "t", {"from": "child"})
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert default_store() is parent_store
    assert parent_store.load("ns").rows == {"t": {"from": "child"}}


def test_a_second_process_is_refused_a_memory_store_for_the_same_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes on `:memory:` would serve two different teams: the second is refused."""
    import subprocess
    import sys

    monkeypatch.setenv("TOOLCARDS_STORE", MEMORY)
    mine = default_store()
    assert isinstance(mine, MemoryStore) and default_store() is mine

    other = subprocess.run(
        [sys.executable, "-m", "toolcards.cli", "call", "/get_planning"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert other.returncode == 1
    assert other.stderr.count("\n") == 1
    assert f"process {os.getpid()} already keeps the state" in other.stderr
    close_default_stores()
    # Once this process lets go, another may take it.
    again = subprocess.run(
        [sys.executable, "-m", "toolcards.cli", "call", "/get_planning"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr


def test_postgres_locations_need_the_driver_or_say_how_to_get_it() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        with pytest.raises(StoreError, match="postgres"):
            open_store("postgresql://nobody@127.0.0.1:1/none")
    else:
        with pytest.raises(StoreError) as raised:
            open_store("postgresql://nobody:secret@127.0.0.1:1/none")
        assert "secret" not in str(raised.value)


def test_describe_location_hides_passwords() -> None:
    from toolcards.store import describe_location

    assert describe_location("postgresql://ann:s3cret@db:5432/team") == "postgresql://ann:***@db:5432/team"
    assert describe_location("/var/lib/state.db") == "/var/lib/state.db"
