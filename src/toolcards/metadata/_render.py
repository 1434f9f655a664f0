"""The team's metadata as the block a model reads before every request.

The card's own fields come first, in the order its config gives them, then the fields set in
the store that the card does not name, sorted by name; a field set in the store replaces the
card's value of the same name. The store's notes replace the card's. Nothing depends on time
or on who asks, so the block changes only when the metadata does.

A name or value is shown on one line even if the store holds a line break in it (a row written
before values were checked for them, or by hand): each such character shows as a space, so no
field can add lines to the block.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolcards.metadata._models import NOT_IN_A_LINE, TeamMetadata

__all__ = ["HEADER", "render_metadata"]

HEADER = "Business context:"


def render_metadata(fields: Mapping[str, str], text: str, stored: TeamMetadata) -> str | None:
    """The block for a card's ``fields`` and ``text`` over what the store holds; ``None`` when empty."""
    merged = {name: stored.fields.get(name, value) for name, value in fields.items()}
    merged.update((name, value) for name, value in stored.fields.items() if name not in fields)
    notes = (stored.text or text).strip()
    lines = [f"- {_one_line(name)}: {_one_line(value)}" for name, value in merged.items() if value]
    if not lines and not notes:
        return None
    parts = [HEADER, *lines]
    if notes:
        parts.append(("\n" if lines else "") + notes)
    return "\n".join(parts)


def _one_line(text: str) -> str:
    return NOT_IN_A_LINE.sub(" ", text)
