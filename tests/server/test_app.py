"""TeamServer through the MCP SDK's in-process client: tools, errors, identity, prompts."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.server.conftest import make_config
from toolcards import TOOL_CALL, ToolFactory
from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer
from toolcards.server._session import SessionAgent
from toolcards.testing import FakeObserver

T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def client(server: TeamServer, name: str = "Alice", **options: Any) -> Client:
    return Client(server.server, client_info=types.Implementation(name=name, version="1"), **options)


def text_of(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


# -- tools -------------------------------------------------------------------------------


def test_every_tool_call_capability_is_listed_with_the_pipeline_schema(
    team_server: TeamServer, alice: FakeObserver
) -> None:
    async def main() -> list[types.Tool]:
        async with client(team_server) as c:
            return (await c.list_tools()).tools

    listed = {tool.name: tool for tool in run(main)}
    expected = {
        tool.name: tool for tool in ToolFactory(team_server.config.build_cards(), observer=alice).tools(TOOL_CALL)
    }
    assert set(listed) == {*expected, "get_team_context"}  # the cards' context, as a tool
    for name, tool in expected.items():
        assert listed[name].input_schema == tool.parameters_schema
        assert listed[name].description == tool.description


@pytest.mark.parametrize(
    ("name", "args", "error", "text"),
    [
        ("echo", {"text": "hi", "times": 2}, False, "hi hi"),
        ("echo", {"text": "hi", "times": "3"}, False, "hi hi hi"),
        ("echo", {"text": ""}, True, "Invalid arguments for echo: text: String should have at least 1 character"),
        ("echo", {"times": 2}, True, "Invalid arguments for echo: text: Field required"),
        ("echo", {"text": "hi", "loud": True}, True, "loud"),
        ("fussy", {"name": "Voldemort"}, True, "That name must not be spoken. Greet someone else."),
        ("crash", {}, True, "crash failed: ValueError: boom"),
        ("nope", {}, True, "There is no tool called 'nope'."),
        ("ech", {}, True, "Did you mean echo?"),
    ],
)
def test_calls_and_failures_are_tool_results(
    team_server: TeamServer, name: str, args: dict[str, Any], error: bool, text: str
) -> None:
    async def main() -> types.CallToolResult:
        async with client(team_server) as c:
            return await c.call_tool(name, args)

    result = run(main)
    assert result.is_error is error
    assert text in text_of(result)


def test_an_unexpected_exception_outside_the_pipeline_is_a_result_too(
    team_server: TeamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("lost")

    monkeypatch.setattr(team_server, "call", broken)

    async def main() -> types.CallToolResult:
        async with client(team_server) as c:
            return await c.call_tool("echo", {"text": "hi"})

    result = run(main)
    assert result.is_error
    assert text_of(result) == "echo failed: KeyError: 'lost'"


def test_dicts_are_json_text_with_structured_content(team_server: TeamServer) -> None:
    async def main() -> types.CallToolResult:
        async with client(team_server) as c:
            return await c.call_tool("stats", {})

    result = run(main)
    assert text_of(result) == '{"agent": "@Alice", "team": "team-1"}'
    assert result.structured_content == {"agent": "@Alice", "team": "team-1"}


def test_images_become_image_content(team_server: TeamServer) -> None:
    from tests.server.cards import PNG

    async def main() -> list[types.CallToolResult]:
        async with client(team_server) as c:
            return [await c.call_tool("pixel", {}), await c.call_tool("pixel", {"caption": "red"})]

    alone, captioned = run(main)
    assert isinstance(alone.content[0], types.ImageContent)
    assert alone.content[0].mime_type == "image/png"
    import base64

    assert base64.b64decode(alone.content[0].data) == PNG
    assert [type(part) for part in captioned.content] == [types.TextContent, types.ImageContent]


def test_tools_needing_approval_are_refused_unless_the_server_allows_them(system: ActorSystem) -> None:
    async def call(config: ServeConfig) -> types.CallToolResult:
        server = TeamServer(config, system=system)
        try:
            async with client(server) as c:
                return await c.call_tool("wipe", {})
        finally:
            await server.aclose()

    from tests.server.cards import WIPES

    WIPES.clear()
    refused = asyncio.run(call(make_config()))
    assert refused.is_error
    assert "approval" in text_of(refused) and "--approve-all" in text_of(refused)
    assert WIPES == []  # the handler did not run
    allowed = asyncio.run(call(make_config(approve_all=True)))
    assert not allowed.is_error and text_of(allowed) == "wiped"
    assert WIPES == ["wiped"]


def test_the_facade_refuses_tools_needing_approval_too(system: ActorSystem) -> None:
    from tests.server.cards import WIPES

    async def call(config: ServeConfig) -> list[types.CallToolResult]:
        server = TeamServer(config, system=system)
        try:
            async with client(server) as c:
                return [
                    await c.call_tool("call_tool", {"name": "wipe", "arguments": {}}),
                    await c.call_tool("wipe", {"unexpected": 1}),
                ]
        finally:
            await server.aclose()

    WIPES.clear()
    refused, invalid = asyncio.run(call(make_config(facade=True)))
    assert refused.is_error and "--approve-all" in text_of(refused)
    # The arguments are validated before approval is considered, as on every channel.
    assert invalid.is_error and "Invalid arguments for wipe" in text_of(invalid)
    assert WIPES == []
    (allowed, _) = asyncio.run(call(make_config(facade=True, approve_all=True)))
    assert text_of(allowed) == "wiped" and WIPES == ["wiped"]


# -- identity ----------------------------------------------------------------------------


def test_each_client_is_its_own_agent_named_by_its_declared_name(team_server: TeamServer) -> None:
    async def main() -> list[str]:
        async with client(team_server, "Alice") as a, client(team_server, "Bob") as b:
            results = [await a.call_tool("whoami", {}), await b.call_tool("whoami", {})]
            await a.call_tool("add_note", {"text": "from alice"})
            await b.call_tool("add_note", {"text": "from bob"})
            notes = await b.call_tool("list_notes", {})
        return [text_of(r) for r in [*results, notes]]

    alice, bob, notes = run(main)
    assert (alice, bob) == ("@Alice", "@Bob")
    assert '"author": "@Alice"' in notes and '"author": "@Bob"' in notes
    members = {m.name for m in team_server.team.members()}
    assert {"Alice", "Bob"} <= members


def test_asking_for_the_team_context_is_activity_that_renews_leases(team_server: TeamServer) -> None:
    # A client that polls get_team_context is at work: the leases of its tasks are renewed
    # by its activity, and this call once noted none.
    async def main() -> float | None:
        async with client(team_server, "Alice") as a:
            await a.call_tool("whoami", {})
            team_server.team._activity.pop("@Alice", None)
            context = await a.call_tool("get_team_context", {})
            assert not context.is_error
            return team_server.team.last_activity("@Alice")

    assert run(main) is not None


def test_the_fixed_agent_name_overrides_the_declared_one(config: ServeConfig, system: ActorSystem) -> None:
    server = TeamServer(config, system=system, agent_name="Carol")

    async def main() -> str:
        try:
            async with client(server, "Alice") as c:
                return text_of(await c.call_tool("whoami", {}))
        finally:
            await server.aclose()

    assert asyncio.run(main()) == "@Carol"


def test_an_agent_header_is_read_as_utf8_and_an_unusable_one_passed_over(team_server: TeamServer) -> None:
    # HTTP hands headers over as Latin-1; an unusable name used to make every such client
    # one shared agent instead of the one it declared.
    assert team_server.agent_key("Alice", header="Jürgen".encode().decode("latin-1")) == "Jürgen"
    assert team_server.agent_key("Alice", header="@@@") == "Alice"
    assert team_server.agent_key("Alice", header="Gus") == "Gus"


def test_a_handshake_client_leaves_the_roster_when_its_connection_ends(team_server: TeamServer) -> None:
    async def main() -> tuple[set[str], set[str]]:
        async with client(team_server, "Dave", mode="legacy") as c:
            # Concurrent first requests on one connection still take one lease.
            answers = await asyncio.gather(*(c.call_tool("whoami", {}) for _ in range(5)))
            assert {text_of(answer) for answer in answers} == {"@Dave"}
            during = {m.name for m in await anyio.to_thread.run_sync(team_server.team.members)}
        after = {m.name for m in await anyio.to_thread.run_sync(team_server.team.members)}
        return during, after

    during, after = run(main)
    assert "Dave" in during
    assert "Dave" not in after


def test_a_client_whose_name_is_taken_joins_under_another(team_server: TeamServer, system: ActorSystem) -> None:
    FakeObserver("Alice", "team-1", system=system).team.register_member(
        SessionAgent("Alice", system.team("team-1")).address
    )

    async def main() -> str:
        async with client(team_server, "Alice") as c:
            return text_of(await c.call_tool("whoami", {}))

    assert run(main) == "@Alice-2"


# -- prompts as resources ------------------------------------------------------------------


def test_system_prompts_are_resources_and_prompts_rendered_for_the_caller(team_server: TeamServer) -> None:
    async def main() -> tuple[list[str], str, list[str], str]:
        async with client(team_server, "Erin") as c:
            resources = [str(r.uri) for r in (await c.list_resources()).resources]
            contents = (await c.read_resource("toolcards://team-1/motd")).contents[0]
            assert isinstance(contents, types.TextResourceContents)
            prompts = [p.name for p in (await c.list_prompts()).prompts]
            message = (await c.get_prompt("motd")).messages[0].content
            assert isinstance(message, types.TextContent)
            return resources, contents.text, prompts, message.text

    resources, resource_text, prompts, prompt_text = run(main)
    assert resources == ["toolcards://team-1/motd", "toolcards://team-1/notes_board"]
    assert prompts == ["motd", "notes_board"]
    assert resource_text == prompt_text == "Be kind. You are @Erin."


def test_an_unknown_resource_is_a_protocol_error_naming_the_known_ones(team_server: TeamServer) -> None:
    from mcp.shared.exceptions import MCPError

    async def main() -> str:
        async with client(team_server) as c:
            try:
                await c.read_resource("toolcards://team-1/nothing")
            except MCPError as exc:
                return str(exc)
        return "no error"

    assert run(main) == "Unknown resource 'nothing'. Known: motd, notes_board."


def test_a_state_change_notifies_listeners_who_read_the_new_text(team_server: TeamServer) -> None:
    uri = "toolcards://team-1/notes_board"

    async def main() -> tuple[str, str]:
        async with client(team_server, "Frank") as c:
            async with c.listen(resource_subscriptions=[uri, "toolcards://team-1/motd"]) as sub:
                await c.call_tool("add_note", {"text": "ship it"})
                with anyio.fail_after(20):
                    event = await sub.__aiter__().__anext__()
            contents = (await c.read_resource(uri)).contents[0]
            assert isinstance(contents, types.TextResourceContents)
            return str(getattr(event, "uri", "")), contents.text

    updated, text = run(main)
    assert updated == uri
    assert "1. ship it (@Frank)" in text


def test_handshake_clients_get_resources_updated_for_their_subscriptions(team_server: TeamServer) -> None:
    uri = "toolcards://team-1/notes_board"

    async def main() -> list[str]:
        received: list[str] = []
        arrived = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                received.append(str(message.params.uri))
                arrived.set()

        async with client(team_server, "Gina", mode="legacy", message_handler=on_message) as c:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await c.subscribe_resource(uri)
            await c.call_tool("add_note", {"text": "hello"})
            with anyio.fail_after(20):
                await arrived.wait()
        return received

    assert run(main) == [uri]


# -- facade ----------------------------------------------------------------------------------


def test_facade_mode_lists_the_meta_tools_and_the_hot_ones(system: ActorSystem) -> None:
    server = TeamServer(make_config(facade=True, hot_tools=["add_note"]), system=system)

    async def main() -> tuple[list[str], list[dict[str, Any]], dict[str, Any], list[types.CallToolResult]]:
        try:
            async with client(server) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                found = await c.call_tool("search_tools", {"query": "repeat some text"})
                described = await c.call_tool("describe_tool", {"name": "echo"})
                calls = [
                    await c.call_tool("call_tool", {"name": "echo", "arguments": {"text": "hi", "times": 2}}),
                    await c.call_tool("call_tool", {"name": "echo", "arguments": {"text": ""}}),
                    await c.call_tool("call_tool", {"name": "ecko"}),
                    await c.call_tool("echo", {"text": "direct"}),
                    await c.call_tool("search_tools", {}),
                    await c.call_tool("get_team_context", {}),  # unlisted in facade mode, callable by name
                ]
                assert found.structured_content is not None and described.structured_content is not None
                return names, found.structured_content["result"], described.structured_content, calls
        finally:
            await server.aclose()

    names, found, described, calls = asyncio.run(main())
    assert names == ["search_tools", "describe_tool", "call_tool", "add_note"]
    assert found[0]["name"] == "echo" and found[0]["summary"] == "Repeat some text." and found[0]["score"] > 0
    assert described["input_schema"]["required"] == ["text"]
    via_facade, invalid, unknown, direct, no_query, context = calls
    assert not context.is_error and text_of(context)
    assert text_of(via_facade) == "hi hi"
    assert invalid.is_error and "Invalid arguments for echo: text" in text_of(invalid)
    assert unknown.is_error and "Did you mean echo?" in text_of(unknown)
    assert text_of(direct) == "direct"
    assert no_query.is_error and "Invalid arguments for search_tools: query: Field required" in text_of(no_query)


def test_unknown_hot_tools_fail_at_start(system: ActorSystem) -> None:
    from toolcards.errors import WiringError

    server = TeamServer(make_config(facade=True, hot_tools=["echo", "teleport"]), system=system)
    with pytest.raises(WiringError, match="teleport"):
        server.start()
    server.close()


# -- pydantic-ai as the client ----------------------------------------------------------------


class LowLevelInProcTransport:
    """fastmcp transport running a low-level ``Server`` over in-memory JSON-RPC streams."""

    def __new__(cls, server: Any) -> Any:
        from fastmcp.client.transports import ClientTransport
        from fastmcp.client.transports.base import TransportOptions
        from mcp.shared.memory import create_client_server_memory_streams

        class Transport(ClientTransport):
            @contextlib.asynccontextmanager
            async def connect_session(
                self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
            ) -> AsyncIterator[Any]:
                options = transport_options or TransportOptions()
                async with (
                    create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)),
                    anyio.create_task_group() as tasks,
                ):
                    tasks.start_soon(lambda: server.run(s_read, s_write, server.create_initialization_options()))
                    try:
                        async with options.session_class(
                            read_stream=c_read, write_stream=c_write, **session_kwargs
                        ) as session:
                            yield session
                    finally:
                        tasks.cancel_scope.cancel()

        return Transport()


def test_a_pydantic_ai_agent_uses_the_served_tools(team_server: TeamServer) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["schemas"] = {tool.name: tool.parameters_json_schema for tool in info.function_tools}
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(returns) == 2:
            return ModelResponse(parts=[TextPart(f"{returns[0].content} / {type(returns[1].content).__name__}")])
        return ModelResponse(parts=[ToolCallPart("echo", {"text": "hi", "times": 2}), ToolCallPart("pixel", {})])

    toolset = MCPToolset(LowLevelInProcTransport(team_server.server))
    agent = Agent(FunctionModel(respond), toolsets=[toolset])

    async def main() -> str:
        result = await agent.run("go")
        return result.output

    assert run(main) == "hi hi / BinaryImage"
    assert seen["schemas"]["echo"]["required"] == ["text"]


def test_an_unusable_agent_name_is_refused_before_any_actor_starts(config: ServeConfig) -> None:
    import pykka

    from toolcards import WiringError

    with pytest.raises(WiringError, match="'@@@' has no usable characters"):
        TeamServer(config, agent_name="@@@")
    assert pykka.ActorRegistry.get_all() == []  # nothing left to keep the process alive
