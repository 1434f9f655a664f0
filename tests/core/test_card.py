"""The card contract: serialisable config, capabilities, binding."""

from __future__ import annotations

import gc
from typing import Any, ClassVar

import pytest
from pydantic import ConfigDict, PrivateAttr

from tests.core.cards import BasketCard, GreeterCard, GreetParam, MotdParam
from toolcards import COMMAND, TOOL_CALL, ActorToolObserver, Channels, ObserverGone, ToolCard, WiringError, capability
from toolcards.core._params import BaseToolParam
from toolcards.testing import FakeObserver


class Plain:
    def notify_event(self, event: Any) -> None:
        pass


def test_kind_defaults_from_the_class_name() -> None:
    class FancyNotesTool(ToolCard):
        pass

    assert FancyNotesTool.kind == "fancy_notes"
    assert GreeterCard.kind == "test_greeter"


def test_arbitrary_types_are_refused() -> None:
    with pytest.raises(WiringError, match="arbitrary_types_allowed is refused"):

        class Loose(ToolCard):
            model_config = ConfigDict(arbitrary_types_allowed=True)


def test_capability_must_name_a_field() -> None:
    with pytest.raises(WiringError, match="has no field 'nope'"):

        class Broken(ToolCard):
            @capability("nope")
            def act(self) -> str:
                """Act."""
                return ""


def test_a_card_may_defer_building_its_schema() -> None:
    class LazyParam(BaseToolParam):
        model_config = ConfigDict(defer_build=True)

    class LazyCard(ToolCard):
        model_config = ConfigDict(defer_build=True)

        shout: LazyParam | bool = True

        @capability("shout")
        def shout_text(self, text: str) -> str:
            """Shout the text."""
            return text.upper()

    (tool,) = LazyCard().build_tools()
    assert tool.call_sync({"text": "hi"}) == "HI"
    assert LazyCard.model_validate({"shout": {"instructions": "Loud."}}).param("shout") == LazyParam(
        instructions="Loud."
    )


def test_round_trip() -> None:
    card = GreeterCard(greet=GreetParam(greeting="Hi", instructions="Be brief."), motd=False)
    assert GreeterCard.model_validate(card.model_dump()) == card
    assert GreeterCard.model_validate_json(card.model_dump_json()) == card


def test_bool_fields_switch_capabilities() -> None:
    card = GreeterCard(motd=False)
    assert card.param("motd") is None
    assert isinstance(card.param("greet"), GreetParam)
    assert [t.name for t in card.build_tools()] == ["greet_someone"]
    assert GreeterCard(greet=False, motd=False).build_tools() == []


def test_channels_and_instructions_come_from_the_param() -> None:
    card = GreeterCard(greet=GreetParam(expose={COMMAND}, instructions="Only friends."))
    tool = next(t for t in card.build_tools() if t.name == "greet_someone")
    assert tool.channels == {COMMAND}
    assert tool.description.endswith("Only friends.")
    assert list(card.get_commands()) == [GreetParam, MotdParam]
    assert card.get_tools() == []


def test_exposing_an_unserved_channel_is_a_wiring_error() -> None:
    card = GreeterCard(motd=MotdParam(expose={TOOL_CALL, Channels.SYSTEM_PROMPT}))
    with pytest.raises(WiringError, match="exposes message_of_the_day on tool_call, which it cannot serve"):
        card.build_tools()


def test_observer_is_held_weakly() -> None:
    card = GreeterCard()
    observer = Plain()
    card.observer(observer)
    assert card.get_observer() is observer
    del observer
    gc.collect()
    with pytest.raises(ObserverGone):
        card.get_observer()


def test_unbound_card_says_how_to_bind() -> None:
    with pytest.raises(WiringError, match="not bound"):
        GreeterCard().get_observer()


def test_required_observer_kind_is_checked() -> None:
    class NeedsTeam(ToolCard):
        requires_observer: ClassVar[type | None] = ActorToolObserver

    with pytest.raises(WiringError, match="needs an observer implementing ActorToolObserver"):
        NeedsTeam().observer(Plain())
    with FakeObserver("Ann") as ann:
        assert NeedsTeam().observer(ann).is_bound


def test_params_refuse_unknown_fields() -> None:
    with pytest.raises(ValueError, match="Extra inputs"):
        GreetParam(greting="typo")  # type: ignore[call-arg]
    assert BaseToolParam().expose == {TOOL_CALL}


def test_a_method_named_like_its_field_is_refused() -> None:
    class P(BaseToolParam):
        pass

    with pytest.raises(WiringError, match="both a field and a capability method"):

        class Clash(ToolCard):
            act: P | bool = True

            @capability("act")
            def act(self) -> str:  # type: ignore[override]  # noqa: F811
                """Act."""
                return ""


def test_equality_is_about_configuration_not_binding() -> None:
    observer = Plain()
    bound = GreeterCard(motd_text="x").observer(observer)
    assert bound == GreeterCard(motd_text="x")
    assert bound != GreeterCard(motd_text="y")


class Handles(ToolCard):
    kind: ClassVar[str] = "test_handles"
    _handle: str = PrivateAttr(default="start")
    _unset: int = PrivateAttr()
    _computed: Any = PrivateAttr(default=property(lambda card: f"computed for {type(card).__name__}"))


def test_private_attributes_keep_pydantic_semantics() -> None:
    card, other = Handles(), Handles()
    assert (card._handle, other._handle) == ("start", "start")
    card._handle = "set"
    assert (card._handle, other._handle, card.__pydantic_private__["_handle"]) == ("set", "start", "set")
    copy = card.model_copy()
    copy._handle = "copied"
    assert (card._handle, copy._handle) == ("set", "copied")
    with pytest.raises(AttributeError, match="'Handles' object has no attribute '_unset'"):
        _ = card._unset
    card._unset = 3
    assert card._unset == 3
    del card._unset
    with pytest.raises(AttributeError, match="_unset"):
        _ = card._unset
    with pytest.raises(AttributeError, match="no attribute '_missing'"):
        _ = card._missing
    # A private attribute whose default is a descriptor is still pydantic's to resolve.
    assert card._computed == "computed for Handles"
    assert type(Handles.__private_attributes__["_handle"]).__name__ == "ModelPrivateAttr"
    assert Handles._handle is Handles.__private_attributes__["_handle"]
    # Private values are not configuration.
    assert card == other and card.model_dump() == other.model_dump() == {"read_only": False}


def test_a_subclass_keeps_what_it_defines_under_an_inherited_private_name() -> None:
    class Shadowing(Handles):
        kind: ClassVar[str] = "test_shadowing"

        @property
        def _handle(self) -> str:  # type: ignore[override]
            return "the subclass's own"

    class Inheriting(Handles):
        kind: ClassVar[str] = "test_inheriting"

    assert Shadowing()._handle == "the subclass's own"
    assert Inheriting()._handle == "start" and "_handle" not in Inheriting.__dict__


def test_read_only_drops_what_mutates_on_every_channel_of_any_card() -> None:
    assert [tool.name for tool in BasketCard().build_tools()] == ["add_items"]
    assert BasketCard(read_only=True).build_tools() == []
    # What changes nothing stays.
    assert {tool.name for tool in GreeterCard(read_only=True).build_tools()} == {"greet_someone", "message_of_the_day"}
    assert BasketCard.model_validate({"read_only": True}).read_only


def test_bound_names_why_a_runtime_handle_is_missing() -> None:
    card = GreeterCard()
    with pytest.raises(WiringError, match="GreeterCard is not bound"):
        card.bound(None)
    assert card.bound("proxy") == "proxy"
    with FakeObserver("Alice") as alice:
        card.observer(alice)
        with pytest.raises(WiringError, match="its on_bind did not finish"):
            card.bound(None)


def test_a_capability_is_named_after_its_field_and_serves_what_its_signature_allows() -> None:
    class NoteParam(BaseToolParam):
        expose: set[Channels] = {TOOL_CALL, COMMAND, Channels.SYSTEM_PROMPT}

    class Notes(ToolCard):
        add_note: BaseToolParam | bool = True
        notes: NoteParam | bool = True

        @capability("add_note")
        def add(self, text: str) -> str:
            """Add a note."""
            return text

        @capability("notes")
        def show(self) -> str:
            """The notes."""
            return "none"

    add, show = (cap for cap in Notes().capabilities())
    assert (add.name, show.name) == ("add_note", "notes")
    # A method with arguments cannot render a system prompt; one without can serve anything.
    assert add.serves == {TOOL_CALL, COMMAND}
    assert show.serves == set(Channels)
    assert {tool.name: tool.channels for tool in Notes().build_tools()}["notes"] == {
        TOOL_CALL,
        COMMAND,
        Channels.SYSTEM_PROMPT,
    }
    with pytest.raises(WiringError, match="cannot serve"):
        Notes(add_note=NoteParam()).build_tools()
