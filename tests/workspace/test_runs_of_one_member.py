"""pydantic-ai runs of one member through one toolset are conversations of their own: what one
run read the other has not seen, so neither overwrites a version the other wrote unseen."""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards.core._factory import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool

READ = ToolCallPart("workspace_read", {"path": "notes.txt", "line_numbers": False})


def file_text(read: ToolReturnPart) -> str:
    """The file's text in a read's answer: the lines inside its untrusted-output envelope."""
    return "".join(line + "\n" for line in str(read.content).split("\n")[1:-1])


def write(text: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("workspace_write", {"path": "notes.txt", "content": text})])


def test_two_concurrent_runs_of_one_member_keep_both_lines(alice: FakeObserver) -> None:
    card = WorkspaceTool()
    toolset = ToolFactory([card], observer=alice).toolset()
    (card.root / "notes.txt").write_text("base\n")
    read_once: set[str] = set()
    both_read, first_wrote = asyncio.Event(), asyncio.Event()
    refusals: dict[str, list[str]] = {"run-1": [], "run-2": []}

    def model(tag: str):  # type: ignore[no-untyped-def]
        async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[READ])
            last = messages[-1].parts[-1]
            assert isinstance(last, ToolReturnPart)
            if last.outcome == "retried":  # the gate refused the write: read again
                refusals[tag].append(str(last.content))
                return ModelResponse(parts=[READ])
            if last.tool_name == "workspace_read":
                # Both runs read the first version before either writes; run 2 writes after run 1.
                read_once.add(tag)
                if len(read_once) == 2:
                    both_read.set()
                await both_read.wait()
                if tag == "run-2":
                    await first_wrote.wait()
                return write(file_text(last) + f"{tag}\n")
            if tag == "run-1":
                first_wrote.set()
            return ModelResponse(parts=[TextPart(str(last.content))])

        return respond

    async def both() -> list[str]:
        runs = [Agent(FunctionModel(model(tag)), toolsets=[toolset]).run("go") for tag in ("run-1", "run-2")]
        return [result.output for result in await asyncio.gather(*runs)]

    outputs = asyncio.run(both())

    assert outputs == ["Wrote notes.txt (2 lines).", "Wrote notes.txt (3 lines)."]
    assert refusals["run-1"] == []
    [refused] = refusals["run-2"]
    assert refused.startswith("Call workspace_read on 'notes.txt' again")
    assert "changed by you, in another run or session working at the same time" in refused
    assert "+run-1" in refused
    assert (card.root / "notes.txt").read_text() == "base\nrun-1\nrun-2\n"


def test_a_later_run_may_change_what_an_earlier_run_read(alice: FakeObserver) -> None:
    """The common flow: read in one run, edit in the next one, from its message history."""
    card = WorkspaceTool()
    toolset = ToolFactory([card], observer=alice).toolset()
    (card.root / "notes.txt").write_text("base\n")

    def reader(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[READ])
        return ModelResponse(parts=[TextPart("read")])

    def writer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(str(last.content))])
        return write("base\nlater\n")

    first = Agent(FunctionModel(reader), toolsets=[toolset]).run_sync("read it")
    # A run of the same member elsewhere changed it meanwhile, before the next run began.
    other = Agent(FunctionModel(writer), toolsets=[toolset]).run_sync("write it")
    assert other.output == "Wrote notes.txt (2 lines)."
    later = Agent(FunctionModel(writer), toolsets=[toolset]).run_sync("again", message_history=first.all_messages())
    assert later.output == "Wrote notes.txt (2 lines)."
