"""Idempotency keys: which calls carry one into their handler, and how the key is scoped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolcards.core._channels import Channels
from toolcards.core._idempotency import CallKey, call_key, current_call
from toolcards.core._tool import Tool


def keyed_tool(*, mutates: bool, agent: str | None = "@A") -> tuple[Tool, list[CallKey | None]]:
    seen: list[CallKey | None] = []

    def change(text: str, count: int = 1) -> str:
        """Change something."""
        seen.append(current_call())
        return "done"

    return Tool.from_function(change, mutates=mutates, agent=agent), seen


def test_a_mutating_call_with_a_key_runs_as_that_call() -> None:
    tool, seen = keyed_tool(mutates=True)
    tool.call_sync({"text": "x"}, idempotency_key="k1")
    tool.call_sync({"text": "x"})
    assert seen[0] == call_key("@A", "change", "k1", {"text": "x", "count": 1})
    assert seen[0] is not None and seen[0].key == "@A|change|k1"
    assert seen[1] is None
    assert current_call() is None  # nothing leaks out of the call


def test_a_read_only_tool_ignores_the_key() -> None:
    tool, seen = keyed_tool(mutates=False)
    tool.call_sync({"text": "x"}, idempotency_key="k1")
    assert seen == [None]


def test_the_digest_follows_the_validated_arguments() -> None:
    tool, seen = keyed_tool(mutates=True)
    tool.call_sync({"text": "x"}, idempotency_key="k")
    tool.call_sync('{"count": 1, "text": "x"}', idempotency_key="k")  # same call, other spelling
    tool.call_sync({"text": "y"}, idempotency_key="k")
    assert seen[0] == seen[1] and seen[0] is not None and seen[2] is not None
    assert seen[0].digest != seen[2].digest


def test_keys_are_scoped_by_member_and_tool_and_long_keys_are_hashed() -> None:
    base = call_key("@A", "t", "k", {})
    assert call_key("@B", "t", "k", {}).key != base.key
    assert call_key("@A", "u", "k", {}).key != base.key
    long = call_key("@A", "t", "x" * 5000, {})
    assert len(long.key) < 100 and long.key.startswith("@A|t|sha256:")


def test_the_async_channel_and_commands_carry_the_key() -> None:
    tool, seen = keyed_tool(mutates=True)
    asyncio.run(tool.call({"text": "x"}, channel=Channels.TOOL_CALL, idempotency_key="k"))
    tool.call_sync({"text": "x", "count": 1}, channel=Channels.COMMAND, idempotency_key="k")
    assert seen[0] == seen[1] and seen[0] is not None

    async def change(text: str) -> str:
        """Change something, asynchronously."""
        seen.append(current_call())
        return "done"

    async_tool = Tool.from_function(change, mutates=True, agent="@A")
    asyncio.run(async_tool.call({"text": "x"}, idempotency_key="k"))
    assert seen[2] is not None and seen[2].key == "@A|change|k"


@pytest.mark.parametrize("timeout_s", [None, 5.0])
def test_the_key_reaches_a_handler_run_in_a_worker_thread(timeout_s: float | None) -> None:
    seen: list[Any] = []

    def change(text: str) -> str:
        """Change something."""
        seen.append(current_call())
        return "ok"

    tool = Tool.from_function(change, mutates=True, agent="@A", timeout_s=timeout_s, max_concurrency=2)
    tool.call_sync({"text": "x"}, idempotency_key="k")
    assert seen[0] is not None and seen[0].key == "@A|change|k"
