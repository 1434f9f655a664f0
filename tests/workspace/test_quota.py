"""The tree's disk quota holds for what the workspace tools write, as the sandbox's does for commands."""

from __future__ import annotations

import pytest

from toolcards import RetriableError, ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool


def tools_for(agent: FakeObserver, **options: object) -> dict[str, object]:
    card = WorkspaceTool(workspace_id="quota", **options)  # type: ignore[arg-type]
    return {tool.name: tool for tool in ToolFactory([card], observer=agent).tools()}


def test_a_write_past_the_quota_is_refused_and_a_delete_is_not(alice: FakeObserver) -> None:
    tools = tools_for(alice, disk_mb=2)
    write, delete = tools["workspace_write"], tools["workspace_delete"]
    write.call_sync({"path": "one.bin", "content": "x" * 1_200_000})  # type: ignore[attr-defined]

    with pytest.raises(RetriableError, match=r"Nothing was written: .* of its 2 MB disk quota"):
        write.call_sync({"path": "two.bin", "content": "y" * 1_200_000})  # type: ignore[attr-defined]

    listed = tools["workspace_list"].call_sync({})  # type: ignore[attr-defined]
    assert "two.bin" not in listed
    delete.call_sync({"path": "one.bin"})  # type: ignore[attr-defined]
    write.call_sync({"path": "two.bin", "content": "y" * 1_200_000})  # type: ignore[attr-defined]


def test_the_smallest_quota_of_the_cards_on_a_tree_applies(alice: FakeObserver, bob: FakeObserver) -> None:
    tools_for(alice, disk_mb=1024)
    strict = tools_for(bob, disk_mb=1)

    with pytest.raises(RetriableError, match="1 MB disk quota"):
        strict["workspace_write"].call_sync({"path": "big.bin", "content": "z" * 1_500_000})  # type: ignore[attr-defined]


def test_a_bad_workspace_id_is_refused_when_the_card_is_built() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="Invalid workspace id"):
        WorkspaceTool(workspace_id="../x")
