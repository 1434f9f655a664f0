"""The team's metadata: short named fields of business context, and free notes in Markdown.

Field names are 1 to 40 characters (a letter, then letters, digits, spaces, ``_``, ``.`` or
``-``); values are one line of at most :data:`VALUE_MAX` characters, without a control
character or anything else ``str.splitlines`` breaks a line at; the notes are at most
:data:`TEXT_MAX` characters; a team keeps at most :data:`FIELDS_MAX` fields in its store. The
bounds keep what every member reads before every request short.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FIELDS_MAX",
    "FIELD_NAME_PATTERN",
    "NOT_IN_A_LINE",
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
NOT_IN_A_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What a field's name or value may not hold: a control character (Unicode category Cc: NUL,
tab, escape, and eight of the ten characters ``str.splitlines`` ends a line at) or one of the
other two, the line and paragraph separators U+2028 and U+2029. A value holding one would add
lines of its own to the block every member reads as the team's."""


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
    found = NOT_IN_A_LINE.search(value)
    if found is not None:
        char = found.group()
        what = "a line break" if len(f"a{char}b".splitlines()) > 1 else "a control character"
        return (
            f"field {name!r}: a value is one line of text, and it holds {what} (U+{ord(char):04X}); "
            "put longer text in the notes (text)"
        )
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
