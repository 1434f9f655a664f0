"""What each member, task and card cost the team, and budgets that limit it.

:class:`UsageTool` reads the team's ledger (:mod:`toolcards.store._ledger`: every call's
tokens and time, kept in the team's store) and sets its budgets; how the pipeline admits and
notes calls is :mod:`toolcards.core._ledger`.
"""

from __future__ import annotations

from toolcards.usage._tool import (
    BudgetWarningsParam,
    RemoveBudgetParam,
    SetBudgetParam,
    UsageParam,
    UsageTool,
)

__all__ = ["BudgetWarningsParam", "RemoveBudgetParam", "SetBudgetParam", "UsageParam", "UsageTool"]
