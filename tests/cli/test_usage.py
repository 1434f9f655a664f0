"""``toolcards usage``: the ledger the team's processes wrote, read from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcards.cli import main


def test_usage_reads_what_calls_of_other_processes_wrote(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("milk", "eggs", "bread"):
        assert main(["call", "--config", str(team_yaml), "--agent", "Ann", "/add_note", text]) == 0
    assert main(["call", "--config", str(team_yaml), "--agent", "Bob", "list_notes"]) == 0
    capsys.readouterr()
    assert main(["usage", "--config", str(team_yaml)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Team ") and "Usage: 4 calls" in out
    assert "@Ann: 3 calls" in out and "@Bob: 1 calls" in out
    assert main(["usage", "--config", str(team_yaml), "--member", "Ann", "--since", "1h", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total"]["calls"] == 3 and list(report["by_member"]) == ["@Ann"]
    assert report["total"]["result_tokens"] > 0 and report["budgets"] == []


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--since", "soonish"], "--since: since='soonish' is not a time"),
        (["--task", "0"], "--task 0: a task id"),
        (["--member", ""], "--member '': name a member"),
        (["--member", "@"], "--member '@': name a member"),
    ],
)
def test_bad_options_are_usage_errors(
    team_yaml: Path, capsys: pytest.CaptureFixture[str], options: list[str], words: str
) -> None:
    assert main(["usage", "--config", str(team_yaml), *options]) == 2
    assert words in capsys.readouterr().err


def test_a_missing_store_is_an_error_naming_the_lookup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", "--store", str(tmp_path / "nowhere.db")]) == 1
    assert "nowhere.db" in capsys.readouterr().err
