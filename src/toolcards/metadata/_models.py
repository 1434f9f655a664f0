"""The team's metadata: short named fields of business context, and free notes in Markdown.

Field names are 1 to 40 characters (a letter, then letters, digits, spaces, ``_``, ``.`` or
``-``); values are one line of at most :data:`VALUE_MAX` characters; the notes are at most
:data:`TEXT_MAX` characters; a team keeps at most :data:`FIELDS_MAX` fields in its store. The
bounds keep what every member reads before every request short.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FIELDS_MAX",
    "FIELD_NAME_PATTERN",
    "TEXT_MAX",
    "VALUE_MAX",
    "TeamMetadata",
    "field_name_problem",
    "value_problem",
]

FIELD_NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9 _.-]{0,39}")
"""What a field's name may look like."""
VALUE_MAX = 300
"""Characters of one field's value, at most."""
TEXT_MAX = 4000
"""Characters of the notes, at most."""
FIELDS_MAX = 40
"""Fields a team's store keeps, at most."""


def field_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a field's name, or ``None``."""
    if not FIELD_NAME_PATTERN.fullmatch(name) or name != name.strip():
        return (
            f"field name {name!r} is not valid: use 1 to 40 letters, digits, spaces, '_', '.' or '-', "
            "starting with a letter"
        )
    return None


def value_problem(name: str, value: str) -> str | None:
    """What is wrong with ``value`` as field ``name``'s value, or ``None`` (empty removes a field)."""
    if "\n" in value or "\r" in value:
        return f"field {name!r}: a value is one line; put longer text in the notes (text)"
    if len(value) > VALUE_MAX:
        return f"field {name!r}: {len(value)} characters; a value has at most {VALUE_MAX}"
    return None


class TeamMetadata(BaseModel):
    """The metadata a team's store holds, at one version of its namespace."""

    model_config = ConfigDict(frozen=True)

    fields: dict[str, str] = Field(default_factory=dict)
    """Field name → value, sorted by name."""
    text: str = ""
    """The notes (Markdown); empty when none were set."""
    version: int = 0
    """The store version this is the state of (one more per change)."""
