"""Claims on tasks: who holds what, the leases that end them, and the queue of ready tasks.

A member claims a task (``claim_task``, or ``next_task`` for the best ready one) in one store
transaction, so among any number of processes and hosts exactly one claimer wins. A claim is
a lease (:class:`~toolcards.planning._models.Claim`): the member's tool calls renew it, and it
ends when the member releases the task, completes or aborts it, leaves, or lets it run out;
the task then goes back to ``pending``, unassigned, with a line in its history.

This module holds the rules and the in-memory indexes the board's actor keeps beside its
tasks; the actor does the transactions:

* :class:`ReadyQueue` — the tasks anyone could start now (``pending``, no claim, every
  dependency completed), ordered by priority then age, kept current as tasks change, so
  ``next_task`` on a large board costs a few heap operations rather than a pass over it;
* :func:`claim_refusal` — why a member may not claim a task, in words the model can act on;
* :func:`none_ready` — why ``next_task`` found nothing, with examples.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Mapping, Set
from datetime import UTC, datetime

from toolcards.planning._models import HISTORY_MAX, Claim, Task

__all__ = ["ReadyQueue", "claim_refusal", "history_line", "left_in_words", "none_ready", "with_history"]

_Key = tuple[int, float, int]


def _key(task: Task) -> _Key:
    return (-task.priority, task.created_at.timestamp(), task.id)


class ReadyQueue:
    """The tasks ready to start, best first: ``pending``, unclaimed, every dependency completed.

    The board's actor tells it every task it puts or removes and every claim that starts or
    ends, and reads the best ready task with :meth:`best`. Not thread-safe: it belongs to the
    actor.
    """

    def __init__(self) -> None:
        self._open: dict[int, int] = {}
        """Task id → how many of its dependencies are not completed."""
        self._ready: dict[int, _Key] = {}
        """Ready task id → its place in the order."""
        self._heap: list[_Key] = []
        """Every ready task's key, and stale ones (a key no longer in :attr:`_ready`)."""

    def __len__(self) -> int:
        return len(self._ready)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._ready

    def clear(self) -> None:
        self._open.clear()
        self._ready.clear()
        self._heap.clear()

    def put(
        self,
        task: Task,
        before: Task | None,
        tasks: Mapping[int, Task],
        dependents: Mapping[int, Set[int]],
        claimed: Collection[int],
    ) -> None:
        """``task`` was put on the board (``before``: the version it replaced, if any)."""
        if before is None or before.dependencies != task.dependencies:
            self._open[task.id] = sum(1 for dep in task.dependencies if _blocks(tasks.get(dep)))
        change = _blocks(task) - _blocks(before)
        if change:
            for dependent in dependents.get(task.id, ()):
                if dependent in self._open:
                    self._open[dependent] += change
                    self.refresh(tasks[dependent], claimed)
        self.refresh(task, claimed)

    def remove(
        self, before: Task, tasks: Mapping[int, Task], dependents: Mapping[int, Set[int]], claimed: Collection[int]
    ) -> None:
        """``before`` left the board."""
        self._open.pop(before.id, None)
        self._ready.pop(before.id, None)
        if _blocks(before):
            for dependent in dependents.get(before.id, ()):
                if dependent in self._open and dependent in tasks:
                    self._open[dependent] -= 1
                    self.refresh(tasks[dependent], claimed)

    def refresh(self, task: Task, claimed: Collection[int]) -> None:
        """Put ``task`` in the queue or take it out, as its status, claim and dependencies say."""
        if task.status == "pending" and self._open.get(task.id, 0) <= 0 and task.id not in claimed:
            key = _key(task)
            if self._ready.get(task.id) != key:
                self._ready[task.id] = key
                heapq.heappush(self._heap, key)
                if len(self._heap) > 2 * len(self._ready) + 64:
                    # Stale keys and copies (a task claimed and released again pushes its key
                    # anew) would otherwise pile up: rebuilt, one key per ready task.
                    self._heap = list(self._ready.values())
                    heapq.heapify(self._heap)
        else:
            self._ready.pop(task.id, None)

    def waiting_on(self, task: Task, tasks: Mapping[int, Task]) -> list[int]:
        """The dependencies of ``task`` that are not completed."""
        return [dep for dep in task.dependencies if _blocks(tasks.get(dep))]

    def best(self, fits: Callable[[int], bool]) -> int | None:
        """The id of the best ready task for which ``fits(id)`` is true, or ``None``.

        Tasks that do not fit stay in the queue; the cost is the heap operations for the
        tasks looked at, not the board.
        """
        skipped: list[_Key] = []
        looked_at: set[int] = set()
        found = None
        while self._heap:
            key = heapq.heappop(self._heap)
            task_id = key[2]
            if self._ready.get(task_id) != key or task_id in looked_at:
                continue  # stale (the task left the queue or changed its place), or a copy
            looked_at.add(task_id)
            skipped.append(key)
            if fits(task_id):
                found = task_id
                break
        for key in skipped:
            heapq.heappush(self._heap, key)
        return found

    def ids(self) -> list[int]:
        """The ready tasks' ids, best first."""
        return [key[2] for key in sorted(self._ready.values())]


def _blocks(task: Task | None) -> int:
    """1 when ``task`` keeps its dependents waiting (it exists and is not completed)."""
    return int(task is not None and task.status != "completed")


def left_in_words(seconds: float) -> str:
    """``"40 s"``, ``"3 min"`` or ``"2 h"``: how long a lease has left."""
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds / 3600)} h"


def claim_refusal(
    task: Task,
    agent: str,
    claim: Claim | None,
    waiting: list[int],
    missing_tools: list[str],
    now: float,
) -> str | None:
    """Why ``agent`` may not claim ``task``, or ``None`` when it may.

    Refused: a closed task, a task claimed by another member whose lease holds, a task
    assigned to another member, a task whose dependencies are open, a task needing tools
    the claimer lacks. A claim ``agent`` already holds is not refused (claiming renews it).
    """
    if task.status in ("completed", "aborted"):
        return f"Task {task.id} is {task.status}; there is nothing to claim. Call next_task for a ready task."
    if claim is not None and claim.member != agent and claim.until > now:
        return (
            f"Task {task.id} is claimed by {claim.member} (its lease ends in {left_in_words(claim.until - now)} "
            f"unless {claim.member} keeps working). Take another task: next_task finds one, or message "
            f"{claim.member} to coordinate."
        )
    if claim is None and task.owner is not None and task.owner != agent:
        return (
            f"Task {task.id} is assigned to {task.owner}. Take another task (next_task), or ask {task.owner} "
            "or the planner to reassign it first (update_planning owner)."
        )
    if waiting:
        listed = ", ".join(str(dep) for dep in waiting)
        return (
            f"Task {task.id} is waiting on {listed} (not completed yet). Work on "
            f"{'one of those' if len(waiting) > 1 else 'that one'} first, or call next_task for a ready task."
        )
    if missing_tools:
        return (
            f"Task {task.id} needs {', '.join(missing_tools)}, which you do not have. Leave it to a member "
            "that has them; next_task finds a task you can do."
        )
    return None


def none_ready(
    tasks: Iterable[Task],
    agent: str,
    claims: Mapping[int, Claim],
    waiting: Callable[[Task], list[int]],
    missing: Callable[[Task], list[str]],
) -> str:
    """Why no task is ready for ``agent``: counts of what keeps the open tasks away, with an example each."""
    reasons: dict[str, list[str]] = {}
    for task in tasks:
        if task.status != "pending" and task.id not in claims:
            continue
        claim = claims.get(task.id)
        if claim is not None:
            reason, example = "claimed by others", f"{task.id} by {claim.member}"
            if claim.member == agent:
                reason, example = "claimed by you", str(task.id)
        elif (blockers := waiting(task)) and task.status == "pending":
            reason, example = "wait on dependencies", f"{task.id} waits on {', '.join(map(str, blockers))}"
        elif task.owner is not None and task.owner != agent:
            reason, example = "are assigned to others", f"{task.id} to {task.owner}"
        elif lacking := missing(task):
            reason, example = "need tools you lack", f"{task.id} needs {', '.join(lacking)}"
        else:
            continue
        reasons.setdefault(reason, []).append(example)
    if not reasons:
        return "No task is ready: the board has no pending task. Create tasks with update_planning."
    parts = [f"{len(found)} {reason} (e.g. {found[0]})" for reason, found in reasons.items()]
    return "No task is ready for you: " + "; ".join(parts) + "."


def history_line(when: float, text: str) -> str:
    """``"2026-11-28 10:03 claimed by @Alice"``: one line of a task's claim history (UTC)."""
    return f"{datetime.fromtimestamp(when, UTC):%Y-%m-%d %H:%M} {text}"


def with_history(task: Task, line: str, **changes: object) -> Task:
    """``task`` with ``changes`` and ``line`` appended to its history (the last
    :data:`~toolcards.planning._models.HISTORY_MAX` lines kept)."""
    history = (*task.history, line)[-HISTORY_MAX:]
    return task.model_copy(update={**changes, "history": history})
