"""What calls cost, as data and as text: totals, budgets, and the usage report.

The ledger (``toolcards.store.StoreLedger``) adds up every call's cost per member, task,
card and tool; :class:`UsageReport` is what ``usage(member, task_id, since)`` returns on every
channel (the tool, the command, ``toolcards usage``, the dashboard's panel). A
:class:`Budget` limits a member, a task or a card in calls, result tokens or tool time; the
words of its refusal and of its warning at :data:`WARN_AT` are written here, once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcards.errors import RetriableError

__all__ = [
    "BUDGET_TOOLS",
    "LIMITS",
    "WARN_AT",
    "Budget",
    "BudgetScope",
    "UsageReport",
    "UsageTotals",
    "budget_refusal",
    "budget_warning",
    "parse_since",
    "render_usage",
]

BudgetScope = Literal["member", "task", "card"]
"""What a budget limits: one member's calls, one task's (every member holding it), or one
card's (every member's calls of the card's tools)."""

LIMITS = ("calls", "result_tokens", "tool_time_s")
"""The quantities a budget can limit."""

BUDGET_TOOLS = frozenset({("UsageTool", "set_budget"), ("UsageTool", "remove_budget")})
"""The tools that change budgets, as ``(card, tool)``: no budget refuses them (they are still
counted). Refused, a spent budget would lock out whoever should lift it: a member that
budgeted itself, everyone under a card budget on ``UsageTool``, a lead under a task budget of
the task it holds, an orchestrator calling them through the spent member's own card. A member
given them as tools could raise its own budget before it was spent anyway."""

WARN_AT = 0.8
"""The share of a budget from which the member's context carries a warning line."""

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhd])\s*$")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400}
_UNITS = {"calls": "calls", "result_tokens": "result tokens", "tool_time_s": "s of tool time"}


class UsageTotals(BaseModel):
    """What a set of calls cost."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    """Calls made (refused ones are not counted: they did not run)."""
    errors: int = 0
    """Of those, calls that failed."""
    argument_tokens: int = 0
    """Tokens of the arguments, as the model wrote them (JSON)."""
    result_tokens: int = 0
    """Tokens of what the calls answered (an error's message for a failed call)."""
    tool_time_s: float = 0.0
    """Seconds the calls took, from the pipeline's start to its answer."""

    def value(self, limit: str) -> float:
        """The total of one of :data:`LIMITS`."""
        return float(getattr(self, limit))


class Budget(BaseModel):
    """A limit on what a member, a task or a card may spend; at least one limit is set.

    Kept in the team's store, so every process of the team enforces it.
    """

    model_config = ConfigDict(frozen=True)

    scope: BudgetScope
    name: str
    """``@Name`` for a member, the task id for a task, the card's class name for a card."""
    calls: int | None = Field(default=None, gt=0)
    result_tokens: int | None = Field(default=None, gt=0)
    tool_time_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    set_by: str = "the user"
    """Who set it: a member's handle, or ``"the user"`` (configuration, the command line)."""
    set_at: datetime | None = None

    @property
    def label(self) -> str:
        """``"member @Alice"``, ``"task 12"``, ``"card WorkspaceTool"``."""
        return f"{self.scope} {self.name}"

    def limits(self) -> dict[str, float]:
        """The limits set, by quantity."""
        return {limit: float(value) for limit in LIMITS if (value := getattr(self, limit)) is not None}

    def spent(self, totals: UsageTotals) -> str | None:
        """The first limit ``totals`` reached, or ``None``."""
        for limit, value in self.limits().items():
            if totals.value(limit) >= value:
                return limit
        return None

    def fullest(self, totals: UsageTotals) -> tuple[str, float]:
        """The limit ``totals`` is closest to, and the share of it used (1.0: spent)."""
        return max(((limit, totals.value(limit) / value) for limit, value in self.limits().items()), key=_share)


def _share(item: tuple[str, float]) -> float:
    return item[1]


class UsageReport(BaseModel):
    """Totals of the calls matching a query, with their split per member, task, card and tool."""

    member: str | None = None
    """The member the query was limited to, if any."""
    task_id: int | None = None
    """The task the query was limited to, if any."""
    since: datetime | None = None
    """The start of the hour from which calls were counted, if the query gave ``since``."""
    counted_with: str = "o200k"
    """How tokens were counted: ``"o200k"``, or ``"estimate"`` (characters / 4) where the
    encoder is not installed."""
    total: UsageTotals = UsageTotals()
    by_member: dict[str, UsageTotals] = {}
    by_task: dict[str, UsageTotals] = {}
    """Keyed by task id; ``"none"`` for calls made without a claimed task."""
    by_card: dict[str, UsageTotals] = {}
    by_tool: dict[str, UsageTotals] = {}


def budget_refusal(
    budget: Budget,
    limit: str,
    used: UsageTotals,
    tool: str,
    *,
    member: str | None = None,
    changes_budgets: bool = False,
) -> str:
    """Why ``member``'s call of ``tool`` is refused: the budget, what was used, and who can
    raise it, in terms the caller can act on (:func:`_raiser`).

    Args:
        member: the caller (``@Name``), when known.
        changes_budgets: the caller can call ``set_budget`` and ``remove_budget`` itself.
    """
    spent = (
        f"{tool} was not run: the budget of {budget.label} is spent "
        f"({_amount(limit, used.value(limit))} of {_amount(limit, budget.limits()[limit])})."
    )
    raiser = _raiser(budget, member, changes_budgets)
    if raiser == "you":
        return (
            f"{spent} You set it: raise it with set_budget or lift it with remove_budget (no budget refuses "
            "those), or stop calling tools that count against it."
        )
    setter = "your own card (by the user or an orchestrator)" if budget.set_by == member else budget.set_by
    asked = "the user" if raiser == "the user" else f"{raiser} or the user"
    return (
        f"{spent} It was set by {setter}, and only {asked} can raise it: "
        f"stop calling tools that count against it and tell {asked}."
    )


def budget_warning(
    budget: Budget, used: UsageTotals, *, member: str | None = None, changes_budgets: bool = False
) -> str:
    """The line ``member`` reads at :data:`WARN_AT` of a budget that concerns it
    (``changes_budgets`` as for :func:`budget_refusal`)."""
    limit, share = budget.fullest(used)
    amounts = f"{_amount(limit, used.value(limit))} of {_amount(limit, budget.limits()[limit])}"
    raiser = _raiser(budget, member, changes_budgets)
    can = "You can raise it." if raiser == "you" else f"{raiser[0].upper()}{raiser[1:]} can raise it."
    if share >= 1:
        return f"Budget spent: {budget.label} ({amounts}); calls counting against it are refused. {can}"
    return f"Budget warning: {budget.label} has used {share:.0%} ({amounts}); at 100% its calls are refused. {can}"


def _raiser(budget: Budget, member: str | None, changes_budgets: bool) -> str:
    """Who can raise ``budget`` for ``member``: ``"you"`` (it set the budget itself and can call
    the tools that change budgets, which no budget refuses: :data:`BUDGET_TOOLS`), ``"the user"``
    (the user set it; or it was set through ``member``'s own card, which gives ``member`` no such
    tool, so by the user or an orchestrator), or the member who set it."""
    if budget.set_by == member:
        return "you" if changes_budgets else "the user"
    return budget.set_by


def _amount(limit: str, value: float) -> str:
    number = f"{value:,.1f}" if limit == "tool_time_s" else f"{int(value):,}"
    return f"{number} {_UNITS[limit]}"


def render_usage(report: UsageReport) -> str:
    """``report`` as the lines a model or a terminal reads."""
    scope = [f"member {report.member}"] if report.member else []
    scope += [f"task {report.task_id}"] if report.task_id is not None else []
    scope += [f"since {report.since:%Y-%m-%d %H:%M} UTC"] if report.since else []
    head = "Usage" + (f" ({', '.join(scope)})" if scope else "") + f": {_totals(report.total)}"
    if report.total.calls == 0:
        return head
    lines = [head + f" [tokens: {report.counted_with}]"]
    for title, rows in (
        ("member", report.by_member),
        ("task", report.by_task),
        ("card", report.by_card),
        ("tool", report.by_tool),
    ):
        if len(rows) < 2 and title != "task":
            continue
        lines.append(f"By {title}:")
        ranked = sorted(rows.items(), key=lambda item: -item[1].result_tokens)
        lines += [f"  {name}: {_totals(totals)}" for name, totals in ranked]
    return "\n".join(lines)


def _totals(totals: UsageTotals) -> str:
    errors = f" ({totals.errors:,} failed)" if totals.errors else ""
    return (
        f"{totals.calls:,} calls{errors}, {totals.argument_tokens:,} argument tokens, "
        f"{totals.result_tokens:,} result tokens, {totals.tool_time_s:,.2f} s"
    )


def parse_since(text: str) -> datetime:
    """``since`` as a UTC time: an ISO date or time (UTC when it names no zone), or a duration
    ago (``30m``, ``2h``, ``7d``).

    Raises:
        RetriableError: unreadable, in the future, or outside the years 1 to 9999 in UTC (a
            duration that reaches back before the year 1, an early time in a zone east of UTC).
    """
    now = datetime.now(UTC)
    ago = _AGO.match(text)
    if ago:
        try:
            return now - timedelta(seconds=float(ago.group(1)) * _UNIT_S[ago.group(2)])
        except (OverflowError, ValueError):
            raise RetriableError(
                f"since={text!r} reaches back before the year 1: give a shorter duration (30m, 2h, 7d) or an "
                "ISO time in UTC (2026-11-28T09:00); omit since to count every call."
            ) from None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise RetriableError(
            f"since={text!r} is not a time: give an ISO time in UTC (2026-11-28T09:00) or a duration ago (30m, 2h, 7d)."
        ) from None
    try:
        # In UTC, as the ledger counts hours: 0001-01-01T00:00+05:00 is the year 0 there.
        when = when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)
    except OverflowError:
        raise RetriableError(
            f"since={text!r} falls outside the years 1 to 9999 in UTC: give an ISO time in UTC "
            "(2026-11-28T09:00), or omit since to count every call."
        ) from None
    if when > now + timedelta(minutes=1):
        raise RetriableError(f"since={text!r} is in the future (now is {now:%Y-%m-%dT%H:%M} UTC): no call is after it.")
    return when
