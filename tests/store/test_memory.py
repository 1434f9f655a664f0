"""What MemoryStore adds to the contract checked in test_base: nothing survives, nothing is shared."""

from __future__ import annotations

from toolcards.store import Change, MemoryStore


def test_instances_do_not_share_state() -> None:
    first, second = MemoryStore(), MemoryStore()
    first.put("ns", "t", {"k": 1})

    assert second.load("ns").rows == {}


def test_closed_reports_close() -> None:
    store = MemoryStore()
    assert not store.closed
    assert repr(store) == "MemoryStore()"

    store.close()

    assert store.closed


def test_loaded_values_are_independent_between_loads() -> None:
    store = MemoryStore()
    store.apply("ns", [Change(collection="t", key="k", value={"list": [1]})])

    first = store.load("ns").rows
    first["t"]["k"]["list"].clear()

    assert store.load("ns").rows["t"]["k"] == {"list": [1]}
