"""Paths reserved by a claimed task: other members' writes are refused (or warned), the holder's are not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import toolcards
from toolcards.errors import RetriableError
from toolcards.planning import PlanningTool
from toolcards.workspace import WorkspaceTool
from toolcards.workspace._reservations import ReservationRefused


@pytest.fixture
def team() -> Iterator[toolcards.Team]:
    with toolcards.Team("reserve") as opened:
        yield opened


def tools_of(team: toolcards.Team, name: str, **planning: Any) -> dict[str, Any]:
    factory = team.member(name).factory(PlanningTool(**planning), WorkspaceTool())
    return {tool.name: tool for tool in factory.tools()}


def test_a_claimed_task_s_paths_refuse_other_members_writes(team: toolcards.Team) -> None:
    events: list[Any] = []
    team.handle.subscribe(lambda seq, event: events.append(event))
    ann, bob = tools_of(team, "Ann"), tools_of(team, "Bob")
    ann["update_planning"].call_sync({"create_tasks": [{"description": "the API", "paths": ["src/api/**"]}]})
    ann["claim_task"].call_sync({"task_id": 1})

    with pytest.raises(RetriableError) as err:
        bob["workspace_write"].call_sync({"path": "src/api/users.py", "content": "x = 1\n"})
    assert str(err.value) == (
        "workspace_write was not applied: src/api/users.py is reserved by @Ann for task 1 (src/api/**) while "
        "@Ann holds it. Work on other files, or message @Ann to coordinate; the reservation ends when the task is "
        "completed or released."
    )
    assert not (team.member("Bob").factory(WorkspaceTool()).cards[0].root / "src/api/users.py").exists()
    assert bob["workspace_write"].call_sync({"path": "src/web/page.py", "content": "y = 2\n"}).startswith("Created")
    assert ann["workspace_write"].call_sync({"path": "src/api/users.py", "content": "x = 1\n"}).startswith("Created")
    patch = "--- /dev/null\n+++ b/src/api/new.py\n@@ -0,0 +1 @@\n+z = 3\n"
    with pytest.raises(RetriableError, match=r"workspace_patch was not applied: src/api/new\.py is reserved by @Ann"):
        bob["workspace_patch"].call_sync({"patch_text": patch})

    ann["release_task"].call_sync({"task_id": 1})
    assert bob["workspace_patch"].call_sync({"patch_text": patch})
    team.handle.head()  # the orchestrator delivered what was published before
    refused = [event for event in events if isinstance(event, ReservationRefused)]
    assert [(e.member, e.path, e.holder, e.mode) for e in refused] == [
        ("@Bob", "src/api/users.py", "@Ann", "refuse"),
        ("@Bob", "src/api/new.py", "@Ann", "refuse"),
    ]


def test_in_warn_mode_the_write_goes_through_with_the_holder_named(team: toolcards.Team) -> None:
    ann, bob = tools_of(team, "Ann", reservations="warn"), tools_of(team, "Bob")
    ann["update_planning"].call_sync({"create_tasks": [{"description": "docs", "paths": ["docs/*.md"]}]})
    ann["claim_task"].call_sync({"task_id": 1})
    answer = bob["workspace_write"].call_sync({"path": "docs/intro.md", "content": "# Intro\n"})
    assert answer.startswith("Created")
    assert answer.endswith(
        "Warning: docs/intro.md is reserved by @Ann for task 1 (docs/*.md). Tell @Ann what you changed."
    )


def test_without_a_board_nothing_is_reserved(tmp_path: Any) -> None:
    with toolcards.Team("no-board") as team:
        tools = {t.name: t for t in team.member("Cy").factory(WorkspaceTool()).tools()}
        assert tools["workspace_write"].call_sync({"path": "a.txt", "content": "a\n"}).startswith("Created")
