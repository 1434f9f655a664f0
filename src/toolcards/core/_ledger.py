"""The ledger as the pipeline sees it: admit a call (budgets), then note what it cost.

Every call through the pipeline (:mod:`toolcards.core._tool`) of a tool bound to a team that
keeps a ledger is noted: the tokens of its arguments and of the result the model reads, its
time, its member, card, tool, and the task the member holds a claim on. System-prompt
sections are not calls and are not noted (``docs/tokens.md`` measures what the model reads
on every request).

The core knows no ledger: the team handle carries one (``TeamHandle.ledger``, made by the
``ledger`` factory given to ``ActorSystem``; ``toolcards.store.store_ledgers()`` keeps it in
the team's store) and the factory hands it to every tool it binds. Two calls per tool call:

* :meth:`CallLedger.admit` before the handler: which task the call counts against, and a
  :class:`~toolcards.errors.BudgetExceeded` when a budget of the member, its task or the
  card is spent (the handler then never runs);
* :meth:`CallLedger.note` after it, success or failure. It must cost microseconds: it
  keeps what it was given and counts tokens later, off the call's path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["CallLedger"]


class CallLedger(Protocol):
    """What the pipeline asks of a team's ledger."""

    def admit(self, tool: Tool) -> int | None:
        """The task a call of ``tool`` by its agent counts against (``None``: none claimed).

        Raises:
            BudgetExceeded: a budget of the agent, its task or the tool's card is spent.
        """

    def note(self, tool: Tool, task: int | None, arguments: Any, result: Any, started: float, failed: bool) -> None:
        """Keep the cost of one finished call of ``tool``: its ``arguments`` (as given),
        the ``result`` the model reads (an error's message when ``failed``), and the
        ``time.perf_counter()`` at its start. Never raises, never blocks on I/O."""
