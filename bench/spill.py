"""Benchmark of spilling: an output over its tool's budget kept whole instead of cut.

``run()`` points ``TOOLCARDS_WORKSPACES_ROOT`` (and so the default SQLite store) at a
temporary directory, binds a card whose tool returns a ready-made text, with a
``WorkspaceTool`` (spills become files of ``.toolcards/spill/``) or a ``SpilledOutputTool``
(spills go to the team's store), and times whole calls through the pipeline, the handler
costing nothing:

* a 1 MB output spilled to the workspace: target <= 5 ms (median), retention sweeps included
  as they fall (one every 32 spills here, a quarter of ``spill_mb``);
* the same spilled to the store (SQLite), and cut without any sink, for scale;
* the memory a 50 MB output's spill adds, as ``tracemalloc`` counts it: the text is
  encoded 1 MiB at a time, so a few MB, not another 50.

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import os
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from bench.timing import Case, measure
from toolcards import TOOL_CALL, BaseToolParam, Channels, Tool, ToolCard, ToolFactory, capability
from toolcards.spill import SpilledOutputTool
from toolcards.store import close_default_stores
from toolcards.testing import FakeObserver
from toolcards.workspace._actor import stop_workspace_actors
from toolcards.workspace._tool import WorkspaceTool

__all__ = ["run"]

MB = 1024 * 1024
LINE = "src/module_0042.py:117: def handler(value): return value * 42  # a grep-like line\n"


def _text(size: int) -> str:
    return (LINE * (size // len(LINE) + 1))[:size]


OUTPUTS = {"1mb": _text(MB), "50mb": _text(50 * MB)}


class OutputParam(BaseToolParam):
    expose: set[Channels] = {Channels.TOOL_CALL}


class OutputCard(ToolCard):
    """A tool answering with a text made beforehand: the call costs the pipeline and the spill."""

    kind: ClassVar[str] = "bench_output"

    ready_output: OutputParam | bool = True

    @capability("ready_output", untrusted_output=True)
    def answer_ready_output(self, size: str) -> str:
        """A ready-made output."""
        return OUTPUTS[size]


def run() -> list[Case]:
    """Time spills of 1 MB and count what a 50 MB one allocates; takes a few seconds."""
    with _temporary_root():
        try:
            with FakeObserver("Bench", "bench") as observer:
                to_workspace = _output_tool(observer, WorkspaceTool())
                workspace = measure(lambda: to_workspace.call_sync({"size": "1mb"}, channel=TOOL_CALL), repeat=200)
                peak = _peak_mb(to_workspace)
            with FakeObserver("Bench", "bench-store") as observer:
                to_store = _output_tool(observer, SpilledOutputTool(max_mb=256))
                store = measure(lambda: to_store.call_sync({"size": "1mb"}, channel=TOOL_CALL), repeat=100)
            cut_tool = {tool.name: tool for tool in ToolFactory([OutputCard()]).tools()}["ready_output"]
            cut = measure(lambda: cut_tool.call_sync({"size": "1mb"}, channel=TOOL_CALL), repeat=200)
        finally:
            stop_workspace_actors()
            close_default_stores()
    return [
        Case.timed(
            "spill a 1 MB output to the workspace",
            workspace,
            "whole call: a file in .toolcards/spill/, head and tail shown",
            target=5.0,
        ),
        Case.timed("spill a 1 MB output to the store (SQLite)", store, "SpilledOutputTool, no workspace card"),
        Case.timed("cut a 1 MB output (no sink)", cut, "for scale: no team, the head kept"),
        Case("memory a 50 MB spill adds", peak, "tracemalloc peak over the call", unit="MB"),
    ]


def _output_tool(observer: FakeObserver, keeper: ToolCard) -> Tool:
    tools = {tool.name: tool for tool in ToolFactory([OutputCard(), keeper], observer=observer).tools()}
    return tools["ready_output"]


def _peak_mb(tool: Tool) -> float:
    """MB allocated at the peak of one 50 MB spill, beyond what was allocated before it."""
    tool.call_sync({"size": "50mb"}, channel=TOOL_CALL)  # warm: the folder, the quota's first walk
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tool.call_sync({"size": "50mb"}, channel=TOOL_CALL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - before) / MB


@contextmanager
def _temporary_root() -> Iterator[Path]:
    saved = {name: os.environ.get(name) for name in ("TOOLCARDS_WORKSPACES_ROOT", "TOOLCARDS_STORE")}
    with tempfile.TemporaryDirectory() as temp:
        os.environ["TOOLCARDS_WORKSPACES_ROOT"] = temp
        os.environ.pop("TOOLCARDS_STORE", None)
        try:
            yield Path(temp).resolve()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table([("spill", case) for case in run()]))
