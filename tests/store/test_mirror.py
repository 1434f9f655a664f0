"""NamespaceMirror: a small namespace in memory, current after each read and each committed write."""

from __future__ import annotations

import pytest

from toolcards.store import Change, MemoryStore, NamespaceMirror, Store


def put(key: str, value: object) -> Change:
    return Change(collection="rows", key=key, value=value)


def test_a_mirror_starts_from_what_is_stored(store: Store) -> None:
    store.apply("t/#x", [put("a", {"v": 1})])
    mirror = NamespaceMirror(store, "t/#x")
    assert mirror.rows == {"rows": {"a": {"v": 1}}} and mirror.version == 1
    assert mirror.refresh() is False


def test_another_writer_is_seen_at_the_next_refresh(store: Store) -> None:
    mirror = NamespaceMirror(store, "t/#x")
    other = NamespaceMirror(store, "t/#x")
    with other.write() as write:
        write.stage([put("a", {"v": 1}), put("b", {"v": 2})])
    assert other.rows["rows"] == {"a": {"v": 1}, "b": {"v": 2}} and other.version == 1
    assert mirror.refresh() is True
    assert mirror.rows["rows"] == {"a": {"v": 1}, "b": {"v": 2}}
    with other.write() as write:
        write.stage([put("a", None)])
    mirror.refresh()
    assert mirror.rows["rows"] == {"b": {"v": 2}} and mirror.version == 2


def test_a_write_sees_what_others_committed_first(store: Store) -> None:
    mirror = NamespaceMirror(store, "t/#x")
    store.apply("t/#x", [put("a", {"v": 1})])
    with mirror.write() as write:
        assert mirror.rows["rows"] == {"a": {"v": 1}}  # caught up under the lock
        write.stage([put("b", {"v": 2})])
    assert mirror.rows["rows"] == {"a": {"v": 1}, "b": {"v": 2}} and mirror.version == 2


def test_a_failed_write_changes_nothing(store: Store) -> None:
    mirror = NamespaceMirror(store, "t/#x")
    with pytest.raises(RuntimeError), mirror.write() as write:
        write.stage([put("a", {"v": 1})])
        raise RuntimeError("refused")
    assert mirror.rows.get("rows", {}) == {} and store.load("t/#x").rows == {}


def test_nothing_staged_writes_nothing(store: Store) -> None:
    mirror = NamespaceMirror(store, "t/#x")
    with mirror.write():
        pass
    assert mirror.version == 0 and store.load("t/#x").version == 0


def test_a_mirror_too_far_behind_reloads_the_whole_namespace() -> None:
    store = MemoryStore(tombstone_retention=2)
    mirror = NamespaceMirror(store, "t/#x")
    for index in range(5):
        store.apply("t/#x", [put(f"k{index}", {"v": index}), put(f"k{index - 1}", None)])
    assert mirror.refresh() is True
    assert mirror.rows == {"rows": {"k4": {"v": 4}}}
