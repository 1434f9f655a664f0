"""The update rules: one batch of creates, updates and deletes staged over the committed board.

:func:`stage_update` checks each part against the board as the earlier parts of the batch
left it, and stages the valid ones; it changes nothing committed. The actor runs it inside
the store's write transaction, on a board it has just caught up with what every other
process committed, commits the staged rows and only then mirrors them in memory.

Rules: a created task's ``id`` must be positive and not on the board (omitted: the board's
next free id, never a deleted one); descriptions are 1 to 300 characters; ``dependencies``
must name tasks on the board, not the task itself, and form no cycle; the creator is the
calling agent. A list names each task at most once: a repeat is refused as such, not read as
a second part meeting the first one's result ("Task 3 does not exist" for ``delete [3, 3]``).
Across lists the order holds: a task may be created then updated, or updated then deleted,
and a task created and deleted in one batch is never written. Deleting a task removes its id
from the dependencies of the tasks that waited on it (reported as ``unlinked``). A refused
part becomes an :class:`UpdateFailure` saying what to do next, and a batch is all or nothing:
one refused part and nothing of it is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from toolcards.planning._models import (
    DESCRIPTION_MAX,
    Task,
    TaskCreate,
    TaskUpdate,
    UpdateFailure,
    UpdateReport,
)

__all__ = ["StagedBatch", "path_problems", "stage_update", "unknown_task"]

Operation = Literal["create", "update", "delete"]
"""A part of a batch, as :class:`UpdateFailure` names it."""

MAX_TASK_ID = 2**53 - 1
"""The largest task id: a JSON number above it loses precision in many clients (JavaScript's),
which could then not name the task."""


def unknown_task(task_id: int) -> str:
    """The message for an id that is not on the board."""
    return f"Task {task_id} does not exist. Call search_planning to list task ids, then retry."


def _id_list(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids)


@dataclass(slots=True)
class StagedBatch:
    """One update's staged tasks over the committed board, which it only reads."""

    committed: Mapping[int, Task]
    dependents: Mapping[int, Set[int]]
    """Committed task id → ids of the committed tasks depending on it."""
    next_id: int
    """The next free id, as the batch has advanced it."""
    tasks: dict[int, Task | None] = field(default_factory=dict)
    """Staged tasks by id; ``None`` deletes."""
    described: set[int] = field(default_factory=set)
    """Tasks whose description is new (created, or changed): their embeddings are stale."""
    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    unlinked: list[int] = field(default_factory=list)
    errors: list[UpdateFailure] = field(default_factory=list)
    require_output: bool = False
    """Completing a task needs an output."""

    def task(self, task_id: int) -> Task | None:
        """The task as this batch sees it: staged if staged, else committed; ``None`` if absent."""
        if task_id in self.tasks:
            return self.tasks[task_id]
        return self.committed.get(task_id)

    @property
    def changed(self) -> bool:
        """Whether the batch writes anything: no part was refused and something changes."""
        return bool(self.tasks) and not self.errors

    def report(self, seq: int | None = None) -> UpdateReport:
        """What the batch does, for the model; ``seq`` is the board's change number once committed.

        A batch with a refused part writes nothing: its report lists only the refusals.
        """
        if self.errors:
            return UpdateReport(errors=self.errors)
        # A task both unlinked and deleted in this batch is reported as deleted only.
        unlinked = [task_id for task_id in self.unlinked if self.task(task_id) is not None]
        return UpdateReport(
            created=self.created,
            updated=self.updated,
            unchanged=self.unchanged,
            deleted=self.deleted,
            unlinked=unlinked,
            errors=self.errors,
            seq=seq,
        )

    # -- the rules ----------------------------------------------------------------------------

    def create(self, index: int, item: TaskCreate, creator: str, now: datetime) -> None:
        task_id = self.next_id if item.id is None else item.id
        problems = self._create_problems(task_id, item)
        if problems:
            self.errors.append(UpdateFailure(operation="create", index=index, task_id=item.id, message=problems))
            return
        self.tasks[task_id] = Task(
            id=task_id,
            status=item.status,
            description=item.description,
            output=item.output,
            owner=item.owner,
            creator=creator,
            dependencies=tuple(item.dependencies),
            priority=item.priority,
            requires=tuple(dict.fromkeys(item.requires)),
            paths=tuple(dict.fromkeys(item.paths)),
            created_at=now,
            updated_at=now,
        )
        self.next_id = max(self.next_id, task_id + 1)
        self.created.append(task_id)
        self.described.add(task_id)

    def update(self, index: int, change: TaskUpdate, now: datetime) -> None:
        task = self.task(change.id)
        if task is None:
            self.errors.append(
                UpdateFailure(operation="update", index=index, task_id=change.id, message=unknown_task(change.id))
            )
            return
        problems = []
        if change.description is not None:
            problems.extend(_description_problems(change.description))
        if change.dependencies is not None:
            problems.extend(self._dependency_problems(change.id, change.dependencies))
        output = change.output if change.output is not None else task.output
        if self.require_output and change.status == "completed" and task.status != "completed" and not output:
            problems.append(_output_needed(change.id))
        if problems:
            self.errors.append(
                UpdateFailure(operation="update", index=index, task_id=change.id, message=" ".join(problems))
            )
            return
        fields: dict[str, Any] = {}
        for name in ("description", "status", "output"):
            value = getattr(change, name)
            if value is not None and value != getattr(task, name):
                fields[name] = value
        if change.owner is not None and (change.owner or None) != task.owner:
            fields["owner"] = change.owner or None
        if change.dependencies is not None and tuple(change.dependencies) != task.dependencies:
            fields["dependencies"] = tuple(change.dependencies)
        if change.priority is not None and change.priority != task.priority:
            fields["priority"] = change.priority
        if not fields:
            self.unchanged.append(change.id)
            return
        if "description" in fields:
            self.described.add(change.id)
        self.tasks[change.id] = task.model_copy(update={**fields, "updated_at": now})
        self.updated.append(change.id)

    def refuse_repeat(self, operation: Operation, index: int, task_id: int, times: int) -> None:
        """Refuse a place naming a task its list names already, once per task (``times`` is 0 at
        the later repeats): staged, it would meet the first one's result and be refused for the
        wrong reason (a task deleted twice "does not exist", one created twice "already exists").
        """
        if not times:
            return
        count = "twice" if times == 2 else f"{times} times"
        fix = {
            "create": "give each new task its own id, or omit id to get the next free one.",
            "update": f"put all the changes of task {task_id} in one item.",
            "delete": "list each id once.",
        }[operation]
        message = f"Task {task_id} appears {count} in {operation}_tasks; {fix}"
        self.errors.append(UpdateFailure(operation=operation, index=index, task_id=task_id, message=message))

    def delete(self, index: int, task_id: int, now: datetime) -> None:
        if self.task(task_id) is None:
            self.errors.append(
                UpdateFailure(operation="delete", index=index, task_id=task_id, message=unknown_task(task_id))
            )
            return
        for dependent in self._dependents_of(task_id):
            waiting = self.task(dependent)
            assert waiting is not None
            deps = tuple(d for d in waiting.dependencies if d != task_id)
            self.tasks[dependent] = waiting.model_copy(update={"dependencies": deps, "updated_at": now})
            if dependent not in self.unlinked:
                self.unlinked.append(dependent)
        if task_id in self.committed:
            self.tasks[task_id] = None
        else:  # created by this batch: it is never written
            del self.tasks[task_id]
            self.described.discard(task_id)
        self.deleted.append(task_id)

    # -- checks ---------------------------------------------------------------------------------

    def _create_problems(self, task_id: int, item: TaskCreate) -> str:
        problems = []
        if not 1 <= task_id <= MAX_TASK_ID:
            problems.append(
                f"Task id {task_id} is not valid: ids are from 1 to {MAX_TASK_ID:,}. Omit id to get the next free one."
            )
        elif self.task(task_id) is not None:
            problems.append(
                f"Task {task_id} already exists. Omit id to get the next free one, or update task {task_id}."
            )
        problems.extend(_description_problems(item.description))
        problems.extend(self._dependency_problems(task_id, item.dependencies))
        problems.extend(path_problems(item.paths))
        problems.extend(requires_problems(item.requires))
        if self.require_output and item.status == "completed" and not item.output:
            problems.append(_output_needed(task_id))
        return " ".join(problems)

    def _dependency_problems(self, task_id: int, dependencies: Sequence[int]) -> list[str]:
        problems = []
        missing = [d for d in dependencies if self.task(d) is None and d != task_id]
        if missing:
            noun = "Dependencies" if len(missing) > 1 else "Dependency"
            verb = "do" if len(missing) > 1 else "does"
            problems.append(
                f"{noun} {_id_list(missing)} {verb} not exist; "
                "use ids of tasks on the board (search_planning lists them)."
            )
        if task_id in dependencies:
            problems.append(f"Task {task_id} cannot depend on itself; remove {task_id} from its dependencies.")
        looping = [d for d in dependencies if d != task_id and self.task(d) is not None and self._reaches(d, task_id)]
        if looping:
            problems.append(
                f"Depending on {_id_list(looping)} would make a cycle: "
                f"{'they depend' if len(looping) > 1 else 'it depends'} on task {task_id}, directly or "
                "not. Remove them from the dependencies."
            )
        return problems

    def _reaches(self, start: int, target: int) -> bool:
        """Whether ``target`` is among ``start``'s dependencies, transitively."""
        seen = {start}
        stack = [start]
        while stack:
            task = self.task(stack.pop())
            for dep in task.dependencies if task is not None else ():
                if dep == target:
                    return True
                if dep not in seen and self.task(dep) is not None:
                    seen.add(dep)
                    stack.append(dep)
        return False

    def _dependents_of(self, task_id: int) -> list[int]:
        candidates = set(self.dependents.get(task_id, ()))
        candidates.update(t for t, task in self.tasks.items() if task is not None and task_id in task.dependencies)
        found = []
        for dependent in sorted(candidates):
            task = self.task(dependent)
            if dependent != task_id and task is not None and task_id in task.dependencies:
                found.append(dependent)
        return found


def stage_update(
    committed: Mapping[int, Task],
    dependents: Mapping[int, Set[int]],
    next_id: int,
    creator: str,
    *,
    create: Sequence[TaskCreate] = (),
    update: Sequence[TaskUpdate] = (),
    delete: Sequence[int] = (),
    now: datetime,
    require_output: bool = False,
) -> StagedBatch:
    """Stage one batch on behalf of ``creator``: creates, then updates, then deletes.

    Args:
        committed: the board's tasks by id (read, never changed).
        dependents: committed task id → ids of the committed tasks depending on it.
        next_id: the board's next free id.
        creator: the calling agent, normalised (``"@Alice"``).
        now: the time stamped on every staged task.
        require_output: refuse to complete a task without an output.

    Returns:
        The staged tasks, the advanced next id, and everything the report needs.
    """
    batch = StagedBatch(committed=committed, dependents=dependents, next_id=next_id, require_output=require_output)
    repeats = _repeats([item.id for item in create])
    for index, item in enumerate(create):
        if index in repeats:
            batch.refuse_repeat("create", index, *repeats[index])
        else:
            batch.create(index, item, creator, now)
    repeats = _repeats([change.id for change in update])
    for index, change in enumerate(update):
        if index in repeats:
            batch.refuse_repeat("update", index, *repeats[index])
        else:
            batch.update(index, change, now)
    repeats = _repeats(delete)
    for index, task_id in enumerate(delete):
        if index in repeats:
            batch.refuse_repeat("delete", index, *repeats[index])
        else:
            batch.delete(index, task_id, now)
    return batch


def _repeats(ids: Sequence[int | None]) -> dict[int, tuple[int, int]]:
    """The places of ``ids`` naming a task that an earlier place names, by index: the task, and
    how many times the list names it at the first repeat (where it is refused), ``0`` at later
    ones. ``None`` (a create without an id) never repeats."""
    counts = Counter(task_id for task_id in ids if task_id is not None)
    seen: set[int] = set()
    again: dict[int, tuple[int, int]] = {}
    for index, task_id in enumerate(ids):
        if task_id is None or counts[task_id] == 1:
            continue
        if task_id in seen:
            again[index] = (task_id, counts.pop(task_id, 0))  # popped: later repeats read 0
        seen.add(task_id)
    return again


def path_problems(paths: Sequence[str]) -> list[str]:
    """Why each of ``paths`` (workspace globs a task reserves) cannot be reserved: it must stay
    inside the workspace (relative, no ``..`` leaving it, no NUL), at most :data:`NAMES_MAX`
    of at most :data:`NAME_CHARS` characters."""
    problems = _list_problems("paths", paths)
    for pattern in paths:
        parts = pattern.replace("\\", "/").split("/")
        depth = 0
        for part in parts:
            depth += -1 if part == ".." else 0 if part in ("", ".") else 1
            if depth < 0:
                break
        if "\x00" in pattern or pattern.startswith(("/", "~")) or depth < 0 or not pattern.strip():
            problems.append(
                f"Path {pattern!r} is not a glob inside the workspace; use a relative pattern such as 'src/api/**'."
            )
    return problems


NAMES_MAX = 20
"""Most entries in a task's ``requires`` or ``paths``."""
NAME_CHARS = 200
"""Longest entry in a task's ``requires`` or ``paths``."""


def requires_problems(names: Sequence[str]) -> list[str]:
    """Why ``names`` (the tools a task requires) are not a valid list."""
    return _list_problems("requires", names)


def _list_problems(field: str, items: Sequence[str]) -> list[str]:
    problems = []
    if len(items) > NAMES_MAX:
        problems.append(f"{field} lists {len(items)} entries; the limit is {NAMES_MAX}.")
    if any(not item.strip() or len(item) > NAME_CHARS for item in items):
        problems.append(f"Each entry of {field} must be 1 to {NAME_CHARS} characters.")
    return problems


def _output_needed(task_id: int) -> str:
    return (
        f"Task {task_id} cannot be completed without an output: put what was done (or where the result is) in "
        "output, max 150 chars, and complete it in the same update."
    )


def _description_problems(description: str) -> list[str]:
    if not description.strip():
        return ["The description is empty; say what the task is (max 300 chars)."]
    if len(description) > DESCRIPTION_MAX:
        return [f"The description is {len(description)} chars; the limit is {DESCRIPTION_MAX}. Shorten it."]
    return []
