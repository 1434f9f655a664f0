"""Views: read-only data a card offers, gathered by the factory, with cheap versions."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from toolcards import ToolCard, ToolFactory, WiringError
from toolcards.core._views import FileBytes, View, view


class NotesCard(ToolCard):
    kind: ClassVar[str] = "view_notes"
    notes: list[str] = []

    def notes_version(self) -> int:
        return len(self.notes)

    @view("notes.list", version=notes_version)
    def notes_view(self) -> dict[str, Any]:
        """The notes, in order."""
        return {"notes": list(self.notes)}

    @view("notes.one")
    def note_view(self, index: int) -> dict[str, Any]:
        return {"note": self.notes[int(index)]}


class OtherNotesCard(NotesCard):
    kind: ClassVar[str] = "view_other_notes"


class PlainCard(ToolCard):
    kind: ClassVar[str] = "view_plain"


def test_a_card_offers_its_marked_views_bound_to_itself() -> None:
    card = NotesCard(notes=["ship it"])
    views = {v.name: v for v in card.views()}

    assert set(views) == {"notes.list", "notes.one"}
    board = views["notes.list"]
    assert (board.title, board.card) == ("The notes, in order", "NotesCard")
    assert board.render() == {"notes": ["ship it"]}
    assert board.current_version() == 1
    card.notes = ["a", "b"]
    assert board.current_version() == 2 and board.render() == {"notes": ["a", "b"]}
    assert views["notes.one"].title == "notes.one"  # no docstring: the name
    assert views["notes.one"].current_version() is None and views["notes.one"].render(index="1") == {"note": "b"}


def test_only_cards_with_views_say_they_offer_them() -> None:
    assert NotesCard.offers_views() and not PlainCard.offers_views()
    assert PlainCard().views() == []


def test_the_factory_gathers_views_and_refuses_two_of_one_name() -> None:
    views = ToolFactory([NotesCard(notes=["x"]), PlainCard()]).views()
    assert sorted(views) == ["notes.list", "notes.one"] and all(isinstance(v, View) for v in views.values())
    with pytest.raises(WiringError, match=r"'notes\.list' is offered by both NotesCard and OtherNotesCard"):
        ToolFactory([NotesCard(), OtherNotesCard()]).views()


def test_file_bytes_carry_their_media_type() -> None:
    image = FileBytes(media_type="image/png", data=b"\x89PNG")
    assert (image.media_type, image.data) == ("image/png", b"\x89PNG")
