"""The planning board's data: tasks, the changes a model may ask for, and what a change did.

:class:`TaskCreate` and :class:`TaskUpdate` are LLM-facing: their schema is read on every
request, so their docstrings and field descriptions are written for the model and terse, and
there is no ``creator`` field (the actor stamps the caller). :class:`Task`,
:class:`UpdateReport`, :class:`UpdateFailure` and :class:`SearchHit` are frozen, so the actor
can hand them to other threads.

Statuses are ``pending``, ``in_progress``, ``completed``, ``aborted`` (:data:`TASK_STATUSES`);
:data:`TaskStatus` reads common synonyms (``done``, ``todo``...) as these through
:func:`normalize_status`, while its schema lists only the four. Agent names are normalised to
``@Name`` (:func:`normalize_agent_name`), case kept; empty means unassigned. Rules the schema
cannot check part by part (lengths, unique ids, dependencies, cycles) are checked by
:class:`toolcards.planning._actor.PlanningActor`; output past :data:`OUTPUT_MAX` is cut here,
never refused.
"""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from toolcards.core._events import ToolcardsEvent

__all__ = [
    "DESCRIPTION_MAX",
    "HISTORY_MAX",
    "OUTPUT_MAX",
    "STATUS_SYNONYMS",
    "TASK_STATUSES",
    "Claim",
    "ClaimAction",
    "ClaimChanged",
    "ClaimReport",
    "MatchKind",
    "ReservationMode",
    "SearchHit",
    "SearchPage",
    "Task",
    "TaskCreate",
    "TaskReady",
    "TaskStatus",
    "TaskUpdate",
    "UpdateFailure",
    "UpdateReport",
    "normalize_agent_name",
    "normalize_status",
    "truncate_output",
]

HISTORY_MAX = 10
"""Lines of claim history a task keeps."""
DESCRIPTION_MAX = 300
"""Longest accepted task description, in characters; longer ones are refused."""
OUTPUT_MAX = 150
"""Longest stored task output, in characters; longer ones are cut to fit, ending in ``...``."""

MatchKind = Literal["filter", "keyword", "semantic", "both"]
"""How a search hit matched: by filters alone (no query), by words, by meaning, or both."""

_Status = Literal["pending", "in_progress", "completed", "aborted"]

TASK_STATUSES: tuple[_Status, ...] = ("pending", "in_progress", "completed", "aborted")
"""Every task status, in the order the plan counts them and the dashboard shows its columns;
``completed`` and ``aborted`` are closed."""

_SYNONYMS_OF: dict[_Status, tuple[str, ...]] = {
    "pending": ("todo", "to do", "open", "new", "not started", "queued"),
    "in_progress": ("started", "doing", "active", "in progress", "wip", "working"),
    "completed": ("done", "complete", "finished", "closed", "resolved"),
    "aborted": ("abort", "cancelled", "canceled", "dropped", "abandoned", "wontfix"),
}
STATUS_SYNONYMS: MappingProxyType[str, _Status] = MappingProxyType(
    {word: status for status, words in _SYNONYMS_OF.items() for word in words}
)
"""Other words for a status, read as the status they map to. Keys are folded as
:func:`normalize_status` folds its input (lower case, ``_`` and ``-`` as spaces, one space
between words), so ``"In-Progress"`` and ``" WIP "`` are found too. ``started`` and
``abort`` are also what boards written before 0.3 hold."""

# Words a model sends that are not a status, with what it means to say instead.
_HINTS: dict[str, str] = {
    **dict.fromkeys(
        ("blocked", "waiting", "on hold", "paused", "stuck"),
        "a task waiting on other tasks keeps its status and lists them in dependencies",
    ),
    **dict.fromkeys(
        ("review", "in review", "testing", "qa"),
        "work under review or test is in_progress until it is completed",
    ),
    **dict.fromkeys(
        ("failed", "failure", "error"),
        "a task that failed is aborted (say why in output), or pending to be tried again",
    ),
}
# Worded as pydantic refuses an enum value (a number, say), so every refusal reads alike.
_STATUS_CHOICES = ", ".join(f"'{status}'" for status in TASK_STATUSES[:-1]) + f" or '{TASK_STATUSES[-1]}'"


def _fold(word: str) -> str:
    return " ".join(word.replace("_", " ").replace("-", " ").casefold().split())


# Every accepted word, as sent (the statuses themselves) and folded; a status as sent costs
# one lookup, which is how every stored task and most arguments arrive.
_STATUS_WORDS: dict[str, _Status] = {
    **{status: status for status in TASK_STATUSES},
    **{_fold(status): status for status in TASK_STATUSES},
    **STATUS_SYNONYMS,
}


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


def normalize_status(word: str) -> TaskStatus:
    """Return the status ``word`` means: one of :data:`TASK_STATUSES`, or the status a word of
    :data:`STATUS_SYNONYMS` stands for (``"Done"`` → ``"completed"``, ``"in progress"`` →
    ``"in_progress"``). Case is ignored, and ``_``, ``-`` and runs of spaces read as one space.

    This is what validation of :data:`TaskStatus` does; call it for a status that arrives
    outside a model (a filter, a query string).

    Raises:
        ValueError: ``word`` is not a status; the message quotes it, names the four
            statuses and, for words such as ``blocked`` or ``failed``, what to send instead.
    """
    status = _status_of(word)
    if status is None:
        raise ValueError(f"{word!r} is not a task status. {_status_refusal(word)}.")
    return status


def _status_of(word: str) -> _Status | None:
    status = _STATUS_WORDS.get(word)
    return status if status is not None else _STATUS_WORDS.get(_fold(word))


def _status_refusal(word: str) -> str:
    hint = _HINTS.get(_fold(word))
    return f"Input should be {_STATUS_CHOICES}" + (f"; {hint}" if hint else "")


def _validate_status(value: object) -> object:
    """:func:`normalize_status` for validation; anything but text goes on to the enum, which
    refuses it with the same list."""
    if not isinstance(value, str):
        return value
    status = _status_of(value)
    if status is None:
        # Not a ValueError: pydantic would prefix "Value error, " to the text a model reads.
        raise PydanticCustomError("task_status", _status_refusal(value))
    return status


TaskStatus = Annotated[_Status, BeforeValidator(_validate_status)]
"""Where a task stands: ``pending``, ``in_progress``, ``completed`` or ``aborted``
(:data:`TASK_STATUSES`); the last two are closed.

Validation reads synonyms and the words of older boards as these four
(:func:`normalize_status`) and refuses other words naming them; the JSON schema is an enum
of the four alone, so a model reads one vocabulary and its other words still work. Every model
and tool argument carrying a status uses this type, so every channel answers alike.

Changed in 0.3: ``started`` and ``abort`` became ``in_progress`` and ``aborted``; both
are still read, in arguments and in stored boards.
"""


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
# Checked by the board's rules (planning/_batch.py), not the schema: every word of a schema
# is paid for on every request.
_Names = list[str]


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
    priority: int = Field(default=0, description="Higher first.")
    requires: _Names = Field(default_factory=list, description="Tools a claimer needs.")
    paths: _Names = Field(default_factory=list, description="Globs it reserves.")


class TaskUpdate(BaseModel):
    """Changes to one task; omitted fields stay as they are."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    id: int
    description: str | None = Field(default=None, description="Max 300 chars.")
    status: TaskStatus | None = None
    owner: _OwnerInput = Field(default=None, description='"" unassigns.')
    output: _Output | None = Field(default=None, description="Cut to 150 chars.")
    dependencies: _Ids | None = Field(default=None, description="Replaces the list; no cycles.")
    priority: int | None = None


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
    priority: int = 0
    """Higher is taken first by ``next_task``; ties go to the older task."""
    requires: tuple[str, ...] = ()
    """Tool names a member needs to claim the task (e.g. ``exec_command``)."""
    paths: tuple[str, ...] = ()
    """Workspace globs reserved for the task's owner while it is claimed."""
    history: tuple[str, ...] = ()
    """The last :data:`HISTORY_MAX` claims, releases and expiries, oldest first, one line each."""
    created_at: datetime
    """When the task was created (UTC)."""
    updated_at: datetime
    """When the task last changed (UTC)."""

    def involves(self, agent: str) -> bool:
        """Whether ``agent`` (already normalised) owns or created this task."""
        return agent in (self.owner, self.creator)


ReservationMode = Literal["refuse", "warn"]
"""``refuse``: another member's write to a reserved path is refused; ``warn``: it goes
through with a warning naming the holder."""


class Claim(BaseModel):
    """A member's lease on a task it claimed (``claim_task``, ``next_task``), as stored.

    The claim holds while :attr:`until` is ahead: the member's tool calls renew it, and it
    ends when the member releases the task, completes or aborts it, leaves the team, or lets
    the lease run out. Times are seconds since the epoch, so every process and host reads one
    deadline (their clocks must agree to a second or so).
    """

    model_config = ConfigDict(frozen=True)

    task_id: int
    member: str
    """The claimer's handle, ``@Name``; also the task's owner while the claim holds."""
    since: float
    until: float
    """When the lease ends unless it is renewed."""
    lease_s: float
    """How long each renewal extends it."""
    paths_mode: ReservationMode = "refuse"
    """What a write by another member to the task's ``paths`` meets while the claim holds."""


class ClaimReport(BaseModel):
    """What ``claim_task`` / ``next_task`` did: the task as claimed, and the lease."""

    model_config = ConfigDict(frozen=True)

    task: Task
    until: float
    """When the lease ends unless the member's tool calls renew it (seconds since the epoch)."""
    lease_s: float
    renewed: bool = False
    """The member already held the task; only the lease was extended."""
    replayed: bool = False
    """The answer of an earlier attempt of the same call (same idempotency key)."""
    held: bool = True
    """On a replay: the member still holds the claim (``False``: it ended since; :attr:`task`
    is then the task as it is now)."""


ClaimAction = Literal["claimed", "released", "expired", "left"]
"""How a claim started or ended."""


class ClaimChanged(ToolcardsEvent):
    """A claim started or ended: ``claimed``, ``released`` (by its holder, or by a change to
    the task), ``expired`` (its lease ran out) or ``left`` (its holder left the team)."""

    kind: Literal["claim_changed"] = "claim_changed"
    action: ClaimAction
    task_id: int
    member: str


class TaskReady(ToolcardsEvent):
    """The last open dependency of an owned task was completed: its owner can start it."""

    kind: Literal["task_ready"] = "task_ready"
    task_id: int
    owner: str
    text: str
    """What the owner is told."""


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
    """What one :meth:`~toolcards.planning._actor.PlanningActor.update` batch did.

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
    """One task found by :meth:`~toolcards.planning._actor.PlanningActor.search`."""

    model_config = ConfigDict(frozen=True)

    task: Task
    match: MatchKind
    """``"keyword"``: the query's words are in the task; ``"semantic"``: its meaning is
    close (cosine >= 0.3); ``"both"``; ``"filter"``: no query, only filters applied."""
    similarity: float | None = None
    """Cosine similarity to the query when it matched semantically, else ``None``."""


class SearchPage(BaseModel):
    """The best hits of one search, and how many tasks matched in all."""

    model_config = ConfigDict(frozen=True)

    total: int
    hits: list[SearchHit]
    """Best first; at most the ``limit`` asked for."""
