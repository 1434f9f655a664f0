"""A cancelled ``exec_command`` call: its process group is killed at once, nothing it had not
done yet is done, and a call cancelled while it waited never starts its command. Progress
reaches a caller that listens."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from bench._process_groups import cancel_until_gone, live_processes_with

from tests.sandbox.conftest import backend_class, marker, wait_until
from toolcards import ToolFactory
from toolcards.core._channels import Channels
from toolcards.core._progress import ProgressReporter, reporting
from toolcards.core._tool import Tool
from toolcards.errors import CallCancelled
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox._tool import ExecTool
from toolcards.testing import FakeObserver

GONE_TIMEOUT_S = 20.0
"""Longest a cancelled command's process group may outlive the cancel: generous for a loaded
machine (``python -m bench cancel`` measures the real figure), and shorter than the command's
``sleep`` (:func:`marker`), so a group that ends by itself still fails."""


def exec_tool(observer: FakeObserver, **fields: object) -> Tool:
    fields.setdefault("allowed_commands", [])
    tools = ToolFactory([ExecTool(**fields)], observer=observer).tools(Channels.TOOL_CALL)  # type: ignore[arg-type]
    return next(tool for tool in tools if tool.name == "exec_command")


@pytest.mark.parametrize("mode", ["local", "bwrap"])
def test_cancelling_the_call_kills_the_process_group_at_once_and_the_marker_is_never_written(
    alice: FakeObserver, mode: str
) -> None:
    backend_class(mode)  # skips bwrap where it cannot run
    tool = exec_tool(alice, mode=mode, timeout_s=3600)
    sleep_for = marker()
    command = f"sleep {sleep_for} && touch cancelled-marker"

    async def main() -> None:
        # Ends once the process group is gone (the benchmark times it); raises if it outlives the bound.
        await cancel_until_gone(tool.call({"cmd": command}), f"sleep {sleep_for}", timeout_s=GONE_TIMEOUT_S)

    asyncio.run(main())
    assert not live_processes_with(f"sleep {sleep_for}")
    time.sleep(0.3)
    assert not (workspace_dir("team-1") / "cancelled-marker").exists()


def test_the_handler_thread_ends_with_call_cancelled(alice: FakeObserver) -> None:
    tool = exec_tool(alice, mode="local", timeout_s=3600)
    sleep_for = marker()
    outcome: list[BaseException] = []

    async def main() -> None:
        from toolcards.core._cancel import CancelToken, cancelling

        token = CancelToken()

        def work() -> None:
            with cancelling(token):
                try:
                    tool.call_sync({"cmd": f"sleep {sleep_for}"}, channel=Channels.TOOL_CALL)
                except BaseException as exc:
                    outcome.append(exc)

        thread = asyncio.get_running_loop().run_in_executor(None, work)
        assert await asyncio.to_thread(wait_until, lambda: bool(live_processes_with(f"sleep {sleep_for}")))
        token.cancel()
        # Bounded below the sleep (30 s or more): a thread that ends only when the command
        # would have finished fails here; the bound is generous, not a timing claim.
        await asyncio.wait_for(thread, timeout=20)

    asyncio.run(main())
    assert len(outcome) == 1 and isinstance(outcome[0], CallCancelled)


def test_a_call_cancelled_while_waiting_for_a_slot_never_starts(alice: FakeObserver, tmp_path: Path) -> None:
    tool = exec_tool(alice, mode="local", timeout_s=60, options={"max_concurrent": 1})
    busy = marker()

    async def main() -> None:
        first = asyncio.ensure_future(tool.call({"cmd": f"sleep {busy}"}))
        assert await asyncio.to_thread(wait_until, lambda: bool(live_processes_with(f"sleep {busy}")))
        waiting = asyncio.ensure_future(tool.call({"cmd": "touch never-started"}))
        await asyncio.sleep(0.3)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.sleep(0.5)  # a slot is free now: a command that still waited would run

    asyncio.run(main())
    assert not (workspace_dir("team-1") / "never-started").exists()


def test_a_running_command_reports_its_progress(alice: FakeObserver) -> None:
    tool = exec_tool(alice, mode="local", timeout_s=60)
    heard: list[tuple[float, float | None, str | None]] = []
    reporter = ProgressReporter(lambda progress, total, message: heard.append((progress, total, message)))

    async def main() -> str:
        with reporting(reporter):
            result: str = await tool.call({"cmd": "sh -c 'echo one; sleep 2.6; echo two'"})
        return result

    out = asyncio.run(main())
    assert "two" in out
    assert len(heard) >= 2
    assert [progress for progress, _, _ in heard] == sorted(progress for progress, _, _ in heard)
    assert all(message and "running for" in message for _, _, message in heard)
