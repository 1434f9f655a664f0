"""Prompt URIs, which prompts a state change affects, and the notifier's delivery."""

from __future__ import annotations

import asyncio
from typing import Any

from toolcards import StateChanged
from toolcards.server._resources import ResourceNotifier, affected_prompts, prompt_name, prompt_uri

PROMPTS = {
    "planning_board": "PlanningTool",
    "workspace_tree": "WorkspaceTool",
    "graph_summary": "KnowledgeGraphTool",
    "motd": "EchoTool",
}


def test_uris_round_trip_and_belong_to_one_team() -> None:
    uri = prompt_uri("team 1", "planning_board")
    assert uri == "toolcards://team%201/planning_board"
    assert prompt_name("team 1", uri) == "planning_board"
    assert prompt_name("team-2", uri) is None
    assert prompt_name("team 1", "toolcards://team%201/") is None


def test_a_source_maps_to_its_cards_prompts() -> None:
    assert affected_prompts("#PlanningTool", PROMPTS) == ["planning_board"]
    assert affected_prompts("#WorkspaceActor:main", PROMPTS) == ["workspace_tree"]
    assert affected_prompts("#KnowledgeGraphTool", PROMPTS) == ["graph_summary"]


def test_an_unknown_source_notifies_every_prompt() -> None:
    assert affected_prompts("#SandboxActor", PROMPTS) == list(PROMPTS)
    assert affected_prompts("", PROMPTS) == list(PROMPTS)


class FakeBus:
    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(self, event: Any) -> None:
        self.published.append(event.uri)


class FakeConnection:
    def __init__(self) -> None:
        self.updated: list[str] = []

    async def send_resource_updated(self, uri: str) -> None:
        self.updated.append(uri)


def test_state_changes_reach_the_bus_and_subscribed_connections() -> None:
    bus = FakeBus()
    notifier = ResourceNotifier("t", PROMPTS, bus)
    subscribed, other, gone = FakeConnection(), FakeConnection(), FakeConnection()
    planning = prompt_uri("t", "planning_board")

    async def main() -> None:
        notifier.attach(asyncio.get_running_loop())
        notifier.subscribe(subscribed, planning)
        notifier.subscribe(other, prompt_uri("t", "motd"))
        notifier.subscribe(gone, planning)
        notifier.forget(gone)
        notifier.on_event(1, StateChanged(team_id="t", source="#PlanningTool", seq=1, summary="task 1"))
        notifier.on_event(2, StateChanged(team_id="other", source="#PlanningTool", seq=1, summary="x"))
        notifier.on_event(3, "not an event")
        for _ in range(20):
            await asyncio.sleep(0)

    asyncio.run(main())
    assert bus.published == [planning]
    assert subscribed.updated == [planning]
    assert other.updated == [] and gone.updated == []


def test_events_before_a_loop_is_attached_are_dropped_quietly() -> None:
    bus = FakeBus()
    ResourceNotifier("t", PROMPTS, bus).on_event(1, StateChanged(team_id="t", source="#X", seq=1, summary=""))
    assert bus.published == []
