"""The store contract, checked against every implementation (the ``store`` fixture)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolcards.errors import StoreError, ToolFailed
from toolcards.store import Change, Store


def put(store: Store, namespace: str, collection: str, key: str, value: Any) -> None:
    store.apply(namespace, [Change(collection=collection, key=key, value=value)])


def test_load_of_unknown_namespace_is_empty(store: Store) -> None:
    assert store.load("nobody").rows == {}


def test_values_round_trip(store: Store) -> None:
    value = {
        "title": "Écrire le rapport ✓ 日本",
        "n": 3,
        "ratio": 0.1,
        "big": 2**70,
        "done": False,
        "owner": None,
        "tags": ["a", "b"],
        "nested": {"deep": [{"x": 1.5e-300}]},
    }
    put(store, "team/#Planning", "tasks", "1", value)
    put(store, "team/#Planning", "meta", "seq", 7)
    put(store, "team/#Planning", "meta", "empty", "")

    assert store.load("team/#Planning").rows == {"tasks": {"1": value}, "meta": {"seq": 7, "empty": ""}}


def test_loaded_collections_and_keys_are_sorted(store: Store) -> None:
    store.apply("ns", [Change(collection=c, key=k, value=1) for c in "zab" for k in "31é2"])

    state = store.load("ns").rows

    assert list(state) == ["a", "b", "z"]
    assert list(state["a"]) == ["1", "2", "3", "é"]


def test_namespaces_and_collections_are_isolated(store: Store) -> None:
    put(store, "team-1/#Planning", "tasks", "1", "one")
    put(store, "team-2/#Planning", "tasks", "1", "other team")
    put(store, "team-1/#Planning", "notes", "1", "a note with the same key")

    assert store.load("team-1/#Planning").rows == {"tasks": {"1": "one"}, "notes": {"1": "a note with the same key"}}
    assert store.load("team-2/#Planning").rows == {"tasks": {"1": "other team"}}
    assert store.load("team-1").rows == {}


def test_get_reads_rows_by_key_without_the_namespace(store: Store) -> None:
    store.put("ns", "blobs", {"a": {"x": 1}, "b": "two", "c": [3]})
    store.put("ns", "other", {"a": "not this collection"})
    store.put("ns", "blobs", {"c": None})

    assert store.get("ns", "blobs", ["a", "b", "c", "missing", "a"]) == {"a": {"x": 1}, "b": "two"}
    assert store.get("ns", "blobs", []) == {}
    assert store.get("elsewhere", "blobs", ["a"]) == {}
    found = store.get("ns", "blobs", ["a"])
    found["a"]["x"] = 2
    assert store.get("ns", "blobs", ["a"]) == {"a": {"x": 1}}


def test_get_reads_many_keys(store: Store) -> None:
    store.put("ns", "blobs", {str(n): n for n in range(1_200)})

    assert store.get("ns", "blobs", [str(n) for n in range(0, 1_200, 2)]) == {str(n): n for n in range(0, 1_200, 2)}


def test_update_replaces_the_value(store: Store) -> None:
    put(store, "ns", "tasks", "1", {"status": "open", "title": "x"})
    put(store, "ns", "tasks", "1", {"status": "done"})

    assert store.load("ns").rows == {"tasks": {"1": {"status": "done"}}}


def test_none_deletes_the_row(store: Store) -> None:
    store.put("ns", "tasks", {"1": "a", "2": "b"})
    store.put("ns", "tasks", {"1": None, "missing": None})

    assert store.load("ns").rows == {"tasks": {"2": "b"}}


def test_deleting_the_last_row_removes_the_collection(store: Store) -> None:
    store.put("ns", "tasks", {"1": "a"})
    store.put("ns", "meta", {"seq": 1})
    store.put("ns", "tasks", {"1": None})

    assert store.load("ns").rows == {"meta": {"seq": 1}}


def test_nested_none_is_a_value_not_a_delete(store: Store) -> None:
    store.put("ns", "tasks", {"1": [None], "2": {"owner": None}})

    assert store.load("ns").rows == {"tasks": {"1": [None], "2": {"owner": None}}}


def test_last_change_of_a_key_wins(store: Store) -> None:
    store.apply(
        "ns",
        [
            Change(collection="t", key="1", value="first"),
            Change(collection="t", key="2", value="kept"),
            Change(collection="t", key="1", value="second"),
            Change(collection="t", key="2", value=None),
            Change(collection="t", key="2", value="revived"),
            Change(collection="t", key="3", value="gone"),
            Change(collection="t", key="3", value=None),
        ],
    )

    assert store.load("ns").rows == {"t": {"1": "second", "2": "revived"}}


def test_empty_change_set_writes_nothing(store: Store) -> None:
    store.apply("ns", [])
    store.put("ns", "tasks", {})

    assert store.load("ns").rows == {}


def test_apply_accepts_a_generator(store: Store) -> None:
    store.apply("ns", (Change(collection="t", key=str(i), value=i) for i in range(3)))

    assert store.load("ns").rows == {"t": {"0": 0, "1": 1, "2": 2}}


def test_drop_deletes_only_that_namespace(store: Store) -> None:
    store.put("a", "tasks", {"1": 1})
    store.put("a", "meta", {"seq": 1})
    store.put("b", "tasks", {"1": 1})

    store.drop("a")
    store.drop("never-written")

    assert store.load("a").rows == {}
    assert store.load("b").rows == {"tasks": {"1": 1}}


@pytest.mark.parametrize("bad", [object(), {1, 2}, b"bytes", float("nan"), float("inf"), "\ud800"])
def test_change_set_with_a_non_json_value_writes_nothing(store: Store, bad: Any) -> None:
    store.put("ns", "tasks", {"1": "before"})

    with pytest.raises(StoreError) as raised:
        store.apply(
            "ns",
            [
                Change(collection="tasks", key="1", value="after"),
                Change(collection="tasks", key="2", value="new"),
                Change(collection="tasks", key="bad-key", value={"field": bad}),
            ],
        )

    assert "tasks/bad-key" in str(raised.value)
    assert "'ns'" in str(raised.value)
    assert store.load("ns").rows == {"tasks": {"1": "before"}}


def test_store_error_is_a_terminal_tool_failure(store: Store) -> None:
    with pytest.raises(ToolFailed):
        store.put("ns", "t", {"k": object()})


def test_circular_value_is_refused(store: Store) -> None:
    loop: list[Any] = []
    loop.append(loop)

    with pytest.raises(StoreError, match="t/k"):
        store.put("ns", "t", {"k": loop})


def test_caller_mutations_do_not_reach_stored_state(store: Store) -> None:
    value = {"items": [1, 2]}
    store.put("ns", "t", {"k": value})
    value["items"].append(3)

    loaded = store.load("ns").rows
    loaded["t"]["k"]["items"].append(4)
    loaded["t"]["other"] = "x"

    assert store.load("ns").rows == {"t": {"k": {"items": [1, 2]}}}


def test_values_are_normalised_as_json(store: Store) -> None:
    store.put("ns", "t", {"k": {"pair": (1, 2), 3: "int key"}})

    assert store.load("ns").rows == {"t": {"k": {"pair": [1, 2], "3": "int key"}}}


def test_close_is_idempotent_and_use_after_close_raises(store: Store) -> None:
    store.put("ns", "t", {"k": 1})
    store.close()
    store.close()

    with pytest.raises(StoreError, match="closed"):
        store.load("ns")
    with pytest.raises(StoreError, match="closed"):
        store.put("ns", "t", {"k": 2})
    with pytest.raises(StoreError, match="closed"):
        store.apply("ns", [])
    with pytest.raises(StoreError, match="closed"):
        store.drop("ns")


def test_concurrent_appliers_lose_nothing(store: Store) -> None:
    threads, rounds = 12, 40
    failures: list[BaseException] = []
    start = threading.Barrier(threads)

    def actor(n: int) -> None:
        try:
            start.wait()
            for i in range(rounds):
                store.apply(
                    "shared",
                    [
                        Change(collection="rows", key=f"{n}-{i}", value={"n": n, "i": i}),
                        Change(collection="counts", key=str(n), value=i + 1),
                    ],
                )
                store.put(f"own-{n}", "rows", {str(i): i})
                if i % 10 == 0:
                    assert len(store.load(f"own-{n}").rows["rows"]) == i + 1
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            failures.append(exc)

    workers = [threading.Thread(target=actor, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert failures == []
    shared = store.load("shared").rows
    assert len(shared["rows"]) == threads * rounds
    assert shared["counts"] == {str(n): rounds for n in range(threads)}
    for n in range(threads):
        assert store.load(f"own-{n}").rows == {"rows": {str(i): i for i in range(rounds)}}


def test_namespaces_lists_each_with_its_version_and_live_rows(store: Store) -> None:
    from toolcards.store import NamespaceSummary

    assert store.namespaces() == ()
    put(store, "acme/#PlanningTool", "tasks", "1", {"d": "one"})
    put(store, "acme/#PlanningTool", "tasks", "2", {"d": "two"})
    put(store, "acme/#PlanningTool", "meta", "seq", 2)
    store.apply("acme/#PlanningTool", [Change(collection="tasks", key="1", value=None)])  # a tombstone: not counted
    put(store, "beta/#events", "events", "1", {"e": 1})
    store.drop("gone/#Graph")  # a namespace with a version and nothing in it

    assert store.namespaces() == (
        NamespaceSummary(namespace="acme/#PlanningTool", version=4, rows={"meta": 1, "tasks": 1}),
        NamespaceSummary(namespace="beta/#events", version=1, rows={"events": 1}),
        NamespaceSummary(namespace="gone/#Graph", version=1, rows={}),
    )
