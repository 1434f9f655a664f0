"""The team planning board: tasks with owners, statuses and dependencies, shared by a team.

* :mod:`~toolcards.planning._models` — the data: :class:`Task`, the model-facing inputs
  :class:`TaskCreate` / :class:`TaskUpdate`, the results :class:`UpdateReport` and
  :class:`SearchHit`, and the four statuses (``pending``, ``in_progress``, ``completed``,
  ``aborted``) with the synonyms read as them (:func:`normalize_status`).
* :mod:`~toolcards.planning._actor` — :class:`PlanningActor`, one per team, which owns the board
  and persists every change through :mod:`toolcards.store` before acknowledging it.
* :mod:`~toolcards.planning._render` — the board as text a model reads.

Importing this package loads pydantic, pykka and the store contract; numpy and the
embedding code load only when an actor is given an embedding.
"""

from __future__ import annotations

from toolcards.planning._actor import (
    PlanningProxy,
)
from toolcards.planning._models import (
    DESCRIPTION_MAX,
    OUTPUT_MAX,
    TASK_STATUSES,
    MatchKind,
    SearchHit,
    SearchPage,
    Task,
    TaskCreate,
    TaskStatus,
    TaskUpdate,
    UpdateFailure,
    UpdateReport,
)
from toolcards.planning._render import (
    PLAN_LIMIT,
    render_search,
)
from toolcards.planning._tool import (
    GetPlanningParam,
    GetPlanningTaskParam,
    PlanningTool,
    SearchPlanningParam,
    UpdatePlanningParam,
)

__all__ = [
    "DESCRIPTION_MAX",
    "OUTPUT_MAX",
    "PLAN_LIMIT",
    "TASK_STATUSES",
    "GetPlanningParam",
    "GetPlanningTaskParam",
    "MatchKind",
    "PlanningProxy",
    "PlanningTool",
    "SearchHit",
    "SearchPage",
    "SearchPlanningParam",
    "Task",
    "TaskCreate",
    "TaskStatus",
    "TaskUpdate",
    "UpdateFailure",
    "UpdatePlanningParam",
    "UpdateReport",
    "render_search",
]
