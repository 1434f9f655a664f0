"""The dashboard over HTTP, without a browser: the token, the headers, and reading the team
from another process through the shared store (``toolcards dashboard`` beside ``serve``),
its roster included: members of every process, dropped when they leave or their process dies."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.servers import Process, call_tool, connected, dashboard, get, team_env, view
from tests.team.presence_worker import Worker

pytestmark = pytest.mark.slow


def eventually(check: Any, timeout: float = 5.0) -> Any:
    """``check()`` once it is truthy; bounded, for what another process writes."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_without_the_token_the_page_the_views_and_the_event_stream_answer_401(served: Process) -> None:
    for path in ["/", "/api/events", "/api/views/planning.board", "/static/app.js", "/api/files/image?path=x"]:
        status, _, body = get(served.origin + path, stream=True)
        assert status == 401, path
        assert json.loads(body)["error"] == "unauthorized"
    status, _, _ = get(served.origin + "/", {"Authorization": "Bearer wrong"})
    assert status == 401


def test_the_token_once_sets_a_strict_cookie_and_every_response_is_locked_down(served: Process) -> None:
    status, headers, body = get(f"{served.origin}/?token={served.token}")
    assert status == 200 and b"<title>toolcards dashboard</title>" in body
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and served.token not in cookie
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert b"<script>" not in body and " on" not in body.decode().split("<body>")[1].split(">")[0]

    cookie_header = {"Cookie": cookie.split(";")[0]}
    status, headers, _ = get(served.origin + "/static/app.js", cookie_header)
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    status, headers, body = get(served.origin + "/api/events", cookie_header, stream=True)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert body.startswith(b"event: hello")


def test_the_mcp_endpoint_still_works_beside_the_dashboard(served: Process) -> None:
    assert "Created" in call_tool(served.url, "workspace_write", {"path": "beside.md", "content": "x"})
    assert get(f"{served.origin}/api/views/nothing", {"Authorization": f"Bearer {served.token}"})[0] == 404


def test_a_view_that_refuses_says_why(served: Process) -> None:
    status, _, body = get(
        f"{served.origin}/api/views/workspace.file?path=../../etc/passwd", {"Authorization": f"Bearer {served.token}"}
    )
    assert status == 422 and "escapes the workspace root" in json.loads(body)["error"]
    status, _, body = get(
        f"{served.origin}/api/views/workspace.file?path=a&mode=x", {"Authorization": f"Bearer {served.token}"}
    )
    assert status == 422 and "takes no parameter mode" in json.loads(body)["error"]


@pytest.fixture
def standalone(served: Process, team_dir: Path) -> Iterator[Process]:
    """``toolcards dashboard`` in its own process, on the served team's store."""
    process = dashboard(team_dir / "team.yaml", team_env(team_dir))
    try:
        yield process
    finally:
        process.stop()


def test_a_dashboard_process_shows_what_the_serve_process_does(served: Process, standalone: Process) -> None:
    assert standalone.url.endswith(f"/?token={standalone.token}")
    call_tool(served.url, "update_planning", {"create_tasks": [{"description": "Seen from afar"}]}, agent="Erin")
    call_tool(served.url, "update_graph", {"create_entities": [{"name": "far-entity", "entity_type": "place"}]})

    def board() -> Any:
        tasks = view(standalone.origin, standalone.token, "planning.board")["tasks"]
        return [task for task in tasks if task["description"] == "Seen from afar"]

    assert eventually(board)[0]["creator"] == "@Erin"
    graph = view(standalone.origin, standalone.token, "knowledge_graph.graph")
    assert "far-entity" in graph["positions"]

    def calls() -> Any:
        rows = view(standalone.origin, standalone.token, "team.calls")["calls"]
        return [row for row in rows if row["agent"] == "@Erin" and row["tool"] == "update_planning"]

    found = eventually(calls)
    assert found and found[0]["success"] and found[0]["channel"] == "tool_call"
    roster = view(standalone.origin, standalone.token, "team.roster")
    assert "@Erin" in {agent["handle"] for agent in roster["agents_seen"]}


PRESENCE = {"interval_s": 0.2, "ttl_s": 2.0}
"""Workers renew their presence every 0.2 s; killed, they drop out 2 s after the last renewal."""


def present(process: Process) -> dict[str, dict[str, Any]]:
    return {member["handle"]: member for member in view(process.origin, process.token, "team.roster")["members"]}


def test_the_roster_shows_every_process_members_and_drops_those_who_left(
    served: Process, standalone: Process, team_dir: Path
) -> None:
    env = team_env(team_dir)
    scout = Worker("lookout", "Scout", env, **PRESENCE)
    ghost = Worker("lookout", "Ghost", env, **PRESENCE)
    try:
        with connected(served.url, "Visitor", ("search_planning", {"query": "anything"})):
            assert eventually(lambda: {"@Visitor", "@Scout", "@Ghost"} <= present(standalone).keys(), timeout=30)
            members = present(standalone)
            assert (members["@Scout"]["pid"], members["@Scout"]["role"]) == (scout.pid, "agent")
            assert members["@Visitor"]["pid"] == served.served.process.pid
            assert members["@Visitor"]["role"] == "mcp_client" and members["@Visitor"]["seen"]

            def visitor_calls() -> Any:
                agents = view(standalone.origin, standalone.token, "team.roster")["agents_seen"]
                return next((agent for agent in agents if agent["handle"] == "@Visitor"), None)

            assert eventually(visitor_calls)["present"] is True

        # The client disconnected: its session ended, and every process's roster lost it.
        assert eventually(lambda: "@Visitor" not in present(standalone), timeout=30)
        assert eventually(lambda: visitor_calls()["present"] is False)  # its calls stay, marked as left

        assert scout.ask("leave") == "left"
        assert "@Scout" not in present(standalone)  # committed before the worker said so

        ghost.kill()  # no leave: it drops out once its TTL has passed
        assert eventually(lambda: "@Ghost" not in present(standalone), timeout=30)
    finally:
        scout.stop()
        ghost.stop()
