"""``StoreLedger``: what every call of a team costs, added up in the team's store.

One namespace per team, ``"<team>/#Ledger"``, holds two kinds of rows:

* ``totals``: one row per hour, member, task, card and tool, holding the calls, failures,
  argument tokens, result tokens and milliseconds of tool time of the calls it counts. A
  million calls of a team are a few thousand such rows, so totals over all of them add up
  rows, never calls. ``since`` counts whole hours: from the start of the hour it falls in;
* ``budgets``: one row per :class:`~toolcards.core._usage.Budget`.

**Recording costs the call almost nothing.** :meth:`StoreLedger.note` appends what the
pipeline gives it to a queue; a writer thread (one per ledger, started by the first call)
takes the queue every ``interval_s``, counts the tokens in one pass of the encoder
(:mod:`toolcards.core._tokens`), adds the calls up per row and writes the changed rows in one
transaction. The transaction catches up with what other processes wrote first, so every
process adds to the latest totals and none is lost (SQLite's or PostgreSQL's write lock
orders them). A batch the store refuses is kept and added to the next one.

**Budgets** are checked by :meth:`StoreLedger.admit` before each call against the totals of
the whole team as of the writer's last pass (at most ``interval_s`` behind: a runaway
member may overshoot by the calls of that interval, a call already running is never
stopped). Each pass also reads what other processes wrote, so their calls count too. No
budget refuses the tools that change budgets (:data:`~toolcards.core._usage.BUDGET_TOOLS`),
so none locks out whoever should lift it.

**The claimed task** of a member comes from the planning card's
:data:`~toolcards.core._services.CLAIMED_TASK` service, asked at most once per
``task_ttl_s`` per member (an actor ask), and again after each of the member's own calls
that change state (a ``claim_task``, a ``release_task``).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolcards.core._error_text import typed_line
from toolcards.core._mentions import known_tool_names
from toolcards.core._services import CLAIMED_TASK
from toolcards.core._usage import (
    BUDGET_TOOLS,
    WARN_AT,
    Budget,
    BudgetScope,
    UsageReport,
    UsageTotals,
    budget_refusal,
    budget_warning,
)
from toolcards.errors import BudgetExceeded, RetriableError, StoreError
from toolcards.store._base import CatchUp, Change, Snapshot, Store

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["LEDGER_NAMESPACE", "StoreLedger", "store_ledgers"]

logger = logging.getLogger("toolcards.ledger")

LEDGER_NAMESPACE = "#Ledger"
"""The ledger's namespace in a team: ``"<team>/#Ledger"``."""

_TOTALS = "totals"
_BUDGETS = "budgets"
_HOUR = 3600
_FIELDS = 5  # calls, errors, argument tokens, result tokens, milliseconds

Key = tuple[int, str, int | None, str, str]
"""A totals row: hour (seconds since the epoch / 3600), member, task, card, tool."""
Sums = list[float]


class StoreLedger:
    """A team's ledger in ``store``, shared by every process of the team.

    Args:
        store: The team's store.
        team_id: The team.
        team: The team handle, for the member's claimed task (its services); ``None``: calls
            are noted without a task.
        interval_s: How often the writer thread writes what was noted (and reads what other
            processes wrote, for the budgets).
        task_ttl_s: How long a member's claimed task is taken as known.
    """

    def __init__(
        self,
        store: Store,
        team_id: str,
        *,
        team: Any = None,
        interval_s: float = 0.25,
        task_ttl_s: float = 1.0,
    ) -> None:
        self.store = store
        self.team_id = team_id
        self.namespace = f"{team_id}/{LEDGER_NAMESPACE}"
        self._team = team
        self._interval_s = interval_s
        self._task_ttl_s = task_ttl_s
        self._queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self._lock = threading.Lock()
        """Guards the mirror below against the writer thread."""
        self._write_lock = threading.Lock()
        """One pass of writing at a time."""
        self._version: int | None = None
        self._rows: dict[Key, Sums] = {}
        self._all: dict[tuple[str, int | None, str, str], Sums] = {}
        self._of_member: dict[str, dict[tuple[str, int | None, str, str], Sums]] = {}
        self._of_task: dict[int | None, dict[tuple[str, int | None, str, str], Sums]] = {}
        """The rows of ``_all`` (the same lists) by member and by task: what one member's or
        one task's totals read."""
        """The rows added up over every hour: what totals without ``since`` read."""
        self._hours: dict[int, dict[Key, Sums]] = {}
        """The rows by hour: what totals with ``since`` read."""
        self._by: dict[tuple[str, str], Sums] = {}
        """Totals per ``("member", "@A")``, ``("task", "12")``, ``("card", "WorkspaceTool")``,
        ``("tool", "workspace_read")``: what the whole team's totals and budgets read."""
        self._unwritten: dict[Key, Sums] = {}
        """Counted calls a failed write left behind, added to the next one."""
        self._budgets: dict[tuple[str, str], Budget] = {}
        self._tasks: dict[str, tuple[int | None, float]] = {}
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._closed = False

    def __repr__(self) -> str:
        return f"<StoreLedger {self.namespace!r} at version {self._version}>"

    # -- the pipeline's side (toolcards.core._ledger.CallLedger) ----------------------------

    def admit(self, tool: Tool) -> int | None:
        """The task a call of ``tool`` counts against; refuses it when a budget is spent.

        Raises:
            BudgetExceeded: a budget of the tool's agent, its task or its card is spent.
        """
        member = tool.agent
        task = self.task_of(member) if member else None
        if self._budgets:
            self._check(tool, member, task)
        return task

    def note(self, tool: Tool, task: int | None, arguments: Any, result: Any, started: float, failed: bool) -> None:
        """Queue one finished call; the writer thread counts and writes it."""
        self._queue.append(
            (
                time.time(),
                tool.agent or "",
                task,
                tool.card,
                tool.name,
                arguments,
                result,
                time.perf_counter() - started,
                failed,
            )
        )
        if tool.mutates and tool.agent:
            self._tasks.pop(tool.agent, None)  # it may have claimed or released a task
        if self._thread is None:
            self._start()

    def task_of(self, member: str) -> int | None:
        """The task ``member`` holds a claim on, as the planning card of this process says
        (``None`` without one); known for ``task_ttl_s``."""
        known = self._tasks.get(member)
        now = time.monotonic()
        if known is not None and known[1] > now:
            return known[0]
        service = self._team.service(CLAIMED_TASK) if self._team is not None else None
        task: int | None = None
        if service is not None:
            try:
                task = service(member)
            except Exception as exc:  # a board out of reach must not fail the call
                logger.debug("claimed task of %s unknown: %s", member, exc)
        self._tasks[member] = (task, now + self._task_ttl_s)
        return task

    def _check(self, tool: Tool, member: str | None, task: int | None) -> None:
        if (tool.card, tool.name) in BUDGET_TOOLS:
            return
        for scope, name in (("member", member), ("task", None if task is None else str(task)), ("card", tool.card)):
            if name is None:
                continue
            budget = self._budgets.get((scope, name))
            if budget is None:
                continue
            used = self.used(budget.scope, budget.name)
            limit = budget.spent(used)
            if limit is not None:
                refusal = budget_refusal(
                    budget, limit, used, tool.name, member=member, changes_budgets=_changes_budgets(tool)
                )
                raise BudgetExceeded(refusal)

    # -- writing ---------------------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, name=f"toolcards-ledger-{self.team_id}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._closed:
                return
            if self.store.closed:
                return  # the team's store is gone, and with it the ledger
            try:
                self.flush()
            except Exception as exc:  # the next pass tries again; a call never fails for the ledger
                # One line (the traceback at DEBUG): a store that stays unwritable would
                # otherwise fill the log with the same traceback every pass.
                logger.warning("team %s: a ledger write failed, retrying: %s", self.team_id, typed_line(exc))
                logger.debug("ledger write failure", exc_info=True)

    def flush(self) -> int:
        """Count and write every call noted so far, and read what other processes wrote;
        returns the calls written. Called by the writer thread; call it to read your own
        calls back at once.

        Raises:
            StoreError: the store refused the write; the counted calls are kept for the next.
        """
        with self._write_lock:
            batch: list[tuple[Any, ...]] = []
            queue = self._queue
            while True:
                try:
                    batch.append(queue.popleft())
                except IndexError:
                    break
            if self._version is None or (not batch and not self._unwritten):
                self._refresh()  # a write catches up from a version: the first one loads it
                if not batch and not self._unwritten:
                    return 0
            deltas, tokens = self._count(batch)
            with self._lock:
                for key, sums in self._unwritten.items():
                    _add(deltas.setdefault(key, [0.0] * _FIELDS), sums)
                self._unwritten = {}
            try:
                self._write(deltas)
            except StoreError:
                with self._lock:
                    for key, sums in deltas.items():
                        _add(self._unwritten.setdefault(key, [0.0] * _FIELDS), sums)
                raise
            if batch:
                from toolcards.core._metrics import record_calls

                record_calls(self.team_id, batch, tokens)
            return len(batch)

    def _count(self, batch: list[tuple[Any, ...]]) -> tuple[dict[Key, Sums], list[int]]:
        from toolcards.core._tokens import count_tokens_batch, text_of

        texts: list[str] = []
        for entry in batch:
            texts.append(text_of(entry[5]))
            texts.append(text_of(entry[6]))
        tokens = count_tokens_batch(texts)
        deltas: dict[Key, Sums] = {}
        for index, (at, member, task, card, tool, _arguments, _result, seconds, failed) in enumerate(batch):
            key = (int(at // _HOUR), member, task, card, tool)
            sums = deltas.get(key)
            if sums is None:
                sums = deltas[key] = [0.0] * _FIELDS
            sums[0] += 1
            sums[1] += 1 if failed else 0
            sums[2] += tokens[2 * index]
            sums[3] += tokens[2 * index + 1]
            sums[4] += seconds * 1000.0
        return deltas, tokens

    def _write(self, deltas: dict[Key, Sums]) -> None:
        with self.store.write(self.namespace, since=self._version) as txn:
            with self._lock:
                self._absorb(txn.catch_up, txn.version)
                changes = []
                for key, sums in deltas.items():
                    now = list(self._rows.get(key) or [0.0] * _FIELDS)
                    _add(now, sums)
                    changes.append(Change(collection=_TOTALS, key=_encode_key(key), value=_rounded(now)))
            txn.stage(changes)
        with self._lock:
            for key, sums in deltas.items():
                self._set_row(key, _add(list(self._rows.get(key) or [0.0] * _FIELDS), sums))
            if txn.committed is not None:
                self._version = txn.committed

    def _refresh(self) -> None:
        """Catch up with what other processes wrote (a cheap read when nothing changed)."""
        if self._version is None:
            snapshot = self.store.load(self.namespace)
            with self._lock:
                self._absorb(snapshot, snapshot.version)
            return
        catch_up = self.store.read(self.namespace, since=self._version)
        with self._lock:
            self._absorb(catch_up, catch_up.version)

    def _absorb(self, catch_up: CatchUp | None, version: int) -> None:
        """Apply what others committed to the mirror (under ``_lock``)."""
        if catch_up is None:
            return
        if isinstance(catch_up, Snapshot):
            self._rows, self._hours, self._all, self._by, self._budgets = {}, {}, {}, {}, {}
            self._of_member, self._of_task = {}, {}
            self._load_rows(catch_up.rows.get(_TOTALS, {}))
            for value in catch_up.rows.get(_BUDGETS, {}).values():
                budget = Budget.model_validate(value)
                self._budgets[(budget.scope, budget.name)] = budget
        else:
            for change in catch_up.changes:
                if change.collection == _TOTALS:
                    key = _decode_key(change.key)
                    self._set_row(key, [float(n) for n in change.value] if change.value is not None else None)
                elif change.collection == _BUDGETS:
                    scope, _, name = change.key.partition(":")
                    if change.value is None:
                        self._budgets.pop((scope, name), None)
                    else:
                        self._budgets[(scope, name)] = Budget.model_validate(change.value)
        self._version = max(version, catch_up.version)

    def _load_rows(self, stored: dict[str, Any]) -> None:
        """Build the mirror from every totals row of a snapshot (under ``_lock``): one pass,
        nothing to take back."""
        rows, hours, by = self._rows, self._hours, self._by
        for text, sums in stored.items():
            key = _decode_key(text)
            hour, member, task, card, tool = key
            rows[key] = sums
            in_hour = hours.get(hour)
            if in_hour is None:
                in_hour = hours[hour] = {}
            in_hour[key] = sums
            self._over_hours(member, task, card, tool, sums)
            for name in (
                ("member", member),
                ("task", "none" if task is None else str(task)),
                ("card", card),
                ("tool", tool),
            ):
                found = by.get(name)
                if found is None:
                    by[name] = list(sums)
                else:
                    _add(found, sums)

    def _over_hours(self, member: str, task: int | None, card: str, tool: str, change: Sums) -> None:
        """Add ``change`` to the row over every hour of (member, task, card, tool)."""
        key = (member, task, card, tool)
        found = self._all.get(key)
        if found is None:
            found = self._all[key] = list(change)
            self._of_member.setdefault(member, {})[key] = found
            self._of_task.setdefault(task, {})[key] = found
        else:
            _add(found, change)

    def _set_row(self, key: Key, sums: Sums | None) -> None:
        """Replace a totals row, keeping the sums over hours and per member, task and card."""
        hour, member, task, card, tool = key
        if sums is None:
            old = self._rows.pop(key, None)
            self._hours.get(hour, {}).pop(key, None)
        else:
            old = self._rows.get(key)
            self._rows[key] = sums
            self._hours.setdefault(hour, {})[key] = sums
        change = list(sums or [0.0] * _FIELDS)
        if old is not None:
            _add(change, old, sign=-1)
        self._over_hours(member, task, card, tool, change)
        by = self._by
        for dimension in (
            ("member", member),
            ("task", "none" if task is None else str(task)),
            ("card", card),
            ("tool", tool),
        ):
            found = by.get(dimension)
            if found is None:
                by[dimension] = list(change)
            else:
                _add(found, change)

    def close(self) -> None:
        """Stop the writer thread and write what is left (a failure is logged). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._queue or self._unwritten:
            try:
                self.flush()
            except Exception as exc:
                logger.warning(
                    "team %s: its last calls could not be added to the ledger: %s", self.team_id, typed_line(exc)
                )
                logger.debug("ledger write failure at close", exc_info=True)

    # -- reading ---------------------------------------------------------------------------

    def used(self, scope: str, name: str) -> UsageTotals:
        """What ``name`` of ``scope`` (``"member"``, ``"task"``, ``"card"``) has spent, as of
        the writer's last pass."""
        with self._lock:
            sums = list(self._by.get((scope, name)) or [0.0] * _FIELDS)
            for (_, member, task, card, _tool), extra in self._unwritten.items():
                if name == {"member": member, "task": "none" if task is None else str(task), "card": card}[scope]:
                    _add(sums, extra)
        return _totals(sums)

    def usage(
        self, member: str | None = None, task_id: int | None = None, since: datetime | None = None
    ) -> UsageReport:
        """Totals of the team's calls, of one member, one task, from the hour ``since`` is in,
        or any combination; split per member, task, card and tool.

        Writes this process's calls first (so they count), then reads the store.

        Raises:
            StoreError: the store cannot be read.
        """
        self._catch_up()
        hour = None if since is None else int(since.timestamp() // _HOUR)
        total = [0.0] * _FIELDS
        split: dict[str, dict[str, Sums]] = {"member": {}, "task": {}, "card": {}, "tool": {}}
        with self._lock:
            if hour is None and member is None and task_id is None:
                # The whole team: the totals kept per member, task, card and tool.
                for (kind, name), sums in self._by.items():
                    if sums[0]:
                        split[kind][name or "(no member)"] = list(sums)
                for sums in split["card"].values():
                    _add(total, sums)
            else:
                self._add_up(member, task_id, hour, total, split)
        from toolcards.core._tokens import token_method

        return UsageReport(
            member=member,
            task_id=task_id,
            since=None if hour is None else datetime.fromtimestamp(hour * _HOUR, UTC),
            counted_with=token_method(),
            total=_totals(total),
            by_member={name: _totals(sums) for name, sums in split["member"].items()},
            by_task={name: _totals(sums) for name, sums in split["task"].items()},
            by_card={name: _totals(sums) for name, sums in split["card"].items()},
            by_tool={name: _totals(sums) for name, sums in split["tool"].items()},
        )

    def _add_up(
        self,
        member: str | None,
        task_id: int | None,
        hour: int | None,
        total: Sums,
        split: dict[str, dict[str, Sums]],
    ) -> None:
        """Add the rows matching the query into ``total`` and ``split`` (under ``_lock``)."""
        rows: Iterable[tuple[tuple[str, int | None, str, str], Sums]]
        if hour is None and member is not None:
            rows = self._of_member.get(member, {}).items()
        elif hour is None and task_id is not None:
            rows = self._of_task.get(task_id, {}).items()
        elif hour is None:
            rows = self._all.items()
        else:
            rows = (
                ((row_member, row_task, card, tool), sums)
                for row_hour in [h for h in self._hours if h >= hour]
                for (_, row_member, row_task, card, tool), sums in self._hours[row_hour].items()
            )
        by_member, by_task, by_card, by_tool = split["member"], split["task"], split["card"], split["tool"]
        for (row_member, row_task, card, tool), sums in rows:
            if (member is not None and row_member != member) or (task_id is not None and row_task != task_id):
                continue
            if not sums[0]:
                continue
            _add(total, sums)
            for into, name in (
                (by_member, row_member or "(no member)"),
                (by_task, "none" if row_task is None else str(row_task)),
                (by_card, card),
                (by_tool, tool),
            ):
                found = into.get(name)
                if found is None:
                    into[name] = list(sums)
                else:
                    _add(found, sums)

    def version(self) -> int:
        """The ledger's store version, after reading what others wrote: it changes whenever
        the totals or the budgets may have (what a watcher polls)."""
        self._refresh()
        return self._version or 0

    def _catch_up(self) -> None:
        """Write this process's calls (so they count), else read what others wrote."""
        if self._queue or self._unwritten:
            self.flush()
            return
        # The writer thread may hold calls it took from the queue and is still counting:
        # its flush ends first, or the read would miss them.
        with self._write_lock:
            self._refresh()

    def members(self) -> set[str]:
        """The members with calls in the ledger (this process's written first)."""
        self._catch_up()
        with self._lock:
            return {name for (scope, name), sums in self._by.items() if scope == "member" and sums[0] and name}

    # -- budgets ---------------------------------------------------------------------------

    def budgets(self) -> list[Budget]:
        """Every budget of the team (after catching up), by scope and name."""
        self._refresh()
        with self._lock:
            return [self._budgets[key] for key in sorted(self._budgets)]

    def set_budget(self, budget: Budget) -> Budget:
        """Set (or replace) the budget of ``budget.scope`` / ``budget.name``; committed before
        it returns, enforced by every process of the team from its writer's next pass."""
        if not budget.limits():
            raise RetriableError(
                f"A budget of {budget.label} needs a limit: give calls, result_tokens or tool_time_s (each above 0)."
            )
        stamped = budget if budget.set_at is not None else budget.model_copy(update={"set_at": datetime.now(UTC)})
        self._put_budget(budget.scope, budget.name, stamped.model_dump(mode="json"))
        return stamped

    def remove_budget(self, scope: BudgetScope, name: str) -> Budget:
        """Remove the budget of ``scope`` / ``name``; returns it.

        Raises:
            RetriableError: there is none (the message lists the budgets there are).
        """
        self._refresh()
        with self._lock:
            budget = self._budgets.get((scope, name))
            labels = [b.label for b in self._budgets.values()]
        if budget is None:
            there = ", ".join(sorted(labels)) if labels else "none"
            raise RetriableError(f"There is no budget of {scope} {name} to remove. Budgets set: {there}.")
        self._put_budget(scope, name, None)
        return budget

    def _put_budget(self, scope: str, name: str, value: Any) -> None:
        with self._write_lock:
            if self._version is None:
                self._refresh()
            with self.store.write(self.namespace, since=self._version) as txn:
                with self._lock:
                    self._absorb(txn.catch_up, txn.version)
                txn.stage([Change(collection=_BUDGETS, key=f"{scope}:{name}", value=value)])
            with self._lock:
                if value is None:
                    self._budgets.pop((scope, name), None)
                else:
                    self._budgets[(scope, name)] = Budget.model_validate(value)
                if txn.committed is not None:
                    self._version = txn.committed

    def warnings(self, member: str, *, changes_budgets: bool = False) -> list[str]:
        """The budget warnings ``member`` reads: each budget of the member, of the task it
        holds and of the cards it called, at :data:`~toolcards.core._usage.WARN_AT` or more of
        a limit, saying who can raise it (``changes_budgets``: ``member`` can call
        ``set_budget`` and ``remove_budget``). Reads no store: the writer's last pass is recent
        enough."""
        if not self._budgets:
            return []
        task = self.task_of(member)
        wanted = [("member", member)] + ([("task", str(task))] if task is not None else [])
        with self._lock:
            budgets = dict(self._budgets)
            if any(scope == "card" for scope, _ in budgets):
                mine = self._of_member.get(member, {})
                cards = {card for (_who, _task, card, _tool), sums in mine.items() if sums[0]}
                wanted += [("card", card) for card in sorted(cards)]
        lines = []
        for scope, name in wanted:
            budget = budgets.get((scope, name))
            if budget is None:
                continue
            used = self.used(scope, name)
            if budget.fullest(used)[1] >= WARN_AT:
                lines.append(budget_warning(budget, used, member=member, changes_budgets=changes_budgets))
        return lines


def store_ledgers(store: Store | None = None, *, interval_s: float = 0.25) -> Any:
    """A ledger factory for ``ActorSystem(ledger=...)``: each team's ledger in ``store``.

    ``None`` means this process's default store, looked up when a team starts.

    Added in 0.3.
    """

    def ledger(team: Any) -> StoreLedger:
        from toolcards.store._default import default_store

        return StoreLedger(
            store if store is not None else default_store(), team.team_id, team=team, interval_s=interval_s
        )

    return ledger


def _add(into: Sums, sums: Sums, sign: int = 1) -> Sums:
    if sign == 1:  # unrolled: totals over many rows are this loop
        into[0] += sums[0]
        into[1] += sums[1]
        into[2] += sums[2]
        into[3] += sums[3]
        into[4] += sums[4]
    else:
        for index in range(_FIELDS):
            into[index] -= sums[index]
    return into


def _rounded(sums: Sums) -> list[float | int]:
    return [int(value) for value in sums[:4]] + [round(sums[4], 3)]


def _totals(sums: Sums) -> UsageTotals:
    return UsageTotals(
        calls=int(sums[0]),
        errors=int(sums[1]),
        argument_tokens=int(sums[2]),
        result_tokens=int(sums[3]),
        tool_time_s=round(sums[4] / 1000.0, 6),
    )


def _encode_key(key: Key) -> str:
    """``"hour<TAB>member<TAB>task<TAB>card<TAB>tool"`` (no task: empty); a tab in a name
    is kept as a space."""
    hour, member, task, card, tool = key
    parts = (member, "" if task is None else str(task), card, tool)
    return "\t".join([str(hour), *(part.replace("\t", " ") for part in parts)])


def _decode_key(text: str) -> Key:
    hour, member, task, card, tool = text.split("\t")
    return int(hour), member, int(task) if task else None, card, tool


def _changes_budgets(tool: Tool) -> bool:
    """Whether the model calling ``tool`` can call ``remove_budget`` too: a capability of a card
    loaded in this process, and not among the names ``tool``'s model cannot call."""
    return "remove_budget" in known_tool_names() and "remove_budget" not in tool.unreachable
