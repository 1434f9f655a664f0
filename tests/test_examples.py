"""The examples shipped in the package run offline and print what their docstrings promise."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent

from toolcards.examples import models, quickstart, team


def test_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    quickstart.main()
    assert capsys.readouterr().out.splitlines() == [
        "Done. My context said: Notes: the build is green",
        "Noted (2 notes).",
        "Notes: the build is green; deploy on Friday",
    ]


def test_team_runs(capsys: pytest.CaptureFixture[str]) -> None:
    team.main()
    out = capsys.readouterr().out
    assert out.startswith("Delegated to @Builder-1 and @Builder-2.\n")
    assert "Fired @Builder-2 (builder)" in out
    assert "@Builder-2 fired by @Lead" in out


def test_the_quick_model_switches_only_when_asked_for_care() -> None:
    assert Agent(models.quick()).run_sync("Rename the file.").output == "quick: done"
    assert Agent(models.careful()).run_sync("Anything.").output == "careful: checked twice, done"
