"""Benchmark of the ledger: what recording costs a call, and totals over a million calls.

``run()`` points ``TOOLCARDS_WORKSPACES_ROOT`` (and so the default SQLite store) at a
temporary directory and measures:

* **the cost per call**: the same tool call (a planning search on an empty board, through
  ``call_sync`` with its arguments as a model sends them) bound with the team's ledger and
  without it, the member holding a claimed task; the difference of the medians is what the
  ledger adds on the call's path (target <= 20 µs). The search's actor round trip varies by
  more than the ledger costs, so the same is measured on a tool that answers at once. Token
  counting and writing run on the ledger's writer thread; their cost per call is reported
  beside, for scale;
* **usage totals over 1,000,000 recorded calls**: a million calls spread over 30 days of
  hours, 10 members, 200 tasks, 6 cards and 24 tools (each member on one task at a time,
  using 12 tools), written into a SQLite store by the writer's own path (token counting
  included), then ``usage()`` for the whole team, one member, one task and the last 24
  hours (target <= 50 ms each, in a process that keeps the ledger). Loading the ledger in a
  fresh process is reported beside, for scale.

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.timing import Case, measure
from toolcards import ToolFactory
from toolcards.actors import ActorSystem
from toolcards.core._tool import Tool
from toolcards.planning import PlanningTool
from toolcards.store import SQLiteStore, StoreLedger, close_default_stores, store_ledgers
from toolcards.testing import FakeObserver

__all__ = ["run"]

CALLS = 1_000_000
HOURS = 30 * 24
MEMBERS = [f"@Member{index}" for index in range(10)]
CARDS = ["WorkspaceTool", "PlanningTool", "KnowledgeGraphTool", "ExecTool", "SearchTool", "UsageTool"]
TOOLS = [(CARDS[index % 6], f"tool_{index}") for index in range(24)]
ROUNDS = 40


@contextmanager
def _temporary_root() -> Iterator[Path]:
    before = os.environ.get("TOOLCARDS_WORKSPACES_ROOT")
    with tempfile.TemporaryDirectory() as root:
        os.environ["TOOLCARDS_WORKSPACES_ROOT"] = root
        try:
            yield Path(root)
        finally:
            if before is None:
                os.environ.pop("TOOLCARDS_WORKSPACES_ROOT", None)
            else:
                os.environ["TOOLCARDS_WORKSPACES_ROOT"] = before
            close_default_stores()


def run() -> list[Case]:
    """Measure both; takes a minute or two (a million calls are counted and written)."""
    with _temporary_root() as root:
        per_call = _cost_per_call()
        totals = _totals(root / "million.db")
    return per_call + totals


def _cost_per_call() -> list[Case]:
    # The writer's passes only when asked: its cost per call is then measured whole.
    with ActorSystem(ledger=store_ledgers(interval_s=3600)) as system:
        agent = FakeObserver("Alice", "bench", system=system)
        tools = {tool.name: tool for tool in ToolFactory([PlanningTool()], observer=agent).tools()}
        tools["update_planning"].call_sync({"create_tasks": [{"description": "measure the ledger"}]})
        tools["claim_task"].call_sync({"task_id": 1})
        recorded = tools["search_planning"]
        unrecorded = recorded.replace(ledger=None)
        arguments = {"query": "nothing matches this"}
        with_ledger: list[float] = []
        without: list[float] = []
        for _ in range(ROUNDS):  # short rounds, interleaved: the machine's load falls on both alike
            without.append(measure(lambda: unrecorded.call_sync(arguments), repeat=500, warmup=50).median)
            with_ledger.append(measure(lambda: recorded.call_sync(arguments), repeat=500, warmup=50).median)
        ledger = system.team("bench").ledger
        assert isinstance(ledger, StoreLedger)
        # The ledger's own cost, without an actor's round trip around it: a tool answering at once.
        bare = Tool.from_function(_lookup, agent="@Alice", card="BenchTool")
        counted = bare.replace(ledger=ledger)
        lookup_args = {"word": "ledger"}
        trivial: list[float] = []
        for _ in range(ROUNDS):
            plain = measure(lambda: bare.call_sync(lookup_args), repeat=2000, warmup=100).median
            trivial.append(measure(lambda: counted.call_sync(lookup_args), repeat=2000, warmup=100).median - plain)
        ledger.flush()
        noted = 2000
        for _ in range(noted):
            recorded.call_sync(arguments)
        started = time.perf_counter()
        ledger.flush()
        writer_ms = (time.perf_counter() - started) * 1000.0 / noted
    base, cost = statistics.median(without), statistics.median(with_ledger)
    added = statistics.median(recorded - bare for recorded, bare in zip(with_ledger, without, strict=True))
    return [
        Case("call, unrecorded (for scale)", base, "search_planning on an empty board, call_sync"),
        Case(
            "ledger cost per call",
            added,
            f"median over {ROUNDS} rounds of recorded ({cost * 1000:.1f} µs) minus unrecorded medians",
            target=0.020,
        ),
        Case(
            "ledger cost per call, a tool answering at once",
            statistics.median(trivial),
            f"median over {ROUNDS} rounds of recorded minus unrecorded medians (no actor around it)",
            target=0.020,
        ),
        Case("writer thread per call (off the call's path)", writer_ms, "o200k counts and the store write, batched"),
    ]


def _lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: a record of what each call cost"


def _totals(path: Path) -> list[Case]:
    store = SQLiteStore(path)
    try:
        ledger = StoreLedger(store, "bench")
        started = time.perf_counter()
        _record_million(ledger)
        record_s = time.perf_counter() - started
        rows = len(ledger._rows)
        member, task = MEMBERS[3], 17
        since = datetime.now(UTC) - timedelta(hours=24)
        whole = measure(ledger.usage, repeat=30, warmup=3)
        one_member = measure(lambda: ledger.usage(member=member), repeat=30, warmup=3)
        one_task = measure(lambda: ledger.usage(task_id=task), repeat=30, warmup=3)
        last_day = measure(lambda: ledger.usage(since=since), repeat=30, warmup=3)
        assert ledger.usage().total.calls == CALLS
        cold: list[float] = []
        for _ in range(3):
            started = time.perf_counter()
            StoreLedger(store, "bench").usage()
            cold.append((time.perf_counter() - started) * 1000.0)
    finally:
        store.close()
    note = f"{rows:,} rows"
    return [
        Case.timed("usage: whole team, 1,000,000 calls", whole, note, target=50.0),
        Case.timed("usage: one member", one_member, note, target=50.0),
        Case.timed("usage: one task", one_task, note, target=50.0),
        Case.timed("usage: last 24 hours", last_day, note, target=50.0),
        Case("usage in a fresh process (loads the ledger)", statistics.median(cold), f"{note}; for scale"),
        Case("recording 1,000,000 calls (writer thread)", record_s * 1000.0, "counting and writing; for scale"),
    ]


def _record_million(ledger: StoreLedger) -> None:
    """A million calls over 30 days, queued as the pipeline's ``note`` queues them (with the
    time of each call in the past) and written by the writer's own ``flush``."""
    now = time.time()
    first_hour = int(now // 3600) - HOURS + 1
    per_row = CALLS // (HOURS * len(MEMBERS) * 12)
    extra = CALLS - per_row * HOURS * len(MEMBERS) * 12
    queue = ledger._queue
    made = 0
    for hour_index in range(HOURS):
        at = (first_hour + hour_index) * 3600.0 + 1.0
        for member_index, member in enumerate(MEMBERS):
            task = (member_index * 20 + hour_index // 6) % 200 + 1
            for offset in range(12):
                card, tool = TOOLS[(member_index + offset * 2) % len(TOOLS)]
                count = per_row + (1 if extra > 0 else 0)
                extra -= 1
                for call in range(count):
                    arguments = {"path": f"src/module_{call}.py", "limit": 40}
                    result = f"line {call}: def handler(value): return value * {call}"
                    queue.append((at, member, task, card, tool, arguments, result, 0.0004, call % 50 == 0))
                made += count
        if len(queue) >= 50_000:
            ledger.flush()
    ledger.flush()
    assert made == CALLS, made
