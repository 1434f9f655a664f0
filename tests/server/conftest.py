"""Fixtures: a served test team (echo and notes cards) on the test's actor system."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer

CARDS = [{"kind": "test_echo"}, {"kind": "test_notes"}]


@pytest.fixture(autouse=True)
def no_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers started as subprocesses read ``TOOLCARDS_TOKEN``; the tests decide whether there is one."""
    monkeypatch.delenv("TOOLCARDS_TOKEN", raising=False)


def make_config(**options: object) -> ServeConfig:
    return ServeConfig.model_validate(
        {"team_id": "team-1", "imports": ["tests.server.cards"], "cards": CARDS, **options}
    )


@pytest.fixture
def config() -> ServeConfig:
    return make_config()


@pytest.fixture
def team_server(config: ServeConfig, system: ActorSystem) -> Iterator[TeamServer]:
    server = TeamServer(config, system=system)
    yield server
    server.close()
