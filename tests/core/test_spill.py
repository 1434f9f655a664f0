"""Step 7 of the pipeline: an output over its budget is spilled to the team's sink, or cut.

The sinks here are fakes offered on a real team handle, as the workspace and spilled-output
cards offer theirs; the real ones have their own tests (``tests/workspace/test_spill.py``,
``tests/spill/``).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
from typing import Any, ClassVar

import pytest

from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, Tool, ToolCard, ToolFactory, ToolFailed, capability
from toolcards.core._services import SPILL_TO_STORE, SPILL_TO_WORKSPACE
from toolcards.core._spill import NOTICE_ROOM
from toolcards.testing import FakeObserver

BUDGET = 2_000


class LongParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}
    output_budget: int | None = BUDGET


class LongOutputCard(ToolCard):
    """Tools whose answers outgrow their budget, and the tools the fake sinks read back with."""

    kind: ClassVar[str] = "test_long_output"

    long_lines: LongParam | bool = True
    long_rows: LongParam | bool = True
    long_lines_later: LongParam | bool = True
    peek_kept: LongParam | bool = True
    fetch_kept: LongParam | bool = True
    grep_kept: LongParam | bool = True

    @capability("long_lines", untrusted_output=True)
    def many_lines(self, count: int) -> str:
        """Numbered lines."""
        return "\n".join(f"line {n:05d} " + "x" * 40 for n in range(1, count + 1))

    @capability("long_rows")
    def many_rows(self, count: int) -> list[dict[str, Any]]:
        """Rows of data."""
        return [{"n": n, "name": f"row {n}"} for n in range(count)]

    @capability("long_lines_later")
    async def many_lines_later(self, count: int) -> str:
        """Numbered lines, from an async handler."""
        await asyncio.sleep(0)
        return "\n".join(f"line {n:05d}" for n in range(1, count + 1))

    @capability("peek_kept")
    def peek_at_kept(self, name: str) -> str:
        """Read back what a sink kept."""
        return name

    @capability("fetch_kept")
    def fetch_a_kept(self, name: str) -> str:
        """Read back what the other sink kept."""
        return name

    @capability("grep_kept")
    def grep_kept_outputs(self, pattern: str) -> str:
        """Search what a sink kept."""
        return pattern


class RecordingSink:
    """A sink keeping outputs in a list; ``reader`` reads them back."""

    def __init__(self, reader: str = "peek_kept", fails: Exception | None = None) -> None:
        self.reader = reader
        self.fails = fails
        self.kept: list[dict[str, Any]] = []

    def __call__(self, text: str, *, tool: str, call_id: str, agent: str | None, from_line: int, from_char: int) -> str:
        if self.fails is not None:
            raise self.fails
        kept = {"text": text, "tool": tool, "call_id": call_id, "agent": agent, "line": from_line, "char": from_char}
        self.kept.append(kept)
        name = f"kept-{len(self.kept)}"
        return (
            f"It is kept as {name!r}. Read on with {self.reader}(name={name!r}, line={from_line}). "
            "Search it with grep_kept(pattern=<regex>)."
        )


@pytest.fixture
def sink(alice: FakeObserver) -> RecordingSink:
    offered = RecordingSink()
    alice.team.provide(SPILL_TO_WORKSPACE, offered)
    return offered


def tools(alice: FakeObserver | None, **fields: Any) -> dict[str, Tool]:
    return {tool.name: tool for tool in ToolFactory([LongOutputCard(**fields)], observer=alice).tools()}


def lines_text(count: int) -> str:
    return LongOutputCard().many_lines(count)


def test_an_output_over_its_budget_is_kept_whole_and_shown_by_its_head_and_tail(
    alice: FakeObserver, sink: RecordingSink
) -> None:
    whole = lines_text(2_000)
    answer = tools(alice)["long_lines"].call_sync({"count": 2_000}, channel=TOOL_CALL, call_id="call-7")
    (kept,) = sink.kept
    assert kept["text"] == whole and kept["tool"] == "long_lines" and kept["call_id"] == "call-7"
    assert kept["agent"] == "@Alice"

    shown, notice = answer.rsplit("\n", 1)
    first, *body, last = shown.split("\n")
    assert first.startswith("[BEGIN UNTRUSTED") and last.startswith("[END UNTRUSTED")
    # The data is in the envelope, the notice (ours) after it.
    assert notice == (
        f"[The output has {len(whole):,} characters in 2,000 lines, more than the {BUDGET:,} an answer shows. "
        f"It is kept as 'kept-1'. Read on with peek_kept(name='kept-1', line={kept['line']}). "
        "Search it with grep_kept(pattern=<regex>).]"
    )
    gap = next(n for n, line in enumerate(body) if line.startswith("[… "))
    head, tail = body[:gap], body[gap + 1 :]
    # Whole lines on both sides, the head first, then the tail up to the last line.
    assert head == whole.split("\n")[: len(head)] and tail == whole.split("\n")[-len(tail) :]
    assert kept["line"] == len(head) + 1 and kept["char"] == len("\n".join(head)) + 1
    left_out = len(whole) - len("\n".join(head)) - 1 - len("\n".join(tail))
    assert body[gap] == f"[… {left_out:,} characters, lines {len(head) + 1:,}-{2_000 - len(tail):,}, not shown …]"
    assert len(head) > 2 * len(tail) - 2
    assert BUDGET - NOTICE_ROOM - 60 <= len("\n".join(head + tail)) <= BUDGET - NOTICE_ROOM


def test_without_a_team_the_output_is_cut_with_a_notice() -> None:
    answer = tools(None)["long_lines"].call_sync({"count": 2_000})
    assert answer.startswith("[BEGIN UNTRUSTED")
    data, notice = answer.rsplit("\n", 1)
    assert notice == (
        f"[output cut: showed {BUDGET:,} of {len(lines_text(2_000)):,} characters. "
        "Narrow the request (a smaller range, a more specific query) to see the rest.]"
    )
    assert data.split("\n", 1)[1].rsplit("\n", 1)[0] == lines_text(2_000)[:BUDGET]


def test_an_output_within_its_budget_is_untouched(alice: FakeObserver, sink: RecordingSink) -> None:
    assert tools(alice)["long_rows"].call_sync({"count": 3}) == [{"n": n, "name": f"row {n}"} for n in range(3)]
    assert "line 00001" in tools(alice)["long_lines"].call_sync({"count": 3}) and not sink.kept


def test_a_sink_is_used_only_by_agents_that_can_call_its_reader(alice: FakeObserver, sink: RecordingSink) -> None:
    answer = tools(alice, peek_kept=False)["long_lines"].call_sync({"count": 2_000}, channel=TOOL_CALL)
    assert "[output cut: showed" in answer and not sink.kept
    # A command caller reads with the commands it has: peek_kept offered as a tool call only.
    commands_only = tools(alice, peek_kept=LongParam(expose={TOOL_CALL}))
    assert "[output cut: showed" in commands_only["long_lines"].call_sync({"count": 2_000}, channel=COMMAND)
    assert "Read on with peek_kept" in commands_only["long_lines"].call_sync({"count": 2_000}, channel=TOOL_CALL)


def test_the_workspace_sink_comes_first_then_the_store(alice: FakeObserver, sink: RecordingSink) -> None:
    store = RecordingSink(reader="fetch_kept")
    alice.team.provide(SPILL_TO_STORE, store)
    tools(alice)["long_lines"].call_sync({"count": 2_000})
    assert len(sink.kept) == 1 and not store.kept
    answer = tools(alice, peek_kept=False)["long_lines"].call_sync({"count": 2_000})
    assert len(store.kept) == 1 and "Read on with fetch_kept(name='kept-1'" in answer


def test_a_notice_names_no_tool_the_model_cannot_call(alice: FakeObserver, sink: RecordingSink) -> None:
    answer = tools(alice, grep_kept=False)["long_lines"].call_sync({"count": 2_000}, channel=TOOL_CALL)
    assert answer.endswith(f"Read on with peek_kept(name='kept-1', line={sink.kept[0]['line']}).]")
    assert "grep_kept" not in answer


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "no space left on device"),
        (OSError(errno.EROFS, "Read-only file system"), "read-only file system"),
        (ToolFailed("the workspace's disk quota (1 MB) is reached."), "the workspace's disk quota (1 MB) is reached"),
        (ValueError("secret file text"), "an unexpected ValueError"),
    ],
)
def test_a_spill_that_fails_never_fails_the_call(
    alice: FakeObserver, failure: Exception, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    alice.team.provide(SPILL_TO_WORKSPACE, RecordingSink(fails=failure))
    with caplog.at_level(logging.WARNING, logger="toolcards.spill"):
        answer = tools(alice)["long_lines"].call_sync({"count": 2_000})
    assert answer.endswith(
        f"[output cut: showed {BUDGET:,} of {len(lines_text(2_000)):,} characters; the whole could not be saved: "
        f"{reason}. Narrow the request (a smaller range, a more specific query) to see the rest.]"
    )
    assert caplog.records and "secret file text" not in caplog.text  # messages may quote data


def test_structured_results_are_kept_as_indented_json(alice: FakeObserver, sink: RecordingSink) -> None:
    rows = LongOutputCard().many_rows(200)
    answer = tools(alice)["long_rows"].call_sync({"count": 200})
    (kept,) = sink.kept
    assert json.loads(kept["text"]) == rows and kept["text"].startswith('[\n {\n  "n": 0,')
    assert isinstance(answer, str) and answer.startswith('[\n {\n  "n": 0,') and "Read on with peek_kept" in answer
    assert "output cut" in tools(None)["long_rows"].call_sync({"count": 200})  # cut as compact JSON without a sink


def test_results_that_are_not_text_are_never_budgeted(alice: FakeObserver, sink: RecordingSink) -> None:
    image = type("Image", (), {"data": b"\x89PNG" * 10_000, "media_type": "image/png"})()
    tool = Tool.from_function(lambda: image, name="pixel", output_budget=100, spill=lambda channel: sink)
    assert tool.call_sync({}) is image and not sink.kept


def test_an_async_tool_is_spilled_off_the_event_loop(alice: FakeObserver, sink: RecordingSink) -> None:
    answer = asyncio.run(tools(alice)["long_lines_later"].call({"count": 2_000}, call_id="async-1"))
    assert sink.kept[0]["call_id"] == "async-1" and "Read on with peek_kept" in answer


def test_every_call_road_spills_alike(alice: FakeObserver, sink: RecordingSink) -> None:
    factory = ToolFactory([LongOutputCard()], observer=alice)
    by_command = factory.command_registry().dispatch("/long_lines 2000")
    by_tool = factory.tools(TOOL_CALL)[0].call_sync({"count": 2_000}, channel=TOOL_CALL)
    answers = {
        re.sub(r"[0-9a-f]{8}", "B", answer).replace("kept-2", "kept-1").replace("kept-3", "kept-1")
        for answer in (by_command, by_tool)
    }
    assert len(answers) == 1 and "Read on with peek_kept" in by_command
    assert [kept["text"] for kept in sink.kept] == [lines_text(2_000)] * 2
