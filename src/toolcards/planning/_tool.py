"""``PlanningTool``: the team's shared planning board, as tools, a system prompt and commands.

One board per team (``#PlanningTool``, race-free through the team's ``get_or_spawn``): two
agents of one team share it, two teams never do. Every update is committed to the store before
the tool answers, so an acknowledged update survives a kill. Its capabilities
(``get_planning``, ``get_planning_task``, ``update_planning``, ``search_planning``) are
described in ``docs/cards/planning.md``. A task's creator is stamped from the calling agent,
never taken from the model; statuses and their synonyms are read by
:data:`~toolcards.planning._models.TaskStatus` on every channel. One view
(:mod:`toolcards.core._views`): ``planning.board``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Hashable
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._idempotency import current_call
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.core._records import Records
from toolcards.core._services import CLAIMED_TASK, PATH_RESERVATIONS
from toolcards.core._views import view
from toolcards.errors import OutcomeUnknown, RetriableError
from toolcards.planning._actor import DEFAULT_LEASE_S, PLANNING_ACTOR_NAME, PlanningActor, PlanningProxy
from toolcards.planning._models import ReservationMode, TaskCreate, TaskStatus, TaskUpdate
from toolcards.planning._render import PLAN_LIMIT, render_claim, render_search, render_task, render_update_report
from toolcards.store._default import default_store
from toolcards.vector._param import EmbeddingParam

__all__ = ["GetPlanningParam", "GetPlanningTaskParam", "PlanningTool", "SearchPlanningParam", "UpdatePlanningParam"]


class GetPlanningParam(BaseToolParam):
    """The plan in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}
    filter_by_agent: bool = True
    """List only the tasks the agent owns or created (the counts always cover the board)."""


class GetPlanningTaskParam(BaseToolParam):
    """One task by id."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class UpdatePlanningParam(BaseToolParam):
    """Create, update and delete tasks in one batch."""

    expose: set[Channels] = {TOOL_CALL}


class SearchPlanningParam(BaseToolParam):
    """Filter and search tasks."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ClaimTaskParam(BaseToolParam):
    """Claim one task, atomically across the team."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class NextTaskParam(BaseToolParam):
    """Claim the best ready task."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ReleaseTaskParam(BaseToolParam):
    """Give a claimed task back."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


SEARCH_RECORDS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "total": {"type": "integer"},
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "description": {"type": "string"},
                    "status": {"type": "string"},
                    "owner": {"type": ["string", "null"]},
                    "match": {"type": "string"},
                },
            },
        },
    },
    "required": ["total", "hits"],
}
"""``search_planning``'s records (``structuredContent`` over MCP): how many tasks matched, and
the ones shown, each with how it matched (``filter``, ``keyword``, ``semantic``...)."""


class PlanningTool(ToolCard):
    """The team's planning board. ``embedding`` turns on semantic search (keyword-only without)."""

    kind: ClassVar[str] = "planning"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    get_planning: GetPlanningParam | bool = True
    get_planning_task: GetPlanningTaskParam | bool = True
    update_planning: UpdatePlanningParam | bool = True
    search_planning: SearchPlanningParam | bool = True
    claim_task: ClaimTaskParam | bool = True
    next_task: NextTaskParam | bool = True
    release_task: ReleaseTaskParam | bool = True
    embedding: EmbeddingParam | None = None
    """How texts are embedded for search by meaning; ``None``: keyword search only."""
    lease_s: float = Field(default=DEFAULT_LEASE_S, gt=0, allow_inf_nan=False)
    """Seconds a claim lasts without a tool call of its holder; each call renews it."""
    require_output: bool = True
    """Completing a task needs an output (what was done, or where the result is)."""
    reservations: ReservationMode = "refuse"
    """While a task is claimed, another member's workspace write to one of its ``paths`` is
    refused (``refuse``) or goes through with a warning (``warn``)."""
    _board: PlanningProxy | None = PrivateAttr(default=None)
    _tools: frozenset[str] | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        team = agent.team
        self._board = team.get_or_spawn(
            PLANNING_ACTOR_NAME,
            PlanningActor,
            agent.team_id,
            default_store(),
            self.embedding,
            team.publish_batched,
            team=team,
            proxy=PlanningProxy,
        )
        # The workspace asks for the paths reserved by claims; only the board's proxy is kept.
        team.provide(PATH_RESERVATIONS, functools.partial(_reserved_paths, self._board))
        # The workspace journal and the ledger record each change or call with the task its member holds.
        team.provide(CLAIMED_TASK, functools.partial(_claimed_task, self._board))

    def on_tools_bound(self, tool_names: frozenset[str]) -> None:
        """Keep the agent's tool names: a task's ``requires`` are checked against them."""
        self._tools = tool_names

    @property
    def board(self) -> PlanningProxy:
        """The team's board actor (after binding)."""
        return self.bound(self._board)

    @property
    def _agent(self) -> str:
        observer: ActorToolObserver = self.get_observer()
        return observer.address.handle

    def _on_tool_call(self, field: str) -> bool:
        param = self.param(field)
        return param is not None and TOOL_CALL in param.expose

    @capability("get_planning", hints=ToolHints(title="Team plan"))
    def show_plan(self) -> str:
        """The team plan: task counts, owners and your tasks."""
        param = self.param("get_planning", GetPlanningParam)
        return self.ask(
            self.board.render(
                self._agent,
                param.filter_by_agent,
                get_tool="get_planning_task" if self._on_tool_call("get_planning_task") else None,
                search_tool="search_planning" if self._on_tool_call("search_planning") else None,
            ),
            actor=PLANNING_ACTOR_NAME,
        )

    @capability("get_planning_task", hints=ToolHints(title="Get task", completions={"task_id": "complete_task_id"}))
    def get_task(self, task_id: int) -> str:
        """Get one task by id.

        Args:
            task_id: The task id.
        """
        return render_task(self.ask(self.board.get_task(task_id), actor=PLANNING_ACTOR_NAME))

    @capability("update_planning", mutates=True, hints=ToolHints(title="Change plan", destructive=True))
    def update(
        self,
        create_tasks: list[TaskCreate] | None = None,
        update_tasks: list[TaskUpdate] | None = None,
        delete_tasks: list[int] | None = None,
    ) -> str:
        """Change the team plan in one batch: create, then update, then delete.
        All or nothing: if a part fails, nothing is applied.

        Args:
            create_tasks: New tasks (you are recorded as creator).
            update_tasks: Changes to existing tasks; omitted fields stay as they are.
        """
        # delete_tasks has no Args entry on purpose: its name and type (a list of integers)
        # say what it takes, and a description is paid for on every request.
        if not (create_tasks or update_tasks or delete_tasks):
            raise RetriableError("Nothing to do: give create_tasks, update_tasks or delete_tasks.")
        try:
            report = self.ask(
                self.board.update(
                    self._agent,
                    create_tasks or (),
                    update_tasks or (),
                    delete_tasks or (),
                    call=current_call(),
                    require_output=self.require_output,
                ),
                actor=PLANNING_ACTOR_NAME,
            )
        except OutcomeUnknown as exc:
            exc.check = "search_planning"
            raise
        if report.errors:
            raise RetriableError(render_update_report(report))
        return render_update_report(report)

    @capability("search_planning", hints=ToolHints(title="Search tasks", output_schema=SEARCH_RECORDS))
    def search(
        self,
        query: str | None = None,
        status: TaskStatus | None = None,
        owner: str | None = None,
        creator: str | None = None,
    ) -> str:
        """Find tasks by filters and/or a natural-language query (keyword and meaning).

        Args:
            query: What the task is about.
            owner: e.g. @Bob; "" for unassigned.
            creator: e.g. @Alice.
        """
        page = self.ask(self.board.search_page(query, status, owner, creator, PLAN_LIMIT), actor=PLANNING_ACTOR_NAME)
        records = [
            {
                "id": hit.task.id,
                "description": hit.task.description,
                "status": hit.task.status,
                "owner": hit.task.owner,
                "match": hit.match,
            }
            for hit in page.hits
        ]
        return Records(render_search(page), {"total": page.total, "hits": records})

    @capability("claim_task", mutates=True, hints=ToolHints(title="Claim task"))
    def claim(self, task_id: int) -> str:
        """Claim a task; nobody else can take it while your tool calls keep its lease."""
        report = self._claiming(self.board.claim(self._agent, task_id, **self._claim_options()))
        return render_claim(report)

    @capability("next_task", mutates=True, hints=ToolHints(title="Take next task"))
    def take_next(self) -> str:
        """Claim the best task ready for you, or learn why none is."""
        return render_claim(self._claiming(self.board.next_task(self._agent, **self._claim_options())))

    @capability("release_task", mutates=True, hints=ToolHints(title="Release task"))
    def release(self, task_id: int, reason: str = "") -> str:
        """Give back a task you hold; it returns to pending.

        Args:
            reason: For whoever takes it next.
        """
        task = self._claiming(self.board.release(self._agent, task_id, reason, call=current_call()))
        return f"Released task {task.id}; it is pending again."

    def complete_task_id(self, prefix: str) -> list[str]:
        """Task ids starting with ``prefix`` (a client completing ``task_id``)."""
        if prefix and not prefix.isdigit():
            return []
        return [str(task_id) for task_id in self.ask(self.board.task_ids(prefix), actor=PLANNING_ACTOR_NAME)]

    def _claim_options(self) -> dict[str, Any]:
        return {"tools": self._tools, "lease_s": self.lease_s, "paths_mode": self.reservations, "call": current_call()}

    def _claiming(self, future: Any) -> Any:
        try:
            return self.ask(future, actor=PLANNING_ACTOR_NAME)
        except OutcomeUnknown as exc:
            exc.check = "get_planning_task"
            raise

    # -- views (read-only, for people looking at the team) ----------------------------------

    def board_version(self) -> int:
        """The board's change number: one more per committed change, in any process."""
        return self.ask(self.board.seq(), actor=PLANNING_ACTOR_NAME)

    def board_view_version(self) -> Hashable:
        """The board's change number and its claims' leases: renewals change no task but the
        lease time shown."""
        return self.ask(self.board.view_version(), actor=PLANNING_ACTOR_NAME)

    @view("planning.board", version=board_view_version)
    def board_view(self) -> dict[str, Any]:
        """The planning board: every task with all its fields, and the claims with their
        leases (``until`` in seconds since the epoch, beside the server's ``now``)."""
        tasks = self.ask(self.board.tasks(), actor=PLANNING_ACTOR_NAME)
        claims = self.ask(self.board.claims(), actor=PLANNING_ACTOR_NAME)
        return {
            "tasks": [task.model_dump(mode="json") for task in tasks],
            "claims": [claim.model_dump(mode="json") for claim in claims],
            "now": time.time(),
        }


def _reserved_paths(board: PlanningProxy, member: str) -> list[tuple[str, str, int, ReservationMode]]:
    from toolcards.actors._asking import ask

    return ask(board.reservations(member), actor=PLANNING_ACTOR_NAME)


def _claimed_task(board: PlanningProxy, member: str) -> int | None:
    from toolcards.actors._asking import ask

    return ask(board.claimed_task(member), actor=PLANNING_ACTOR_NAME)
