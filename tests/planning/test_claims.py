"""Claims: one winner, leases that end, a ready queue, and refusals that say what to do."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pykka
import pytest

import toolcards
from toolcards import ToolFactory
from toolcards.core._tokens import count_tokens
from toolcards.errors import RetriableError
from toolcards.planning import PlanningTool
from toolcards.planning._actor import PLANNING_ACTOR_NAME, PlanningActor, PlanningProxy
from toolcards.planning._claims import ReadyQueue
from toolcards.planning._models import ClaimChanged, TaskCreate, TaskReady, TaskUpdate
from toolcards.store import MemoryStore, SQLiteStore
from toolcards.testing import FakeObserver

WAIT = 30.0


@pytest.fixture
def board(tmp_path: Any) -> Iterator[tuple[PlanningProxy, list[Any]]]:
    events: list[Any] = []
    store = SQLiteStore(tmp_path / "board.db")
    ref = PlanningActor.start("t", store, None, events.append)
    yield cast(PlanningProxy, ref.proxy()), events
    ref.stop()
    store.close()


def make(proxy: PlanningProxy, *tasks: TaskCreate) -> list[int]:
    return list(proxy.update("@Lead", create=list(tasks)).get(timeout=WAIT).created)


def test_a_claim_takes_the_task_and_a_second_claimer_is_told_who_holds_it(board: Any) -> None:
    proxy, events = board
    make(proxy, TaskCreate(description="write the parser"))
    report = proxy.claim("@Ann", 1).get(timeout=WAIT)
    assert (report.task.status, report.task.owner, report.renewed) == ("in_progress", "@Ann", False)
    assert report.until > time.time() + 200  # the default lease, 5 minutes
    assert "claimed by @Ann" in report.task.history[-1]
    with pytest.raises(RetriableError, match=r"Task 1 is claimed by @Ann \(its lease ends in 5 min"):
        proxy.claim("@Bob", 1).get(timeout=WAIT)
    again = proxy.claim("@Ann", 1).get(timeout=WAIT)
    assert again.renewed and again.until >= report.until
    assert [(e.action, e.task_id, e.member) for e in events if isinstance(e, ClaimChanged)] == [("claimed", 1, "@Ann")]


def test_refusals_say_why_and_what_to_do(board: Any) -> None:
    proxy, _ = board
    make(
        proxy,
        TaskCreate(description="base"),
        TaskCreate(description="waits", dependencies=[1]),
        TaskCreate(description="done", status="completed", output="shipped"),
        TaskCreate(description="Bob's", owner="@Bob"),
        TaskCreate(description="shell work", requires=["exec_command"]),
    )
    cases = {
        2: r"Task 2 is waiting on 1 \(not completed yet\)",
        3: "Task 3 is completed; there is nothing to claim",
        4: "Task 4 is assigned to @Bob",
        5: "Task 5 needs exec_command, which you do not have",
        9: "Task 9 does not exist",
    }
    for task_id, message in cases.items():
        with pytest.raises(RetriableError, match=message):
            proxy.claim("@Ann", task_id, tools={"workspace_read"}).get(timeout=WAIT)
    with pytest.raises(RetriableError, match="A lease of 0 seconds is not valid"):
        proxy.claim("@Ann", 1, lease_s=0).get(timeout=WAIT)
    assert proxy.claims().get(timeout=WAIT) == []  # nothing changed


def test_next_task_takes_the_best_ready_one_and_says_why_none_is(board: Any) -> None:
    proxy, _ = board
    make(
        proxy,
        TaskCreate(description="old, normal"),
        TaskCreate(description="urgent", priority=5),
        TaskCreate(description="blocked urgent", priority=9, dependencies=[1]),
        TaskCreate(description="for Bob", priority=7, owner="@Bob"),
        TaskCreate(description="needs the shell", priority=8, requires=["exec_command"]),
    )
    taken = [proxy.next_task("@Ann", tools={"update_planning"}).get(timeout=WAIT).task.id for _ in range(2)]
    assert taken == [2, 1]
    with pytest.raises(RetriableError) as err:
        proxy.next_task("@Ann", tools={"update_planning"}).get(timeout=WAIT)
    message = str(err.value)
    assert message.startswith("No task is ready for you:")
    assert "1 wait on dependencies (e.g. 3 waits on 1)" in message
    assert "1 are assigned to others (e.g. 4 to @Bob)" in message
    assert "1 need tools you lack (e.g. 5 needs exec_command)" in message
    # Completing a dependency makes its dependent ready; Bob gets his own task.
    proxy.update("@Ann", update=[TaskUpdate(id=1, status="completed", output="done")], require_output=True).get()
    assert proxy.next_task("@Ann", tools={"exec_command"}).get(timeout=WAIT).task.id == 3
    assert proxy.next_task("@Bob", tools={"update_planning"}).get(timeout=WAIT).task.id == 4


def test_release_gives_the_task_back_and_only_its_holder_may(board: Any) -> None:
    proxy, events = board
    make(proxy, TaskCreate(description="a"))
    proxy.claim("@Ann", 1).get(timeout=WAIT)
    with pytest.raises(RetriableError, match="You do not hold task 1: it is held by @Ann"):
        proxy.release("@Bob", 1).get(timeout=WAIT)
    task = proxy.release("@Ann", 1, "blocked on credentials").get(timeout=WAIT)
    assert (task.status, task.owner) == ("pending", None)
    assert task.history[-1].endswith("released by @Ann: blocked on credentials")
    assert proxy.claim("@Bob", 1).get(timeout=WAIT).task.owner == "@Bob"
    assert [e.action for e in events if isinstance(e, ClaimChanged)] == ["claimed", "released", "claimed"]


def test_completing_needs_an_output_and_ends_the_claim_and_tells_who_waits(board: Any) -> None:
    proxy, events = board
    make(proxy, TaskCreate(description="base"), TaskCreate(description="next", dependencies=[1], owner="@Bob"))
    proxy.claim("@Ann", 1).get(timeout=WAIT)
    refused = proxy.update("@Ann", update=[TaskUpdate(id=1, status="completed")], require_output=True).get()
    assert "cannot be completed without an output" in refused.errors[0].message
    proxy.update("@Ann", update=[TaskUpdate(id=1, status="done", output="merged")], require_output=True).get()
    assert proxy.claims().get(timeout=WAIT) == []
    ready = [e for e in events if isinstance(e, TaskReady)]
    assert [(e.task_id, e.owner) for e in ready] == [(2, "@Bob")]
    assert "Task 2 is ready: its last dependency, task 1, was completed by @Ann" in ready[0].text


@pytest.mark.parametrize(
    "change",
    [
        {"update": [TaskUpdate(id=1, owner="@Bob")]},
        {"update": [TaskUpdate(id=1, status="pending")]},
        {"update": [TaskUpdate(id=1, status="completed", output="mine now")]},
        {"delete": [1]},
    ],
)
def test_another_member_cannot_take_finish_or_delete_a_held_task(board: Any, change: dict[str, Any]) -> None:
    # Through update_planning Bob could give himself Ann's task, or finish it, while she worked on it.
    proxy, _ = board
    make(proxy, TaskCreate(description="base"), TaskCreate(description="other"))
    proxy.claim("@Ann", 1).get(timeout=WAIT)
    with pytest.raises(RetriableError, match=r"Held by another member: task 1 by @Ann \(lease until"):
        updates = [*change.get("update", []), TaskUpdate(id=2, description="x")]
        proxy.update("@Bob", update=updates, delete=change.get("delete", [])).get()
    assert [(c.task_id, c.member) for c in proxy.claims().get(timeout=WAIT)] == [(1, "@Ann")]
    assert proxy.get_task(2).get(timeout=WAIT).description == "other"  # nothing of the batch applied
    # Describing the task stays open to anyone; the holder still ends it.
    proxy.update("@Bob", update=[TaskUpdate(id=1, description="base, clearer")]).get(timeout=WAIT)
    proxy.update("@Ann", update=[TaskUpdate(id=1, status="completed", output="done")]).get(timeout=WAIT)
    assert proxy.claims().get(timeout=WAIT) == []


def test_a_lease_that_runs_out_puts_the_task_back(board: Any) -> None:
    proxy, events = board
    make(proxy, TaskCreate(description="slow"))
    proxy.claim("@Ann", 1, lease_s=0.5).get(timeout=WAIT)
    deadline = time.monotonic() + WAIT
    while proxy.claims().get(timeout=WAIT) and time.monotonic() < deadline:
        time.sleep(0.05)
    task = proxy.get_task(1).get(timeout=WAIT)
    assert (task.status, task.owner) == ("pending", None)
    assert task.history[-1].endswith("lease of @Ann expired")
    assert ("expired", 1, "@Ann") in [(e.action, e.task_id, e.member) for e in events if isinstance(e, ClaimChanged)]


def test_a_member_s_tool_calls_renew_its_lease() -> None:
    """Through the card: a member working (calling tools) keeps its claim past the lease."""
    # The first token count of a process builds the o200k encoder, holding the GIL for about
    # a lease this short: build it first, as any earlier call of the process would have.
    count_tokens("warm")
    with toolcards.Team("team-1") as team:
        tools = {t.name: t for t in team.member("Ann").factory(PlanningTool(lease_s=0.6)).tools()}
        tools["update_planning"].call_sync({"create_tasks": [{"description": "long job"}]})
        assert tools["claim_task"].call_sync({"task_id": 1}).startswith("You hold task 1 (lease 1 s")
        end = time.monotonic() + 2.5  # four leases long
        while time.monotonic() < end:
            tools["get_planning_task"].call_sync({"task_id": 1})  # activity
            time.sleep(0.1)
        assert "[in_progress]" in tools["get_planning_task"].call_sync({"task_id": 1})
        board = cast(PlanningProxy, team.handle.get_or_spawn(PLANNING_ACTOR_NAME, PlanningActor))
        assert [c.member for c in board.claims().get(timeout=WAIT)] == ["@Ann"]


def test_the_tools_say_what_a_claim_gives(alice: FakeObserver) -> None:
    tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=alice).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "api", "paths": ["src/api/**"]}]})
    text = tools["next_task"].call_sync({})
    assert text.startswith("You hold task 1 (lease 5 min, renewed by your tool calls; release_task gives it back)")
    assert "Paths reserved for you: src/api/**" in text
    assert tools["release_task"].call_sync({"task_id": 1, "reason": "later"}) == "Released task 1; it is pending again."
    with pytest.raises(RetriableError, match="not a glob inside the workspace"):
        tools["update_planning"].call_sync({"create_tasks": [{"description": "x", "paths": ["../etc/*"]}]})


def test_threads_racing_for_one_task_leave_one_winner() -> None:
    store = MemoryStore()
    refs = [PlanningActor.start("t", store) for _ in range(2)]  # two caches of one board
    proxies = [cast(PlanningProxy, ref.proxy()) for ref in refs]
    make(proxies[0], TaskCreate(description="only one"))
    wins: list[str] = []
    refusals: list[str] = []

    def race(name: str, proxy: PlanningProxy) -> None:
        try:
            wins.append(proxy.claim(name, 1).get(timeout=WAIT).task.owner or "")
        except RetriableError as exc:
            refusals.append(str(exc))

    threads = [threading.Thread(target=race, args=(f"@A{i}", proxies[i % 2])) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 1 and len(refusals) == 9
    assert all(f"claimed by {wins[0]}" in refusal for refusal in refusals)
    pykka.ActorRegistry.stop_all()


def test_the_ready_queue_follows_status_dependencies_and_claims() -> None:
    from datetime import UTC, datetime

    from toolcards.planning._models import Task

    now = datetime.now(UTC)

    def task(task_id: int, status: str = "pending", deps: tuple[int, ...] = (), priority: int = 0) -> Task:
        return Task(
            id=task_id,
            status=status,
            description="x",
            creator="@L",
            dependencies=deps,
            priority=priority,
            created_at=now,
            updated_at=now,
        )

    queue, tasks, dependents, claimed = ReadyQueue(), {}, {}, set()

    def put(new: Task) -> None:
        before = tasks.get(new.id)
        if before is not None:
            for dep in before.dependencies:
                dependents.get(dep, set()).discard(new.id)
        tasks[new.id] = new
        for dep in new.dependencies:
            dependents.setdefault(dep, set()).add(new.id)
        queue.put(new, before, tasks, dependents, claimed)

    # The dependent arrives before its dependency, as in a snapshot's key order.
    put(task(10, deps=(2,), priority=3))
    put(task(2))
    assert queue.ids() == [2]
    put(task(2, status="completed"))
    assert queue.ids() == [10]
    claimed.add(10)
    queue.refresh(tasks[10], claimed)
    assert queue.ids() == [] and queue.best(lambda _: True) is None
    claimed.discard(10)
    queue.refresh(tasks[10], claimed)
    put(task(3, priority=5))
    assert queue.best(lambda task_id: task_id != 3) == 10 and queue.ids() == [3, 10]


def test_a_member_leaving_the_team_gives_back_its_tasks() -> None:
    with toolcards.Team("leavers") as team:
        watcher = {t.name: t for t in team.member("Watcher").factory(PlanningTool()).tools()}
        watcher["update_planning"].call_sync({"create_tasks": [{"description": "half done"}]})
        ann_team = toolcards.Team("leavers")
        ann = {t.name: t for t in ann_team.member("Ann").factory(PlanningTool()).tools()}
        ann["claim_task"].call_sync({"task_id": 1})
        ann_team.close()  # Ann leaves: her session of the team ends
        deadline = time.monotonic() + WAIT
        while "[pending]" not in (text := watcher["get_planning_task"].call_sync({"task_id": 1})):
            assert time.monotonic() < deadline, text
            time.sleep(0.05)
        assert "@Ann left the team (left)" in text and "Owner: unassigned" in text


def test_claiming_and_releasing_again_and_again_keeps_next_task_cheap() -> None:
    # A task claimed and released thousands of times must not leave a copy of itself in the
    # queue each time: a member whom the best task does not fit would look at every copy.
    from datetime import UTC, datetime

    from toolcards.planning._models import Task

    now = datetime.now(UTC)
    tasks = {
        task_id: Task(id=task_id, status="pending", description="x", creator="@L", created_at=now, updated_at=now)
        for task_id in range(1, 4)
    }
    queue, claimed = ReadyQueue(), set()
    for task in tasks.values():
        queue.put(task, None, tasks, {}, claimed)
    for _ in range(5_000):
        claimed.add(1)
        queue.refresh(tasks[1], claimed)
        claimed.discard(1)
        queue.refresh(tasks[1], claimed)
    looked_at: list[int] = []
    assert queue.best(lambda task_id: bool(looked_at.append(task_id))) is None  # fits nothing
    assert sorted(looked_at) == [1, 2, 3]  # each ready task looked at once
    assert len(queue._heap) <= 2 * len(queue) + 64
    assert queue.best(lambda task_id: task_id == 3) == 3
