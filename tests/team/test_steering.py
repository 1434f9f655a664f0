"""Steering and stopping real pydantic-ai runs (FunctionModel, no network).

A message sent to a member mid-run — from another thread, or from another OS process sharing
the team's store — is in the model's very next request, and nowhere twice. ``stop_member`` ends
a run at its next step: the tool call it meets fails with the reason, no model request follows,
and the application gets :class:`~toolcards.errors.MemberStopped`.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolcards
from tests.team.cards import PostParam, Turn, call, scripted
from toolcards import MemberStopped, ToolCard, ToolFactory, capability
from toolcards.actors import ActorSystem
from toolcards.pydantic_ai import TeamContext
from toolcards.team import MessagingTool, RoleProfile, RunFinished, StopDelivered, TeamRuntime
from toolcards.testing import FakeObserver

REPO = Path(__file__).resolve().parents[2]
WAIT = 120.0
DURING: list[Callable[[], Any]] = []
"""What the stopper tool runs (inside the run that calls it)."""


class StopperTool(ToolCard):
    """A tool that runs the test's action inside the run: the stop then arrives between steps."""

    kind: ClassVar[str] = "team_test_stopper"
    act: PostParam | bool = True

    @capability("act", name="do_work")
    def do_work(self) -> str:
        """Do some work."""
        for action in DURING:
            action()
        return "worked"


def prompts_of(messages: list[ModelMessage]) -> list[str]:
    return [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]


def worker(mode: str, team: str, name: str, *args: str) -> str:
    """Run ``tests.mailbox_worker`` to the end; returns its last line."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.mailbox_worker", mode, team, name, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


class Script:
    """A model that makes ``tool`` calls until its fourth request, running ``at_step[n]`` during
    request ``n`` of its first run; it records every request it was sent."""

    def __init__(self, tool: str, at_step: dict[int, Callable[[], Any]]) -> None:
        self.tool = tool
        self.at_step = at_step
        self.requests: list[list[str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(prompts_of(messages))
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        action = self.at_step.pop(step, None)
        if action is not None:
            action()
        if step < 4:
            return ModelResponse(parts=[ToolCallPart(self.tool, {})])
        return ModelResponse(parts=[TextPart("done")])


def eventually(found: Callable[[], list[Any]]) -> list[Any]:
    """What ``found`` returns once it is not empty (events reach the log in batches)."""
    deadline = time.monotonic() + WAIT
    while not (result := found()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return result


def in_thread(action: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        thread = threading.Thread(target=action)
        thread.start()
        thread.join(WAIT)

    return run


@pytest.mark.parametrize("attach", ["toolset", "team_context"])
def test_a_message_sent_mid_run_is_in_the_next_request_once(attach: str) -> None:
    with toolcards.Team("steer") as team:
        alice, bob = team.member("Alice"), team.member("Bob")
        send = {t.name: t for t in bob.factory(MessagingTool()).tools()}["send_message"]
        script = Script("list_reminders", {1: in_thread(lambda: send.call_sync({"to": "Alice", "text": "hi mid-run"}))})
        if attach == "toolset":
            agent = Agent(FunctionModel(script), toolsets=[alice.toolset(MessagingTool())])
        else:
            agent = Agent(FunctionModel(script), capabilities=[TeamContext(alice.factory(MessagingTool()))])
        result = agent.run_sync("go")
        steered = "Message from @Bob:\nhi mid-run"
        assert [steered in request for request in script.requests] == [False, False, True, True, True]
        assert prompts_of(result.all_messages()).count(steered) == 1
        assert result.output == "done"
        reader = {t.name: t for t in alice.factory(MessagingTool()).tools()}
        assert reader["read_messages"].call_sync({}) == "No unread messages."


def test_a_message_from_another_process_is_in_the_next_request_once() -> None:
    with toolcards.Team("steer") as team:
        alice = team.member("Alice")
        script = Script("list_reminders", {1: lambda: worker("send", "steer", "Bob", "Alice", "from another process")})
        agent = Agent(FunctionModel(script), toolsets=[alice.toolset(MessagingTool())])
        result = agent.run_sync("go")
        steered = "Message from @Bob:\nfrom another process"
        assert [steered in request for request in script.requests] == [False, False, True, True, True]
        assert prompts_of(result.all_messages()).count(steered) == 1


def test_a_message_to_a_member_that_is_not_running_waits_for_its_next_run() -> None:
    with toolcards.Team("steer") as team:
        alice, bob = team.member("Alice"), team.member("Bob")
        send = {t.name: t for t in bob.factory(MessagingTool()).tools()}["send_message"]
        send.call_sync({"to": "Alice", "text": "while you were away"})
        script = Script("list_reminders", {})
        Agent(FunctionModel(script), toolsets=[alice.toolset(MessagingTool())]).run_sync("go")
        assert "Message from @Bob:\nwhile you were away" in script.requests[0]


def test_stop_member_ends_a_front_door_agent_s_run_at_its_next_tool_call() -> None:
    with toolcards.Team("steer") as team:
        alice = team.member("Alice")
        ops = team.member("Ops").commands(MessagingTool())
        script = Script("list_reminders", {1: lambda: ops.dispatch("/stop_member Alice the plan changed")})
        agent = Agent(FunctionModel(script), toolsets=[alice.toolset(MessagingTool())])
        with pytest.raises(MemberStopped) as stopped:
            agent.run_sync("go")
        assert (stopped.value.member, stopped.value.by, stopped.value.reason) == ("@Alice", "@Ops", "the plan changed")
        assert str(stopped.value) == "@Alice's run was stopped by @Ops: the plan changed"
        assert len(script.requests) == 2  # no model request after the stop
        # The stop was delivered once: the next run is not stopped.
        assert agent.run_sync("again").output == "done"


def test_stop_member_from_another_process_ends_the_run_before_its_next_model_request() -> None:
    DURING[:] = [lambda: worker("stop", "steer", "Ops", "Alice", "stop now")]
    with toolcards.Team("steer") as team:
        alice = team.member("Alice")
        script = Script("do_work", {})
        agent = Agent(FunctionModel(script), toolsets=[alice.toolset(MessagingTool(), StopperTool())])
        with pytest.raises(MemberStopped, match="stopped by @Ops: stop now"):
            agent.run_sync("go")
        assert len(script.requests) == 1  # the stop arrived during the tool call, before request 2
        events = eventually(lambda: [event for _, event in team.handle.events() if isinstance(event, StopDelivered)])
        assert [(e.member, e.by) for e in events] == [("@Alice", "@Ops")]
    DURING.clear()


# -- runtime members ---------------------------------------------------------------------------


def add_worker(runtime: TeamRuntime, behaviour: Callable[[Turn], Any], cards: list[Any] | None = None) -> None:
    runtime.register_model("worker", lambda profile: scripted(behaviour))
    runtime.register_profile(RoleProfile(role="worker", description="Works.", model="worker", cards=cards or []))
    runtime.hire("worker", "Worker")


def runs(runtime: TeamRuntime) -> list[RunFinished]:
    return [event for _, event in runtime.team.events() if isinstance(event, RunFinished)]


def test_a_runtime_member_reads_a_message_sent_mid_run_in_the_same_run(runtime: TeamRuntime) -> None:
    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        if turn.steered:
            return "read: " + " | ".join(turn.steered)
        if turn.step == 1:
            in_thread(lambda: runtime.send("Worker", "mid-run note", sender="@Lead"))()
        return [call("list_reminders")]

    add_worker(runtime, behaviour)
    runtime.send("Worker", "start")
    runtime.wait_idle(WAIT)
    assert [(run.sender, run.output) for run in runs(runtime)] == [("user", "read: Message from @Lead:\nmid-run note")]


def test_messages_to_an_idle_runtime_member_start_one_run(runtime: TeamRuntime) -> None:
    add_worker(runtime, lambda turn: f"handled: {turn.prompt}")
    runtime.send("Worker", "one")
    runtime.wait_idle(WAIT)
    assert [run.output for run in runs(runtime)] == ["handled: Message from user:\none"]


def test_stop_member_ends_a_runtime_member_s_run_and_its_next_run_starts_normally(
    runtime: TeamRuntime, system: ActorSystem
) -> None:
    ops = FakeObserver("Ops", "team-1", system=system, role="ops")
    ops.team.register_member(ops.address)
    commands = ToolFactory([MessagingTool()], observer=ops).command_registry()
    seen: list[list[str]] = []

    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        seen.append([str(part.content) for part in turn.returns])
        if turn.text == "again":
            return "fine"
        if turn.step == 1:
            commands.dispatch("/stop_member Worker the plan changed")
        return [call("list_reminders")]

    add_worker(runtime, behaviour)
    with pytest.raises(MemberStopped, match="@Worker's run was stopped by @Ops: the plan changed"):
        runtime.ask("Worker", "go", timeout=WAIT)
    assert len(seen) == 2  # the stop met the second tool call; no model request followed
    assert runs(runtime)[-1].error == "MemberStopped: @Worker's run was stopped by @Ops: the plan changed"
    # The stopped run stays in the member's history, the refused call and its reason included.
    history = runtime.history("Worker")
    refusals = [
        str(p.content) for m in history if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    assert refusals[-1].startswith("You were stopped by @Ops: the plan changed. Stop working")
    assert runtime.ask("Worker", "again", timeout=WAIT) == "fine"


def test_a_stop_for_an_idle_runtime_member_is_delivered_without_stopping_its_next_run(
    runtime: TeamRuntime, system: ActorSystem
) -> None:
    ops = FakeObserver("Ops", "team-1", system=system, role="ops")
    ops.team.register_member(ops.address)
    add_worker(runtime, lambda turn: [call("list_reminders")] if turn.step == 0 else f"did {turn.text}")
    commands = ToolFactory([MessagingTool()], observer=ops).command_registry()
    commands.dispatch("/stop_member Worker nothing to do")
    delivered = eventually(lambda: [e for _, e in runtime.team.events() if isinstance(e, StopDelivered)])
    assert [(e.member, e.reason) for e in delivered] == [("@Worker", "nothing to do")]
    assert runtime.ask("Worker", "work", timeout=WAIT) == "did work"
