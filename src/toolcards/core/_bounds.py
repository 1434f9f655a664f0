"""Bounds a field enforces without the model reading them on every request.

Every word of a schema is paid for on every request, and no honest call comes near the
bounds that stop hostile or runaway arguments (a 4 MB file content, a 120-character entity
name). :func:`unlisted_bound`, as a field's ``json_schema_extra``, drops them from the JSON
schema a model reads; validation still enforces them, with pydantic's own message ("String
should have at most 120 characters"), which the model can act on. :func:`unlisted_range`
does the same for a number's ``minimum`` and ``maximum``, where the description or the name
already says what makes sense (a count of lines to skip is not negative), and
:func:`unlisted_default` for a default that goes without saying.
"""

from __future__ import annotations

from typing import Any

__all__ = ["unlisted_bound", "unlisted_default", "unlisted_range"]

_BOUNDS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maximum", "minimum")
_RANGE = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def unlisted_bound(schema: dict[str, Any]) -> None:
    """Drop a field's length, size and numeric bounds from its JSON schema (validation keeps them)."""
    for key in _BOUNDS:
        schema.pop(key, None)


def unlisted_default(schema: dict[str, Any]) -> None:
    """Drop a field's default from its JSON schema, for defaults that go without saying (a flag
    that is off, an offset of 0): an optional field left out means just that."""
    schema.pop("default", None)


def unlisted_range(schema: dict[str, Any]) -> None:
    """Drop a number's range from its JSON schema (validation keeps it)."""
    for key in _RANGE:
        schema.pop(key, None)
