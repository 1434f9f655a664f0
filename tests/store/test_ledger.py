"""The ledger in each store: calls added up per member, task, card and tool, budgets kept,
and two ledgers of one team (two processes' worth) adding to the same totals."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from toolcards.core._tool import Tool
from toolcards.core._usage import Budget
from toolcards.errors import BudgetExceeded, RetriableError
from toolcards.store import Store, StoreLedger


def _tool(name: str = "lookup", agent: str | None = "@Alice", card: str = "LookupTool", mutates: bool = False) -> Tool:
    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    return Tool.from_function(lookup, name=name, agent=agent, card=card, mutates=mutates)


def _note(
    ledger: StoreLedger, tool: Tool, task: int | None = None, *, result: Any = "result", failed: bool = False
) -> None:
    ledger.note(tool, task, {"word": "hello"}, result, time.perf_counter() - 0.002, failed)


def test_calls_are_added_up_per_member_task_card_and_tool(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    alice, bob = _tool(), _tool(agent="@Bob", card="OtherTool", name="other")
    for _ in range(3):
        _note(ledger, alice, 7)
    _note(ledger, bob, None, result="x" * 400, failed=True)
    assert ledger.flush() == 4
    report = ledger.usage()
    assert report.total.calls == 4
    assert report.total.errors == 1
    assert report.total.tool_time_s >= 0.008
    assert report.by_member["@Alice"].calls == 3
    assert report.by_task["7"].calls == 3 and report.by_task["none"].calls == 1
    assert report.by_card["OtherTool"].result_tokens > report.by_card["LookupTool"].result_tokens
    assert report.by_tool["lookup"].argument_tokens > 0
    only_bob = ledger.usage(member="@Bob")
    assert only_bob.total.calls == 1 and set(only_bob.by_member) == {"@Bob"}
    assert ledger.usage(task_id=7).total.calls == 3
    ledger.close()


def test_a_second_ledger_of_the_team_adds_to_the_same_totals(store: Store) -> None:
    first, second = StoreLedger(store, "t1"), StoreLedger(store, "t1")
    _note(first, _tool())
    first.flush()
    _note(second, _tool())
    _note(second, _tool())
    second.flush()
    assert first.usage().total.calls == 3
    assert second.usage().by_member["@Alice"].calls == 3
    first.close()
    second.close()


def test_since_counts_from_the_hour_it_falls_in(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    _note(ledger, _tool())
    ledger.flush()
    now = datetime.now(UTC)
    assert ledger.usage(since=now - timedelta(minutes=1)).total.calls == 1
    assert ledger.usage(since=now + timedelta(hours=2)).total.calls == 0
    ledger.close()


def test_a_spent_budget_refuses_and_names_who_can_raise_it(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    tool = _tool()
    ledger.set_budget(Budget(scope="member", name="@Alice", calls=2, set_by="@Lead"))
    for _ in range(2):
        ledger.admit(tool)
        _note(ledger, tool)
    ledger.flush()
    with pytest.raises(BudgetExceeded) as refused:
        ledger.admit(tool)
    text = str(refused.value)
    assert "member @Alice" in text and "2 calls of 2 calls" in text and "@Lead" in text
    assert ledger.admit(_tool(agent="@Bob")) is None  # another member is not limited
    # Another ledger of the team (another process) sees the budget and the calls.
    other = StoreLedger(store, "t1")
    other.flush()
    with pytest.raises(BudgetExceeded):
        other.admit(tool)
    ledger.remove_budget("member", "@Alice")
    ledger.admit(tool)
    with pytest.raises(RetriableError, match="no budget of member @Alice"):
        ledger.remove_budget("member", "@Alice")
    ledger.close()
    other.close()


def test_card_and_task_budgets_and_the_warning_at_80_percent(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    tool = _tool()
    ledger.set_budget(Budget(scope="card", name="LookupTool", result_tokens=10))
    assert ledger.warnings("@Alice") == []
    for _ in range(4):
        _note(ledger, tool, 3, result="word word")
    ledger.flush()
    used = ledger.used("card", "LookupTool").result_tokens
    assert 8 <= used < 10, used
    [line] = ledger.warnings("@Alice")
    assert "card LookupTool" in line and "result tokens" in line
    ledger.set_budget(Budget(scope="task", name="3", tool_time_s=0.001))
    with pytest.raises(BudgetExceeded, match="task 3"):
        ledger._check(tool, "@Alice", 3)
    ledger.close()


def test_a_budget_without_a_limit_is_refused(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    with pytest.raises(RetriableError, match="needs a limit"):
        ledger.set_budget(Budget(scope="member", name="@Alice"))
    assert ledger.budgets() == []
    ledger.close()


def test_calls_noted_before_close_are_written(store: Store) -> None:
    ledger = StoreLedger(store, "t1")
    _note(ledger, _tool())
    ledger.close()
    assert StoreLedger(store, "t1").usage().total.calls == 1


def test_a_batch_the_store_refuses_is_kept_for_the_next_write(tmp_path: Any) -> None:
    from toolcards.errors import StoreError
    from toolcards.store import SQLiteStore

    path = tmp_path / "state.db"
    first = SQLiteStore(path)
    ledger = StoreLedger(first, "t1")
    ledger.flush()
    _note(ledger, _tool())
    first.close()
    with pytest.raises(StoreError):
        ledger.flush()
    assert ledger.used("member", "@Alice").calls == 1  # counted, not yet written
    ledger.store = SQLiteStore(path)
    assert ledger.flush() == 0  # nothing new noted; the kept batch is written
    assert StoreLedger(ledger.store, "t1").usage().total.calls == 1
    ledger.close()
    ledger.store.close()


def test_a_removed_budget_reaches_the_other_ledgers(store: Store) -> None:
    first, second = StoreLedger(store, "t1"), StoreLedger(store, "t1")
    first.set_budget(Budget(scope="card", name="LookupTool", calls=1))
    assert [budget.label for budget in second.budgets()] == ["card LookupTool"]
    first.remove_budget("card", "LookupTool")
    assert second.budgets() == []
    first.close()
    second.close()


def test_usage_waits_for_calls_the_writer_is_still_counting(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcards.core import _tokens

    counting, release = threading.Event(), threading.Event()
    real = _tokens.count_tokens_batch

    def slow(texts: list[str]) -> list[int]:
        counting.set()
        release.wait(30)
        return real(texts)

    monkeypatch.setattr(_tokens, "count_tokens_batch", slow)
    ledger = StoreLedger(store, "t1", interval_s=0.01)
    _note(ledger, _tool())
    assert counting.wait(30)  # the writer thread took the call from the queue and is counting it
    reader = threading.Thread(target=lambda: reports.append(ledger.usage()))
    reports: list[Any] = []
    reader.start()
    release.set()
    reader.join(30)
    assert reports and reports[0].total.calls == 1
    ledger.close()
