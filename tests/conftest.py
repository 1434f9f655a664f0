"""Shared fixtures: an isolated workspaces root, fake observers on a real actor system,
and a teardown that stops every actor a test left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

from toolcards.actors.system import ActorSystem
from toolcards.store import close_default_stores
from toolcards.testing import FakeObserver


@pytest.fixture(autouse=True)
def isolated_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own workspaces root and state database."""
    root = tmp_path / "workspaces"
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(root))
    monkeypatch.delenv("TOOLCARDS_STORE", raising=False)
    return root


@pytest.fixture(autouse=True)
def stop_all() -> Iterator[None]:
    """No test leaves an actor thread (or an open state database) behind."""
    yield
    pykka.ActorRegistry.stop_all()
    close_default_stores()


@pytest.fixture
def system() -> Iterator[ActorSystem]:
    with ActorSystem() as actor_system:
        yield actor_system


@pytest.fixture
def alice(system: ActorSystem) -> FakeObserver:
    return FakeObserver("Alice", "team-1", system=system)


@pytest.fixture
def bob(system: ActorSystem) -> FakeObserver:
    return FakeObserver("Bob", "team-1", system=system)
