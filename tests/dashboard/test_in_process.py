"""The dashboard served in this process: views, the event stream, the render cache, the hub."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.dashboard.servers import get
from tests.serving import serving_in_thread
from toolcards import ToolFactory, WiringError
from toolcards.actors._system import ActorSystem
from toolcards.dashboard import TeamSource, UnknownView, dashboard_for, serve_dashboard
from toolcards.dashboard._hub import DashboardHub
from toolcards.knowledge_graph import KnowledgeGraphTool
from toolcards.planning import PlanningTool
from toolcards.sandbox import ExecTool
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool, stop_workspace_actors


@pytest.fixture
def team(system: ActorSystem) -> Iterator[tuple[FakeObserver, TeamSource]]:
    alice = FakeObserver("Alice", "team-1", system=system)
    # The exec card offers no view: it is not bound, so no sandbox starts to be looked at.
    source = TeamSource(system.team("team-1"), [PlanningTool(), KnowledgeGraphTool(), WorkspaceTool(), ExecTool()])
    yield alice, source
    stop_workspace_actors()


def serving(hub: DashboardHub, **options: Any) -> contextlib.AbstractContextManager[str]:
    return serving_in_thread(
        lambda stop, ready: serve_dashboard(hub, host="127.0.0.1", port=0, stop=stop, on_ready=ready, **options),
        what="the dashboard",
        must_stop=True,
    )


def test_the_source_has_the_cards_views_and_the_teams_own(team: tuple[FakeObserver, TeamSource]) -> None:
    alice, source = team
    assert source.names() == [
        "knowledge_graph.graph",
        "knowledge_graph.search",
        "planning.board",
        "team.calls",
        "team.roster",
        "workspace.file",
        "workspace.image",
        "workspace.tree",
    ]
    assert source.factory.cards and not any(isinstance(card, ExecTool) for card in source.factory.cards)
    tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=alice).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Ship it"}]})
    versions = source.versions()
    assert versions["planning.board"][0] == 1  # the change number, then a stamp of the leases
    assert source.render("planning.board")["tasks"][0]["description"] == "Ship it"
    with pytest.raises(UnknownView, match="has no view 'nothing'"):
        source.render("nothing")
    roster = source.render("team.roster")
    assert roster["members"] == [] and roster["team_id"] == "team-1"  # FakeObservers do not join


def test_the_call_log_holds_every_agents_calls_from_the_teams_log(system: ActorSystem) -> None:
    from toolcards.core._observer import TeamAgent

    team = system.team("calls")
    agent = TeamAgent("Ann", team)  # a team member that logs its calls, as MCP sessions do
    source = TeamSource(team, [PlanningTool()])
    tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=agent).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "x"}]})
    with pytest.raises(Exception, match="does not exist"):
        tools["get_planning_task"].call_sync({"task_id": 99})
    tools["get_planning"].call_sync({}, channel=__import__("toolcards").SYSTEM_PROMPT)  # read, not logged

    def calls() -> list[dict[str, Any]]:
        return list(source.render("team.calls")["calls"])

    rows = calls()
    assert [(r["tool"], r["success"], r["agent"]) for r in rows] == [
        ("get_planning_task", False, "@Ann"),
        ("update_planning", True, "@Ann"),
    ]
    assert "Task 99 does not exist" in rows[0]["error"]
    assert source.render("team.roster")["agents_seen"][0]["handle"] == "@Ann"


def test_the_roster_is_the_teams_present_members_and_calls_do_not_keep_anyone_in_it(system: ActorSystem) -> None:
    from toolcards.core._observer import TeamAgent

    team = system.team("roster")
    source = TeamSource(team, [PlanningTool()])
    empty = source.version("team.roster")
    ann = TeamAgent("Ann", team, role="builder")
    team.register_member(ann.address)
    tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=ann).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "x"}]})

    roster = source.render("team.roster")
    [member] = roster["members"]
    assert (member["handle"], member["role"], member["host"]) == ("@Ann", "builder", socket.gethostname())
    assert member["pid"] == os.getpid() and member["joined"] <= member["seen"]
    assert roster["agents_seen"][0]["handle"] == "@Ann" and roster["agents_seen"][0]["present"]
    joined = source.version("team.roster")
    assert joined != empty

    team.unregister_member("Ann", reason="session ended")

    roster = source.render("team.roster")
    assert roster["members"] == []
    assert [(a["handle"], a["calls"], a["present"]) for a in roster["agents_seen"]] == [("@Ann", 1, False)]
    assert source.version("team.roster") not in (empty, joined)


def test_served_views_events_and_renders_cached_by_version(team: tuple[FakeObserver, TeamSource]) -> None:
    alice, source = team
    hub = DashboardHub(source, interval=0.05)
    tools = {t.name: t for t in ToolFactory([PlanningTool(), KnowledgeGraphTool()], observer=alice).tools()}
    with serving(hub) as url:
        token = parse_qs(urlsplit(url).query)["token"][0]
        origin = url.split("/?")[0]
        auth = {"Authorization": f"Bearer {token}"}
        assert (
            get(origin + "/api/team", auth)[2]
            == json.dumps({"team": "team-1", "views": source.names()}, separators=(",", ":")).encode()
        )
        assert get(origin + "/static/app.css", auth)[0] == 200
        assert get(origin + "/static/index.html", auth)[0] == 404
        assert get(origin + "/static/../app.py", auth)[0] == 404

        import urllib.request

        request = urllib.request.Request(origin + "/api/events", headers=auth)
        with urllib.request.urlopen(request, timeout=10) as stream:
            assert stream.readline() == b"event: hello\n"
            stream.readline(), stream.readline()
            tools["update_planning"].call_sync({"create_tasks": [{"description": "Live"}]})
            assert stream.readline() == b"event: changed\n"
            assert json.loads(stream.readline().removeprefix(b"data: "))["views"] == ["planning.board"]

        first = get(origin + "/api/views/planning.board", auth)[2]
        assert json.loads(first)["tasks"][0]["description"] == "Live"
        assert get(origin + "/api/views/planning.board", auth)[2] == first  # served from the cache
        tools["update_graph"].call_sync({"create_entities": [{"name": "a", "entity_type": "t"}]})
        graph = json.loads(get(origin + "/api/views/knowledge_graph.graph", auth)[2])
        assert list(graph["positions"]) == ["a"]
        assert get(origin + "/api/files/image?path=nothing.png", auth)[0] == 422
        assert get(origin + "/api/views/workspace.file?path=nothing", auth)[0] == 422
        assert get(origin + "/api/views/nothing", auth)[0] == 404


def test_without_a_token_only_loopback_host_names_are_answered(team: tuple[FakeObserver, TeamSource]) -> None:
    _, source = team
    with serving(DashboardHub(source), no_token=True) as url:
        assert "token" not in url
        assert get(url)[0] == 200
        assert get(url, {"Host": "evil.example:8766"})[0] == 403


def test_no_token_is_refused_off_loopback(team: tuple[FakeObserver, TeamSource]) -> None:
    _, source = team
    with pytest.raises(WiringError, match="without a token"):
        asyncio.run(serve_dashboard(DashboardHub(source), host="0.0.0.0", port=0, no_token=True))


def test_dashboard_for_binds_a_viewer_that_is_not_a_member(system: ActorSystem, tmp_path: Path) -> None:
    hub = dashboard_for(system.team("t"), [PlanningTool()])
    assert hub.listeners == 0 and system.team("t").members() == []
    assert hub.source.viewer.address.name == "dashboard"


def test_the_graph_is_laid_out_at_start_before_anyone_asks(team: tuple[FakeObserver, TeamSource]) -> None:
    alice, source = team
    tools = {tool.name: tool for tool in ToolFactory([KnowledgeGraphTool()], observer=alice).tools()}
    tools["update_graph"].call_sync(
        {"create_entities": [{"name": "api", "entity_type": "service"}, {"name": "db", "entity_type": "database"}]}
    )
    assert source.layout.positions_known() == 0
    source.warm()
    assert source.layout.positions_known() == 2
    # The request that follows reuses that layout.
    assert set(source.render("knowledge_graph.graph")["positions"]) == {"api", "db"}
