"""The front door: a user's own pydantic-ai agent on a team in three lines.

Real agents (driven by FunctionModel), real actors, a real SQLite store shared with other OS
processes of the same team.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolcards
from toolcards import ToolFactory, WiringError
from toolcards.planning import PlanningTool
from toolcards.store import close_default_stores
from toolcards.team import RoleProfile


@dataclass
class Deps:
    project: str


class Verdict(BaseModel):
    tasks_seen: int
    project: str


def run_child(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture
def shared_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One SQLite store for this process and its children."""
    store = tmp_path / "team.db"
    monkeypatch.setenv("TOOLCARDS_STORE", str(store))
    close_default_stores()
    return {**os.environ, "TOOLCARDS_STORE": str(store)}


def test_your_own_agent_joins_a_team_and_sees_another_process_change(shared_env: dict[str, str]) -> None:
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        called = {part.tool_name for m in messages for part in getattr(m, "parts", ()) if hasattr(part, "tool_name")}
        if "update_planning" not in called:
            args = {"create_tasks": [{"description": "Draft the release notes"}]}
            return ModelResponse(parts=[ToolCallPart("update_planning", args)])
        if "project_name" not in called:
            return ModelResponse(parts=[ToolCallPart("project_name", {})])
        verdict = {"tasks_seen": seen[-1].count("#"), "project": "seen"}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])

    # The user's own agent: its own tool, deps and structured output.
    agent = Agent(FunctionModel(model), deps_type=Deps, output_type=Verdict, instructions="Be brief.")

    @agent.tool
    def project_name(ctx: RunContext[Deps]) -> str:
        """The project's name."""
        return ctx.deps.project

    with toolcards.Team("acme") as team:
        alice = team.member("Alice", role="builder")
        result = agent.run_sync("plan", deps=Deps("apollo"), toolsets=[alice.toolset(PlanningTool())])
        assert isinstance(result.output, Verdict)
        assert "Be brief." in seen[0] and "**Team planning:** no tasks yet." in seen[0]
        assert "Draft the release notes" in seen[-1]  # its own change, in its context next request

        # Another OS process joins the same team and sees Alice's task, then adds one.
        child = run_child(
            """
            import toolcards
            from toolcards.planning import PlanningTool
            with toolcards.Team("acme") as team:
                bob = team.member("Bob")
                tools = {t.name: t for t in bob.factory(PlanningTool()).tools()}
                print(tools["search_planning"].call_sync({}))
                print(tools["update_planning"].call_sync({"update_tasks": [{"id": 1, "owner": "@Bob"}]}))
            """,
            shared_env,
        )
        assert child.returncode == 0, child.stderr
        assert "Draft the release notes" in child.stdout and "creator @Alice" in child.stdout
        assert "Updated task 1." in child.stdout

        seen.clear()
        agent.run_sync("again", deps=Deps("apollo"), toolsets=[alice.toolset(PlanningTool())])
        assert "owner @Bob" in seen[0]  # Bob's change, from the other process, in Alice's context


def test_a_script_that_simply_exits_loses_nothing_and_does_not_hang(shared_env: dict[str, str]) -> None:
    child = run_child(
        """
        import toolcards
        from toolcards.planning import PlanningTool
        team = toolcards.Team("acme")
        tools = {t.name: t for t in team.member("Carol").factory(PlanningTool()).tools()}
        print(tools["update_planning"].call_sync({"create_tasks": [{"description": "left behind"}]}))
        """,  # no close: the process ends with the main thread
        shared_env,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "Created task 1."
    with toolcards.Team("acme") as team:
        plan = team.member("Dave").commands(PlanningTool()).dispatch("/search_planning")
        assert "left behind" in plan
        # The call's record reached the team's event log (what the dashboard shows).
        logged = [event for _, event in team.handle.events() if getattr(event, "tool", None) == "update_planning"]
        assert [event.agent for event in logged] == ["@Carol"]


def test_async_applications_use_it_in_their_running_loop(shared_env: dict[str, str]) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("update_planning", {"create_tasks": [{"description": "async"}]})])
        return ModelResponse(parts=[TextPart("done")])

    async def main() -> str:
        async with toolcards.Team("acme") as team:
            agent = Agent(FunctionModel(model), toolsets=[team.member("Eve").toolset(PlanningTool())])
            await agent.run("go")
            return team.member("Eve").commands(PlanningTool()).dispatch("/search_planning")

    assert "async" in asyncio.run(main())


def test_members_are_named_once_and_a_closed_team_says_how_to_reopen() -> None:
    team = toolcards.Team("acme")
    alice = team.member("Alice")
    assert team.member("Alice") is alice and team.members() == [alice]
    assert [m.name for m in team.handle.members()] == ["Alice"]
    with pytest.raises(WiringError, match=r"team\.member\('bad name'\): a member name is 1-\d+ letters") as refused:
        team.member("bad name")
    assert "omit" not in str(refused.value)  # the model's refusal offers that; this call has no such choice
    team.close()
    team.close()  # idempotent
    with pytest.raises(WiringError, match=r"closed: open it again with toolcards\.Team\('acme'\)"):
        team.member("Bob")
    with pytest.raises(WiringError, match="Team name '' is not valid"):
        toolcards.Team("")


def test_two_team_objects_of_one_process_share_the_actors() -> None:
    one, two = toolcards.Team("acme"), toolcards.Team("acme")
    try:
        assert one.system is two.system and one.handle is two.handle
        assert one.member("Alice").commands(PlanningTool()).dispatch("/get_planning").startswith("**Team planning")
        with pytest.raises(WiringError, match="already a member"):
            two.member("Alice")
    finally:
        one.close()
        assert two.handle.ref.is_alive()  # the other team object still uses them
        two.close()
    assert not one.handle.ref.is_alive()


def test_wiring_errors_say_what_to_pass_with_an_example() -> None:
    with pytest.raises(WiringError) as err:
        ToolFactory([PlanningTool()]).toolset()
    message = str(err.value)
    assert "team = toolcards.Team('acme')" in message
    assert "team.member('Alice').toolset(PlanningTool())" in message
    with toolcards.Team("acme") as team, pytest.raises(WiringError, match="at least one card"):
        team.member("Alice").toolset()


def test_a_runtime_member_can_run_your_prebuilt_agent() -> None:
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("built")])

    mine = Agent(FunctionModel(model), instructions="House rules.")
    with toolcards.Team("acme") as team:
        runtime = team.runtime(models={"mine": mine})
        runtime.register_profile(RoleProfile(role="writer", description="Writes.", model="mine"))
        runtime.hire("writer", "Wren")
        assert runtime.ask("Wren", "write") == "built"
    assert "House rules." in seen[0] and "You are @Wren (writer) in team acme" in seen[0]


def test_a_name_held_by_another_process_is_refused_and_close_leaves_every_roster(shared_env: dict[str, str]) -> None:
    from toolcards.actors import ActorSystem, MemberLeft
    from toolcards.store import store_journals, store_presence

    # Another actor system on the same store has a presence of its own: another process, to the roster.
    with ActorSystem(journal=store_journals(), presence=store_presence()) as elsewhere:
        toolcards.Team("acme", system=elsewhere).member("Alice")
        with toolcards.Team("acme") as team:
            with pytest.raises(
                WiringError,
                match=r"@Alice is already a member of team acme, in process \d+ on host .+ "
                r"Give this agent another name, e.g. team.member\('Alice-2'\)",
            ):
                team.member("Alice")
            team.member("Bob")
            assert [m.handle for m in team.handle.present_members()] == ["@Alice", "@Bob"]
        other = elsewhere.team("acme")
        assert [m.handle for m in other.present_members()] == ["@Alice"]  # Bob left at close
        assert [(e.member.handle, e.reason) for _, e in other.events() if isinstance(e, MemberLeft)] == [
            ("@Bob", "left")
        ]
