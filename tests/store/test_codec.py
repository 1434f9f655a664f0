"""Encoding change sets as JSON text, and decoding stored text."""

from __future__ import annotations

import json

import pytest

from toolcards.errors import StoreError
from toolcards.store import Change, JSONText, Store
from toolcards.store._codec import decode_value, encode_changes


def test_values_become_compact_utf8_json() -> None:
    encoded = encode_changes("ns", [Change(collection="t", key="k", value={"a": [1, "é"], "b": None})])

    assert encoded == {("t", "k"): '{"a":[1,"é"],"b":null}'}


def test_none_marks_a_delete() -> None:
    assert encode_changes("ns", [Change(collection="t", key="k", value=None)]) == {("t", "k"): None}


def test_decoded_value_equals_a_json_round_trip() -> None:
    value = {"t": (1, 2), 1: True, "f": 0.30000000000000004}
    (text,) = encode_changes("ns", [Change(collection="t", key="k", value=value)]).values()

    assert text is not None
    assert decode_value("ns", "t", "k", text) == json.loads(json.dumps(value))


def test_error_names_namespace_collection_and_key_and_says_what_to_do() -> None:
    with pytest.raises(StoreError) as raised:
        encode_changes("team/#Planning", [Change(collection="tasks", key="42", value={"when": object()})])

    message = str(raised.value)
    assert "tasks/42" in message
    assert "'team/#Planning'" in message
    assert "model_dump(mode='json')" in message
    assert isinstance(raised.value.__cause__, TypeError)


def test_json_written_by_other_tools_with_whitespace_decodes() -> None:
    assert decode_value("ns", "t", "k", ' {"a": [1, 2]}\n') == {"a": [1, 2]}


@pytest.mark.parametrize("text", ["{not json", '{"a":1}x', "", "NaN-ish"])
def test_text_that_is_not_json_raises_store_error_naming_the_row(text: str) -> None:
    with pytest.raises(StoreError, match=r"tasks/7 of namespace 'ns'"):
        decode_value("ns", "tasks", "7", text)


def test_json_text_is_stored_as_it_is_and_reads_back_as_its_value() -> None:
    text = '{"a":[1,"é"],"b":null}'
    encoded = encode_changes("ns", [Change(collection="t", key="k", value=JSONText(text))])

    assert encoded == {("t", "k"): text}
    assert decode_value("ns", "t", "k", text) == {"a": [1, "é"], "b": None}


def test_json_text_that_utf8_cannot_hold_is_refused_naming_the_row() -> None:
    with pytest.raises(StoreError, match=r"tasks/42 in namespace 'ns'.*Nothing of this change set was written"):
        encode_changes("ns", [Change(collection="tasks", key="42", value=JSONText('"\ud800"'))])


def test_a_json_text_write_reads_back_like_the_value_it_encodes(store: Store) -> None:
    value = {"id": 1, "tags": ["x", "ÿ"], "when": "2026-01-01T00:00:00Z"}
    store.apply("ns", [Change(collection="t", key="k", value=JSONText(json.dumps(value, separators=(",", ":"))))])

    assert store.load("ns").rows == {"t": {"k": value}}
