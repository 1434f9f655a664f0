"""The planning board's data: tasks, the changes a model may ask for, and what a change did.

Two kinds of model live here:

* LLM-facing inputs — :class:`TaskCreate` and :class:`TaskUpdate`. Their JSON schema is
  what a model reads on every request, so their class docstrings and field descriptions
  are written for the model and kept terse: they state the board's rules (id unique,
  description at most 300 characters, output cut to 150, dependencies must exist and form
  no cycle). There is no ``creator`` field: the actor stamps the calling agent.
* Board data and results — :class:`Task`, :class:`UpdateReport`, :class:`UpdateFailure`,
  :class:`SearchHit`. All are frozen, so the actor can hand them to other threads.

Agent names are normalised to ``@Name`` everywhere (:func:`normalize_agent_name`):
``"Alice"``, ``" @Alice "`` and ``"@@Alice"`` all become ``"@Alice"``; case is kept, so
``"@alice"`` and ``"@Alice"`` are different agents. An empty name means "unassigned".

Rules the schema cannot check part by part (description length, unique ids, existing
dependencies, cycles) are checked by :class:`toolcards.planning.actor.PlanningActor`, which
reports every refused part of a batch together; a batch with a refused part applies nothing.
Output longer than :data:`OUTPUT_MAX` is cut here, on validation, never refused. This module
imports pydantic only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "DESCRIPTION_MAX",
    "OUTPUT_MAX",
    "MatchKind",
    "SearchHit",
    "SearchPage",
    "Task",
    "TaskCreate",
    "TaskStatus",
    "TaskUpdate",
    "UpdateFailure",
    "UpdateReport",
    "normalize_agent_name",
    "truncate_output",
]

DESCRIPTION_MAX = 300
"""Longest accepted task description, in characters; longer ones are refused."""
OUTPUT_MAX = 150
"""Longest stored task output, in characters; longer ones are cut to fit, ending in ``...``."""

TaskStatus = Literal["pending", "started", "completed", "abort"]
"""Where a task stands. ``completed`` and ``abort`` are closed."""

MatchKind = Literal["filter", "keyword", "semantic", "both"]
"""How a search hit matched: by filters alone (no query), by words, by meaning, or both."""


def normalize_agent_name(name: str) -> str:
    """Return ``name`` as ``@Name``: whitespace and leading ``@`` stripped, one ``@`` added.

    Returns ``""`` when nothing is left (the caller reads it as "unassigned"). Never raises.
    """
    bare = name.strip().lstrip("@").strip()
    return f"@{bare}" if bare else ""


def truncate_output(output: str) -> str:
    """Return ``output`` cut to :data:`OUTPUT_MAX` characters (147 kept + ``...``) if longer."""
    if len(output) <= OUTPUT_MAX:
        return output
    return output[: OUTPUT_MAX - 3] + "..."


def _normalize_if_str(value: object) -> object:
    return normalize_agent_name(value) if isinstance(value, str) else value


def _empty_is_none(value: str | None) -> str | None:
    return value or None


def _unique(ids: list[int]) -> list[int]:
    return list(dict.fromkeys(ids))


# An owner as a model writes it; "" (or "@") is kept so TaskUpdate can say "unassign".
_OwnerInput = Annotated[str | None, BeforeValidator(_normalize_if_str)]
# An owner as stored: "@Name", or None for unassigned.
_Owner = Annotated[str | None, BeforeValidator(_normalize_if_str), AfterValidator(_empty_is_none)]
_Output = Annotated[str, AfterValidator(truncate_output)]
_Ids = Annotated[list[int], AfterValidator(_unique)]


class TaskCreate(BaseModel):
    """A new task."""

    # The docstring and descriptions above and below are sent to the model with the
    # tool schema on every request: keep them short and in the model's terms.
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    id: int | None = Field(default=None, description="Unique. Omit for the next free id.")
    description: str = Field(description="Max 300 chars.")
    status: TaskStatus = "pending"
    owner: _Owner = Field(default=None, description="Agent, e.g. @Alice.")
    output: _Output = Field(default="", description="Result; cut to 150 chars.")
    dependencies: _Ids = Field(default_factory=list, description="Existing task ids; no cycles.")


class TaskUpdate(BaseModel):
    """Changes to one task; omitted fields stay as they are."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    id: int
    description: str | None = Field(default=None, description="Max 300 chars.")
    status: TaskStatus | None = None
    owner: _OwnerInput = Field(default=None, description='"" unassigns.')
    output: _Output | None = Field(default=None, description="Cut to 150 chars.")
    dependencies: _Ids | None = Field(default=None, description="Replaces the list; no cycles.")


class Task(BaseModel):
    """One task on a team's board, as stored. Frozen: changes make a new copy."""

    model_config = ConfigDict(frozen=True)

    id: int
    """Unique on the board; never reused after a delete."""
    status: TaskStatus
    """Where the task stands (:data:`TaskStatus`)."""
    description: str
    """At most :data:`DESCRIPTION_MAX` characters."""
    output: _Output = ""
    """At most :data:`OUTPUT_MAX` characters."""
    owner: _Owner = None
    """``"@Name"``, or ``None`` when unassigned."""
    creator: str
    """The agent that created the task, stamped by the actor, never chosen by a model."""
    dependencies: tuple[int, ...] = ()
    """Ids of tasks on the board this task waits on; they form no cycle."""
    created_at: datetime
    """When the task was created (UTC)."""
    updated_at: datetime
    """When the task last changed (UTC)."""

    def involves(self, agent: str) -> bool:
        """Whether ``agent`` (already normalised) owns or created this task."""
        return agent in (self.owner, self.creator)


class UpdateFailure(BaseModel):
    """One part of an update batch that was refused; nothing of that part was applied."""

    model_config = ConfigDict(frozen=True)

    operation: Literal["create", "update", "delete"]
    index: int
    """Position of the part in its list (``create``, ``update`` or ``delete``), from 0."""
    task_id: int | None
    """The task the part named, or ``None`` for a create without an id."""
    message: str
    """What failed, with the value, and what to do next."""


def task_ids(ids: list[int]) -> str:
    """``task 3`` or ``tasks 3, 4``."""
    return ("task " if len(ids) == 1 else "tasks ") + ", ".join(str(i) for i in ids)


class UpdateReport(BaseModel):
    """What one :meth:`~toolcards.planning.actor.PlanningActor.update` batch did.

    A batch is all or nothing. Everything listed in ``created``/``updated``/``deleted`` is
    committed; when ``errors`` lists a refused part, nothing of the batch was written and
    the other lists are empty.
    """

    model_config = ConfigDict(frozen=True)

    created: list[int] = Field(default_factory=list)
    """Ids of created tasks, in the order given (assigned ids included)."""
    updated: list[int] = Field(default_factory=list)
    """Ids of tasks an update changed."""
    unchanged: list[int] = Field(default_factory=list)
    """Ids named by an update that already had those values (nothing written)."""
    deleted: list[int] = Field(default_factory=list)
    unlinked: list[int] = Field(default_factory=list)
    """Tasks whose ``dependencies`` lost a deleted task's id."""
    errors: list[UpdateFailure] = Field(default_factory=list)
    """The refused parts; when there is one, nothing of the batch was written."""
    seq: int | None = None
    """The board's change number after this batch; ``None`` when nothing changed."""
    replayed: bool = False
    """This is the answer of an earlier attempt of the same call (same idempotency key),
    which applied it; nothing was written again."""

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return bool(self.created or self.updated or self.deleted or self.unlinked)

    def summary(self) -> str:
        """One line of what changed, e.g. ``"created tasks 3, 4; deleted task 1"`` (``""`` if nothing)."""
        parts = []
        for verb, ids in (("created", self.created), ("updated", self.updated), ("deleted", self.deleted)):
            if ids:
                parts.append(f"{verb} {task_ids(ids)}")
        if self.unlinked:
            parts.append(f"unlinked {task_ids(self.unlinked)}")
        return "; ".join(parts)


class SearchHit(BaseModel):
    """One task found by :meth:`~toolcards.planning.actor.PlanningActor.search`."""

    model_config = ConfigDict(frozen=True)

    task: Task
    match: MatchKind
    """``"keyword"``: the query's words are in the task; ``"semantic"``: its meaning is
    close (cosine >= 0.5); ``"both"``; ``"filter"``: no query, only filters applied."""
    similarity: float | None = None
    """Cosine similarity to the query when it matched semantically, else ``None``."""


class SearchPage(BaseModel):
    """The best hits of one search, and how many tasks matched in all."""

    model_config = ConfigDict(frozen=True)

    total: int
    hits: list[SearchHit]
    """Best first; at most the ``limit`` asked for."""
