"""Fixtures of the workspace tests: two agents whose every answer is checked.

:class:`~tests.workspace.hostile.CheckedAgent` calls the real card through the factory, like
a model; a module that needs another kind of agent defines its own ``a`` and ``b``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent
from toolcards.testing import FakeObserver


@pytest.fixture
def a(alice: FakeObserver, tmp_path: Path) -> CheckedAgent:
    """Alice, with every workspace tool."""
    return CheckedAgent(alice, tmp_path)


@pytest.fixture
def b(bob: FakeObserver, tmp_path: Path) -> CheckedAgent:
    """Bob, Alice's teammate on the same tree."""
    return CheckedAgent(bob, tmp_path)
