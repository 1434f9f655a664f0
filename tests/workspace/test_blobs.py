"""Versions in the store: compressed, deltas where they pay, split into rows, read in one query."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

from toolcards.errors import StoreError
from toolcards.store import Change, MemoryStore, Store
from toolcards.workspace._blobs import BLOBS, MAX_DEPTH, PART_CHARS, BlobInfo, BlobStore

NAMESPACE = "#workspace/t/blobs"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CountingStore(MemoryStore):
    """A memory store that counts point reads."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get(self, namespace: str, collection: str, keys: Any) -> dict[str, Any]:
        self.gets += 1
        return super().get(namespace, collection, keys)


def put(blobs: BlobStore, data: bytes, base: tuple[str, bytes, BlobInfo] | None = None) -> BlobInfo:
    encoded = blobs.encode(digest(data), data, base)
    blobs.write([encoded])
    return encoded.info


def fresh(store: Store) -> BlobStore:
    """A blob store with an empty cache: reads go to the store."""
    return BlobStore(store, NAMESPACE)


def test_a_version_reads_back_exactly() -> None:
    store = MemoryStore()
    samples = [b"", b"x", b"hello\n" * 1000, os.urandom(5000), bytes(range(256)) * 3]
    catalog = {digest(data): put(BlobStore(store, NAMESPACE), data) for data in samples}

    assert fresh(store).read(catalog, catalog) == {digest(data): data for data in samples}


def test_an_edit_of_one_place_is_stored_as_a_small_delta() -> None:
    store = MemoryStore()
    blobs = BlobStore(store, NAMESPACE)
    text = b"".join(b"def function_%d(value):\n    return value * %d\n" % (n, n) for n in range(2000))
    edited = text.replace(b"function_1000(", b"renamed_1000(")
    base_info = put(blobs, text)
    info = put(blobs, edited, (digest(text), text, base_info))

    assert base_info.base is None and info.base == digest(text) and info.depth == 1
    assert info.size < 200 < base_info.size
    assert info.parts == 0 and info.inline is not None  # small enough to ride in the index
    assert sorted(store.load(NAMESPACE).rows[BLOBS]) == [digest(text)]
    catalog = {digest(text): base_info, digest(edited): info}
    assert fresh(store).read([digest(edited)], catalog) == {digest(edited): edited}


def test_a_delta_is_kept_only_when_it_pays() -> None:
    store = MemoryStore()
    blobs = BlobStore(store, NAMESPACE)
    first, second = os.urandom(4000), os.urandom(4000)
    info = put(blobs, second, (digest(first), first, put(blobs, first)))

    assert info.base is None


def test_a_chain_is_read_in_one_query_and_never_longer_than_max_depth() -> None:
    store = CountingStore()
    blobs = BlobStore(store, NAMESPACE)
    lines = [os.urandom(30).hex().encode() + b"\n" for _ in range(300)]
    versions = []
    for n in range(MAX_DEPTH + 5):
        lines[n] = b"version %d\n" % n
        versions.append(b"".join(lines))
    catalog: dict[str, BlobInfo] = {}
    base: tuple[str, bytes, BlobInfo] | None = None
    for data in versions:
        info = put(blobs, data, base)
        catalog[digest(data)] = info
        base = (digest(data), data, info)

    depths = [catalog[digest(data)].depth for data in versions]
    assert max(depths) == MAX_DEPTH and depths[MAX_DEPTH + 1] == 0
    reader = fresh(store)
    assert reader.read([digest(versions[MAX_DEPTH])], catalog) == {digest(versions[MAX_DEPTH]): versions[MAX_DEPTH]}
    assert store.gets == 1
    assert reader.read([digest(versions[MAX_DEPTH])], catalog)  # now from the cache
    assert store.gets == 1


def test_a_large_version_is_split_into_rows() -> None:
    store = MemoryStore()
    data = os.urandom(PART_CHARS)  # base64 makes it a third larger: two rows
    info = put(BlobStore(store, NAMESPACE), data)

    assert info.parts == 2
    rows = store.load(NAMESPACE).rows[BLOBS]
    assert sorted(rows) == [digest(data), f"{digest(data)}/1"]
    assert all(len(value) <= PART_CHARS for value in rows.values())
    assert fresh(store).read([digest(data)], {digest(data): info}) == {digest(data): data}


def test_a_missing_or_damaged_row_is_a_store_error_naming_the_version() -> None:
    store = MemoryStore()
    data = os.urandom(1000)
    info = put(BlobStore(store, NAMESPACE), data)
    store.apply(NAMESPACE, [Change(collection=BLOBS, key=digest(data), value="!!not base64!!")])

    with pytest.raises(StoreError, match=f"Version {digest(data)[:12]} .* cannot be read"):
        fresh(store).read([digest(data)], {digest(data): info})
    store.apply(NAMESPACE, [Change(collection=BLOBS, key=digest(data), value=None)])
    with pytest.raises(StoreError, match="missing or damaged"):
        fresh(store).read([digest(data)], {digest(data): info})


def test_what_the_catalog_does_not_know_is_left_out() -> None:
    assert fresh(MemoryStore()).read(["0" * 64], {}) == {}


def test_deleted_versions_are_gone() -> None:
    store = MemoryStore()
    blobs = BlobStore(store, NAMESPACE)
    data = os.urandom(PART_CHARS)
    info = put(blobs, data)
    blobs.delete({digest(data): info})

    assert store.load(NAMESPACE).rows == {}
    with pytest.raises(StoreError):
        fresh(store).read([digest(data)], {digest(data): info})
