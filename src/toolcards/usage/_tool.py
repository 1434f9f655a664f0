"""``UsageTool``: what each member, task and card cost the team, and budgets that limit it.

Every call of a team keeping a ledger is counted (:mod:`toolcards.store._ledger`); this card
reads it (``usage``), sets and removes budgets (``set_budget``, ``remove_budget``: commands by
default, since a member given them as tools could raise its own) and warns in the system
prompt of budgets at 80 % or more (``budget_warnings``). Bound, it turns the ledger on for its
team in this process if nothing did. A spent budget on a member, a task or a card refuses
further calls with ``BudgetExceeded``, naming it and who can raise it; it never refuses
``set_budget`` and ``remove_budget`` themselves (:data:`~toolcards.core._usage.BUDGET_TOOLS`),
so no budget locks out whoever should lift it (``docs/usage.md``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Annotated, Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.core._usage import Budget, BudgetScope, parse_since, render_usage
from toolcards.errors import RetriableError, StoreError
from toolcards.store._ledger import StoreLedger

__all__ = [
    "BudgetWarningsParam",
    "RemoveBudgetParam",
    "SetBudgetParam",
    "UsageParam",
    "UsageTool",
]

_ledger_lock = threading.Lock()


class UsageParam(BaseToolParam):
    """Totals per member, task, card and tool."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class SetBudgetParam(BaseToolParam):
    """Limit a member, a task or a card."""

    expose: set[Channels] = {COMMAND}


class RemoveBudgetParam(BaseToolParam):
    """Take a budget away."""

    expose: set[Channels] = {COMMAND}


class BudgetWarningsParam(BaseToolParam):
    """A warning line per budget of this member at 80 % or more."""

    expose: set[Channels] = {SYSTEM_PROMPT}


class UsageTool(ToolCard):
    """The team's ledger of tool calls: usage totals, budgets and their warnings."""

    kind: ClassVar[str] = "usage"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    usage: UsageParam | bool = True
    set_budget: SetBudgetParam | bool = True
    remove_budget: RemoveBudgetParam | bool = True
    budget_warnings: BudgetWarningsParam | bool = True

    _ledger: StoreLedger | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        """Find the team's ledger, or start one in the team's store."""
        team = observer.team
        with _ledger_lock:
            if getattr(team, "ledger", None) is None:
                from toolcards.store._default import default_store

                team.ledger = StoreLedger(default_store(), observer.team_id, team=team)
        self._ledger = team.ledger

    @property
    def ledger(self) -> StoreLedger:
        """The team's ledger (after binding)."""
        return self.bound(self._ledger)

    @property
    def _agent(self) -> str:
        observer: ActorToolObserver = self.get_observer()
        return observer.address.handle

    @capability("usage")
    def report(
        self,
        member: str | None = None,
        task_id: int | None = None,
        since: Annotated[str | None, Field(max_length=40)] = None,
    ) -> str:
        """Tool calls' cost (calls, tokens, time) per member, task and card.

        Args:
            member: Only this member's calls (@Name).
            task_id: Only calls made for this task.
            since: From this UTC time (ISO, e.g. 2026-11-28T09:00) or this long ago (30m, 2h, 7d).
        """
        ledger = self.ledger
        who = None if member is None else _handle(member)
        start = parse_since(since) if since else None
        if who is not None and who not in ledger.members():
            known = ", ".join(sorted(ledger.members())) or "none yet"
            raise RetriableError(f"No calls are recorded for {who}. Members with calls: {known}.")
        if task_id is not None and task_id < 1:
            raise RetriableError(f"task_id must be a task's id (1 or more), not {task_id}.")
        return render_usage(ledger.usage(member=who, task_id=task_id, since=start))

    @capability("set_budget", mutates=True, hints=ToolHints(destructive=True, idempotent=True))
    def limit(
        self,
        member: str | None = None,
        task_id: int | None = None,
        card: str | None = None,
        calls: int | None = None,
        result_tokens: int | None = None,
        tool_time_s: float | None = None,
    ) -> str:
        """Limit what one member, one task or one card may spend; calls past it are refused.

        Args:
            member: A member (@Name).
            task_id: A task's id.
            card: A card's class (WorkspaceTool) or kind (workspace).
            calls: Calls at most.
            result_tokens: Tokens of results at most.
            tool_time_s: Seconds of tool time at most.
        """
        scope, name = self._scope(member, task_id, card)
        limits = {"calls": calls, "result_tokens": result_tokens, "tool_time_s": tool_time_s}
        given = {key: value for key, value in limits.items() if value is not None}
        if not given:
            raise RetriableError("Give at least one limit: calls, result_tokens or tool_time_s.")
        for key, value in given.items():
            if value <= 0:
                raise RetriableError(
                    f"{key}={value} would refuse every call of {scope} {name}: a limit must be above 0. "
                    "To stop a member, stop it; to lift a limit, call remove_budget."
                )
        budget = self.ledger.set_budget(
            Budget(scope=scope, name=name, set_by=self._agent, **given)  # type: ignore[arg-type]
        )
        limits_text = ", ".join(f"{key}={value:g}" for key, value in budget.limits().items())
        return f"Budget of {budget.label} set: {limits_text}. {self._spent_already(budget)}"

    @capability("remove_budget", mutates=True, hints=ToolHints(destructive=True, idempotent=True))
    def unlimit(self, member: str | None = None, task_id: int | None = None, card: str | None = None) -> str:
        """Remove the budget of one member, one task or one card.

        Args:
            member: A member (@Name).
            task_id: A task's id.
            card: A card's class (WorkspaceTool) or kind (workspace).
        """
        scope, name = self._scope(member, task_id, card, known_only=False)
        budget = self.ledger.remove_budget(scope, name)
        return f"Budget of {budget.label} removed."

    @capability("budget_warnings")
    def warnings(self) -> str | None:
        """Budgets of yours, your task or your cards at 80 % or more."""
        changes_budgets = all(self._on_tool_call(field) for field in ("set_budget", "remove_budget"))
        lines = self.ledger.warnings(self._agent, changes_budgets=changes_budgets)
        return "\n".join(lines) if lines else None

    def _on_tool_call(self, field: str) -> bool:
        param = self.param(field)
        return param is not None and TOOL_CALL in param.expose

    def _spent_already(self, budget: Budget) -> str:
        """What a new budget means from now on: calls past it are refused, or, when what it
        covers has spent it already, that the next call counting against it is refused (the
        setter learns it here, not from that refusal)."""
        # The calls made just before count, as admission will count them; if the store refuses
        # the write, the writer's last pass judges, as it would admission.
        with contextlib.suppress(StoreError):
            self.ledger.flush()
        used = self.ledger.used(budget.scope, budget.name)
        limit = budget.spent(used)
        if limit is None:
            return "Calls past it are refused."
        return (
            f"It is spent already ({used.value(limit):g} of {budget.limits()[limit]:g} {limit}): "
            "calls counting against it are refused from now on."
        )

    def _scope(
        self, member: str | None, task_id: int | None, card: str | None, *, known_only: bool = True
    ) -> tuple[BudgetScope, str]:
        chosen = [
            name for name, value in (("member", member), ("task_id", task_id), ("card", card)) if value is not None
        ]
        if len(chosen) != 1:
            got = ", ".join(chosen) if chosen else "none"
            raise RetriableError(f"Give exactly one of member, task_id or card (given: {got}).")
        if member is not None:
            handle = _handle(member)
            if known_only:
                self._check_member(handle)
            return "member", handle
        if task_id is not None:
            if task_id < 1:
                raise RetriableError(f"task_id must be a task's id (1 or more), not {task_id}.")
            return "task", str(task_id)
        assert card is not None
        return "card", _card_class(card) if known_only else _card_class(card, strict=False)

    def _check_member(self, handle: str) -> None:
        observer: ActorToolObserver = self.get_observer()
        present = {m.address.handle for m in observer.team.present_members()}
        known = present | self.ledger.members()
        if handle not in known:
            raise RetriableError(
                f"{handle} is not a member of the team. Members: {', '.join(sorted(known)) or 'none'}."
            )


def _handle(member: str) -> str:
    """``member`` as a handle, ``@Name``.

    Raises:
        RetriableError: no name is given (``""``, ``"@"``): it would name nobody, and an
            empty filter must not read as the whole team.
    """
    name = member.strip()
    handle = name if name.startswith("@") else f"@{name}"
    if not handle[1:].strip():
        raise RetriableError(
            f"member={member!r} names nobody: give a member's name (@Name), or omit member for the whole team."
        )
    return handle


def _card_class(card: str, *, strict: bool = True) -> str:
    from toolcards.core._registry import card_kinds

    classes = {path.partition(":")[2]: path.partition(":")[2] for path in card_kinds().values()}
    by_kind = {kind: path.partition(":")[2] for kind, path in card_kinds().items()}
    name = card.strip()
    found = classes.get(name) or by_kind.get(name)
    if found is not None:
        return found
    if not strict:
        return name
    raise RetriableError(f"Unknown card {card!r}. Cards: {', '.join(sorted(by_kind.values()))} (or their kinds).")
