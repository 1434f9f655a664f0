"""The demo runs end to end offline, and a second run shows the board surviving."""

from __future__ import annotations

import io

import pytest

from toolcards._demo import TEAM_ID, run_demo
from toolcards.fs._locations import workspace_dir


def test_the_demo_ships_slugify_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    first = io.StringIO()
    assert run_demo(out=first) == 0
    text = first.getvalue()
    assert "scripted models (pydantic-ai FunctionModel)" in text
    assert "@Builder-1  workspace_write   ok" in text
    assert "#2 [completed] Test slugify() in test_slugify.py — Output: 3 tests pass" in text
    assert "Root entities: slugify.py [module]." in text
    tree = workspace_dir(TEAM_ID)
    assert "def slugify" in (tree / "slugify.py").read_text()

    second = io.StringIO()
    assert run_demo(out=second) == 0
    again = second.getvalue()
    assert "**Team planning:** 4 tasks (4 completed)" in again
    assert "#4 [completed] Test slugify() in test_slugify.py — Output: 3 tests pass" in again
    # The second run read the files before overwriting them: no gate refusal for writes.
    assert "workspace_write   refused" not in again


def test_toolcards_demo_command(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcards.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["demo", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "@Builder-2  → @Lead: slugify() tests: 3 tests pass." in out
