"""MemberActor: one run per message, history kept, prompts fresh per request, no deadlocks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from pydantic_ai.messages import ModelRequest, ToolCallPart, UserPromptPart

from tests.team.cards import RENDEZVOUS, PostParam, Turn, call, scripted
from toolcards import ToolCard, capability, dump_cards
from toolcards.actors import ActorSystem
from toolcards.team import RoleProfile, RunFinished, TeamMessage, TeamRuntime, TeamTool
from toolcards.team._member import running_member

GATE = threading.Event()
ENTERED = threading.Event()
CALLBACK: list[Callable[[], Any]] = []


class GateTool(ToolCard):
    """Holds a member mid-run until the test opens the gate."""

    kind: ClassVar[str] = "team_test_gate"
    wait: PostParam | bool = True

    @capability("wait", name="wait_at_gate")
    def wait_at_gate(self) -> str:
        """Wait until the gate opens."""
        ENTERED.set()
        assert GATE.wait(20), "the test never opened the gate"
        return "through"


class CallbackTool(ToolCard):
    """Runs the test's callback inside the member's run and returns what happened."""

    kind: ClassVar[str] = "team_test_callback"
    run: PostParam | bool = True

    @capability("run", name="run_callback")
    def run_callback(self) -> str:
        """Run the callback."""
        try:
            return f"ok: {CALLBACK[0]()}"
        except RuntimeError as exc:
            return f"refused: {exc}"


@pytest.fixture(autouse=True)
def reset_gate() -> None:
    GATE.clear()
    ENTERED.clear()
    CALLBACK.clear()
    RENDEZVOUS.reset()


def one_tool_then_answer(tool: str, **args: Any) -> Callable[[Turn], list[ToolCallPart] | str]:
    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        if turn.step == 0:
            return [call(tool, **args)]
        return str(turn.returns[-1].content)

    return behaviour


def add_role(runtime: TeamRuntime, role: str, behaviour: Callable[[Turn], Any], cards: list[Any]) -> None:
    runtime.register_model(role, lambda profile: scripted(behaviour))
    runtime.register_profile(RoleProfile(role=role, description=f"The {role}.", model=role, cards=cards))


def test_history_is_kept_across_messages(runtime: TeamRuntime) -> None:
    seen: list[list[str]] = []

    def behaviour(turn: Turn) -> str:
        seen.append(
            [
                str(p.content)
                for m in turn.history
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, UserPromptPart)
            ]
        )
        return f"answer to {turn.text}"

    add_role(runtime, "echo", behaviour, [])
    runtime.hire("echo", "Echo")
    assert runtime.ask("Echo", "one") == "answer to one"
    assert runtime.ask("Echo", "two", sender="@Lead") == "answer to two"
    assert seen == [[], ["Message from user:\none"]]
    assert len(runtime.history("Echo")) == 4


def test_system_prompts_are_re_rendered_before_every_request(runtime: TeamRuntime) -> None:
    prompts: list[str] = []

    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        prompts.append(turn.info.instructions or "")
        if turn.step == 0:
            return [call("post_note", text="first")]
        return "done"

    add_role(runtime, "poster", behaviour, [{"kind": "team_test_board"}])
    runtime.hire("poster", "Poster")
    runtime.ask("Poster", "go")
    assert "Board: empty" in prompts[0]
    assert "Board: @Poster: first" in prompts[1]
    assert prompts[0].startswith("You are @Poster (poster) in team team-1. The poster.")


def test_tools_run_off_the_member_thread_and_ask_the_orchestrator_not_the_member(runtime: TeamRuntime) -> None:
    add_role(runtime, "prober", one_tool_then_answer("probe"), [{"kind": "team_test_probe"}])
    runtime.hire("prober", "Prober")
    answer = runtime.ask("Prober", "probe yourself", timeout=30)
    assert "roster=Prober " in answer and "roles=builder,prober" in answer
    assert "MemberActor" not in answer.split("roster=")[0]  # a worker thread, not the actor's


def test_commands_answer_while_the_member_is_mid_run(runtime: TeamRuntime) -> None:
    runtime.register_profile(
        RoleProfile(
            role="gated",
            description="Waits.",
            model="gated",
            cards=[*dump_cards([TeamTool()]), {"kind": "team_test_gate"}],
        )
    )
    runtime.register_model("gated", lambda profile: scripted(one_tool_then_answer("wait_at_gate")))
    runtime.hire("gated", "Gated")
    runtime.send("Gated", "wait")
    assert ENTERED.wait(20)
    assert runtime.commands("Gated").dispatch("/team_roster") == "Team roster (1):\n- @Gated (gated, you)"
    GATE.set()
    runtime.wait_idle(30)


def test_a_failed_run_is_reported_and_the_member_carries_on(runtime: TeamRuntime) -> None:
    def behaviour(turn: Turn) -> str:
        if turn.text == "crash":
            raise ValueError("model down")
        return "fine"

    add_role(runtime, "flaky", behaviour, [])
    runtime.hire("flaky", "Flaky")
    events: list[Any] = []
    runtime.team.subscribe(lambda seq, event: events.append(event))
    with pytest.raises(ValueError, match="model down"):
        runtime.ask("Flaky", "crash")
    runtime.send("Flaky", "crash")
    assert runtime.ask("Flaky", "again") == "fine"
    runs = [e for e in runtime.team.events() if isinstance(e[1], RunFinished)]
    assert [(e.error, e.output) for _, e in runs] == [
        ("ValueError: model down", None),
        ("ValueError: model down", None),
        (None, "fine"),
    ]
    assert len(runtime.history("Flaky")) == 2  # failed runs leave the history as it was


def test_two_members_messaging_each_other_mid_run_do_not_deadlock(runtime: TeamRuntime) -> None:
    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        if turn.sender != "user":
            return f"got {turn.text}"
        if turn.steered:  # the other's message reached this run before its next model request
            return "got " + turn.steered[-1].split("\n", 1)[1]
        other = "Bea" if turn.me == "Ann" else "Ann"
        if turn.step == 0:
            return [call("rendezvous")]  # both runs are now in progress at once
        if turn.step == 1:
            return [call("send_message", to=other, text=f"hello from {turn.me}")]
        return "sent"

    add_role(runtime, "peer", behaviour, [{"kind": "team_test_rendezvous"}])
    runtime.hire("peer", "Ann")
    runtime.hire("peer", "Bea")
    runtime.send("Ann", "greet")
    runtime.send("Bea", "greet")
    runtime.wait_idle(60)
    outputs = [(e.member, e.output) for _, e in runtime.team.events() if isinstance(e, RunFinished)]
    # Each read the other's message exactly once: mid-run (steered) or as a run of its own.
    assert sorted(output for member, output in outputs if member == "@Ann" and output != "sent") == [
        "got hello from Bea"
    ]
    assert sorted(output for member, output in outputs if member == "@Bea" and output != "sent") == [
        "got hello from Ann"
    ]
    messages = [e for _, e in runtime.team.events() if isinstance(e, TeamMessage) and e.sender != "user"]
    assert {(m.sender, m.recipient) for m in messages} == {("@Ann", "@Bea"), ("@Bea", "@Ann")}


def test_blocking_runtime_calls_are_refused_inside_a_run(runtime: TeamRuntime) -> None:
    add_role(runtime, "caller", one_tool_then_answer("run_callback"), [{"kind": "team_test_callback"}])
    runtime.hire("caller", "Caller")
    CALLBACK.append(running_member)
    assert runtime.ask("Caller", "who runs?") == "ok: team-1/@Caller"
    assert running_member() is None
    for blocking in (lambda: runtime.ask("Caller", "me?"), runtime.wait_idle, lambda: runtime.fire("Caller")):
        CALLBACK[:] = [blocking]
        answer = runtime.ask("Caller", "try it", timeout=30)
        assert answer.startswith("refused: TeamRuntime.") and "inside @Caller's run, where it would deadlock" in answer


def test_every_member_gets_messaging_unless_its_profile_configures_it(runtime: TeamRuntime) -> None:
    runtime.hire("lead", "Lead")
    runtime.hire("builder")
    runtime.register_profile(
        RoleProfile(
            role="mute",
            description="Cannot send.",
            model="builder",
            cards=[{"kind": "messaging", "send_message": False}],
        )
    )
    runtime.hire("mute", "Mute")
    assert "send_message" in runtime.commands("Builder-1").names
    assert "send_message" not in runtime.commands("Mute").names
    lead_commands = runtime.commands("Lead")
    assert {"send_message", "teammates", "team_roster"} <= set(lead_commands.names)


def test_a_fired_member_drops_its_queued_messages(runtime: TeamRuntime) -> None:
    handled: list[str] = []

    def behaviour(turn: Turn) -> list[ToolCallPart] | str:
        if turn.step == 0 and turn.text == "first":
            return [call("wait_at_gate")]
        handled.append(turn.text)
        return "done"

    add_role(runtime, "slow", behaviour, [{"kind": "team_test_gate"}])
    runtime.hire("slow", "Slow")
    ref = runtime.team.member_ref("Slow")
    assert ref is not None
    runtime.send("Slow", "first")
    assert ENTERED.wait(20)
    runtime.send("Slow", "second")
    runtime.send("Slow", "third")
    runtime.fire("Slow", wait=False)
    GATE.set()
    assert ref.actor_stopped.wait(20)
    assert handled == ["first"]


def test_members_stop_with_the_actor_system(system: ActorSystem, runtime: TeamRuntime) -> None:
    runtime.hire("lead", "Lead")
    runtime.hire("builder")
    refs = [runtime.team.member_ref(name) for name in ("Lead", "Builder-1")]
    runtime.send("Builder-1", "write docs")
    system.stop()
    assert all(ref is not None and not ref.is_alive() for ref in refs)
    threads = [t for t in threading.enumerate() if t.name.startswith("MemberActor")]
    for thread in threads:
        thread.join(20)
    assert not [t for t in threads if t.is_alive()]
