"""The plan, task and search text a model reads."""

from __future__ import annotations

from datetime import UTC, datetime

from toolcards.planning._models import SearchHit, Task, TaskStatus
from toolcards.planning._render import (
    EMPTY_PLAN,
    plan_footer,
    render_plan,
    render_search,
    render_task,
    render_task_line,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def task(
    task_id: int,
    description: str,
    *,
    status: TaskStatus = "pending",
    owner: str | None = None,
    creator: str = "@Alice",
    output: str = "",
    dependencies: tuple[int, ...] = (),
) -> Task:
    return Task(
        id=task_id,
        status=status,
        description=description,
        output=output,
        owner=owner,
        creator=creator,
        dependencies=dependencies,
        created_at=NOW,
        updated_at=NOW,
    )


BOARD = [
    task(7, "Review PR #42", owner="@Bob", output="pending"),
    task(3, "Implement auth module", status="in_progress", owner="@Alice"),
    task(4, "Write release notes", owner="@Carol", creator="@Carol"),
    task(5, "Tidy CI cache", creator="@Carol"),
    task(6, "Benchmark search", owner="@Bob", creator="@Bob", status="completed"),
]


def test_plan_for_an_agent_lists_its_tasks_in_the_documented_format() -> None:
    assert render_plan(BOARD, "@Alice") == "\n".join(
        [
            "**Team planning:** 5 tasks (3 pending, 1 in_progress, 1 completed)",
            "Owners: @Bob 2, @Alice 1, @Carol 1, unassigned 1",
            "**Your tasks** (you own or created them):",
            "- #3 [in_progress] Implement auth module",
            "- #7 [pending] Review PR #42 — Output: pending (owner @Bob)",
            "get_planning_task(id) shows a task in full; search_planning(...) filters the board.",
        ]
    )


def test_the_reader_is_left_out_of_its_own_rows_and_others_are_named() -> None:
    plan = render_plan(BOARD, "@Bob").splitlines()
    assert "- #7 [pending] Review PR #42 — Output: pending (creator @Alice)" in plan
    assert "Completed: 6 (outputs: get_planning_task(id))." in plan
    everything = render_plan(BOARD, "@Carol", filter_by_agent=False).splitlines()
    assert "- #4 [pending] Write release notes" in everything
    assert "- #5 [pending] Tidy CI cache (unassigned)" in everything
    assert "- #3 [in_progress] Implement auth module (owner @Alice, creator @Alice)" in everything


def test_plan_normalises_the_agent_name() -> None:
    assert render_plan(BOARD, "Alice") == render_plan(BOARD, "@Alice")


def test_empty_board_is_one_line() -> None:
    plan = render_plan([], "@Alice")
    assert plan == EMPTY_PLAN
    assert "\n" not in plan
    assert "no tasks yet" in plan


def test_agent_with_no_tasks_is_told_so() -> None:
    plan = render_plan(BOARD, "@Zed")
    assert "**Your tasks** (you own or created them): none" in plan.splitlines()
    assert "- #" not in plan


def test_unfiltered_plan_lists_open_tasks_by_id_and_folds_closed_ones() -> None:
    lines = render_plan(BOARD, "@Alice", filter_by_agent=False).splitlines()
    assert "**All tasks:**" in lines
    listed = [line.split()[1] for line in lines if line.startswith("- #")]
    assert listed == ["#3", "#4", "#5", "#7"]
    assert "Completed: 6 (outputs: get_planning_task(id))." in lines


def test_dependencies_are_shown() -> None:
    line = render_task_line(task(9, "Ship", dependencies=(3, 5)))
    assert line == "#9 [pending] Ship (unassigned, creator @Alice, needs 3, 5)"


def test_huge_board_is_capped_with_a_count_of_the_rest_and_closed_ids_folded() -> None:
    board = [
        task(i, f"Task number {i}", owner="@Alice", status="completed" if i <= 100 else "pending")
        for i in range(1, 2001)
    ]
    plan = render_plan(board, "@Alice", filter_by_agent=False)
    lines = plan.splitlines()
    listed = [line for line in lines if line.startswith("- #")]
    assert len(listed) == 50
    assert listed[0] == "- #101 [pending] Task number 101"
    assert "... 1850 more open tasks not shown; search_planning(...) filters them." in lines
    assert "Completed: 1-100 (outputs: get_planning_task(id))." in lines
    assert lines[-1] == plan_footer("get_planning_task", "search_planning")
    assert len(plan) < 5000


def test_no_tool_is_named_that_the_reader_cannot_call() -> None:
    board = [task(i, f"Task {i}", owner="@Alice", status="completed" if i % 3 == 0 else "pending") for i in range(90)]
    plan = render_plan(board, "@Alice", get_tool=None, search_tool=None)
    assert "get_planning_task" not in plan and "search_planning" not in plan
    assert "... 10 more open tasks not shown." in plan.splitlines()
    only_search = render_plan(board, "@Alice", get_tool=None)
    assert "get_planning_task" not in only_search and "search_planning(...) filters" in only_search


def test_owner_line_summarises_beyond_ten_owners() -> None:
    board = [task(i, "x", owner=f"@Agent{i:02d}") for i in range(1, 13)]
    owners = render_plan(board, "@Nobody").splitlines()[1]
    assert owners.count(",") == 10
    assert owners.endswith("2 others 2")


def test_task_detail_shows_every_field() -> None:
    text = render_task(task(3, "Implement auth module", owner="@Alice", output="half done", dependencies=(1,)))
    assert text.splitlines() == [
        "ID 3 [pending]",
        "Description: Implement auth module",
        "Output: half done",
        "Owner: @Alice",
        "Creator: @Alice",
        "Depends on: 1",
        "Created: 2026-01-02T03:04:05+00:00",
        "Updated: 2026-01-02T03:04:05+00:00",
    ]


def test_search_results_say_how_each_hit_matched() -> None:
    hits = [
        SearchHit(task=BOARD[1], match="both", similarity=0.8),
        SearchHit(task=BOARD[0], match="keyword"),
    ]
    assert render_search(hits).splitlines() == [
        "2 tasks match:",
        "- #3 [in_progress] Implement auth module (owner @Alice, creator @Alice) [both match]",
        "- #7 [pending] Review PR #42 — Output: pending (owner @Bob, creator @Alice) [keyword match]",
    ]


def test_search_results_are_capped_and_empty_results_say_what_to_do() -> None:
    hits = [SearchHit(task=task(i, "x"), match="filter") for i in range(1, 8)]
    lines = render_search(hits, limit=5).splitlines()
    assert lines[0] == "7 tasks match:"
    assert lines[-1] == "... 2 more not shown; narrow the query or filters."
    assert "[" not in lines[1].split("]", 1)[1]  # filter-only hits carry no match label
    assert render_search([]).startswith("No task matches.")
    assert render_search(hits[:1]).startswith("1 task matches:")
