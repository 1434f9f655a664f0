"""PostgresStore on a real server: errors and masking, several pools and processes, lost connections.

The contract itself (versions, deltas, compaction...) runs against PostgreSQL through the
``store`` fixture in ``test_base.py`` and ``test_versions.py``; this file covers what only a
server store has. Every test uses the session's real server (``tests/postgres_server.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.postgres_server import PostgresServer, _free_port
from toolcards.errors import StoreError
from toolcards.store import Change, Delta, Snapshot, close_default_stores, default_store, open_store

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra: pip install 'toolcards[postgres]'")

from toolcards.store._postgres import PostgresStore  # noqa: E402 - after the driver check

WAIT = 30.0
"""Bound for waits that only a bug makes long: a blocked writer fails the test instead of hanging it."""


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url)
    yield opened
    opened.close()


def with_password(url: str, password: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@", 1)


def sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement through a plain connection, as another program would."""
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement, params or None)
        return cursor.fetchall() if cursor.description else []


# --- opening, URLs and errors ------------------------------------------------------------------


def test_open_store_routes_postgres_urls(postgres_url: str) -> None:
    for url in (postgres_url, postgres_url.replace("postgresql://", "postgres://", 1)):
        opened = open_store(url)
        assert isinstance(opened, PostgresStore)
        assert opened.shared
        opened.close()


def test_repr_and_url_mask_the_password(postgres_url: str) -> None:
    opened = PostgresStore(with_password(postgres_url, "s3cret"))

    assert "s3cret" not in repr(opened) and "s3cret" not in opened.url
    assert "postgres:***@127.0.0.1" in repr(opened)
    opened.close()


def test_a_password_parameter_is_masked_too(postgres_url: str) -> None:
    opened = PostgresStore(f"{postgres_url}&password=s3cret")

    assert "s3cret" not in repr(opened)
    assert "password=***" in opened.url
    opened.close()


def test_unknown_database_is_one_line_naming_the_server_without_the_password(
    postgres_server: PostgresServer,
) -> None:
    url = with_password(postgres_server.url("no_such_db"), "s3cret")

    with pytest.raises(StoreError) as raised:
        PostgresStore(url)

    message = str(raised.value)
    assert "\n" not in message and "s3cret" not in message
    assert "postgres:***@127.0.0.1" in message
    assert "no_such_db" in message and "createdb" in message


def test_unknown_role_says_how_to_fix_it(postgres_server: PostgresServer) -> None:
    url = postgres_server.url().replace("postgres@", "nobody:pw@", 1)

    with pytest.raises(StoreError, match=r"createuser") as raised:
        PostgresStore(url)
    assert "\n" not in str(raised.value) and ":pw@" not in str(raised.value)


def test_unreachable_server_is_one_line_with_what_to_do() -> None:
    url = f"postgresql://someone:s3cret@127.0.0.1:{_free_port()}/toolcards"

    with pytest.raises(StoreError) as raised:
        PostgresStore(url, connect_timeout=2)

    message = str(raised.value)
    assert "\n" not in message and "s3cret" not in message
    assert "refused" in message.lower()
    assert "running and reachable" in message and "pg_isready" in message


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="min_size"):
        PostgresStore("postgresql://x/y", min_size=3, max_size=2)
    with pytest.raises(ValueError, match="timeouts"):
        PostgresStore("postgresql://x/y", lock_timeout=0)


def test_the_tables_follow_the_shared_layout(store: PostgresStore, postgres_url: str) -> None:
    store.put("ns", "tasks", {"1": {"a": "é"}})

    columns = sql(
        postgres_url,
        "SELECT table_name, column_name, data_type, collation_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
    )
    assert columns == [
        ("namespaces", "namespace", "text", "C"),
        ("namespaces", "version", "bigint", None),
        ("namespaces", "purged", "bigint", None),
        ("records", "namespace", "text", "C"),
        ("records", "collection", "text", "C"),
        ("records", "key", "text", "C"),
        ("records", "value", "text", None),
        ("records", "version", "bigint", None),
        ("toolcards_schema", "version", "integer", None),
    ]
    indexes = sql(postgres_url, "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
    assert {"records_by_version", "records_pkey", "namespaces_pkey"} <= {name for (name,) in indexes}
    assert sql(postgres_url, "SELECT collection, key, value, version FROM records") == [("tasks", "1", '{"a":"é"}', 1)]
    assert sql(postgres_url, "SELECT version FROM toolcards_schema") == [(1,)]


def test_a_newer_schema_is_refused(store: PostgresStore, postgres_url: str) -> None:
    sql(postgres_url, "UPDATE toolcards_schema SET version = 99")

    with pytest.raises(StoreError, match=r"schema version 99 is newer .* Upgrade toolcards"):
        PostgresStore(postgres_url)


def test_tables_toolcards_did_not_create_are_refused(postgres_url: str) -> None:
    sql(postgres_url, "CREATE TABLE records (id int)")

    with pytest.raises(StoreError, match="did not create"):
        PostgresStore(postgres_url)


def test_processes_opening_a_new_database_at_once_create_the_tables_once(postgres_url: str) -> None:
    start = threading.Barrier(4)
    opened: list[PostgresStore] = []
    failures: list[BaseException] = []

    def open_one() -> None:
        try:
            start.wait()
            opened.append(PostgresStore(postgres_url))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)

    assert failures == [] and len(opened) == 4
    assert sql(postgres_url, "SELECT version FROM toolcards_schema") == [(1,)]
    for one in opened:
        one.close()


def test_a_key_postgresql_cannot_hold_is_a_store_error(store: PostgresStore) -> None:
    with pytest.raises(StoreError, match="NUL"):
        store.put("ns", "t", {"a\x00b": 1})
    with pytest.raises(StoreError, match="lone surrogates"):
        store.put("ns", "t", {"\udcff": 1})
    # The failed writes left the connections usable and nothing behind.
    assert store.put("ns", "t", {"ok": 1}) == 1


def test_closed_is_reported(store: PostgresStore) -> None:
    assert not store.closed
    store.close()
    assert store.closed
    with pytest.raises(StoreError, match="is closed"), store.write("ns", since=0):
        pass


def test_import_needs_no_driver_and_opening_without_it_says_what_to_install() -> None:
    script = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "import toolcards, toolcards.store, toolcards.store._postgres\n"
        "from toolcards.errors import StoreError\n"
        "try:\n"
        "    toolcards.store.open_store('postgresql://u:pw@localhost/db')\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)

    assert "pip install 'toolcards[postgres]'" in out.stdout, out.stderr


def test_importing_toolcards_loads_no_driver() -> None:
    script = "import sys, toolcards, toolcards.store; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)

    assert out.stdout.strip() == "False"


def test_default_store_serves_a_postgres_url(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", postgres_url)

    shared = default_store()

    assert isinstance(shared, PostgresStore) and default_store() is shared
    assert shared.put("ns", "t", {"a": 1}) == 1
    close_default_stores()
    assert shared.closed


def test_version_reads_only_the_head(store: PostgresStore) -> None:
    assert store.version("ns") == 0
    store.put("ns", "t", {"a": 1})
    store.drop("ns")
    assert store.version("ns") == 2


def test_a_failed_login_says_to_check_the_credentials(store: PostgresStore) -> None:
    # The test server trusts every login, so the server's refusal is reproduced here.
    refused = psycopg.OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
        'FATAL:  password authentication failed for user "someone"'
    )

    message = str(store._error("opening", refused))

    assert "\n" not in message
    assert "password authentication failed" in message and "PGPASSWORD" in message


@pytest.mark.slow
def test_an_exhausted_pool_is_a_clear_error(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, max_size=1, connect_timeout=1)
    inside, release = threading.Event(), threading.Event()

    def hold_the_only_connection() -> None:
        with store.write("a", since=None):
            inside.set()
            release.wait(WAIT)

    thread = threading.Thread(target=hold_the_only_connection)
    thread.start()
    try:
        assert inside.wait(WAIT)
        with pytest.raises(StoreError, match=r"All 1 connections were busy") as raised:
            store.read("b", since=0)
    finally:
        release.set()
        thread.join(WAIT)

    assert "\n" not in str(raised.value)
    assert store.version("b") == 0
    store.close()


# --- two pools on one database -----------------------------------------------------------------


def test_a_writer_catches_up_with_another_pools_commits(postgres_url: str) -> None:
    first, second = PostgresStore(postgres_url), PostgresStore(postgres_url)
    version = second.put("board", "tasks", {"1": "from second"})

    first.put("board", "tasks", {"2": "from first"})
    first.put("board", "tasks", {"1": None})

    with second.write("board", since=version) as txn:
        assert isinstance(txn.catch_up, Delta)
        assert [(c.key, c.value) for c in txn.catch_up.changes] == [("2", "from first"), ("1", None)]
        txn.stage([Change(collection="tasks", key="3", value="after catching up")])

    assert txn.committed == 4
    catch_up = first.read("board", since=3)
    assert isinstance(catch_up, Delta) and [c.key for c in catch_up.changes] == ["3"]
    assert first.load("board").rows == {"tasks": {"2": "from first", "3": "after catching up"}}
    first.close()
    second.close()


def test_writers_of_different_namespaces_do_not_wait_for_each_other(postgres_url: str) -> None:
    holder, other = PostgresStore(postgres_url), PostgresStore(postgres_url, lock_timeout=1)
    inside, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold_namespace_a() -> None:
        try:
            with holder.write("a", since=0) as txn:
                txn.stage([Change(collection="t", key="held", value=1)])
                inside.set()
                if not release.wait(WAIT):
                    raise TimeoutError("never released")
        except BaseException as exc:  # reported below
            failures.append(exc)

    thread = threading.Thread(target=hold_namespace_a)
    thread.start()
    try:
        assert inside.wait(WAIT)
        # Namespace b is free while a's write is open (a wait would hit lock_timeout and raise)...
        assert other.put("b", "t", {"free": 1}) == 1
        # ...and a's lock is really held: a second writer of a times out with a clear message.
        with pytest.raises(StoreError, match=r"lock timeout \(1 s\)"):
            other.put("a", "t", {"blocked": 1})
    finally:
        release.set()
        thread.join(WAIT)

    assert failures == []
    assert other.load("a").rows == {"t": {"held": 1}}
    holder.close()
    other.close()


def test_a_writer_waits_for_the_lock_then_sees_the_holders_commit(postgres_url: str) -> None:
    holder, waiter = PostgresStore(postgres_url), PostgresStore(postgres_url)
    holder.put("ns", "meta", {"seq": 1})
    inside, release = threading.Event(), threading.Event()
    seen: list[Any] = []

    def hold() -> None:
        with holder.write("ns", since=1) as txn:
            inside.set()
            release.wait(WAIT)
            txn.stage([Change(collection="meta", key="seq", value=2)])

    def wait_then_write() -> None:
        with waiter.write("ns", since=1) as txn:
            seen.append(txn.catch_up)
            txn.stage([Change(collection="meta", key="seq", value=3)])

    first = threading.Thread(target=hold)
    first.start()
    assert inside.wait(WAIT)
    second = threading.Thread(target=wait_then_write)
    second.start()
    release.set()
    first.join(WAIT)
    second.join(WAIT)

    assert len(seen) == 1
    catch_up = seen[0]
    assert isinstance(catch_up, Delta) and (catch_up.version, catch_up.changes[0].value) == (2, 2)
    assert holder.load("ns") == Snapshot(namespace="ns", version=3, rows={"meta": {"seq": 3}})
    holder.close()
    waiter.close()


# --- lost connections --------------------------------------------------------------------------


def terminate_sessions(postgres_url: str, *, state: str) -> int:
    """End the server sessions of this test's URL in ``state``, from outside; returns how many."""
    name = re.search(r"application_name=(\w+)", postgres_url)
    assert name is not None
    rows = sql(
        postgres_url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = %s AND state = %s AND pid <> pg_backend_pid()",
        name[1],
        state,
    )
    return len(rows)


def test_pooled_connections_ended_by_the_server_are_replaced(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, min_size=3)
    store.put("ns", "t", {"a": 1})

    assert terminate_sessions(postgres_url, state="idle") >= 1

    assert store.load("ns").rows == {"t": {"a": 1}}
    assert store.read("ns", since=1) == Delta(namespace="ns", since=1, version=1, changes=())
    assert store.put("ns", "t", {"b": 2}) == 2
    store.close()


def test_a_connection_lost_unnoticed_is_replaced_and_the_call_retried_once(
    store: PostgresStore, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("ns", "t", {"a": 1})
    # As when a network drop leaves no trace on the socket: the checkout check passes.
    monkeypatch.setattr("toolcards.store._postgres._usable", lambda conn: True)

    assert terminate_sessions(postgres_url, state="idle") == 1
    assert store.read("ns", since=0) == Delta(
        namespace="ns", since=0, version=1, changes=(Change(collection="t", key="a", value=1),)
    )
    assert terminate_sessions(postgres_url, state="idle") >= 1
    with store.write("ns", since=1) as txn:
        txn.stage([Change(collection="t", key="b", value=2)])
    assert txn.committed == 2


def test_a_connection_lost_before_the_commit_writes_nothing_and_says_so(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.put("ns", "t", {"a": 1})

    with (
        pytest.raises(StoreError, match=r"the server rolled it back: nothing was written\. Retry") as raised,
        store.write("ns", since=1) as txn,
    ):
        txn.stage([Change(collection="t", key="b", value=2)])
        assert terminate_sessions(postgres_url, state="idle in transaction") == 1

    # The store asked the server what became of the transaction instead of guessing.
    assert "\n" not in str(raised.value) and raised.value.transient
    assert txn.committed is None
    # The server rolled the transaction back; the next call gets a fresh connection.
    assert store.load("ns") == Snapshot(namespace="ns", version=1, rows={"t": {"a": 1}})
    store.close()


@pytest.mark.parametrize("count", [1_000, 1_001, 2_500])
def test_a_write_larger_than_one_statement_commits_as_one_version(store: PostgresStore, count: int) -> None:
    # Rows go in chunks of 1,000 per INSERT; the boundaries must neither drop nor repeat a row.
    hostile = "x'); DROP TABLE records; --\\ \u00e9"
    store.put("ns", "t", {"old": 1, "gone": 2})
    with store.write("ns", since=1) as txn:
        txn.stage(Change(collection="t", key=f"{hostile}{i:05}", value={"i": i, "text": hostile}) for i in range(count))
        txn.stage([Change(collection="t", key="gone", value=None)])

    assert txn.committed == 2
    loaded = store.load("ns")
    assert loaded.version == 2
    assert loaded.rows["t"] == {"old": 1, **{f"{hostile}{i:05}": {"i": i, "text": hostile} for i in range(count)}}
    delta = store.read("ns", since=1)
    assert isinstance(delta, Delta) and len(delta.changes) == count + 1


def test_a_large_write_failing_after_its_first_chunks_writes_nothing(store: PostgresStore) -> None:
    store.put("ns", "t", {"a": 1})

    with pytest.raises(StoreError, match="NUL") as raised, store.write("ns", since=1) as txn:
        txn.stage(Change(collection="t", key=f"k{i:05}", value=i) for i in range(2_500))
        txn.stage([Change(collection="t", key="bad\x00key", value=0)])  # last: sent after two chunks

    assert "may or may not" not in str(raised.value)
    assert txn.committed is None
    assert store.load("ns") == Snapshot(namespace="ns", version=1, rows={"t": {"a": 1}})
    assert store.put("ns", "t", {"b": 2}) == 2


def test_a_connection_lost_unnoticed_before_a_write_without_catch_up_or_a_drop_is_retried(
    store: PostgresStore, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("ns", "t", {"a": 1})
    monkeypatch.setattr("toolcards.store._postgres._usable", lambda conn: True)

    assert terminate_sessions(postgres_url, state="idle") >= 1
    assert store.put("ns", "t", {"b": 2}) == 2
    assert terminate_sessions(postgres_url, state="idle") >= 1
    store.drop("ns")
    assert store.load("ns") == Snapshot(namespace="ns", version=3, rows={})


@pytest.mark.slow
def test_the_pool_recovers_after_a_server_restart(postgres_server: PostgresServer, postgres_url: str) -> None:
    store = PostgresStore(postgres_url, min_size=2)
    store.put("ns", "t", {"a": 1})

    postgres_server.restart()

    assert store.load("ns").rows == {"t": {"a": 1}}
    with store.write("ns", since=1) as txn:
        txn.stage([Change(collection="t", key="b", value=2)])
    assert txn.committed == 2
    store.close()


@pytest.mark.slow
def test_a_server_down_is_a_clear_error_and_the_store_works_once_it_is_back(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = PostgresStore(with_password(postgres_url, "s3cret"), connect_timeout=2)
    store.put("ns", "t", {"a": 1})

    postgres_server.stop()
    try:
        with pytest.raises(StoreError) as raised:
            store.load("ns")
    finally:
        postgres_server.start()

    message = str(raised.value)
    assert "\n" not in message and "s3cret" not in message
    assert "refused" in message.lower() and "pg_isready" in message
    assert store.load("ns").rows == {"t": {"a": 1}}
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_store_cannot_be_used_in_a_forked_child(store: PostgresStore) -> None:
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
    # The child left the parent's connections alone.
    assert store.load("ns").rows == {"t": {"k": 1}}
    assert store.put("ns", "t", {"k": 2}) == 2


# --- several processes ---------------------------------------------------------------------------

ALLOCATOR = """
import sys
from toolcards.store import Change, Delta
from toolcards.store._postgres import PostgresStore

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = PostgresStore(url)
print("ready", flush=True)
sys.stdin.readline()
version, next_id = 0, 1
for _ in range(count):
    with store.write("board", since=version) as txn:
        catch_up = txn.catch_up
        if isinstance(catch_up, Delta):
            for change in catch_up.changes:
                if change.collection == "meta":
                    next_id = change.value["next_id"]
        else:
            next_id = catch_up.rows.get("meta", {}).get("board", {"next_id": 1})["next_id"]
        task_id = next_id
        next_id += 1
        txn.stage([
            Change(collection="tasks", key=str(task_id), value={"id": task_id, "by": name}),
            Change(collection="meta", key="board", value={"next_id": next_id}),
        ])
    version = txn.committed
    print(task_id, flush=True)  # acknowledged: the write has committed
store.close()
print("done", flush=True)
"""


def start_allocators(url: str, counts: dict[str, int]) -> dict[str, subprocess.Popen[str]]:
    """Start one allocating process per name, and release them together once all are ready."""
    children = {
        name: subprocess.Popen(
            [sys.executable, "-c", ALLOCATOR, url, name, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, count in counts.items()
    }
    for child in children.values():
        assert child.stdout is not None
        ready = child.stdout.readline()
        assert ready == "ready\n", child.communicate(timeout=WAIT)[1]
    for child in children.values():
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    return children


def acked_ids(output: str) -> list[int]:
    return [int(line) for line in output.split() if line.isdigit()]


@pytest.mark.slow
def test_processes_allocating_ids_never_hand_one_out_twice(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()  # the tables exist before the children race
    children = start_allocators(postgres_url, {f"p{n}": 100 for n in range(4)})
    results = {name: child.communicate(timeout=120) for name, child in children.items()}

    assert all(child.returncode == 0 for child in children.values()), [err for _, err in results.values()]
    handed_out = {name: acked_ids(out) for name, (out, _) in results.items()}
    every = [task_id for ids in handed_out.values() for task_id in ids]
    assert sorted(every) == list(range(1, 401))
    store = PostgresStore(postgres_url)
    tasks = store.load("board").rows["tasks"]
    assert tasks == {str(i): {"id": i, "by": name} for name, ids in handed_out.items() for i in ids}
    assert store.version("board") == 400
    store.close()


@pytest.mark.slow
def test_sigkill_of_a_writer_loses_nothing_it_acknowledged(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()
    children = start_allocators(postgres_url, {"victim": 1_000_000, "p1": 150, "p2": 150})
    victim = children["victim"]
    assert victim.stdout is not None
    victim_acked: list[int] = []
    for line in victim.stdout:
        victim_acked += acked_ids(line)
        if len(victim_acked) == 50:
            victim.send_signal(signal.SIGKILL)
            break
    # Acks already in the pipe were printed after their commit: they count too.
    victim_acked += acked_ids(victim.stdout.read())
    victim.wait(timeout=WAIT)
    for pipe in (victim.stdin, victim.stdout, victim.stderr):
        if pipe is not None:
            with contextlib.suppress(BrokenPipeError):
                pipe.close()
    # The others go on: the server rolls back the killed writer's open transaction.
    others = {name: children[name].communicate(timeout=120) for name in ("p1", "p2")}

    assert victim.returncode == -signal.SIGKILL
    assert all(children[name].returncode == 0 for name in others), [err for _, err in others.values()]
    acked = {"victim": victim_acked, **{name: acked_ids(out) for name, (out, _) in others.items()}}
    store = PostgresStore(postgres_url)
    tasks = store.load("board").rows["tasks"]
    store.close()
    for name, ids in acked.items():
        assert all(tasks[str(i)] == {"id": i, "by": name} for i in ids), name
    # Ids are dense and each was handed out once: only the victim's write in flight when
    # it died may be committed without its ack having been read.
    assert sorted(int(key) for key in tasks) == list(range(1, len(tasks) + 1))
    unacked = {int(key) for key in tasks} - {i for ids in acked.values() for i in ids}
    assert len(unacked) <= 1
    assert all(tasks[str(i)]["by"] == "victim" for i in unacked)
