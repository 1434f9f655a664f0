"""Fixtures for the command-line tests: a team config on the test cards, and logging restored."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` reads ``TOOLCARDS_TOKEN``; the tests decide whether there is one."""
    monkeypatch.delenv("TOOLCARDS_TOKEN", raising=False)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """``main`` configures logging for a process; put the test process's back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    ours = logging.getLogger("toolcards")
    our_level = ours.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    ours.setLevel(our_level)


@pytest.fixture
def team_store(isolated_root: Path) -> Path:
    """The store of the test's team, created: commands that read a team refuse to start one."""
    from toolcards.store import open_store

    store = open_store()
    path = Path(store.path)  # type: ignore[attr-defined]
    store.close()
    return path


@pytest.fixture
def team_yaml(tmp_path: Path, team_store: Path) -> Path:
    path = tmp_path / "team.yaml"
    path.write_text(
        "team_id: cli-team\nimports: [tests.server.cards]\ncards:\n  - kind: test_echo\n  - kind: test_notes\n"
    )
    return path
