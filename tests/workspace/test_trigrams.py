"""Trigram posting lists: what is indexed, lookups, and damaged tables refused."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.workspace._trigrams import (
    Postings,
    PostingsBuilder,
    codes_of_texts,
    index_bytes,
    set_bits,
    trigram_set,
)


def _code(text: bytes) -> int:
    return (text[0] << 16) | (text[1] << 8) | text[2]


def test_windows_across_line_breaks_are_not_indexed() -> None:
    codes = trigram_set(index_bytes("AbC\r\nde"))
    assert codes == {_code(b"abc")}
    assert trigram_set(b"ab") == set()


@settings(deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=6))
def test_numpy_and_python_give_the_same_codes(texts: list[bytes]) -> None:
    assert codes_of_texts(texts) == [trigram_set(text) for text in texts]


def test_without_numpy_the_python_walk_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    assert codes_of_texts([b"abcd", b"x"]) == [{_code(b"abc"), _code(b"bcd")}, set()]


def test_sparse_and_dense_lists_round_trip() -> None:
    builder = PostingsBuilder()
    for number in range(100):
        builder.add(number, {_code(b"all")} | ({_code(b"one")} if number == 7 else set()))
    postings = builder.build()
    assert postings.files == 100 and len(postings) == 2
    assert set_bits(postings.bits(_code(b"all"))) == list(range(100))
    assert set_bits(postings.bits(_code(b"one"))) == [7]
    assert postings.bits(_code(b"zzz")) == 0 and postings.weight(_code(b"zzz")) == 0
    assert postings.weight(_code(b"one")) < postings.weight(_code(b"all")) or postings.weight(_code(b"one")) == 4
    again = Postings.decode(postings.files, postings.encode())
    assert dict(again.all_bits()) == dict(postings.all_bits())
    assert postings.size > 0 and list(postings.codes()) == sorted([_code(b"all"), _code(b"one")])
    rebuilt = PostingsBuilder()
    for code, bits in postings.all_bits():
        rebuilt.add_bits(code, bits)
    assert dict(rebuilt.build(100).all_bits()) == dict(postings.all_bits())
    assert Postings.empty().bits(1) == 0 and set_bits(0) == []


def test_damaged_tables_are_refused() -> None:
    builder = PostingsBuilder()
    builder.add(0, {5, 9})
    builder.add(1, {9})
    codes, kinds, offsets, blob = builder.build().encode()
    with pytest.raises(ValueError, match="different lengths"):
        Postings.decode(2, (codes, kinds + b"\x00", offsets, blob))
    with pytest.raises(ValueError, match="out of order"):
        Postings.decode(2, (codes[4:] + codes[:4], kinds, offsets, blob))
    sparse = PostingsBuilder()
    sparse.add(0, {5})
    sparse.add(63, {5})
    with pytest.raises(ValueError, match="past the file table"):
        Postings.decode(10, sparse.build().encode())
    with pytest.raises(ValueError, match="out of shape"):
        Postings.decode(2, (codes, bytes([2, 0]), offsets, blob))
    with pytest.raises(ValueError, match="out of range"):
        Postings.decode(
            2, ((1 << 25).to_bytes(4, sys.byteorder) + (1 << 26).to_bytes(4, sys.byteorder), kinds, offsets, blob)
        )
