"""The planning data: normalisation, truncation, the model-facing schema, and report text."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from toolcards.core._schema import compact_json_schema
from toolcards.planning._models import (
    OUTPUT_MAX,
    SearchHit,
    Task,
    TaskCreate,
    TaskUpdate,
    UpdateFailure,
    UpdateReport,
    normalize_agent_name,
    truncate_output,
)
from toolcards.planning._render import render_update_report

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Alice", "@Alice"), ("@Alice", "@Alice"), (" @Alice ", "@Alice"), ("@@Alice", "@Alice"), ("", ""), ("@", "")],
)
def test_agent_names_are_normalised_to_one_at_sign(raw: str, expected: str) -> None:
    assert normalize_agent_name(raw) == expected


def test_agent_name_case_is_kept() -> None:
    assert normalize_agent_name("alice") == "@alice"


def test_output_up_to_the_limit_is_kept_and_longer_is_cut_with_an_ellipsis() -> None:
    assert truncate_output("x" * OUTPUT_MAX) == "x" * OUTPUT_MAX
    cut = truncate_output("y" * 400)
    assert len(cut) == 150
    assert cut == "y" * 147 + "..."


def test_task_create_normalises_owner_and_cuts_output() -> None:
    item = TaskCreate(description="  Write docs ", owner="Bob", output="z" * 200, dependencies=[2, 2, 1])
    assert item.owner == "@Bob"
    assert item.description == "Write docs"
    assert item.output == "z" * 147 + "..."
    assert item.dependencies == [2, 1]


def test_task_create_treats_an_empty_owner_as_unassigned() -> None:
    assert TaskCreate(description="x", owner="").owner is None
    assert TaskCreate(description="x", owner=" @ ").owner is None


def test_task_create_takes_no_creator_from_the_model() -> None:
    assert "creator" not in TaskCreate.model_fields
    with pytest.raises(ValidationError, match="creator"):
        TaskCreate.model_validate({"description": "x", "creator": "@Mallory"})


def test_task_create_refuses_a_word_that_is_not_a_status() -> None:
    with pytest.raises(ValidationError, match="'pending', 'in_progress', 'completed' or 'aborted'"):
        TaskCreate.model_validate({"description": "x", "status": "someday"})


def test_task_update_keeps_empty_owner_to_mean_unassign_and_none_to_mean_unchanged() -> None:
    assert TaskUpdate(id=1, owner="").owner == ""
    assert TaskUpdate(id=1, owner="carol").owner == "@carol"
    assert TaskUpdate(id=1).owner is None
    assert TaskUpdate(id=1, output="o" * 151).output == "o" * 147 + "..."


def test_schema_states_the_rules_a_model_must_respect() -> None:
    create = compact_json_schema(TaskCreate.model_json_schema())
    update = compact_json_schema(TaskUpdate.model_json_schema())
    props = create["properties"]
    assert set(props) == {
        "id",
        "description",
        "status",
        "owner",
        "output",
        "dependencies",
        "priority",
        "requires",
        "paths",
    }
    assert create["required"] == ["description"]
    assert "300" in props["description"]["description"]
    assert "150" in props["output"]["description"]
    assert "cycle" in props["dependencies"]["description"]
    assert "Unique" in props["id"]["description"]
    assert props["status"]["enum"] == ["pending", "in_progress", "completed", "aborted"]
    assert update["required"] == ["id"]
    assert "300" in update["properties"]["description"]["description"]
    assert "cycle" in update["properties"]["dependencies"]["description"]


def test_schema_descriptions_stay_terse() -> None:
    # Every word is paid for on every request.
    for model in (TaskCreate, TaskUpdate):
        text = json.dumps(compact_json_schema(model.model_json_schema()))
        assert len(text) < 900, model.__name__


def test_task_round_trips_through_json_and_cuts_output() -> None:
    task = Task(
        id=3,
        status="in_progress",
        description="Implement auth",
        output="a" * 300,
        owner="Alice",
        creator="@Alice",
        dependencies=(1, 2),
        created_at=NOW,
        updated_at=NOW,
    )
    assert task.owner == "@Alice"
    assert len(task.output) == 150
    assert Task.model_validate(json.loads(json.dumps(task.model_dump(mode="json")))) == task


def test_task_is_frozen() -> None:
    task = Task(id=1, status="pending", description="x", creator="@A", created_at=NOW, updated_at=NOW)
    with pytest.raises(ValidationError):
        task.status = "completed"


def test_involves_owner_or_creator() -> None:
    task = Task(id=1, status="pending", description="x", owner="@Bob", creator="@A", created_at=NOW, updated_at=NOW)
    assert task.involves("@Bob")
    assert task.involves("@A")
    assert not task.involves("@C")


def test_report_render_lists_what_was_applied() -> None:
    report = UpdateReport(created=[8, 9], updated=[3], deleted=[4], unlinked=[5], seq=7)
    assert report.changed
    assert render_update_report(report) == (
        "Created tasks 8, 9. Updated task 3. Deleted task 4. Removed deleted ids from the dependencies of task 5."
    )
    assert report.summary() == "created tasks 8, 9; updated task 3; deleted task 4; unlinked task 5"


def test_report_render_lists_every_refusal_and_says_nothing_was_applied() -> None:
    report = UpdateReport(
        errors=[
            UpdateFailure(operation="update", index=0, task_id=12, message="Task 12 does not exist."),
            UpdateFailure(operation="create", index=1, task_id=None, message="The description is 301 chars."),
        ],
    )
    assert not report.changed
    assert report.summary() == ""
    assert render_update_report(report).splitlines() == [
        "Nothing was applied (a batch is all or nothing). Fix these and send the whole batch again:",
        "- update task 12: Task 12 does not exist.",
        "- create item 2: The description is 301 chars.",
    ]
    one = UpdateReport(errors=[UpdateFailure(operation="delete", index=0, task_id=5, message="Gone.")])
    assert render_update_report(one).startswith("Nothing was applied (a batch is all or nothing). Fix this and")
    assert render_update_report(UpdateReport()).startswith("Nothing to do")


def test_a_replayed_report_says_the_call_was_already_applied() -> None:
    text = render_update_report(UpdateReport(created=[4], seq=9, replayed=True))
    assert text == "This call was already applied (board change 9); nothing was written again. Created task 4."


def test_report_mentions_unchanged_tasks() -> None:
    assert render_update_report(UpdateReport(unchanged=[2])) == "No change needed for task 2."


def test_search_hit_carries_the_match_kind() -> None:
    task = Task(id=1, status="pending", description="x", creator="@A", created_at=NOW, updated_at=NOW)
    hit = SearchHit(task=task, match="both", similarity=0.7)
    assert hit.match == "both"
    with pytest.raises(ValidationError):
        SearchHit(task=task, match="fuzzy")  # type: ignore[arg-type]
