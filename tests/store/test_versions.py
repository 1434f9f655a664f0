"""The shared-truth half of the Store contract: versions, deltas, locked writes, compaction.

Every test runs against each store implementation (the ``store`` fixture), so a cache kept
by an actor behaves the same on every backend.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolcards.errors import StoreError
from toolcards.store import Change, Delta, Snapshot, Store
from toolcards.store._base import TOMBSTONE_RETENTION


def rows_of(delta: Delta) -> dict[tuple[str, str], Any]:
    return {(c.collection, c.key): c.value for c in delta.changes}


def test_a_new_namespace_is_at_version_zero(store: Store) -> None:
    snapshot = store.load("fresh")
    assert (snapshot.version, snapshot.rows) == (0, {})
    assert store.version("fresh") == 0
    delta = store.read("fresh", since=0)
    assert isinstance(delta, Delta) and delta.empty


def test_each_committed_write_is_one_version(store: Store) -> None:
    assert store.put("ns", "tasks", {"1": "a", "2": "b"}) == 1
    assert store.put("ns", "tasks", {"3": "c"}) == 2
    assert store.version("ns") == 2
    assert store.load("ns").version == 2
    # Other namespaces keep their own count.
    assert store.put("other", "tasks", {"1": "x"}) == 1


def test_an_empty_write_commits_nothing(store: Store) -> None:
    store.put("ns", "t", {"a": 1})
    with store.write("ns", since=1) as txn:
        pass
    assert txn.committed is None
    assert store.version("ns") == 1
    assert store.apply("ns", []) == 1


def test_read_returns_only_rows_written_after_since(store: Store) -> None:
    store.put("ns", "tasks", {"1": "one", "2": "two"})
    store.put("ns", "tasks", {"2": "TWO", "3": "three"})
    store.put("ns", "meta", {"board": {"seq": 3}})

    delta = store.read("ns", since=1)

    assert isinstance(delta, Delta)
    assert (delta.since, delta.version) == (1, 3)
    assert rows_of(delta) == {("tasks", "2"): "TWO", ("tasks", "3"): "three", ("meta", "board"): {"seq": 3}}
    # Ordered by the version that wrote them.
    assert [c.collection for c in delta.changes] == ["tasks", "tasks", "meta"]


def test_a_delta_carries_deletes_as_none(store: Store) -> None:
    store.put("ns", "tasks", {"1": "one", "2": "two"})
    store.put("ns", "tasks", {"1": None})

    delta = store.read("ns", since=1)

    assert isinstance(delta, Delta)
    assert rows_of(delta) == {("tasks", "1"): None}
    assert store.load("ns").rows == {"tasks": {"2": "two"}}


def test_a_read_at_the_current_version_is_empty(store: Store) -> None:
    version = store.put("ns", "t", {"a": 1})
    delta = store.read("ns", since=version)
    assert isinstance(delta, Delta) and delta.empty and delta.changes == ()


def test_applying_a_delta_to_an_old_snapshot_gives_the_new_state(store: Store) -> None:
    store.put("ns", "t", {str(i): i for i in range(10)})
    old = store.load("ns")
    store.put("ns", "t", {"3": None, "4": 40, "11": 11})
    store.put("ns", "u", {"x": [1, 2]})
    store.put("ns", "t", {"11": None})

    delta = store.read("ns", since=old.version)

    state = {c: dict(rows) for c, rows in old.rows.items()}
    assert isinstance(delta, Delta)
    for change in delta.changes:
        if change.value is None:
            state.get(change.collection, {}).pop(change.key, None)
        else:
            state.setdefault(change.collection, {})[change.key] = change.value
    assert {c: rows for c, rows in state.items() if rows} == store.load("ns").rows


def test_write_hands_the_writer_what_others_committed(store: Store) -> None:
    store.put("ns", "tasks", {"1": "one"})
    store.put("ns", "tasks", {"2": "two"})

    with store.write("ns", since=1) as txn:
        assert txn.version == 2
        assert isinstance(txn.catch_up, Delta)
        assert rows_of(txn.catch_up) == {("tasks", "2"): "two"}
        assert txn.stage([Change(collection="tasks", key="3", value="three")]) == 3

    assert txn.committed == 3
    assert store.load("ns").rows == {"tasks": {"1": "one", "2": "two", "3": "three"}}


def test_write_without_since_does_not_catch_up(store: Store) -> None:
    store.put("ns", "t", {"a": 1})
    with store.write("ns", since=None) as txn:
        assert txn.catch_up is None
        txn.stage([Change(collection="t", key="b", value=2)])
    assert txn.committed == 2


def test_an_exception_in_the_block_writes_nothing_and_propagates(store: Store) -> None:
    store.put("ns", "t", {"a": 1})

    class Refused(Exception):
        pass

    with pytest.raises(Refused), store.write("ns", since=1) as txn:
        txn.stage([Change(collection="t", key="a", value=99), Change(collection="t", key="b", value=2)])
        raise Refused

    assert txn.committed is None
    assert store.load("ns").rows == {"t": {"a": 1}}
    assert store.version("ns") == 1


def test_staging_a_non_json_value_raises_at_once(store: Store) -> None:
    with pytest.raises(StoreError, match="not JSON"), store.write("ns", since=0) as txn:
        txn.stage([Change(collection="t", key="ok", value=1)])
        txn.stage([Change(collection="t", key="bad", value=object())])
    assert store.load("ns").rows == {}


def test_staging_after_the_block_is_refused(store: Store) -> None:
    with store.write("ns", since=0) as txn:
        txn.stage([Change(collection="t", key="a", value=1)])
    with pytest.raises(StoreError, match="over"):
        txn.stage([Change(collection="t", key="b", value=2)])
    assert store.load("ns").rows == {"t": {"a": 1}}


def test_the_last_staged_change_of_a_key_wins(store: Store) -> None:
    with store.write("ns", since=0) as txn:
        txn.stage([Change(collection="t", key="a", value=1)])
        txn.stage([Change(collection="t", key="a", value=2), Change(collection="t", key="b", value=3)])
        txn.stage([Change(collection="t", key="b", value=None)])
    assert store.load("ns").rows == {"t": {"a": 2}}


def test_a_reader_behind_the_compaction_gets_a_snapshot(store: Store) -> None:
    store.put("ns", "t", {"keep": 1, "gone": 2})
    store.put("ns", "t", {"gone": None})
    for i in range(2 * TOMBSTONE_RETENTION):
        store.put("ns", "n", {"counter": i})

    stale = store.read("ns", since=1)
    recent = store.read("ns", since=store.version("ns") - 3)

    assert isinstance(stale, Snapshot)
    assert stale.rows == {"t": {"keep": 1}, "n": {"counter": 2 * TOMBSTONE_RETENTION - 1}}
    assert stale.version == 2 * TOMBSTONE_RETENTION + 2
    assert isinstance(recent, Delta)
    assert rows_of(recent) == {("n", "counter"): 2 * TOMBSTONE_RETENTION - 1}


def test_drop_moves_the_version_on_and_hands_caches_an_empty_snapshot(store: Store) -> None:
    store.put("ns", "t", {"a": 1})
    store.put("ns", "t", {"b": 2})

    store.drop("ns")

    assert store.version("ns") == 3
    catch_up = store.read("ns", since=2)
    assert isinstance(catch_up, Snapshot) and catch_up.rows == {}
    assert store.put("ns", "t", {"c": 3}) == 4
    assert store.load("ns").rows == {"t": {"c": 3}}


def test_a_cache_ahead_of_the_store_gets_a_snapshot(store: Store) -> None:
    store.put("ns", "t", {"a": 1})
    catch_up = store.read("ns", since=7)
    assert isinstance(catch_up, Snapshot)
    assert (catch_up.version, catch_up.rows) == (1, {"t": {"a": 1}})


def test_concurrent_writers_allocating_ids_never_hand_one_out_twice(store: Store) -> None:
    """The write pattern every actor uses: catch up, allocate from fresh state, commit."""

    def writer(results: list[int]) -> None:
        version = 0
        next_id = 1
        for _ in range(50):
            with store.write("board", since=version) as txn:
                catch_up = txn.catch_up
                assert catch_up is not None
                changes = catch_up.changes if isinstance(catch_up, Delta) else ()
                for change in changes:
                    if change.collection == "meta":
                        next_id = change.value["next_id"]
                task_id = next_id
                next_id += 1
                txn.stage(
                    [
                        Change(collection="tasks", key=str(task_id), value={"id": task_id}),
                        Change(collection="meta", key="board", value={"next_id": next_id}),
                    ]
                )
            assert txn.committed is not None
            version = txn.committed
            results.append(task_id)

    per_thread: list[list[int]] = [[] for _ in range(4)]
    threads = [threading.Thread(target=writer, args=(out,)) for out in per_thread]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    handed_out = [task_id for out in per_thread for task_id in out]
    assert sorted(handed_out) == list(range(1, 201))
    assert set(store.load("board").rows["tasks"]) == {str(i) for i in range(1, 201)}
    assert store.version("board") == 200
