"""The dashboard's usage view: the team's ledger as data, with a version that moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcards import ToolFactory
from toolcards.actors._system import ActorSystem
from toolcards.core._usage import Budget
from toolcards.dashboard import TeamSource
from toolcards.planning import PlanningTool
from toolcards.store import SQLiteStore, StoreLedger, store_ledgers
from toolcards.testing import FakeObserver


@pytest.fixture
def ledger_system(tmp_path: Path) -> Iterator[ActorSystem]:
    store = SQLiteStore(tmp_path / "state.db")
    with ActorSystem(ledger=store_ledgers(store)) as system:
        yield system
    store.close()


def test_the_usage_view_shows_totals_and_budgets(ledger_system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=ledger_system)
    source = TeamSource(ledger_system.team("team-1"), [PlanningTool()])
    assert "team.usage" in source.names()
    before = source.version("team.usage")
    search = {t.name: t for t in ToolFactory([PlanningTool()], observer=alice).tools()}["search_planning"]
    search.call_sync({"query": "anything"})
    ledger = ledger_system.team("team-1").ledger
    assert isinstance(ledger, StoreLedger)
    ledger.flush()
    ledger.set_budget(Budget(scope="member", name="@Alice", calls=2, set_by="@Lead"))
    assert source.versions()["team.usage"] != before
    data = source.render("team.usage")
    assert data["total"]["calls"] == 1 and data["by_member"]["@Alice"]["calls"] == 1
    [budget] = data["budgets"]
    assert budget["label"] == "member @Alice" and budget["share"] == 0.5 and budget["set_by"] == "@Lead"


def test_a_team_without_a_ledger_has_no_usage_view(system: ActorSystem) -> None:
    source = TeamSource(system.team("team-1"), [PlanningTool()])
    assert "team.usage" not in source.names()
