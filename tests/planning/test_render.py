"""The plan, task and search text a model reads."""

from __future__ import annotations

from datetime import UTC, datetime

from toolcards.planning.models import SearchHit, Task, TaskStatus
from toolcards.planning.render import (
    EMPTY_PLAN,
    PLAN_FOOTER,
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
    task(3, "Implement auth module", status="started", owner="@Alice"),
    task(4, "Write release notes", owner="@Carol", creator="@Carol"),
    task(5, "Tidy CI cache", creator="@Carol"),
    task(6, "Benchmark search", owner="@Bob", creator="@Bob", status="completed"),
]


def test_plan_for_an_agent_lists_its_tasks_in_the_documented_format() -> None:
    assert render_plan(BOARD, "@Alice") == "\n".join(
        [
            "**Team planning:** 5 tasks total",
            "Owners: @Bob: 2 | @Alice: 1 | @Carol: 1 | unassigned: 1",
            "**Your tasks** (owner or creator: @Alice):",
            "- ID 3 [started] Implement auth module (Owner: @Alice, Creator: @Alice)",
            "- ID 7 [pending] Review PR #42 — Output: pending (Owner: @Bob, Creator: @Alice)",
            "Use get_planning_task(id) for exact ID lookup or search_planning(...) to filter tasks.",
        ]
    )


def test_plan_normalises_the_agent_name() -> None:
    assert render_plan(BOARD, "Alice") == render_plan(BOARD, "@Alice")


def test_empty_board_is_one_line() -> None:
    plan = render_plan([], "@Alice")
    assert plan == EMPTY_PLAN
    assert "\n" not in plan
    assert "no tasks yet" in plan


def test_agent_with_no_tasks_is_told_so() -> None:
    plan = render_plan(BOARD, "@Zed")
    assert "**Your tasks** (owner or creator: @Zed): none" in plan.splitlines()
    assert "- ID" not in plan


def test_unfiltered_plan_shows_every_task_open_ones_first() -> None:
    lines = render_plan(BOARD, "@Alice", filter_by_agent=False).splitlines()
    assert "**All tasks:**" in lines
    listed = [line.split()[2] for line in lines if line.startswith("- ID")]
    assert listed == ["3", "4", "5", "7", "6"]  # completed task 6 after the open ones


def test_unassigned_tasks_and_dependencies_are_shown() -> None:
    line = render_task_line(task(9, "Ship", dependencies=(3, 5)))
    assert line == "ID 9 [pending] Ship (Owner: unassigned, Creator: @Alice, Depends on: 3, 5)"


def test_huge_board_is_capped_with_a_count_of_the_rest() -> None:
    board = [
        task(i, f"Task number {i}", owner="@Alice", status="completed" if i <= 100 else "pending")
        for i in range(1, 2001)
    ]
    plan = render_plan(board, "@Alice", filter_by_agent=False)
    lines = plan.splitlines()
    listed = [line for line in lines if line.startswith("- ID")]
    assert len(listed) == 50
    assert listed[0].startswith("- ID 101 [pending]")  # open tasks first
    assert "... 1950 more not shown; use search_planning(...) to filter them." in lines
    assert lines[-1] == PLAN_FOOTER
    assert len(plan) < 5000


def test_owner_line_summarises_beyond_ten_owners() -> None:
    board = [task(i, "x", owner=f"@Agent{i:02d}") for i in range(1, 13)]
    owners = render_plan(board, "@Nobody").splitlines()[1]
    assert owners.count("|") == 10
    assert owners.endswith("2 others: 2")


def test_footer_can_be_replaced_or_left_out() -> None:
    assert render_plan(BOARD, "@Alice", footer=None).splitlines()[-1].startswith("- ID 7")
    assert render_plan(BOARD, "@Alice", footer="Ask @Bob.").splitlines()[-1] == "Ask @Bob."


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
        "- ID 3 [started] Implement auth module (Owner: @Alice, Creator: @Alice) [both match]",
        "- ID 7 [pending] Review PR #42 — Output: pending (Owner: @Bob, Creator: @Alice) [keyword match]",
    ]


def test_search_results_are_capped_and_empty_results_say_what_to_do() -> None:
    hits = [SearchHit(task=task(i, "x"), match="filter") for i in range(1, 8)]
    lines = render_search(hits, limit=5).splitlines()
    assert lines[0] == "7 tasks match:"
    assert lines[-1] == "... 2 more not shown; narrow the query or filters."
    assert "[" not in lines[1].split("]", 1)[1]  # filter-only hits carry no match label
    assert render_search([]).startswith("No task matches.")
    assert render_search(hits[:1]).startswith("1 task matches:")
