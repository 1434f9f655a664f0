"""The board's view: every task with all its fields, and a version that moves with each change."""

from __future__ import annotations

from toolcards import ToolFactory
from toolcards.planning import PlanningTool
from toolcards.testing import FakeObserver


def test_the_board_view_holds_every_field_and_its_version_follows_changes(
    alice: FakeObserver, bob: FakeObserver
) -> None:
    views = ToolFactory([PlanningTool()], observer=alice).views()
    tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=bob).tools()}
    board = views["planning.board"]
    empty = board.render()
    assert (empty["tasks"], empty["claims"]) == ([], []) and board.current_version()[0] == 0

    tools["update_planning"].call_sync({"create_tasks": [{"description": "Ship it", "owner": "@Alice"}]})
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Test it", "dependencies": [1]}]})

    assert board.current_version()[0] == 2
    first, second = board.render()["tasks"]
    assert (first["description"], first["owner"], first["creator"], first["status"]) == (
        "Ship it",
        "@Alice",
        "@Bob",
        "pending",
    )
    assert second["dependencies"] == [1] and {"created_at", "updated_at", "output"} <= set(second)
    # A claim shows with its lease, and a renewal changes the version though no task changes.
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Claim it"}]})
    tools["claim_task"].call_sync({"task_id": 3})
    before = board.current_version()
    (claim,) = board.render()["claims"]
    assert (claim["task_id"], claim["member"]) == (3, "@Bob") and claim["until"] > board.render()["now"]
    tools["claim_task"].call_sync({"task_id": 3})  # renews the lease
    assert board.current_version() != before and board.current_version()[0] == before[0]
