"""``toolcards cards``: kinds, capabilities, channels and schemas; broken kinds are listed."""

from __future__ import annotations

import json

import pytest

import tests.server.cards  # noqa: F401 - registers the test kinds
from toolcards.cli import main
from toolcards.core import _registry as registry


def test_json_describes_capabilities_with_channels_and_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cards", "--json", "test_echo"]) == 0
    (card,) = json.loads(capsys.readouterr().out)
    assert card["kind"] == "test_echo"
    assert card["class"] == "tests.server.cards:EchoTool"
    assert card["requires_observer"] == "ActorToolObserver"
    assert card["fields"] == {"read_only": False, "motd_text": "Be kind."}
    capabilities = {c["name"]: c for c in card["capabilities"]}
    assert capabilities["echo"]["channels"] == ["command", "tool_call"]
    assert capabilities["echo"]["parameters"]["required"] == ["text"]
    assert capabilities["motd"]["channels"] == ["system_prompt"]
    assert capabilities["wipe"]["requires_approval"] is True and capabilities["wipe"]["mutates"] is True


def test_a_kind_that_fails_to_import_is_listed_with_its_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(registry.BUILTIN_CARDS, "broken", "toolcards.no_such_module:Broken")
    assert main(["cards", "--json", "broken", "test_notes"]) == 0
    broken, notes = json.loads(capsys.readouterr().out)
    assert broken["error"].startswith("ModuleNotFoundError: No module named 'toolcards.no_such_module'")
    assert [c["name"] for c in notes["capabilities"]] == ["add_note", "list_notes", "notes_board"]


def test_the_text_listing_shows_signatures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cards", "test_echo"]) == 0
    out = capsys.readouterr().out
    assert "test_echo  (tests.server.cards:EchoTool)" in out
    assert "  echo(text: string, times: integer = …)  [command, tool_call]" in out


def test_every_known_kind_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    known = set(registry.card_kinds())
    assert main(["cards", "--json"]) == 0
    kinds = {entry["kind"] for entry in json.loads(capsys.readouterr().out)}
    assert known <= kinds
