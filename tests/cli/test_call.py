"""``toolcards call``: one command against a team's persisted state, with exit codes for scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcards.cli import main
from toolcards.cli.call import command_text


def test_commands_persist_between_calls_and_stamp_the_agent(
    team_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "--config", str(team_yaml), "--agent", "Ann", "/add_note", "buy milk"]) == 0
    assert capsys.readouterr().out == "Added note 1.\n"
    assert main(["call", "--config", str(team_yaml), "list_notes"]) == 0
    assert capsys.readouterr().out.strip() == '[{"text": "buy milk", "author": "@Ann"}]'


def test_without_a_command_it_lists_the_commands(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml)]) == 0
    out = capsys.readouterr().out
    assert "/echo <text> [times]\n    Repeat some text." in out
    assert "/wipe" not in out  # exposed on the tool-call channel only


def test_a_failed_command_exits_1_with_its_error_on_stderr(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml), "/fussy Voldemort"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "Error: That name must not be spoken. Greet someone else."


def test_an_unknown_command_exits_2(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml), "/teleport"]) == 2
    assert "Unknown command /teleport. Known commands: /add_note" in capsys.readouterr().err


def test_setup_errors_are_one_line_unless_debugging(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.yaml")
    assert main(["call", "--config", missing, "/x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolcards: error: Cannot read config") and err.count("\n") == 1
    with pytest.raises(Exception, match="Cannot read config"):
        main(["--debug", "call", "--config", missing, "/x"])


def test_no_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: toolcards" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("words", "text"),
    [
        (["/get_planning"], "/get_planning"),
        (["get_planning"], "/get_planning"),
        (['/note "a b" c'], '/note "a b" c'),
        (["/note", "a b", "c"], "/note 'a b' c"),
    ],
)
def test_command_text(words: list[str], text: str) -> None:
    assert command_text(words) == text
