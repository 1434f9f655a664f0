"""The planning board of one team: :class:`PlanningActor`, which owns the tasks and persists them.

One actor per team (spawned as :data:`PLANNING_ACTOR_NAME`), a
:class:`~toolcards.store._namespace_actor.NamespaceActor` over ``"<team_id>/#PlanningTool"``:
``tasks`` (the JSON of each :class:`Task`, keyed by id), ``meta`` (``board``: ``seq`` and
``next_id``) and ``vectors`` (:class:`~toolcards.vector.TextVectors` rows of the descriptions).
:meth:`PlanningActor.update` validates a batch against the board every process left, under the
namespace's lock, and returns only after its rows committed; every non-empty batch increments
``seq`` and publishes one :class:`StateChanged`.

Embeddings (with an :class:`EmbeddingParam`) never hold up or fail an update. A search waits at
most :data:`QUERY_EMBEDDING_TIMEOUT_S` for its query's embedding, else is keyword-only; keyword
search always sees every committed task. numpy is imported only when an embedding is
configured.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._events import MemberLeft
from toolcards.actors._timers import ActorTimer
from toolcards.core._events import StateChanged, ToolcardsEvent
from toolcards.core._idempotency import CallKey
from toolcards.core._services import MAILBOX
from toolcards.core._words import STOP_WORDS, words_of
from toolcards.errors import RetriableError
from toolcards.planning._batch import StagedBatch, stage_update, unknown_task
from toolcards.planning._claims import ReadyQueue, claim_refusal, history_line, none_ready, with_history
from toolcards.planning._models import (
    Claim,
    ClaimAction,
    ClaimChanged,
    ClaimReport,
    MatchKind,
    ReservationMode,
    SearchHit,
    SearchPage,
    Task,
    TaskCreate,
    TaskReady,
    TaskStatus,
    TaskUpdate,
    UpdateReport,
    normalize_agent_name,
    normalize_status,
)
from toolcards.planning._render import render_plan
from toolcards.store._base import Change, Store, Transaction
from toolcards.store._codec import JSONText
from toolcards.store._namespace_actor import VECTORS, NamespaceActor

if TYPE_CHECKING:
    from toolcards.actors._system import TeamHandle
    from toolcards.vector import EmbeddingParam

__all__ = [
    "DEFAULT_LEASE_S",
    "LEASE_TICK_S",
    "PLANNING_ACTOR_NAME",
    "QUERY_EMBEDDING_TIMEOUT_S",
    "SEMANTIC_MIN_SCORE",
    "SEMANTIC_TOP_K",
    "PlanningActor",
    "PlanningProxy",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

PLANNING_ACTOR_NAME = "#PlanningTool"
"""The actor's name in a team, and the suffix of its store namespace."""
SEMANTIC_MIN_SCORE = 0.3
"""Lowest cosine similarity for a semantic search hit. Task descriptions are one line, and a
paraphrase of one often scores below 0.5 with the local model: the board's labelled set
(``python -m bench planning``, figures in docs/benchmarks.md) finds far more paraphrases at
0.3, for about one false hit in six queries that no task is about."""
SEMANTIC_TOP_K = 20
"""Most semantic hits a search returns (keyword hits are not capped)."""
QUERY_EMBEDDING_TIMEOUT_S = 2.0
"""Longest a search waits for its query's embedding before answering keyword-only."""

DEFAULT_LEASE_S = 300.0
"""A claim's lease when the card sets none: five minutes without a tool call ends it."""
LEASE_TICK_S = 0.5
"""How often each board renews the leases of its process's active members and ends the
leases that ran out (in whichever process notices first)."""

_TASKS = "tasks"
_CLAIMS = "claims"
_META = "meta"
_BOARD_KEY = "board"

# Words that say nothing about which task is meant, dropped from keyword queries: the shared
# stop words, and the words of a request to the board itself ("find the tasks about ...").
_STOPWORDS = STOP_WORDS | {"find", "list", "show", "task", "tasks"}


def _search_text(task: Task) -> str:
    return f"{task.description}\n{task.output}".casefold()


def _query_terms(query: str) -> list[str]:
    # The package's one tokenizer splits words and drops stop words as the graph's search does
    # (``user_service`` is ``user`` and ``service``). Plurals are not folded: the board matches
    # substrings, and ``policy`` is not one of ``policies``.
    words = list(dict.fromkeys(words_of(query)))
    terms = [word for word in words if word not in _STOPWORDS and (len(word) > 1 or word.isdigit())]
    return terms or words


class PlanningActor(NamespaceActor):
    """The planning board of one team; its methods run one at a time, in the order sent.

    A method runs on the actor's thread or on the thread of a caller waiting for its answer
    (:class:`~toolcards.actors._caller_runs.CallerRunsActor`), always under the actor's lock.

    Call it through a proxy: ``proxy = PlanningActor.start(team_id, store).proxy()``, then
    ``proxy.update(...).get()``; cast the proxy to :class:`PlanningProxy` for type checking.
    Methods that return board data return frozen models, safe to keep after the call.

    Args:
        team_id: the team this board belongs to; the store namespace is
            ``f"{team_id}/#PlanningTool"``.
        store: where the board is persisted; it must outlive the actor.
        embedding: the embedding provider for semantic search; ``None`` means keyword-only.
        publish: called with a :class:`StateChanged` after every committed, non-empty
            change, under the actor's lock: it must not block. An exception it raises is
            logged and ignored (the change is committed either way).
        team: the team's handle in this process: the members' activity renews their
            claims' leases, and its ``"mailbox"`` service (when the team has one here) tells
            members when a task they own becomes ready.

    The board is loaded by the constructor, in the thread that starts the actor, so a store
    that cannot be read raises :class:`~toolcards.errors.StoreError` to whoever starts it
    (the card's bind) instead of leaving a dead actor behind.
    """

    def __init__(
        self,
        team_id: str,
        store: Store,
        embedding: EmbeddingParam | None = None,
        publish: Callable[[ToolcardsEvent], None] | None = None,
        *,
        team: TeamHandle | None = None,
    ) -> None:
        super().__init__(team_id, PLANNING_ACTOR_NAME, store, publish)
        self._team = team
        self._claims: dict[int, Claim] = {}
        """The claims on the board, by task id (mirror of the ``claims`` collection)."""
        self._queue = ReadyQueue()
        self._renewed: dict[int, float] = {}
        """Task id → when this process last renewed its claim (``time.monotonic()``)."""
        self._tick = ActorTimer()
        self._tick_due = 0.0
        """When the pending lease tick falls due (``time.monotonic()``)."""
        self._unsubscribe: Callable[[], None] | None = None
        self._tasks: dict[int, Task] = {}
        self._dependents: dict[int, set[int]] = {}
        self._texts: dict[int, str] = {}
        self._seq = 0
        self._next_id = 1
        self._keep_vectors(embedding, self._description_of)
        self._load()

    # -- lifecycle ---------------------------------------------------------------------

    def on_start(self) -> None:
        """Restore the stored vectors (with an embedding configured); runs on the actor's thread.

        Blocks the actor while the vectors are decoded; re-embedding of stale ones happens
        in the background.
        """
        self._start_vectors(str(task_id) for task_id in self._tasks)
        self._schedule_tick()
        if self._team is not None:
            # A member leaving the team (in any process) gives back what it claimed.
            ref = self.actor_ref

            def on_event(_seq: int, event: Any) -> None:
                if isinstance(event, MemberLeft) and ref.is_alive():
                    ref.tell(_MemberGone(event.member.handle, event.reason))

            self._unsubscribe = self._team.subscribe(on_event)

    def on_stop(self) -> None:
        """Stop the embedding threads and the lease ticks; runs on the actor's thread.

        Waits up to 5 s for an embedding call in progress; vectors not yet stored are
        dropped (they are recomputed on the next start); every committed update is
        already in the store.
        """
        if self._unsubscribe is not None:
            with contextlib.suppress(Exception):  # the team may be stopping first
                self._unsubscribe()
        super().on_stop()

    def _cancel_timers(self) -> None:
        self._tick.cancel()

    def on_receive(self, message: Any) -> Any:
        """Handle the lease tick, a member's leaving and the embedding keeper's messages; others
        go to pykka's default, which logs them."""
        if isinstance(message, _LeaseTick):
            self._on_tick()
            return None
        if isinstance(message, _MemberGone):
            self._release_member(message.member, message.reason)
            return None
        return super().on_receive(message)

    # -- reads -------------------------------------------------------------------------

    def get_task(self, task_id: int) -> Task:
        """Return the task with ``task_id``.

        Raises:
            RetriableError: no such task; the message says to list ids with search_planning.

        Reads memory only; never blocks the actor beyond a dict lookup.
        """
        self._refresh()
        task = self._tasks.get(task_id)
        if task is None:
            raise RetriableError(unknown_task(task_id))
        return task

    def task_ids(self, prefix: str = "", limit: int = 100) -> list[int]:
        """The ids of tasks whose decimal form starts with ``prefix``, smallest first, at most
        ``limit`` (for a client completing a task id). Reads memory only. Added in 0.3."""
        self._refresh()
        return sorted(task_id for task_id in self._tasks if str(task_id).startswith(prefix))[:limit]

    def tasks(self) -> list[Task]:
        """Return every task, by id. Linear in the board size, after catching up."""
        self._refresh()
        return [self._tasks[task_id] for task_id in sorted(self._tasks)]

    def seq(self) -> int:
        """Return the number of the last committed change (0 for a board never changed)."""
        self._refresh()
        return self._seq

    def render(
        self,
        agent: str,
        filter_by_agent: bool = True,
        *,
        get_tool: str | None = "get_planning_task",
        search_tool: str | None = "search_planning",
    ) -> str:
        """Return the plan as ``agent`` sees it (see :func:`~toolcards.planning._render.render_plan`).

        With ``filter_by_agent`` only tasks ``agent`` owns or created are listed; otherwise
        all. At most 50 are listed, open ones first, with a line counting the rest.
        ``get_tool`` and ``search_tool`` name the tools the reader can call (``None``: not
        named). One pass over the board in the actor (no copy of it crosses threads); reads
        memory only.
        """
        self._refresh()
        return render_plan(
            self._tasks.values(),
            agent,
            filter_by_agent=filter_by_agent,
            get_tool=get_tool,
            search_tool=search_tool,
        )

    def search(
        self,
        query: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        creator: str | None = None,
    ) -> list[SearchHit]:
        """Return tasks that pass every filter and, if ``query`` is given, match it.

        Args:
            query: natural-language text. A task matches by **keyword** when the query is
                a substring of its description or output, or when at least half of the
                query's significant words occur in them (case-insensitive), and by
                **meaning** when the cosine of its description's embedding with the
                query's is at least :data:`SEMANTIC_MIN_SCORE` (best 20 only). Hits are
                the union, each labelled ``keyword``, ``semantic`` or ``both``, best first.
            status: keep only tasks with this status; a synonym is read as its status
                (``"done"`` keeps ``completed`` tasks, see
                :func:`~toolcards.planning._models.normalize_status`).
            owner: keep only tasks owned by this agent (``"Bob"`` means ``"@Bob"``);
                ``""`` keeps only unassigned tasks.
            creator: keep only tasks created by this agent.

        Returns:
            Hits best first; with no query, every task passing the filters, by id,
            labelled ``filter``. Keyword-only when no embedding is configured, the
            provider is unavailable, or the query's embedding took longer than
            :data:`QUERY_EMBEDDING_TIMEOUT_S`.

        Raises:
            RetriableError: ``status`` is not a status or a synonym of one; the message
                names the four statuses.

        Linear in the board size. With an embedding configured it can hold up the actor
        for at most :data:`QUERY_EMBEDDING_TIMEOUT_S` while the query is embedded.
        """
        return self.search_page(query, status, owner, creator).hits

    def search_page(
        self,
        query: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        creator: str | None = None,
        limit: int | None = None,
    ) -> SearchPage:
        """:meth:`search`, keeping only the best ``limit`` hits (all when ``None``), and how
        many matched in all: the board's one search, which :meth:`search` and the
        ``search_planning`` tool both read.

        The best hits are selected before any is built, so a query matching every task of a
        large board costs one pass over it, not a sorted list of objects it will not show.
        """
        total, hits = self._best_hits(query, status, owner, creator, limit)
        return _page(total, [{"task": task, "match": match, "similarity": score} for task, match, score in hits])

    def _best_hits(
        self,
        query: str | None,
        status: str | None,
        owner: str | None,
        creator: str | None,
        limit: int | None,
    ) -> tuple[int, list[tuple[Task, MatchKind, float | None]]]:
        """(how many matched, the best ``limit`` as (task, how it matched, similarity)), best first."""
        wanted = None if status is None else _status_filter(status)
        self._refresh()
        filtered = wanted is not None or owner is not None or creator is not None
        candidates = list(self._filtered(wanted, owner, creator)) if filtered else None
        if query is None or not query.strip():
            tasks = candidates if candidates is not None else list(self._tasks.values())
            shown = _best(tasks, limit, key=lambda task: task.id)
            return len(tasks), [(task, "filter", None) for task in shown]
        texts = self._texts.items() if candidates is None else [(task.id, self._texts[task.id]) for task in candidates]
        keyword = _keyword_buckets(query, texts)
        semantic = self._semantic_scores(query, candidates)
        # Tasks that matched by meaning (at most SEMANTIC_TOP_K) are ranked one by one on the
        # sum of both scores; the rest share a few keyword scores, taken best bucket first.
        scores = dict(semantic)
        both: set[int] = set()  # matched by meaning and by keyword
        for score, ids in keyword.items() if semantic else ():
            for task_id in semantic.keys() & ids:
                both.add(task_id)
                scores[task_id] += score
        ranked = [(-score, task_id) for task_id, score in scores.items()]
        total = len(scores)
        for score, ids in sorted(keyword.items(), reverse=True):
            keyword_only = [task_id for task_id in ids if task_id not in semantic] if semantic else ids
            total += len(keyword_only)
            # A lower bucket is worth taking only while the page is not full of better hits;
            # max(ranked) is the worst entry so far (scores are negated for ascending order).
            if limit is None or len(ranked) < limit or -max(ranked)[0] <= score:
                ranked += [(-score, task_id) for task_id in _best(keyword_only, limit)]
        hits: list[tuple[Task, MatchKind, float | None]] = []
        for _, task_id in _best(ranked, limit):
            in_keyword, in_semantic = task_id not in semantic or task_id in both, task_id in semantic
            match: MatchKind = "both" if in_keyword and in_semantic else "keyword" if in_keyword else "semantic"
            hits.append((self._tasks[task_id], match, semantic.get(task_id)))
        return total, hits

    def when_indexed(self) -> concurrent.futures.Future[None]:
        """Return a future that resolves once every committed description has its vector.

        The vector is embedded here, or, for a description another process wrote, stored
        by that process (or embedded here after the grace period, if it never stores it).

        Resolves at once when no embedding is configured or nothing is pending; resolves
        too (without vectors) when the provider turns out to be unavailable or the actor
        stops. Wait on it outside the actor (``proxy.when_indexed().get().result(5)``):
        waiting inside would block the actor that must index the vectors.
        """
        if self._vectors is not None:
            return self._vectors.when_idle()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.set_result(None)
        return future

    # -- the one write -----------------------------------------------------------------

    def update(
        self,
        agent: str,
        create: Sequence[TaskCreate] = (),
        update: Sequence[TaskUpdate] = (),
        delete: Sequence[int] = (),
        *,
        call: CallKey | None = None,
        require_output: bool = False,
    ) -> UpdateReport:
        """Apply one batch on behalf of ``agent``: creates, then updates, then deletes.

        Each part is checked against the board as the earlier parts left it. A batch is all
        or nothing: when a part is refused, nothing is written and the report lists every
        refused part. Rules:
        a created task's ``id`` must be positive and not on the board (omitted: the next
        free id, never a deleted one); descriptions are 1 to 300 characters; output is cut
        to 150; ``dependencies`` must name tasks on the board, not the task itself, and
        form no cycle; the creator is ``agent``; each list names a task at most once (a repeat
        is refused, naming its list). Deleting a task removes its id from the
        dependencies of the tasks that waited on it (reported as ``unlinked``). Statuses
        arrive as one of the four: :class:`TaskCreate` and :class:`TaskUpdate` read a
        synonym (``"done"``) as its status when they are built, and refuse other words.

        Args:
            agent: the calling agent, stamped as creator (``"Alice"`` means ``"@Alice"``).
            create: tasks to add.
            update: changes to existing tasks; omitted fields stay as they are.
            delete: ids of tasks to remove.
            call: the call's idempotency key (:func:`toolcards.core._idempotency.current_call`):
                its answer is recorded with the change, and a batch sent again with the same
                key returns that answer (``replayed``) without writing again, in any process.
            require_output: refuse to complete a task that has no output.

        A change that completes, aborts, reassigns, reopens or deletes a claimed task ends
        its claim; while the lease holds only its holder may make one (another member's
        batch is refused whole, naming the holder). When a task is completed, the owners of
        tasks whose last open dependency it was are told (the team's mailbox, when this
        process has one).

        Returns:
            An :class:`UpdateReport` listing what was applied, or every refused part with
            the reason.

        Raises:
            StoreError: the transaction failed; nothing of the batch was applied, in
                memory or in the store.
            OutcomeUnknown: the store lost its connection while committing and could not
                learn the outcome; the batch may be on the board. Send it again with the
                same ``call`` to apply it at most once.
            ToolFailed: ``call``'s key was used before with other arguments.
            ValueError: ``agent`` is empty (a wiring mistake, not the model's).

        Everything reported as applied is committed to the store before this returns.
        Holds up the actor for one store transaction of the changed rows; never for an
        embedding.
        """
        creator = normalize_agent_name(agent)
        if not creator:
            raise ValueError(f"update() needs the calling agent's name, got {agent!r}.")
        writing = self._vectors.writing() if self._vectors is not None else contextlib.nullcontext()
        with writing, self._writing() as txn:
            replayed = self._calls.replay(call, "update_planning")
            if replayed is not None:
                return UpdateReport.model_validate(replayed).model_copy(update={"replayed": True})
            batch = stage_update(
                self._tasks,
                self._dependents,
                self._next_id,
                creator,
                create=create,
                update=update,
                delete=delete,
                now=datetime.now(UTC),
                require_output=require_output,
            )
            if not batch.changed:
                return batch.report()
            ended = self._claims_ended_by(batch)
            self._refuse_taking_over(ended, creator)
            seq = self._seq + 1
            report = batch.report(seq)
            calls = self._calls.record(
                call, lambda: report.model_dump(mode="json", exclude_defaults=True), txn.version + 1
            )
            claim_rows = [Change(collection=_CLAIMS, key=str(task_id), value=None) for task_id in ended]
            txn.stage(self._rows_of(batch, seq) + claim_rows + calls)
            completed = [
                task_id
                for task_id, task in batch.tasks.items()
                if task is not None and task.status == "completed" and self._status_of(task_id) != "completed"
            ]
        # Committed: mirror it in memory.
        assert txn.committed is not None
        for task_id in ended:
            self._drop_claim(task_id)
        for task_id, task in batch.tasks.items():
            if task is None:
                self._remove(task_id)
            else:
                self._put(task)
        self._calls.committed(calls)
        self._tell_ready_owners(completed, agent=creator)
        self._seq, self._next_id = seq, batch.next_id
        self._after_commit(batch.described, batch.deleted)
        self._emit(report)
        return report

    # -- claims ------------------------------------------------------------------------

    def claim(
        self,
        agent: str,
        task_id: int,
        *,
        tools: Collection[str] | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        paths_mode: ReservationMode = "refuse",
        call: CallKey | None = None,
    ) -> ClaimReport:
        """Claim task ``task_id`` for ``agent``, atomically across every process of the team.

        The task becomes ``in_progress``, owned by ``agent``, under a lease of ``lease_s``
        seconds that ``agent``'s tool calls renew. Claiming a task ``agent`` already holds
        renews the lease.

        Args:
            agent: the claimer (``"Alice"`` means ``"@Alice"``).
            task_id: the task.
            tools: the claimer's tool names, checked against the task's ``requires``
                (``None``: not checked).
            lease_s: the lease; positive.
            paths_mode: what other members' writes to the task's ``paths`` meet while the
                claim holds (:meth:`reservations`).
            call: the call's idempotency key (see :meth:`update`).

        Raises:
            RetriableError: no such task, or it cannot be claimed (closed, claimed by a
                member whose lease holds, assigned to another member, waiting on open
                dependencies, needing tools the claimer lacks); the message says which and
                what to do.
            StoreError / OutcomeUnknown: the transaction failed (see :meth:`update`).

        Committed before it returns; one store transaction.
        """
        member = _member(agent)
        lease_s = _checked_lease(lease_s)
        with self._writing() as txn:
            replayed = self._calls.replay(call, "claim_task")
            if replayed is not None:
                return self._replayed_claim(replayed, member)
            task = self._tasks.get(task_id)
            if task is None:
                raise RetriableError(unknown_task(task_id))
            now = time.time()
            refusal = claim_refusal(
                task,
                member,
                self._claims.get(task_id),
                self._queue.waiting_on(task, self._tasks),
                _missing(task, tools),
                now,
            )
            if refusal is not None:
                raise RetriableError(refusal)
            staged = self._stage_claim(txn, task, member, lease_s, paths_mode, now, call)
        return self._committed_claim(staged, txn)

    def _replayed_claim(self, recorded: Any, member: str) -> ClaimReport:
        """The first answer of a claim sent again, told whether the claim still holds: a
        retry after a restart must not read "you hold task 7" of a claim that has ended."""
        report = ClaimReport.model_validate(recorded)
        claim = self._claims.get(report.task.id)
        held = claim is not None and claim.member == member and claim.until > time.time()
        task = self._tasks.get(report.task.id, report.task)
        return report.model_copy(update={"replayed": True, "held": held, "task": report.task if held else task})

    def next_task(
        self,
        agent: str,
        *,
        tools: Collection[str] | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        paths_mode: ReservationMode = "refuse",
        call: CallKey | None = None,
    ) -> ClaimReport:
        """Claim the best task ready for ``agent`` and return it (see :meth:`claim`).

        Ready: ``pending``, unclaimed, unassigned or assigned to ``agent``, every dependency
        completed, its ``requires`` among ``tools``. Best: highest priority, then oldest.
        The choice and the claim are one transaction, so two members asking at once get two
        different tasks.

        Raises:
            RetriableError: no task is ready for ``agent``; the message counts what keeps
                the open tasks away (dependencies, other members' claims, assignments,
                missing tools), with an example of each.
        """
        member = _member(agent)
        lease_s = _checked_lease(lease_s)
        with self._writing() as txn:
            replayed = self._calls.replay(call, "next_task")
            if replayed is not None:
                return self._replayed_claim(replayed, member)

            def fits(task_id: int) -> bool:
                task = self._tasks[task_id]
                return task.owner in (None, member) and not _missing(task, tools)

            found = self._queue.best(fits)
            if found is None:
                raise RetriableError(
                    none_ready(
                        self._tasks.values(),
                        member,
                        self._claims,
                        lambda task: self._queue.waiting_on(task, self._tasks),
                        lambda task: _missing(task, tools),
                    )
                )
            staged = self._stage_claim(txn, self._tasks[found], member, lease_s, paths_mode, time.time(), call)
        return self._committed_claim(staged, txn)

    def release(self, agent: str, task_id: int, reason: str = "", *, call: CallKey | None = None) -> Task:
        """Give back task ``task_id``: it returns to ``pending``, unassigned; the claim ends.

        Only the member holding the task (its claim, or its ownership) may release it.

        Raises:
            RetriableError: no such task, or ``agent`` does not hold it (the message says who does).

        Committed before it returns; one store transaction.
        """
        member = _member(agent)
        with self._writing() as txn:
            replayed = self._calls.replay(call, "release_task")
            if replayed is not None:
                return Task.model_validate(replayed)
            task = self._tasks.get(task_id)
            if task is None:
                raise RetriableError(unknown_task(task_id))
            claim = self._claims.get(task_id)
            holder = claim.member if claim is not None else task.owner
            if holder != member:
                who = f"it is held by {holder}" if holder else "nobody holds it"
                raise RetriableError(f"You do not hold task {task_id}: {who}. Only its holder can release it.")
            if task.status in ("completed", "aborted") and claim is None:
                raise RetriableError(f"Task {task_id} is {task.status}; there is nothing to release.")
            note = f"released by {member}" + (f": {reason.strip()[:200]}" if reason.strip() else "")
            released = self._stage_release(txn, [task], {task_id: note})
            # Recorded with the release, so the same call sent again gets this answer and
            # changes nothing (it once released a claim taken since).
            calls = self._calls.record(call, released[0].model_dump(mode="json"), txn.version + 1)
            txn.stage(calls)
        self._committed_release(released, txn)
        self._calls.committed(calls)
        self._emit_claims([("released", released[0].id, member)])
        return released[0]

    def claims(self) -> list[Claim]:
        """Every claim on the board, by task id (after catching up)."""
        self._refresh()
        return [self._claims[task_id] for task_id in sorted(self._claims)]

    def view_version(self) -> tuple[int, int]:
        """The board's change number and a stamp of its leases (after catching up): what a
        view of the board must be drawn again for."""
        self._refresh()
        return self._seq, hash(tuple(sorted((claim.task_id, claim.until) for claim in self._claims.values())))

    def claimed_task(self, member: str) -> int | None:
        """The task ``member`` holds a live claim on, after catching up: the most recently
        claimed when several, ``None`` when none."""
        self._refresh()
        asking = normalize_agent_name(member)
        now = time.time()
        held = [claim for claim in self._claims.values() if claim.member == asking and claim.until > now]
        return max(held, key=lambda claim: claim.since).task_id if held else None

    def reservations(self, member: str = "") -> list[tuple[str, str, int, ReservationMode]]:
        """The paths reserved by live claims of members other than ``member``, after catching up.

        Returns ``(glob, holder, task id, mode)`` tuples: plain data, because the workspace
        matches them with its own glob rules and must not import the board's models.
        """
        self._refresh()
        asking = normalize_agent_name(member)
        now = time.time()
        found = []
        for claim in self._claims.values():
            task = self._tasks.get(claim.task_id)
            if task is None or not task.paths or claim.member == asking or claim.until <= now:
                continue
            found += [(pattern, claim.member, task.id, claim.paths_mode) for pattern in task.paths]
        return found

    def _stage_claim(
        self,
        txn: Transaction,
        task: Task,
        member: str,
        lease_s: float,
        paths_mode: ReservationMode,
        now: float,
        call: CallKey | None,
    ) -> _StagedClaim:
        previous = self._claims.get(task.id)
        renewed = previous is not None and previous.member == member
        claim = Claim(
            task_id=task.id,
            member=member,
            since=previous.since if renewed and previous is not None else now,
            until=now + lease_s,
            lease_s=lease_s,
            paths_mode=paths_mode,
        )
        claimed = task
        seq = self._seq
        rows = [Change(collection=_CLAIMS, key=str(task.id), value=claim.model_dump(mode="json"))]
        if not renewed:  # a renewal changes the lease only: no task row, no board change
            claimed = with_history(
                task,
                history_line(now, f"claimed by {member}"),
                status="in_progress",
                owner=member,
                updated_at=datetime.now(UTC),
            )
            seq += 1
            rows += [
                _task_row(claimed),
                Change(collection=_META, key=_BOARD_KEY, value={"seq": seq, "next_id": self._next_id}),
            ]
        report = ClaimReport(task=claimed, until=claim.until, lease_s=lease_s, renewed=renewed)
        calls = self._calls.record(call, report.model_dump(mode="json"), txn.version + 1)
        txn.stage([*rows, *calls])
        return _StagedClaim(report=report, claim=claim, task=claimed, seq=seq, calls=calls)

    def _committed_claim(self, staged: _StagedClaim, txn: Transaction) -> ClaimReport:
        """Mirror a committed claim in memory and announce it."""
        assert txn.committed is not None
        self._claims[staged.claim.task_id] = staged.claim
        self._renewed[staged.claim.task_id] = time.monotonic()
        self._put(staged.task)
        self._calls.committed(staged.calls)
        self._seq = staged.seq
        self._schedule_tick(sooner=True)
        if not staged.report.renewed:
            self._emit_claims([("claimed", staged.claim.task_id, staged.claim.member)])
        return staged.report

    def _stage_release(self, txn: Transaction, tasks: Iterable[Task], notes: Mapping[int, str]) -> list[Task]:
        """Stage ``tasks`` back to ``pending``, unassigned, their claims deleted, each task's
        note in its history; returns the released tasks (mirror them with :meth:`_committed_release`)."""
        now, stamp = time.time(), datetime.now(UTC)
        released = [
            with_history(task, history_line(now, notes[task.id]), status="pending", owner=None, updated_at=stamp)
            for task in tasks
        ]
        seq = self._seq + 1
        rows = [
            Change(collection=_TASKS, key=str(task.id), value=JSONText(task.model_dump_json())) for task in released
        ]
        rows += [Change(collection=_CLAIMS, key=str(task.id), value=None) for task in released]
        rows.append(Change(collection=_META, key=_BOARD_KEY, value={"seq": seq, "next_id": self._next_id}))
        txn.stage(rows)
        return released

    def _committed_release(self, released: list[Task], txn: Transaction) -> None:
        assert txn.committed is not None
        for task in released:
            self._drop_claim(task.id)
            self._put(task)
        self._seq += 1

    def _drop_claim(self, task_id: int) -> None:
        self._claims.pop(task_id, None)
        self._renewed.pop(task_id, None)
        task = self._tasks.get(task_id)
        if task is not None:
            self._queue.refresh(task, self._claims)

    def _claims_ended_by(self, batch: StagedBatch) -> list[int]:
        """The claims a batch ends: of tasks it deletes, closes, reopens or gives to another member."""
        ended = []
        for task_id, task in batch.tasks.items():
            claim = self._claims.get(task_id)
            if claim is not None and (task is None or task.status != "in_progress" or task.owner != claim.member):
                ended.append(task_id)
        return ended

    def _refuse_taking_over(self, ended: Sequence[int], member: str) -> None:
        """Refuse a batch that would end another member's live claim: only the holder
        completes, aborts, reopens, gives away or deletes a task it holds, so two members
        never both believe they hold it. A claim whose lease ran out may be taken over."""
        now = time.time()
        held = [
            claim
            for claim in (self._claims[task_id] for task_id in ended)
            if claim.member != member and claim.until > now
        ]
        if held:
            which = "; ".join(
                f"task {claim.task_id} by {claim.member} "
                f"(lease until {datetime.fromtimestamp(claim.until, UTC):%H:%M:%S}Z)"
                for claim in held
            )
            raise RetriableError(
                f"Held by another member: {which}. Only a task's holder completes, aborts, reopens, "
                "reassigns or deletes it while it holds it: ask the holder (send_message), or wait until "
                "the lease runs out. Nothing of this batch was applied."
            )

    def _status_of(self, task_id: int) -> str | None:
        task = self._tasks.get(task_id)
        return None if task is None else task.status

    def _tell_ready_owners(self, completed: list[int], agent: str) -> None:
        """Tell the owners of tasks whose last open dependency was just completed (never raises)."""
        if not completed:
            return
        ready: dict[int, int] = {}
        for task_id in completed:
            for dependent in self._dependents.get(task_id, ()):
                task = self._tasks.get(dependent)
                if (
                    task is not None
                    and task.owner
                    and task.status == "pending"
                    and not self._queue.waiting_on(task, self._tasks)
                ):
                    ready[dependent] = task_id
        mailbox = self._team.service(MAILBOX) if self._team is not None else None
        for dependent, finished in ready.items():
            owner = self._tasks[dependent].owner
            text = (
                f"Task {dependent} is ready: its last dependency, task {finished}, was completed by {agent}. "
                f"Claim it with claim_task({dependent})."
            )
            if self._publish is not None:
                with contextlib.suppress(Exception):
                    self._publish(TaskReady(team_id=self._team_id, task_id=dependent, owner=owner or "", text=text))
            if mailbox is not None and owner:
                try:
                    mailbox(owner, text, sender=PLANNING_ACTOR_NAME)
                except RetriableError as exc:  # the owner left, or its mailbox is full: the event stays
                    logger.info("Not telling %s that task %s is ready: %s", owner, dependent, exc)
                except Exception:
                    logger.exception("Telling %s that task %s is ready failed.", owner, dependent)

    def _emit_claims(self, changes: list[tuple[ClaimAction, int, str]]) -> None:
        """Publish one :class:`ClaimChanged` per claim that started or ended, and the board's change."""
        if self._publish is None or not changes:
            return
        try:
            for action, task_id, member in changes:
                self._publish(ClaimChanged(team_id=self._team_id, action=action, task_id=task_id, member=member))
            summary = "; ".join(f"task {task_id} {action} by {member}" for action, task_id, member in changes)
            self._publish(
                StateChanged(team_id=self._team_id, source=PLANNING_ACTOR_NAME, seq=self._seq, summary=summary)
            )
        except Exception:
            logger.exception("Publishing the claims of %s failed; they are committed.", self._namespace)

    # -- the lease tick ----------------------------------------------------------------

    def _schedule_tick(self, *, sooner: bool = False) -> None:
        """Schedule the next lease tick (with ``sooner``, only if it comes before the pending one).

        A lease is renewed once two thirds of it are left; ticking at least four times per
        shortest lease held makes sure a tick falls inside that window before it runs out.
        A claim with a shorter lease than the pending tick allows reschedules it.
        """
        shortest = min((claim.lease_s for claim in self._claims.values()), default=LEASE_TICK_S * 4)
        delay = min(LEASE_TICK_S, shortest / 4)
        due = time.monotonic() + delay
        if sooner and due >= self._tick_due:
            return
        self._tick_due = due
        self._tick.tell_later(self.actor_ref, delay, _LeaseTick())

    def _on_tick(self) -> None:
        """Renew the leases of members active in this process; end those that ran out.

        Runs every :data:`LEASE_TICK_S` on the actor's thread. Reading what other processes
        committed first is what lets any live process end a lease whose owner died.
        """
        try:
            self._refresh()
            now = time.time()
            expired = [claim for claim in self._claims.values() if claim.until <= now]
            if expired:
                self._expire()
            self._renew()
        except Exception:
            log = logger.debug if self._store.closed else logger.exception
            log("The lease tick of %s failed; the next one tries again.", self._namespace)
        finally:
            self._schedule_tick()

    def _expire(self) -> None:
        with self._writing() as txn:  # a renewal another process committed counts
            now = time.time()
            expired = [claim for claim in self._claims.values() if claim.until <= now and claim.task_id in self._tasks]
            if not expired:
                return
            notes = {claim.task_id: f"lease of {claim.member} expired" for claim in expired}
            released = self._stage_release(txn, [self._tasks[claim.task_id] for claim in expired], notes)
        self._committed_release(released, txn)
        self._emit_claims([("expired", claim.task_id, claim.member) for claim in expired])

    def _release_member(self, member: str, reason: str) -> None:
        """Give back every task ``member`` holds: it left the team (never raises)."""
        try:
            self._refresh()
            if not any(claim.member == member for claim in self._claims.values()):
                return
            with self._writing() as txn:
                held = [claim for claim in self._claims.values() if claim.member == member]
                if not held:
                    return
                notes = {claim.task_id: f"{member} left the team ({reason})" for claim in held}
                released = self._stage_release(txn, [self._tasks[claim.task_id] for claim in held], notes)
            self._committed_release(released, txn)
            self._emit_claims([("left", claim.task_id, member) for claim in held])
        except Exception:
            log = logger.debug if self._store.closed else logger.exception
            log("Releasing the tasks of %s, who left, failed; their leases will end them.", member)

    def _renew(self) -> None:
        """Extend the leases of claims whose member made a tool call here since the last renewal,
        once a third of the lease has passed (one write for all of them)."""
        if self._team is None or not self._claims:
            return
        now, clock = time.time(), time.monotonic()
        due = []
        for claim in self._claims.values():
            active = self._team.last_activity(claim.member)
            renewed = self._renewed.get(claim.task_id, 0.0)
            if active is not None and active > renewed and claim.until - now < claim.lease_s * 2 / 3:
                due.append(claim)
        if not due:
            return
        with self._writing() as txn:
            renewed_claims = [
                claim.model_copy(update={"until": now + claim.lease_s})
                for claim in due
                if self._claims.get(claim.task_id) == claim
            ]
            txn.stage(
                Change(collection=_CLAIMS, key=str(claim.task_id), value=claim.model_dump(mode="json"))
                for claim in renewed_claims
            )
        for claim in renewed_claims:
            self._claims[claim.task_id] = claim
            self._renewed[claim.task_id] = clock

    # -- the store -------------------------------------------------------------------

    def _clear(self) -> None:
        self._tasks.clear()
        self._dependents.clear()
        self._texts.clear()
        self._seq, self._next_id = 0, 1
        self._claims.clear()
        self._queue.clear()

    def _absorb_changes(self, changes: Sequence[Change]) -> list[str]:
        """Apply committed rows to memory; the tasks whose description changed."""
        described: list[str] = []
        for change in changes:
            if change.collection == _TASKS:
                task_id = int(change.key)
                before = self._tasks.get(task_id)
                if change.value is None:
                    if before is not None:
                        self._remove(task_id)
                        if self._vectors is not None:
                            self._vectors.forget(change.key)
                else:
                    task = Task.model_validate(change.value)
                    self._put(task)
                    self._next_id = max(self._next_id, task_id + 1)
                    if before is None or before.description != task.description:
                        described.append(change.key)
            elif change.collection == _META and change.key == _BOARD_KEY:
                board = change.value or {}
                self._seq = int(board.get("seq", self._seq))
                self._next_id = max(self._next_id, int(board.get("next_id", 1)))
            elif change.collection == _CLAIMS:
                self._absorb_claim(int(change.key), change.value)
        return described

    def _rows_of(self, batch: StagedBatch, seq: int) -> list[Change]:
        changes = []
        for task_id, task in batch.tasks.items():
            value = None if task is None else JSONText(task.model_dump_json())
            changes.append(Change(collection=_TASKS, key=str(task_id), value=value))
            if task is None and self._vectors is not None:
                changes.append(Change(collection=VECTORS, key=str(task_id), value=None))
        changes.append(Change(collection=_META, key=_BOARD_KEY, value={"seq": seq, "next_id": batch.next_id}))
        return changes

    def _put(self, task: Task) -> None:
        old = self._tasks.get(task.id)
        if old is not None:
            for dep in old.dependencies:
                self._dependents.get(dep, set()).discard(task.id)
        self._tasks[task.id] = task
        self._texts[task.id] = _search_text(task)
        for dep in task.dependencies:
            self._dependents.setdefault(dep, set()).add(task.id)
        self._queue.put(task, old, self._tasks, self._dependents, self._claims)

    def _remove(self, task_id: int) -> None:
        old = self._tasks.pop(task_id)
        self._texts.pop(task_id, None)
        for dep in old.dependencies:
            self._dependents.get(dep, set()).discard(task_id)
        self._queue.remove(old, self._tasks, self._dependents, self._claims)

    def _absorb_claim(self, task_id: int, value: Any) -> None:
        if value is None:
            self._drop_claim(task_id)
            return
        self._claims[task_id] = Claim.model_validate(value)
        task = self._tasks.get(task_id)
        if task is not None:
            self._queue.refresh(task, self._claims)

    def _emit(self, report: UpdateReport) -> None:
        self._publish_event(
            StateChanged(team_id=self._team_id, source=PLANNING_ACTOR_NAME, seq=self._seq, summary=report.summary())
        )

    # -- search internals --------------------------------------------------------------

    def _filtered(self, status: TaskStatus | None, owner: str | None, creator: str | None) -> Iterable[Task]:
        """The tasks passing every filter given; ``status`` is already one of the four."""
        tasks: Iterable[Task] = self._tasks.values()
        if status is not None:
            tasks = (task for task in tasks if task.status == status)
        if owner is not None:
            wanted = normalize_agent_name(owner) or None
            tasks = (task for task in tasks if task.owner == wanted)
        if creator is not None:
            author = normalize_agent_name(creator)
            tasks = (task for task in tasks if task.creator == author)
        return tasks

    def _semantic_scores(self, query: str, candidates: Sequence[Task] | None) -> dict[int, float]:
        """Cosines of at most :data:`SEMANTIC_TOP_K` tasks (among ``candidates``; ``None``: all)."""
        vectors = self._vectors
        if vectors is None or not len(vectors) or not vectors.available:
            return {}
        vector = vectors.embed_query(query, QUERY_EMBEDDING_TIMEOUT_S)
        if vector is None:
            return {}
        # With filters, the best 20 are taken among the allowed tasks.
        allowed = {str(task.id) for task in candidates} if candidates is not None else None
        hits = vectors.search(vector, top_k=SEMANTIC_TOP_K, min_score=SEMANTIC_MIN_SCORE, allowed=allowed)
        return {int(key): score for key, score in hits}

    # -- embedding internals -----------------------------------------------------------

    def _description_of(self, key: str) -> str | None:
        task = self._tasks.get(int(key))
        return None if task is None else task.description

    def _after_commit(self, described: set[int], deleted: list[int]) -> None:
        if self._vectors is None:
            return
        for task_id in deleted:
            self._vectors.forget(str(task_id))
        self._vectors.embed(str(task_id) for task_id in described if task_id in self._tasks)


def _status_filter(word: str) -> TaskStatus:
    """``word`` as the status a search keeps, read as validation reads it; the refusal is the
    model's to fix, like any other argument."""
    try:
        return normalize_status(word)
    except ValueError as exc:
        raise RetriableError(str(exc)) from None


def _page(total: int, hits: list[dict[str, Any]]) -> SearchPage:
    """The page validated in one call: the same models as building each ``SearchHit`` and
    then the page, at half the cost (each model's ``__init__`` is a Python-level call; a page
    of 50 hits of a 200-task board took a quarter of the search)."""
    return SearchPage.model_validate({"total": total, "hits": hits})


def _keyword_buckets(query: str, texts: Collection[tuple[int, str]]) -> dict[float, list[int]]:
    """Keyword score → the ids of the tasks with that score, over ``(id, search text)`` pairs.

    A task scores 1.0 when the query (case-folded, spaces collapsed) is a substring of its
    text, else the share of the query's significant words found in it, if that is at least
    half. Each pass over the board is one comprehension (a substring test per task, no
    per-task objects), and scores come from set algebra, so a query matching every task of
    a large board costs one pass per word.
    """
    terms = _query_terms(query)
    if not terms:  # nothing but punctuation: only the phrase itself can match
        phrase = " ".join(query.casefold().split())
        exact = [task_id for task_id, text in texts if phrase in text]
        return {1.0: exact} if exact else {}
    # A task containing the whole query contains each of its words: it scores 1.0 below.
    found = [{task_id for task_id, text in texts if term in text} for term in terms]
    if len(found) == 1:
        return {1.0: list(found[0])} if found[0] else {}
    if len(found) == 2:
        both, either = found[0] & found[1], found[0] ^ found[1]
        return {score: list(ids) for score, ids in ((1.0, both), (0.5, either)) if ids}
    needed = math.ceil(len(terms) / 2)
    counts: Counter[int] = Counter()
    for ids in found:
        counts.update(ids)
    buckets: dict[float, list[int]] = {}
    for task_id, count in counts.items():
        if count >= needed:
            buckets.setdefault(count / len(terms), []).append(task_id)
    return buckets


def _best(items: Iterable[T], limit: int | None, key: Callable[[T], Any] | None = None) -> list[T]:
    """``items`` sorted (by ``key``), only the first ``limit`` of them (all when ``None``)."""
    if key is None:  # no key function: heapq and sorted compare in C
        chosen: list[Any] = sorted(items) if limit is None else heapq.nsmallest(limit, items)
        return chosen
    return sorted(items, key=key) if limit is None else heapq.nsmallest(limit, items, key=key)


class _LeaseTick:
    """The timer's message: renew and end leases (see :meth:`PlanningActor._on_tick`)."""


@dataclass(frozen=True, slots=True)
class _MemberGone:
    """A member left the team: its claims end (see :meth:`PlanningActor._release_member`)."""

    member: str
    reason: str


@dataclass(frozen=True, slots=True)
class _StagedClaim:
    report: ClaimReport
    claim: Claim
    task: Task
    seq: int
    calls: list[Change]


def _task_row(task: Task) -> Change:
    return Change(collection=_TASKS, key=str(task.id), value=JSONText(task.model_dump_json()))


def _member(agent: str) -> str:
    member = normalize_agent_name(agent)
    if not member:
        raise ValueError(f"A claim needs the calling agent's name, got {agent!r}.")
    return member


def _checked_lease(lease_s: float) -> float:
    if not (isinstance(lease_s, int | float) and math.isfinite(lease_s) and lease_s > 0):
        raise RetriableError(f"A lease of {lease_s!r} seconds is not valid: give a positive number of seconds.")
    return float(lease_s)


def _missing(task: Task, tools: Collection[str] | None) -> list[str]:
    """The tools ``task`` requires that are not among ``tools`` (``None``: not checked)."""
    if tools is None or not task.requires:
        return []
    return [name for name in task.requires if name not in tools]


class PlanningProxy(ActorMemberMixin, pykka.ActorProxy[PlanningActor]):
    """A typed proxy of :class:`PlanningActor`: each method returns a ``pykka.Future`` of its result.

    ``proxy = cast(PlanningProxy, PlanningActor.start(...).proxy())``. ``future.get()``
    raises what the method raised, or ``pykka.ActorDeadError`` if the actor is gone.
    """

    get_task = proxy_method(PlanningActor.get_task)
    render = proxy_method(PlanningActor.render)
    search = proxy_method(PlanningActor.search)
    search_page = proxy_method(PlanningActor.search_page)
    seq = proxy_method(PlanningActor.seq)
    tasks = proxy_method(PlanningActor.tasks)
    task_ids = proxy_method(PlanningActor.task_ids)
    update = proxy_method(PlanningActor.update)
    when_indexed = proxy_method(PlanningActor.when_indexed)
    claim = proxy_method(PlanningActor.claim)
    next_task = proxy_method(PlanningActor.next_task)
    release = proxy_method(PlanningActor.release)
    claims = proxy_method(PlanningActor.claims)
    reservations = proxy_method(PlanningActor.reservations)
    claimed_task = proxy_method(PlanningActor.claimed_task)
    view_version = proxy_method(PlanningActor.view_version)
