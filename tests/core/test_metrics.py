"""OpenTelemetry metrics of the ledger: calls, tokens and time per member, card, tool and task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

import opentelemetry.metrics._internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from toolcards import ToolFactory
from toolcards.actors import ActorSystem
from toolcards.core import _metrics as metrics
from toolcards.planning import PlanningTool
from toolcards.store import SQLiteStore, StoreLedger, store_ledgers
from toolcards.testing import FakeObserver


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    # The global provider can be set once per process: swap it for this test only.
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", provider)
    yield reader
    provider.shutdown()


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            if scope.scope.name == metrics.METER_NAME:
                for metric in scope.metrics:
                    found[metric.name] = list(metric.data.data_points)
    return found


def test_written_calls_become_metrics_with_their_member_card_tool_and_task(
    reader: InMemoryMetricReader, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "state.db")
    with ActorSystem(ledger=store_ledgers(store)) as system:
        alice = FakeObserver("Alice", "team-1", system=system)
        tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=alice).tools()}
        tools["update_planning"].call_sync({"create_tasks": [{"description": "measure"}]})
        tools["claim_task"].call_sync({"task_id": 1})
        tools["search_planning"].call_sync({"query": "measure"})
        ledger = system.team("team-1").ledger
        assert isinstance(ledger, StoreLedger)
        ledger.flush()
    store.close()
    found = points(reader)
    assert set(found) == {
        "toolcards.tool.calls",
        "toolcards.tool.argument_tokens",
        "toolcards.tool.result_tokens",
        "toolcards.tool.duration",
    }
    calls = {point.attributes["gen_ai.tool.name"]: point for point in found["toolcards.tool.calls"]}
    search = calls["search_planning"]
    assert search.value == 1
    assert search.attributes["gen_ai.agent.name"] == "Alice"
    assert search.attributes["toolcards.card"] == "PlanningTool"
    assert search.attributes["toolcards.task"] == 1
    assert search.attributes["toolcards.failed"] is False
    assert "toolcards.task" not in calls["update_planning"].attributes
    assert sum(point.value for point in found["toolcards.tool.result_tokens"]) > 0


def test_without_a_provider_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", None)
    metrics.record_calls("t", [(0.0, "@A", None, "C", "t", {}, "x", 0.1, False)], [1, 1])  # no error, no meter
