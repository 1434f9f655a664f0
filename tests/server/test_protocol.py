"""The rest of MCP, on both servers: tool annotations and titles from the cards' hints, resource
templates with argument completion (task ids, entity names, workspace paths), logging levels,
a missing resource's error code per era, tasks on 2025-11-25, and resumable HTTP streams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.server.test_stdio import INIT, RawServer, text
from toolcards.actors._system import ActorSystem
from toolcards.fs._locations import workspace_dir
from toolcards.server import TeamServer, default_config

INFO = types.Implementation(name="Prober", version="1")


@pytest.fixture
def default_team(system: ActorSystem) -> Iterator[TeamServer]:
    server = TeamServer(default_config("proto"), system=system)
    yield server
    server.close()


def run(server: TeamServer, mode: str, work: Any) -> Any:
    async def main() -> Any:
        async with Client(server.server, mode=mode, client_info=INFO) as client:  # type: ignore[arg-type]
            return await work(client)

    return asyncio.run(main())


# -- annotations ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_every_tool_has_a_title_and_the_annotations_its_card_declares(default_team: TeamServer, mode: str) -> None:
    async def listed(client: Client) -> dict[str, types.Tool]:
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = run(default_team, mode, listed)
    assert all(tool.title for tool in tools.values())
    hints = {name: tool.annotations for name, tool in tools.items()}
    assert tools["workspace_read"].title == "Read file"
    for read_only in ("workspace_read", "workspace_grep", "search_planning", "search_graph", "get_team_context"):
        assert hints[read_only] is not None and hints[read_only].read_only_hint is True, read_only
    write, delete, claim = hints["workspace_write"], hints["workspace_delete"], hints["claim_task"]
    assert write is not None and write.read_only_hint is None and write.destructive_hint is None  # the default: true
    assert write.idempotent_hint is True
    assert delete is not None and delete.idempotent_hint is True
    assert claim is not None and claim.destructive_hint is False  # it only adds a claim
    command = hints["exec_command"]
    assert command is not None and command.open_world_hint is True and command.destructive_hint is None
    # Descriptions and input schemas are the pipeline's, unchanged.
    session = asyncio.run(default_team.open_session("Prober"))
    assert tools["workspace_read"].description == session.tools["workspace_read"].description
    assert tools["workspace_read"].input_schema == session.tools["workspace_read"].parameters_schema


def test_annotations_follow_the_protocol_version(default_team: TeamServer) -> None:
    session = asyncio.run(default_team.open_session("Prober"))
    old = {t["name"]: t for t in default_team.tools_page(session, "2024-11-05")["tools"]}
    march = {t["name"]: t for t in default_team.tools_page(session, "2025-03-26")["tools"]}
    latest = {t["name"]: t for t in default_team.tools_page(session, "2025-11-25")["tools"]}
    assert "annotations" not in old["workspace_read"] and "title" not in old["workspace_read"]
    assert march["workspace_read"]["annotations"] == {"title": "Read file", "readOnlyHint": True}
    assert latest["workspace_read"]["title"] == "Read file"
    assert latest["exec_command"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in latest["workspace_read"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_searches_return_records_with_their_text(default_team: TeamServer, mode: str) -> None:
    import jsonschema

    async def work(client: Client) -> dict[str, Any]:
        await client.call_tool("update_planning", {"create_tasks": [{"description": "ship the parser"}]})
        entity = {"name": "Parser", "entity_type": "component", "description": "reads the input"}
        await client.call_tool("update_graph", {"create_entities": [entity]})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return {
            "tools": tools,
            "tasks": await client.call_tool("search_planning", {"query": "parser"}),
            "graph": await client.call_tool("search_graph", {"query": "parser", "mode": "keyword"}),
        }

    seen = run(default_team, mode, work)
    for name, key in (("search_planning", "tasks"), ("search_graph", "graph")):
        result, schema = seen[key], seen["tools"][name].output_schema
        assert schema is not None and result.structured_content is not None, name
        jsonschema.validate(result.structured_content, schema)
        assert result.content[0].text.strip()  # the text stays, for clients that read only text
    assert seen["tasks"].structured_content["hits"][0]["description"] == "ship the parser"
    assert "ship the parser" in seen["tasks"].content[0].text
    assert seen["graph"].structured_content["hits"][0]["name"] == "Parser"
    assert seen["tools"]["workspace_read"].output_schema is None  # outside data: text in its envelope only


def test_a_model_reads_the_text_of_a_search_whatever_the_channel(default_team: TeamServer) -> None:
    session = asyncio.run(default_team.open_session("Reader"))
    tool = session.tools["search_planning"]
    answer = tool.call_sync({"query": "nothing"})
    assert isinstance(answer, str) and answer.startswith("No task matches")


# -- resource templates and completion --------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_templates_are_listed_completed_and_read(default_team: TeamServer, mode: str) -> None:
    (workspace_dir("proto") / "src").mkdir(parents=True)
    (workspace_dir("proto") / "src" / "main.py").write_text("print('hi')\n")
    (workspace_dir("proto") / "README.md").write_text("# Proto\n")

    async def work(client: Client) -> dict[str, Any]:
        await client.call_tool("update_planning", {"create_tasks": [{"description": "first"}, {"description": "x"}]})
        await client.call_tool(
            "update_graph", {"create_entities": [{"name": "Payments", "entity_type": "service", "description": "p"}]}
        )
        listed = (await client.list_resource_templates()).resource_templates
        by_name = {template.name: template.uri_template for template in listed}
        task_ref = types.ResourceTemplateReference(uri=by_name["get_planning_task"])
        path_ref = types.ResourceTemplateReference(uri=by_name["workspace_read"])
        graph_ref = types.ResourceTemplateReference(uri=by_name["search_graph"])
        return {
            "templates": by_name,
            "tasks": (await client.complete(task_ref, {"name": "task_id", "value": ""})).completion.values,
            "top": (await client.complete(path_ref, {"name": "path", "value": ""})).completion.values,
            "src": (await client.complete(path_ref, {"name": "path", "value": "src/m"})).completion.values,
            "entities": (await client.complete(graph_ref, {"name": "query", "value": "pay"})).completion.values,
            "task": await client.read_resource("toolcards://proto/get_planning_task/2"),
            "file": await client.read_resource("toolcards://proto/workspace_read/src/main.py"),
        }

    seen = run(default_team, mode, work)
    assert seen["templates"] == {
        "workspace_read": "toolcards://proto/workspace_read/{+path}",
        "get_planning_task": "toolcards://proto/get_planning_task/{task_id}",
        "search_graph": "toolcards://proto/search_graph/{query}",
    }
    assert seen["tasks"] == ["1", "2"]
    assert seen["top"] == ["README.md", "src/"] and seen["src"] == ["src/main.py"]
    assert seen["entities"] == ["Payments"]
    assert "x" in seen["task"].contents[0].text
    assert "print('hi')" in seen["file"].contents[0].text


@pytest.mark.parametrize(("mode", "code"), [("legacy", -32002), ("auto", -32602)])
def test_a_missing_resource_is_its_eras_error(default_team: TeamServer, mode: str, code: int) -> None:
    async def work(client: Client) -> None:
        for uri in ("toolcards://proto/no-such-prompt", "toolcards://proto/workspace_read/missing.txt"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert caught.value.error.code == code, uri

    run(default_team, mode, work)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_the_logging_level_is_accepted_on_the_handshake_protocol(default_team: TeamServer) -> None:
    async def work(client: Client) -> Any:
        assert client.server_capabilities is not None and client.server_capabilities.logging is not None
        return await client.set_logging_level("warning")  # type: ignore[attr-defined]

    run(default_team, "legacy", work)


# -- over stdio, raw ---------------------------------------------------------------------------

TASK_CONFIG = """\
team_id: task-team
cards:
  - kind: exec
    mode: local
    allowed_commands: []
    timeout_s: 60
  - kind: planning
"""


@pytest.fixture
def task_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RawServer]:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    config = tmp_path / "team.yaml"
    config.write_text(TASK_CONFIG)
    server = RawServer(config)
    try:
        yield server
    finally:
        server.kill()


def next_result(server: RawServer, request_id: Any) -> dict[str, Any]:
    """The answer to ``request_id``, skipping notifications (a task's status changes)."""
    while True:
        frame = server.receive()
        if frame.get("id") == request_id:
            return frame


@pytest.mark.slow
def test_a_long_command_runs_as_a_task_polled_fetched_and_cancelled_over_stdio(task_server: RawServer) -> None:
    raw = task_server
    initialized = raw.answer("init", "initialize", {**INIT, "capabilities": {"tasks": {}}})["result"]
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert initialized["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    listed = {tool["name"]: tool for tool in raw.answer(1, "tools/list")["result"]["tools"]}
    assert listed["exec_command"]["execution"] == {"taskSupport": "optional"}

    call = {"name": "exec_command", "arguments": {"cmd": "sh -c 'sleep 1; echo finished'"}, "task": {"ttl": 60000}}
    created = raw.answer(2, "tools/call", call)["result"]["task"]
    assert created["status"] == "working" and created["ttl"] == 60000
    task_id = created["taskId"]
    assert next_result_of(raw, 3, "tasks/get", {"taskId": task_id})["status"] == "working"
    fetched = next_result_of(raw, 4, "tasks/result", {"taskId": task_id})
    assert "finished" in fetched["content"][0]["text"]
    assert fetched["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert next_result_of(raw, 5, "tasks/get", {"taskId": task_id})["status"] == "completed"

    long = {"name": "exec_command", "arguments": {"cmd": "sh -c 'sleep 30; touch late'"}, "task": {}}
    doomed = next_result_of(raw, 6, "tools/call", long)["task"]["taskId"]
    time.sleep(0.5)
    assert next_result_of(raw, 7, "tasks/cancel", {"taskId": doomed})["status"] == "cancelled"
    assert [task["taskId"] for task in next_result_of(raw, 8, "tasks/list", {})["tasks"]] == [task_id, doomed]
    raw.request(9, "tasks/get", {"taskId": "nope"})
    assert next_result(raw, 9)["error"]["code"] == -32602
    # Bad ids are refused in words, and an id is echoed clipped, never whole.
    raw.request(11, "tasks/get", {})
    assert next_result(raw, 11)["error"]["data"] == "taskId must be a string"
    raw.request(12, "tasks/result", {"taskId": "x" * 100_000})
    assert len(str(next_result(raw, 12)["error"])) < 400
    refused = raw.answer(10, "tools/call", {**call, "name": "search_planning", "arguments": {}})
    assert refused["error"]["code"] == -32602  # not a long-running tool


@pytest.mark.slow
def test_a_task_waiting_for_its_users_approval_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The question names its task, and the task is input_required until it is answered.
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    config = tmp_path / "team.yaml"
    config.write_text(
        TASK_CONFIG.replace("    timeout_s: 60\n", "    timeout_s: 60\n    exec_command: {requires_approval: true}\n")
    )
    raw = RawServer(config)
    try:
        capabilities = {"tasks": {}, "elicitation": {"form": {}}}
        raw.answer("init", "initialize", {**INIT, "capabilities": capabilities})
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "exec_command", "arguments": {"cmd": "echo ran"}, "task": {}}
        raw.request(1, "tools/call", call)
        task_id = next_result(raw, 1)["result"]["task"]["taskId"]
        question = raw.receive()
        while question.get("method") != "elicitation/create":
            question = raw.receive()
        assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert next_result_of(raw, 2, "tasks/get", {"taskId": task_id})["status"] == "input_required"
        raw.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}})
        result = next_result_of(raw, 3, "tasks/result", {"taskId": task_id})
        assert "ran" in result["content"][0]["text"] and not result["isError"]
        assert next_result_of(raw, 4, "tasks/get", {"taskId": task_id})["status"] == "completed"
    finally:
        raw.kill()


def next_result_of(raw: RawServer, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    raw.request(request_id, method, params)
    answer = next_result(raw, request_id)
    assert "result" in answer, answer
    return answer["result"]  # type: ignore[no-any-return]


@pytest.mark.slow
def test_completion_templates_and_logging_over_stdio(task_server: RawServer) -> None:
    raw = task_server
    raw.initialize()
    assert text(raw.call(1, "update_planning", create_tasks=[{"description": "one"}])).startswith("Created")
    templates = raw.answer(2, "resources/templates/list")["result"]["resourceTemplates"]
    assert [template["uriTemplate"] for template in templates] == ["toolcards://task-team/get_planning_task/{task_id}"]
    ref = {"type": "ref/resource", "uri": templates[0]["uriTemplate"]}
    completion = raw.answer(3, "completion/complete", {"ref": ref, "argument": {"name": "task_id", "value": ""}})
    assert completion["result"]["completion"] == {"values": ["1"], "total": 1, "hasMore": False}
    bogus = raw.answer(7, "completion/complete", {"ref": {"type": "ref/bogus"}, "argument": {"name": "x", "value": ""}})
    assert bogus["error"]["data"] == "ref must be a ref/prompt or a ref/resource with a uri"
    assert raw.answer(8, "tools/list", {"cursor": "garbage"})["error"]["code"] == -32602  # no page was handed out
    assert raw.answer(4, "logging/setLevel", {"level": "info"})["result"] == {}
    assert raw.answer(5, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    read = raw.answer(6, "resources/read", {"uri": "toolcards://task-team/get_planning_task/1"})["result"]
    assert "one" in read["contents"][0]["text"]


# -- resumable HTTP streams --------------------------------------------------------------------


def test_a_stream_resumed_with_last_event_id_gets_what_followed(team_server: TeamServer) -> None:
    from tests.serving import serving_in_thread
    from toolcards.server import serve_http

    async def serve(stop: Any, on_ready: Any) -> None:
        await serve_http(team_server, port=0, no_token=True, stop=stop, on_ready=on_ready)

    import httpx2

    with serving_in_thread(serve, what="the MCP server") as url:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with httpx2.Client(timeout=30) as http:
            opened = http.post(
                url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
            )
            session = opened.headers["mcp-session-id"]
            headers = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            answer = http.post(
                url,
                headers=headers,
                json={
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "again"}},
                },
            )
            events = [line.removeprefix("id: ") for line in answer.text.splitlines() if line.startswith("id: ")]
            assert events, answer.text
            with http.stream("GET", url, headers={**headers, "Last-Event-ID": events[0]}, timeout=10) as resumed:
                assert resumed.status_code == 200
                # The answer that followed the first event, sent again; the stream then stays open.
                assert any("again" in line for line in resumed.iter_lines())
            unknown = http.get(url, headers={**headers, "Last-Event-ID": "never-sent"})
            assert unknown.status_code == 200 and unknown.text.strip() == ""
