"""Background runs through ExecTool, with real commands: started at once, read by page while
they run, owned by their member, ended by their limits or exec_stop, listed in the context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from bench._process_groups import live_processes_with
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.sandbox.conftest import backend_class, marker, wait_until
from toolcards import Channels, ToolFactory
from toolcards.actors import ActorSystem
from toolcards.errors import RetriableError
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox import ExecLimits, ExecTool
from toolcards.testing import FakeObserver

Call = Callable[..., Any]


def tools(card: ExecTool, observer: FakeObserver) -> tuple[dict[str, Call], Callable[[], str | None]]:
    factory = ToolFactory([card], observer=observer)
    called = {tool.name: (lambda tool=tool, **kw: tool.call_sync(kw)) for tool in factory.tools()}
    prompts = factory.get_system_prompts()
    return called, prompts[0] if prompts else (lambda: None)


def run_id_of(started: str) -> str:
    return started.split("Started background run ", 1)[1].split(" ", 1)[0]


@pytest.fixture(params=["local", "bwrap"])
def mode(request: pytest.FixtureRequest) -> str:
    backend_class(request.param)  # skips where bwrap cannot run
    return str(request.param)


def test_background_runs_are_offered_by_default(alice: FakeObserver) -> None:
    factory = ToolFactory([ExecTool(mode="local")], observer=alice)
    assert {tool.name for tool in factory.tools(Channels.TOOL_CALL)} == {
        "exec_command",
        "exec_status",
        "exec_output",
        "exec_stop",
    }
    assert (
        "background"
        in next(t for t in factory.tools(Channels.TOOL_CALL) if t.name == "exec_command").parameters_schema[
            "properties"
        ]
    )


def test_with_no_runs_allowed_nothing_of_them_is_offered(alice: FakeObserver) -> None:
    factory = ToolFactory([ExecTool(mode="local", max_background_runs=0)], observer=alice)
    assert [tool.name for tool in factory.tools()] == ["exec_command"]
    assert "background" not in factory.tools()[0].parameters_schema["properties"]
    assert factory.get_system_prompts() == []


def test_a_run_starts_at_once_and_its_output_is_paged_while_it_runs(mode: str, alice: FakeObserver) -> None:
    call, context = tools(
        ExecTool(mode=mode, allowed_commands=[], max_background_runs=2, limits=ExecLimits(output_chars=200)), alice
    )
    script = "for i in $(seq 1 40); do echo line-$i; done; sleep 3; echo done >&2; exit 3"
    started = call["exec_command"](cmd=f"sh -c '{script}'", background=True)
    run_id = run_id_of(started)
    assert "check it with exec_status, read its output with exec_output, stop it with exec_stop" in started.lower()
    assert wait_until(lambda: "311 characters of output so far" in call["exec_status"](run_id=run_id))
    listed = context()
    assert listed is not None and f"- {run_id} `sh -c" in listed and "running since" in listed
    pages, offset = [], 0
    while True:  # 40 lines of 7 or 8 characters, 200 characters a page
        page = call["exec_output"](run_id=run_id, offset=offset)
        assert "running for" in page
        pages.append(page.split("]\n", page.count("]\n"))[-1].split("\n[END UNTRUSTED")[0])
        if "[more: " not in page:
            break
        offset = int(page.split(f"[more: exec_output run_id={run_id} offset=", 1)[1].split("]", 1)[0])
    assert len(pages) == 2 and "".join(pages) == "".join(f"line-{i}\n" for i in range(1, 41))
    assert "[no new output yet; call again later with the same offset]" in call["exec_output"](
        run_id=run_id, offset=311
    )
    assert wait_until(lambda: "exit code 3" in call["exec_status"](run_id=run_id), timeout_s=30)
    assert "[no output after this offset; the run has ended]" in call["exec_output"](run_id=run_id, offset=10**6)
    assert "done" in call["exec_output"](run_id=run_id, offset=311)
    assert context() is None  # ended and read: no longer listed


def test_an_ended_run_stays_listed_until_its_owner_reads_it(alice: FakeObserver) -> None:
    call, context = tools(ExecTool(mode="local", allowed_commands=[], max_background_runs=1), alice)
    run_id = run_id_of(call["exec_command"](cmd="echo quick", background=True))
    assert wait_until(lambda: "ended (exit code 0); not read yet" in (context() or ""))
    assert "exit code 0" in call["exec_status"](run_id=run_id)
    assert context() is None


def test_runs_belong_to_the_member_that_started_them(alice: FakeObserver, bob: FakeObserver) -> None:
    as_alice, _ = tools(ExecTool(mode="local", allowed_commands=[], max_background_runs=1), alice)
    as_bob, bobs_context = tools(ExecTool(mode="local", allowed_commands=[], max_background_runs=1), bob)
    run_id = run_id_of(as_alice["exec_command"](cmd=f"sleep {marker()}", background=True))
    with pytest.raises(RetriableError, match=f"No background run '{run_id}' of yours"):
        as_bob["exec_stop"](run_id=run_id)
    with pytest.raises(RetriableError, match="of yours"):
        as_bob["exec_output"](run_id=run_id)
    assert bobs_context() is None
    with pytest.raises(RetriableError, match=r"limited to 1 at once; yours still running: r\d+ `sleep"):
        as_alice["exec_command"](cmd="sleep 1", background=True)
    as_bob["exec_command"](cmd="echo mine", background=True)  # Bob's own limit
    assert "stopped: stop requested" in as_alice["exec_stop"](run_id=run_id)


def test_stop_kills_the_whole_process_group(mode: str, alice: FakeObserver) -> None:
    call, _ = tools(ExecTool(mode=mode, allowed_commands=[], max_background_runs=1), alice)
    tag = marker()
    run_id = run_id_of(call["exec_command"](cmd=f"sh -c 'sleep {tag} & sleep {tag}; echo never'", background=True))
    assert wait_until(lambda: len(live_processes_with(f"sleep {tag}")) >= 2)
    stopped = call["exec_stop"](run_id=run_id)
    assert "stopped: stop requested" in stopped and "every process it started were killed" in stopped
    assert wait_until(lambda: not live_processes_with(f"sleep {tag}"))
    assert "It had already ended" in call["exec_stop"](run_id=run_id)


def test_a_run_ends_at_its_deadline_and_under_the_cards_limits(mode: str, alice: FakeObserver) -> None:
    card = ExecTool(
        mode=mode, allowed_commands=[], max_background_runs=2, background_timeout_s=20, limits=ExecLimits(memory_mb=64)
    )
    call, _ = tools(card, alice)
    tag = marker()
    slow = run_id_of(call["exec_command"](cmd=f"sleep {tag}", timeout_s=0.5, background=True))
    hog = run_id_of(
        call["exec_command"](cmd="python3 -c 'b = bytearray(200 * 1024 * 1024); print(len(b))'", background=True)
    )
    assert wait_until(lambda: "stopped: timeout" in call["exec_status"](run_id=slow))
    assert not live_processes_with(f"sleep {tag}")
    assert wait_until(lambda: "exit code 1" in call["exec_status"](run_id=hog), timeout_s=30)
    assert "MemoryError" in call["exec_output"](run_id=hog)


def test_refusals_come_at_once_and_start_nothing(alice: FakeObserver) -> None:
    call, context = tools(ExecTool(mode="local", max_background_runs=1, allowed_commands=["echo"]), alice)
    with pytest.raises(RetriableError, match="Command 'sleep' is not in the allowed"):
        call["exec_command"](cmd="sleep 5", background=True)
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        call["exec_command"](cmd="echo hi", cwd="../..", background=True)
    with pytest.raises(RetriableError, match="offset must be 0 or more"):
        call["exec_output"](run_id="r1", offset=-1)
    assert context() is None


def test_a_run_takes_no_slot_from_the_teams_other_commands(alice: FakeObserver) -> None:
    call, _ = tools(
        ExecTool(mode="local", allowed_commands=[], max_background_runs=2, options={"max_concurrent": 1}), alice
    )
    tag = marker()
    call["exec_command"](cmd=f"sleep {tag}", background=True)
    assert wait_until(lambda: bool(live_processes_with(f"sleep {tag}")))
    assert "in the foreground" in call["exec_command"](cmd="echo in the foreground")


def test_only_the_newest_output_is_kept(alice: FakeObserver) -> None:
    call, _ = tools(
        ExecTool(mode="local", allowed_commands=[], max_background_runs=1, background_output_chars=1_000), alice
    )
    run_id = run_id_of(call["exec_command"](cmd="sh -c 'seq 1 2000'", background=True))
    assert wait_until(lambda: "exit code 0" in call["exec_status"](run_id=run_id))
    page = call["exec_output"](run_id=run_id)
    assert "were dropped: only the last 1,000 are kept" in page and "\n2000" in page and "\n5\n" not in page


def test_the_sandbox_stopping_ends_its_runs(alice: FakeObserver) -> None:
    with ActorSystem() as system:
        member = FakeObserver("Ann", "stopping", system=system)
        call, _ = tools(ExecTool(mode="local", allowed_commands=[], max_background_runs=1), member)
        tag = marker()
        run_id = run_id_of(call["exec_command"](cmd=f"sleep {tag}", background=True))
        assert wait_until(lambda: bool(live_processes_with(f"sleep {tag}")))
        sandbox = member.team.tool_actors()["#SandboxActor"].proxy()
        run = sandbox.run_of("@Ann", run_id).get()
    assert run.wait(10) and run.status().ending == "stopped: shutdown"
    assert not live_processes_with(f"sleep {tag}")


def test_a_run_outlives_the_model_turn_that_started_it(alice: FakeObserver) -> None:
    """Turn 1 starts a server-like command; turn 2 (a new run of the agent) reads and stops it."""
    factory = ToolFactory([ExecTool(mode="local", allowed_commands=[], max_background_runs=1)], observer=alice)
    seen: list[str] = []
    (workspace_dir("team-1")).mkdir(parents=True, exist_ok=True)
    serve = "sh -c 'echo listening; while true; do sleep 0.05; done'"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(str(last.content))])
        prompt = str(last.content)
        if prompt == "start":
            return ModelResponse(parts=[ToolCallPart("exec_command", {"cmd": serve, "background": True})])
        return ModelResponse(parts=[ToolCallPart("exec_output", {"run_id": "r1"})])

    agent = Agent(FunctionModel(model), toolsets=[factory.toolset()])
    first = agent.run_sync("start")
    assert "Started background run r1" in first.output
    run = alice.team.tool_actors()["#SandboxActor"].proxy().run_of("@Alice", "r1").get()
    assert wait_until(lambda: run.log.end > 0)  # it has printed before the next turn reads it
    second = agent.run_sync("read", message_history=first.all_messages())
    assert "running for" in second.output and "listening" in second.output
    assert "- r1 `sh -c" in seen[2] and "running since" in seen[2]  # turn 2's first request lists it
    commands = factory.get_commands()
    from toolcards.sandbox import ExecStopParam

    assert "stopped: stop requested" in commands[ExecStopParam](run_id="r1")
