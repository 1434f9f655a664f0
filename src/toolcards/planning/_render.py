"""The planning board as text a model reads: the plan, one task, and search results.

Pure functions of :class:`~toolcards.planning._models.Task` values, so the actor, the card and
tests render alike. Every output is bounded: a plan lists at most :data:`PLAN_LIMIT` open
tasks, oldest first, and says how many it left out. The plan is paid for on every request, so
it is written for its reader: owner and creator shown only when someone else, closed tasks one
line of ids, a stable order (status group, then id) so the text changes only where the board
did, statuses written as the words a model sends back (``in_progress``). For ``@Alice``::

    **Team planning:** 5 tasks (3 pending, 1 in_progress, 1 completed)
    Owners: @Bob 2, @Alice 1, @Carol 1, unassigned 1
    **Your tasks** (you own or created them):
    - #3 [in_progress] Implement auth module
    - #7 [pending] Review PR #42 — Output: pending (owner @Bob)
    get_planning_task(id) shows a task in full; search_planning(...) filters the board.

A tool is named only when the reader can call it: the card passes the names of the tools it
exposes (``None`` when it does not).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from operator import attrgetter

from toolcards.planning._claims import left_in_words
from toolcards.planning._models import (
    TASK_STATUSES,
    ClaimReport,
    SearchHit,
    SearchPage,
    Task,
    TaskStatus,
    UpdateFailure,
    UpdateReport,
    normalize_agent_name,
    task_ids,
)

__all__ = [
    "EMPTY_PLAN",
    "OWNERS_LIMIT",
    "PLAN_LIMIT",
    "plan_footer",
    "render_claim",
    "render_hits",
    "render_plan",
    "render_search",
    "render_task",
    "render_task_line",
    "render_update_report",
]

PLAN_LIMIT = 50
"""Most open tasks a rendered plan (or search result) lists."""
OWNERS_LIMIT = 10
"""Most owners named on the plan's ``Owners:`` line; the rest are summed up."""
EMPTY_PLAN = "**Team planning:** no tasks yet."
"""The whole plan when the board is empty."""

_CLOSED: tuple[TaskStatus, ...] = ("completed", "aborted")
_CLOSED_LABEL = {"completed": "Completed", "aborted": "Aborted"}


def plan_footer(get_tool: str | None, search_tool: str | None) -> str | None:
    """The plan's last line, naming only the tools the reader can call (``None``: no line)."""
    parts = []
    if get_tool:
        parts.append(f"{get_tool}(id) shows a task in full")
    if search_tool:
        parts.append(f"{search_tool}(...) filters the board")
    return "; ".join(parts) + "." if parts else None


def render_task_line(task: Task, reader: str | None = None) -> str:
    """One task on one line, without a list marker.

    ``#7 [pending] Review PR #42 — Output: pending (owner @Bob, creator @Alice, needs 3, 5)``.
    With a ``reader`` (normalised), the owner and creator are left out where they are the
    reader, and an unassigned task says so.
    """
    line = f"#{task.id} [{task.status}] {task.description}"
    if task.output:
        line += f" — Output: {task.output}"
    details = []
    if task.owner is None:
        details.append("unassigned")
    elif task.owner != reader:
        details.append(f"owner {task.owner}")
    if task.creator != reader:
        details.append(f"creator {task.creator}")
    if task.dependencies:
        details.append("needs " + ", ".join(str(i) for i in task.dependencies))
    return f"{line} ({', '.join(details)})" if details else line


def render_task(task: Task) -> str:
    """Every field of one task, one per line (what ``get_planning_task`` shows)."""
    lines = [
        f"ID {task.id} [{task.status}]",
        f"Description: {task.description}",
        f"Output: {task.output or '(none)'}",
        f"Owner: {task.owner or 'unassigned'}",
        f"Creator: {task.creator}",
        "Depends on: " + (", ".join(str(i) for i in task.dependencies) or "nothing"),
    ]
    if task.priority:
        lines.append(f"Priority: {task.priority}")
    if task.requires:
        lines.append("Requires tools: " + ", ".join(task.requires))
    if task.paths:
        lines.append("Reserves paths while claimed: " + ", ".join(task.paths))
    lines += [
        f"Created: {task.created_at.isoformat(timespec='seconds')}",
        f"Updated: {task.updated_at.isoformat(timespec='seconds')}",
    ]
    if task.history:
        lines.append("History: " + "; ".join(task.history))
    return "\n".join(lines)


def render_claim(report: ClaimReport) -> str:
    """What a claim gives the model: the task, and how long the lease holds.

    Example: ``"You hold task 7 (lease 5 min, renewed by your tool calls; release_task gives it
    back): #7 [in_progress] Write the parser (creator @Alice)"``.
    """
    task = report.task
    if report.replayed and not report.held:
        return (
            f"This call was already applied: you claimed task {task.id}, and that claim has ended since "
            f"(released, or its lease ran out); nothing was written again. Now: {render_task_line(task)}. "
            "To work on it, claim it again as a new call (a new key)."
        )
    if report.replayed:
        head = f"This call was already applied: you hold task {task.id}"
    elif report.renewed:
        head = f"You already hold task {task.id}; its lease was renewed"
    else:
        head = f"You hold task {task.id}"
    lease = left_in_words(report.lease_s)
    text = f"{head} (lease {lease}, renewed by your tool calls; release_task gives it back): {render_task_line(task)}"
    if task.paths:
        text += "\nPaths reserved for you: " + ", ".join(task.paths)
    return text


def render_plan(
    tasks: Iterable[Task],
    agent: str,
    *,
    filter_by_agent: bool = True,
    limit: int = PLAN_LIMIT,
    get_tool: str | None = "get_planning_task",
    search_tool: str | None = "search_planning",
) -> str:
    """The plan injected into ``agent``'s context before each model request.

    Args:
        tasks: every task on the board, in any order.
        agent: the reader, e.g. ``"@Alice"`` (normalised here).
        filter_by_agent: list only tasks ``agent`` owns or created; otherwise all.
        limit: most open tasks listed (pending and in_progress, by id); a line says how many
            more there are. Closed tasks (completed, aborted) are one line of ids each.
        get_tool: the name of the tool that shows one task, if the reader has it.
        search_tool: the name of the tool that searches the board, if the reader has it.

    Returns:
        The plan text; :data:`EMPTY_PLAN` (one line) when the board is empty. One pass
        over the tasks, in any order (linear in the board size); never raises.
    """
    board = list(tasks)
    if not board:
        return EMPTY_PLAN
    me = normalize_agent_name(agent)
    # Counting runs in C (Counter over attrgetter) and only the listed open tasks are
    # ordered (a bounded selection), so a render stays linear in the board size.
    statuses: Counter[TaskStatus] = Counter(map(_status, board))
    owners: Counter[str | None] = Counter(map(_owner, board))
    listed = [task for task in board if me in (task.owner, task.creator)] if filter_by_agent else board
    open_listed = [task for task in listed if task.status not in _CLOSED]
    total = len(board)
    counts = ", ".join(f"{statuses[status]} {status}" for status in TASK_STATUSES if statuses[status])
    lines = [
        f"**Team planning:** {total} task{'s' if total != 1 else ''} ({counts})",
        _owners_line(owners),
    ]
    header = "**Your tasks** (you own or created them):" if filter_by_agent else "**All tasks:**"
    if not listed:
        lines.append(f"{header} none")
    else:
        lines.append(header)
        shown = heapq.nsmallest(limit, open_listed, key=_task_id)
        lines.extend(f"- {render_task_line(task, me)}" for task in shown)
        hidden = len(open_listed) - len(shown)
        if hidden > 0:
            more = f"... {hidden} more open tasks not shown"
            lines.append(f"{more}; {search_tool}(...) filters them." if search_tool else f"{more}.")
        for status in _CLOSED:
            ids = sorted(task.id for task in listed if task.status == status)
            if ids:
                how = f" (outputs: {get_tool}(id))" if get_tool and status == "completed" else ""
                lines.append(f"{_CLOSED_LABEL[status]}: {_id_run(ids)}{how}.")
    footer = plan_footer(get_tool, search_tool)
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def _id_run(ids: Sequence[int]) -> str:
    """Sorted ids with consecutive runs folded: ``1-4, 7, 9-10``."""
    parts = []
    start = previous = ids[0]
    for task_id in ids[1:]:
        if task_id == previous + 1:
            previous = task_id
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = task_id
    parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


def render_search(found: Sequence[SearchHit] | SearchPage, *, limit: int = PLAN_LIMIT) -> str:
    """Search results as a model reads them: a count, then one line per hit with how it matched.

    ``found`` is every hit, or a :class:`SearchPage` (the best ones and the total). At most
    ``limit`` hits are listed, in the order given (best first). Never raises.
    """
    hits, total = (found.hits, found.total) if isinstance(found, SearchPage) else (found, len(found))
    return render_hits(total, [(hit.task, hit.match) for hit in hits[:limit]], limit=limit)


def render_hits(total: int, hits: Sequence[tuple[Task, str]], *, limit: int = PLAN_LIMIT) -> str:
    """:func:`render_search` from ``total`` and the best hits as (task, how it matched). Never raises."""
    if not total:
        return "No task matches. Loosen the filters or rephrase the query."
    head = f"{total} task{'s' if total != 1 else ''} match"
    if total == 1:
        head += "es"
    lines = [head + ":"]
    for task, match in hits[:limit]:
        label = "" if match == "filter" else f" [{match} match]"
        lines.append(f"- {render_task_line(task)}{label}")
    if total > min(limit, len(hits)):
        lines.append(f"... {total - min(limit, len(hits))} more not shown; narrow the query or filters.")
    return "\n".join(lines)


_task_id = attrgetter("id")
_status = attrgetter("status")
_owner = attrgetter("owner")


def _owners_line(owners: Counter[str | None]) -> str:
    counts = owners.copy()
    unassigned = counts.pop(None, 0)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0] or ""))
    parts = [f"{owner} {count}" for owner, count in ranked[:OWNERS_LIMIT]]
    rest = ranked[OWNERS_LIMIT:]
    if rest:
        parts.append(f"{len(rest)} others {sum(count for _, count in rest)}")
    if unassigned:
        parts.append(f"unassigned {unassigned}")
    return "Owners: " + ", ".join(parts)


def _failure_text(failure: UpdateFailure) -> str:
    """One line: which part failed and why, e.g. ``"update task 12: Task 12 does not exist. ..."``."""
    target = f"task {failure.task_id}" if failure.task_id is not None else f"item {failure.index + 1}"
    return f"{failure.operation} {target}: {failure.message}"


def render_update_report(report: UpdateReport) -> str:
    """A batch as a model reads it: what was applied, or every refused part and what to do.

    A batch is all or nothing, so a report with refusals applied nothing. Example:
    ``"Nothing was applied (a batch is all or nothing). Fix this and send the whole batch
    again:\n- update task 12: Task 12 does not exist. ..."``
    """
    if report.errors:
        count = len(report.errors)
        head = (
            f"Nothing was applied (a batch is all or nothing). Fix {'these' if count > 1 else 'this'} "
            "and send the whole batch again:"
        )
        return "\n".join([head, *(f"- {_failure_text(error)}" for error in report.errors)])
    lines = []
    if report.replayed:
        lines.append(f"This call was already applied (board change {report.seq}); nothing was written again.")
    for verb, ids in (("Created", report.created), ("Updated", report.updated), ("Deleted", report.deleted)):
        if ids:
            lines.append(f"{verb} {task_ids(ids)}.")
    if report.unlinked:
        lines.append(f"Removed deleted ids from the dependencies of {task_ids(report.unlinked)}.")
    if report.unchanged:
        lines.append(f"No change needed for {task_ids(report.unchanged)}.")
    return " ".join(lines) or "Nothing to do: give create, update or delete."
