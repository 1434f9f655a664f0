"""The planning board as text a model reads: the plan, one task, and search results.

Pure functions of :class:`~toolcards.planning.models.Task` values, so the actor, the card
and tests render the same way. Every output is bounded: a plan lists at most
:data:`PLAN_LIMIT` tasks (open ones first) and says how many it left out, so a board of
thousands of tasks still costs a few hundred tokens per request.

The plan looks like this for ``@Alice`` (``filter_by_agent=True``)::

    **Team planning:** 5 tasks total
    Owners: @Alice: 3 | @Bob: 1 | unassigned: 1
    **Your tasks** (owner or creator: @Alice):
    - ID 3 [started] Implement auth module (Owner: @Alice, Creator: @Alice)
    - ID 7 [pending] Review PR #42 — Output: pending (Owner: @Bob, Creator: @Alice)
    Use get_planning_task(id) for exact ID lookup or search_planning(...) to filter tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from toolcards.planning.models import SearchHit, Task, normalize_agent_name

__all__ = [
    "EMPTY_PLAN",
    "OWNERS_LIMIT",
    "PLAN_FOOTER",
    "PLAN_LIMIT",
    "render_plan",
    "render_search",
    "render_task",
    "render_task_line",
]

PLAN_LIMIT = 50
"""Most tasks a rendered plan (or search result) lists."""
OWNERS_LIMIT = 10
"""Most owners named on the plan's ``Owners:`` line; the rest are summed up."""
PLAN_FOOTER = "Use get_planning_task(id) for exact ID lookup or search_planning(...) to filter tasks."
"""The plan's last line, pointing at the tools that read the board."""
EMPTY_PLAN = "**Team planning:** no tasks yet."
"""The whole plan when the board is empty."""

_CLOSED = frozenset({"completed", "abort"})


def render_task_line(task: Task) -> str:
    """One task on one line, without a list marker.

    ``ID 7 [pending] Review PR #42 — Output: pending (Owner: @Bob, Creator: @Alice)``;
    dependencies, when there are any, follow the creator as ``Depends on: 3, 5``.
    """
    line = f"ID {task.id} [{task.status}] {task.description}"
    if task.output:
        line += f" — Output: {task.output}"
    details = f"Owner: {task.owner or 'unassigned'}, Creator: {task.creator}"
    if task.dependencies:
        details += ", Depends on: " + ", ".join(str(i) for i in task.dependencies)
    return f"{line} ({details})"


def render_task(task: Task) -> str:
    """Every field of one task, one per line (what ``get_planning_task`` shows)."""
    lines = [
        f"ID {task.id} [{task.status}]",
        f"Description: {task.description}",
        f"Output: {task.output or '(none)'}",
        f"Owner: {task.owner or 'unassigned'}",
        f"Creator: {task.creator}",
        "Depends on: " + (", ".join(str(i) for i in task.dependencies) or "nothing"),
        f"Created: {task.created_at.isoformat(timespec='seconds')}",
        f"Updated: {task.updated_at.isoformat(timespec='seconds')}",
    ]
    return "\n".join(lines)


def render_plan(
    tasks: Iterable[Task],
    agent: str,
    *,
    filter_by_agent: bool = True,
    limit: int = PLAN_LIMIT,
    footer: str | None = PLAN_FOOTER,
) -> str:
    """The plan injected into ``agent``'s context before each model request.

    Args:
        tasks: every task on the board, in any order.
        agent: the reader, e.g. ``"@Alice"`` (normalised here).
        filter_by_agent: list only tasks ``agent`` owns or created; otherwise list all.
        limit: most tasks listed; open tasks (pending, started) come first, each group by
            id, and a line says how many more there are.
        footer: the last line (``None`` omits it), so a card that exposes other tools
            can point at them.

    Returns:
        The plan text; :data:`EMPTY_PLAN` (one line) when the board is empty. Linear in
        the number of tasks; never raises.
    """
    board = list(tasks)
    if not board:
        return EMPTY_PLAN
    me = normalize_agent_name(agent)
    lines = [
        f"**Team planning:** {len(board)} task{'s' if len(board) != 1 else ''} total",
        _owners_line(board),
    ]
    if filter_by_agent:
        listed = [task for task in board if task.involves(me)]
        header = f"**Your tasks** (owner or creator: {me}):"
    else:
        listed = board
        header = "**All tasks:**"
    if not listed:
        lines.append(f"{header} none")
    else:
        listed.sort(key=lambda task: (task.status in _CLOSED, task.id))
        lines.append(header)
        lines.extend(f"- {render_task_line(task)}" for task in listed[:limit])
        hidden = len(listed) - limit
        if hidden > 0:
            lines.append(f"... {hidden} more not shown; use search_planning(...) to filter them.")
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def render_search(hits: Sequence[SearchHit], *, limit: int = PLAN_LIMIT) -> str:
    """Search results as a model reads them: a count, then one line per hit with how it matched.

    At most ``limit`` hits are listed, in the order given (best first). Never raises.
    """
    if not hits:
        return "No task matches. Loosen the filters or rephrase the query."
    head = f"{len(hits)} task{'s' if len(hits) != 1 else ''} match"
    if len(hits) == 1:
        head += "es"
    lines = [head + ":"]
    for hit in hits[:limit]:
        label = "" if hit.match == "filter" else f" [{hit.match} match]"
        lines.append(f"- {render_task_line(hit.task)}{label}")
    if len(hits) > limit:
        lines.append(f"... {len(hits) - limit} more not shown; narrow the query or filters.")
    return "\n".join(lines)


def _owners_line(board: Sequence[Task]) -> str:
    counts = Counter(task.owner for task in board)
    unassigned = counts.pop(None, 0)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0] or ""))
    parts = [f"{owner}: {count}" for owner, count in ranked[:OWNERS_LIMIT]]
    rest = ranked[OWNERS_LIMIT:]
    if rest:
        parts.append(f"{len(rest)} others: {sum(count for _, count in rest)}")
    if unassigned:
        parts.append(f"unassigned: {unassigned}")
    return "Owners: " + " | ".join(parts)
