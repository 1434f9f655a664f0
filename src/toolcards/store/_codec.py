"""How values become the JSON text a store keeps, and back.

Every store keeps a value as compact JSON text (``separators=(",", ":")``,
``ensure_ascii=False``), so a value read back is exactly ``json.loads(json.dumps(value))``
whichever store holds it: tuples come back as lists, and the non-string keys JSON allows
(``int``, ``float``, ``bool``, ``None``) come back as strings. NaN and infinities are not JSON
and are refused, as are objects ``json`` cannot encode.

A writer that already holds a value as JSON text (a pydantic model's ``model_dump_json()``,
which is compact and several times cheaper than ``model_dump`` followed by ``json``) stages
it as :class:`JSONText`, and the text is stored as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from toolcards.errors import StoreError
from toolcards.store._base import Change, JSONValue

__all__ = ["EncodedChanges", "JSONText", "decode_value", "encode_changes", "stored_text"]

EncodedChanges = dict[tuple[str, str], str | None]
"""A change set ready to write: ``(collection, key)`` → JSON text, or ``None`` to delete."""


@dataclass(frozen=True, slots=True)
class JSONText:
    """A value given as its JSON text, to stage as :attr:`Change.value` without encoding it again.

    The text must be one compact JSON value, such as ``model.model_dump_json()`` returns:
    it is stored as it is, and readers get ``json.loads(text)``. Only whether the text can be
    stored as UTF-8 is checked, so make it with a JSON encoder, never by hand.
    """

    text: str


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_DECODER = json.JSONDecoder()


def encode_changes(namespace: str, changes: Iterable[Change]) -> EncodedChanges:
    """Encode a whole change set before anything is written.

    When a change set names one key twice, the last change wins, as if the changes had
    been applied in order.

    Returns:
        ``(collection, key)`` → JSON text, or ``None`` for a delete.

    Raises:
        StoreError: a value is not JSON; the message names its namespace, collection and key.
    """
    encoded: EncodedChanges = {}
    for change in changes:
        value = change.value
        if value is None:
            encoded[(change.collection, change.key)] = None
        elif type(value) is JSONText:
            encoded[(change.collection, change.key)] = _checked_text(namespace, change.collection, change.key, value)
        else:
            encoded[(change.collection, change.key)] = _encode_value(namespace, change.collection, change.key, value)
    return encoded


def decode_value(namespace: str, collection: str, key: str, text: str) -> JSONValue:
    """Return the value stored as ``text``, a fresh object on every call.

    Raises:
        StoreError: the stored text is not JSON (the row was written by something else).
    """
    # Text this module wrote has no surrounding whitespace, so the bare parser suffices (it
    # is a third cheaper than json.loads, which matters when an actor loads thousands of
    # rows); anything else goes through json.loads for its full checks and error message.
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError:
        pass
    else:
        if end == len(text):
            return value
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoreError(
            f"Row {collection}/{key} of namespace {namespace!r} holds text that is not JSON ({exc}). "
            "Something other than toolcards wrote it: delete the row or restore the database from a backup "
            "(for a SQLite store, one made by `toolcards backup`)."
        ) from exc


def _checked_text(namespace: str, collection: str, key: str, value: JSONText) -> str:
    text = value.text
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(
                f"Cannot store {collection}/{key} in namespace {namespace!r}: its JSON text is not valid UTF-8 "
                f"({exc}). Nothing of this change set was written. Remove lone surrogates from the value's text."
            ) from exc
    return text


def stored_text(value: JSONValue) -> str:
    """``value`` as the JSON text a store keeps: compact, and storable as UTF-8.

    Raises:
        TypeError, ValueError, RecursionError: ``value`` is not JSON, or a string in it is not
            text (a lone surrogate).
    """
    text = _ENCODER.encode(value)
    if not text.isascii():
        # A lone surrogate passes json but no database can store it as UTF-8 text.
        text.encode("utf-8")
    return text


def _encode_value(namespace: str, collection: str, key: str, value: JSONValue) -> str:
    try:
        return stored_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(
            f"Cannot store {collection}/{key} in namespace {namespace!r}: its value is not JSON ({exc}). "
            "Nothing of this change set was written. Convert the value to JSON data (dict with str keys, "
            "list, str, int, finite float, bool, None), for a pydantic model with model_dump(mode='json'), "
            "then apply the change set again."
        ) from exc
