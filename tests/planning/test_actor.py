"""PlanningActor: the board's rules, persistence, events, search, restarts, crashes and concurrency."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pykka
import pytest

from tests.planning.conftest import HASHING, RecordingService, SpyStore, StartActor
from toolcards.core._events import StateChanged
from toolcards.errors import RetriableError, StoreError
from toolcards.planning import PlanningProxy, SearchHit, TaskCreate, TaskUpdate
from toolcards.planning._actor import PlanningActor
from toolcards.planning._render import render_search, render_update_report
from toolcards.store import MemoryStore, SQLiteStore
from toolcards.vector import EmbeddingParam, get_embedding_service
from toolcards.vector._text_vectors import TextsEmbedded, TextVector, text_digest

Record = Callable[..., RecordingService]
WAIT = 30  # seconds a test waits for the actor before failing; never a timing assertion


def create(*descriptions: str, **fields: object) -> list[TaskCreate]:
    return [TaskCreate.model_validate({"description": d, **fields}) for d in descriptions]


def indexed(proxy: PlanningProxy) -> None:
    proxy.when_indexed().get(timeout=WAIT).result(WAIT)


def ids(hits: list[SearchHit]) -> list[int]:
    return [hit.task.id for hit in hits]


def parse_ack(line: str) -> tuple[int, int]:
    """``"ack <task id> <seq>"`` → ``(task id, seq)``."""
    _, task_id, seq = line.split()
    return int(task_id), int(seq)


# -- get_task, creating, ids -------------------------------------------------------------


def test_get_task_of_an_unknown_id_says_how_to_find_ids(start: StartActor) -> None:
    proxy = start()
    with pytest.raises(RetriableError) as info:
        proxy.get_task(12).get(timeout=WAIT)
    assert str(info.value) == "Task 12 does not exist. Call search_planning to list task ids, then retry."


def test_created_tasks_get_the_next_free_ids_and_the_calling_agent_as_creator(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("Alice", create=create("one", "two", owner="Bob")).get(timeout=WAIT)
    assert report.created == [1, 2]
    assert not report.errors
    first = proxy.get_task(1).get(timeout=WAIT)
    assert first.creator == "@Alice"
    assert first.owner == "@Bob"
    assert first.status == "pending"
    assert first.created_at == first.updated_at


def test_creating_an_existing_id_is_an_error_not_a_second_row(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=[TaskCreate(id=5, description="original")]).get(timeout=WAIT)
    report = proxy.update("@B", create=[TaskCreate(id=5, description="copy"), *create("other")]).get(timeout=WAIT)
    assert report.created == []
    assert [(e.operation, e.task_id) for e in report.errors] == [("create", 5)]
    assert "Task 5 already exists" in report.errors[0].message
    assert [t.id for t in proxy.tasks().get(timeout=WAIT)] == [5]
    assert proxy.get_task(5).get(timeout=WAIT).description == "original"


def test_ids_are_never_reused_after_a_delete_and_follow_explicit_ids(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=create("a", "b")).get(timeout=WAIT)
    proxy.update("@A", delete=[2]).get(timeout=WAIT)
    assert proxy.update("@A", create=create("c")).get(timeout=WAIT).created == [3]
    proxy.update("@A", create=[TaskCreate(id=10, description="ten")]).get(timeout=WAIT)
    assert proxy.update("@A", create=create("next")).get(timeout=WAIT).created == [11]


@pytest.mark.parametrize("bad_id", [0, -3, 2**53, 10**30])
def test_ids_must_be_positive_and_exact_in_json(start: StartActor, bad_id: int) -> None:
    # Past 2**53 - 1 a JavaScript client reads another number and could not name the task.
    report = start().update("@A", create=[TaskCreate(id=bad_id, description="x")]).get(timeout=WAIT)
    assert not report.created
    assert "ids are from 1 to 9,007,199,254,740,991" in report.errors[0].message


def test_empty_agent_name_is_a_wiring_error(start: StartActor) -> None:
    with pytest.raises(ValueError, match="agent"):
        start().update("  ", create=create("x")).get(timeout=WAIT)


# -- field rules -------------------------------------------------------------------------


def test_description_over_300_chars_is_refused_with_the_limit(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=create("x" * 301, "y" * 300)).get(timeout=WAIT)
    assert report.created == []
    assert report.errors[0].message == "The description is 301 chars; the limit is 300. Shorten it."
    assert proxy.update("@A", create=create("y" * 300)).get(timeout=WAIT).created == [1]
    report = proxy.update("@A", update=[TaskUpdate(id=1, description="z" * 400)]).get(timeout=WAIT)
    assert "400 chars; the limit is 300" in report.errors[0].message
    assert proxy.get_task(1).get(timeout=WAIT).description == "y" * 300


def test_empty_description_is_refused(start: StartActor) -> None:
    report = start().update("@A", create=create("   ")).get(timeout=WAIT)
    assert "empty" in report.errors[0].message


def test_output_over_150_chars_is_cut_without_an_error(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=create("x", output="o" * 500)).get(timeout=WAIT)
    assert not report.errors
    assert proxy.get_task(1).get(timeout=WAIT).output == "o" * 147 + "..."
    report = proxy.update("@A", update=[TaskUpdate(id=1, output="p" * 151)]).get(timeout=WAIT)
    assert not report.errors
    assert proxy.get_task(1).get(timeout=WAIT).output == "p" * 147 + "..."


def test_owner_names_are_normalised_and_an_empty_owner_unassigns(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=create("x", owner="Bob")).get(timeout=WAIT)
    assert proxy.get_task(1).get(timeout=WAIT).owner == "@Bob"
    proxy.update("@A", update=[TaskUpdate(id=1, owner="")]).get(timeout=WAIT)
    assert proxy.get_task(1).get(timeout=WAIT).owner is None
    assert [hit.task.id for hit in proxy.search(owner="").get(timeout=WAIT)] == [1]


def test_update_changes_only_the_given_fields_and_bumps_updated_at(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=create("write docs", owner="@Bob", output="draft")).get(timeout=WAIT)
    before = proxy.get_task(1).get(timeout=WAIT)
    report = proxy.update("@C", update=[TaskUpdate(id=1, status="in_progress")]).get(timeout=WAIT)
    after = proxy.get_task(1).get(timeout=WAIT)
    assert report.updated == [1]
    assert after.status == "in_progress"
    assert (after.description, after.owner, after.output, after.creator) == ("write docs", "@Bob", "draft", "@A")
    assert after.updated_at >= before.updated_at
    assert after.created_at == before.created_at


# -- dependencies ------------------------------------------------------------------------


def test_dependencies_must_exist_on_the_board(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=[*create("a"), *create("b", dependencies=[1, 8, 9])]).get(timeout=WAIT)
    assert report.created == []
    assert report.errors[0].message.startswith("Dependencies 8, 9 do not exist")
    assert proxy.tasks().get(timeout=WAIT) == []


def test_dependencies_may_name_tasks_created_earlier_in_the_batch(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=[*create("a"), *create("b", dependencies=[1])]).get(timeout=WAIT)
    assert report.created == [1, 2]
    assert proxy.get_task(2).get(timeout=WAIT).dependencies == (1,)


def test_a_task_cannot_depend_on_itself(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=[TaskCreate(id=4, description="x", dependencies=[4])]).get(timeout=WAIT)
    assert "cannot depend on itself" in report.errors[0].message
    proxy.update("@A", create=create("y")).get(timeout=WAIT)
    report = proxy.update("@A", update=[TaskUpdate(id=1, dependencies=[1])]).get(timeout=WAIT)
    assert "cannot depend on itself" in report.errors[0].message


def test_a_dependency_cycle_is_refused(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=[*create("a"), *create("b", dependencies=[1]), *create("c", dependencies=[2])]).get(
        timeout=WAIT
    )
    report = proxy.update("@A", update=[TaskUpdate(id=1, dependencies=[3])]).get(timeout=WAIT)
    assert not report.updated
    assert "cycle" in report.errors[0].message
    assert "3" in report.errors[0].message
    assert proxy.get_task(1).get(timeout=WAIT).dependencies == ()
    # A diamond is not a cycle.
    assert not proxy.update("@A", update=[TaskUpdate(id=3, dependencies=[1, 2])]).get(timeout=WAIT).errors


def test_deleting_a_task_removes_it_from_its_dependents(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=[*create("a", "b"), *create("c", dependencies=[1, 2])]).get(timeout=WAIT)
    report = proxy.update("@A", delete=[1]).get(timeout=WAIT)
    assert report.deleted == [1]
    assert report.unlinked == [3]
    assert proxy.get_task(3).get(timeout=WAIT).dependencies == (2,)


# -- batches -----------------------------------------------------------------------------


def test_a_batch_applies_create_then_update_then_delete(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=create("old")).get(timeout=WAIT)
    report = proxy.update(
        "@A",
        create=create("new"),
        update=[TaskUpdate(id=2, status="in_progress"), TaskUpdate(id=1, status="completed")],
        delete=[1],
    ).get(timeout=WAIT)
    assert (report.created, report.updated, report.deleted) == ([2], [2, 1], [1])
    assert [(t.id, t.status) for t in proxy.tasks().get(timeout=WAIT)] == [(2, "in_progress")]


def test_a_batch_with_a_refused_part_applies_nothing_and_reports_every_refusal(start: StartActor) -> None:
    proxy = start()
    proxy.update("@A", create=create("keep", "drop")).get(timeout=WAIT)
    before = proxy.tasks().get(timeout=WAIT)
    seq = proxy.seq().get(timeout=WAIT)
    report = proxy.update(
        "@A",
        create=[*create("fine"), *create("x" * 301), TaskCreate(id=1, description="dup")],
        update=[TaskUpdate(id=1, status="in_progress"), TaskUpdate(id=99, status="in_progress")],
        delete=[2, 42],
    ).get(timeout=WAIT)
    assert (report.created, report.updated, report.deleted, report.seq) == ([], [], [], None)
    assert [(e.operation, e.index, e.task_id) for e in report.errors] == [
        ("create", 1, None),
        ("create", 2, 1),
        ("update", 1, 99),
        ("delete", 1, 42),
    ]
    text = render_update_report(report)
    assert text.startswith("Nothing was applied (a batch is all or nothing). Fix these and send the whole batch again:")
    assert "- update task 99: Task 99 does not exist." in text
    assert "- delete task 42: Task 42 does not exist." in text
    assert proxy.tasks().get(timeout=WAIT) == before
    assert proxy.seq().get(timeout=WAIT) == seq


def test_a_task_created_and_deleted_in_one_batch_is_never_written(start: StartActor) -> None:
    proxy = start()
    report = proxy.update("@A", create=[TaskCreate(id=30, description="gone"), *create("kept")], delete=[30]).get(
        timeout=WAIT
    )
    assert (report.created, report.deleted, report.errors) == ([30, 31], [30], [])
    assert [t.id for t in proxy.tasks().get(timeout=WAIT)] == [31]
    # The next update works on the mirror the batch left (no half-applied memory).
    assert proxy.update("@A", update=[TaskUpdate(id=31, status="completed")]).get(timeout=WAIT).updated == [31]
    assert proxy.update("@A", create=[TaskCreate(id=30, description="again")]).get(timeout=WAIT).created == [30]


def test_an_update_that_changes_nothing_writes_nothing(store: MemoryStore, start: StartActor) -> None:
    spy = SpyStore(store)
    events: list[StateChanged] = []
    proxy = start(on=spy, publish=events.append)
    proxy.update("@A", create=create("x", owner="@B")).get(timeout=WAIT)
    report = proxy.update("@A", update=[TaskUpdate(id=1, owner="B", description="x")]).get(timeout=WAIT)
    assert report.unchanged == [1]
    assert report.seq is None
    assert len(spy.applied) == 1
    assert len(events) == 1


# -- persistence, cost, events -----------------------------------------------------------


def test_an_update_is_in_the_store_when_it_returns(store: MemoryStore, start: StartActor) -> None:
    proxy = start(team_id="t9")
    proxy.update("@A", create=create("persisted")).get(timeout=WAIT)
    rows = store.load("t9/#PlanningTool").rows
    assert rows["tasks"]["1"]["description"] == "persisted"
    assert rows["meta"]["board"] == {"seq": 1, "next_id": 2}


def test_a_write_costs_what_changed_not_the_board_size(store: MemoryStore, start: StartActor) -> None:
    spy = SpyStore(store)
    proxy = start(on=spy)
    proxy.update("@A", create=create(*(f"task {i}" for i in range(300)))).get(timeout=WAIT)
    spy.applied.clear()
    proxy.update("@A", update=[TaskUpdate(id=150, status="in_progress")]).get(timeout=WAIT)
    proxy.update("@A", create=create("one more")).get(timeout=WAIT)
    proxy.update("@A", delete=[7]).get(timeout=WAIT)
    for batch in spy.applied:
        assert sorted(c.collection for c in batch) == ["meta", "tasks"]
    assert [c.key for c in spy.applied[0] if c.collection == "tasks"] == ["150"]
    assert spy.applied[2][0].value is None


def test_store_failure_raises_and_rolls_the_board_back(store: MemoryStore, start: StartActor) -> None:
    spy = SpyStore(store)
    events: list[StateChanged] = []
    proxy = start(on=spy, publish=events.append)
    proxy.update("@A", create=create("a", "b", dependencies=[])).get(timeout=WAIT)
    proxy.update("@A", update=[TaskUpdate(id=2, dependencies=[1])]).get(timeout=WAIT)
    before = proxy.tasks().get(timeout=WAIT)
    spy.fail_next = True
    with pytest.raises(StoreError):
        proxy.update("@A", create=create("c"), update=[TaskUpdate(id=1, status="completed")], delete=[1]).get(
            timeout=WAIT
        )
    assert proxy.tasks().get(timeout=WAIT) == before
    assert proxy.seq().get(timeout=WAIT) == 2
    assert len(events) == 2
    # The board still works, and ids were not consumed by the failed batch.
    assert proxy.update("@A", create=create("c")).get(timeout=WAIT).created == [3]


def test_state_changed_is_published_for_every_change_with_a_persisted_seq(start: StartActor) -> None:
    events: list[StateChanged] = []
    proxy = start(team_id="team-7", publish=events.append)
    proxy.update("@A", create=create("a", "b")).get(timeout=WAIT)
    proxy.update("@A", update=[TaskUpdate(id=9, status="in_progress")]).get(timeout=WAIT)  # only a failure
    report = proxy.update("@A", update=[TaskUpdate(id=1, status="in_progress")], delete=[2]).get(timeout=WAIT)
    assert report.seq == 2
    assert [(e.team_id, e.source, e.seq) for e in events] == [
        ("team-7", "#PlanningTool", 1),
        ("team-7", "#PlanningTool", 2),
    ]
    assert events[0].summary == "created tasks 1, 2"
    assert events[1].summary == "updated task 1; deleted task 2"


def test_a_failing_subscriber_does_not_fail_the_update(start: StartActor) -> None:
    def explode(event: StateChanged) -> None:
        raise RuntimeError("subscriber bug")

    proxy = start(publish=explode)
    report = proxy.update("@A", create=create("x")).get(timeout=WAIT)
    assert report.created == [1]
    assert proxy.get_task(1).get(timeout=WAIT).description == "x"


def test_render_and_tasks_read_the_board(start: StartActor) -> None:
    proxy = start()
    assert "no tasks yet" in proxy.render("@A").get(timeout=WAIT)
    proxy.update("@Alice", create=create("Implement auth module", owner="@Alice")).get(timeout=WAIT)
    proxy.update("@Bob", create=create("Unrelated", owner="@Bob")).get(timeout=WAIT)
    mine = proxy.render("Alice").get(timeout=WAIT)
    assert "- #1 [pending] Implement auth module\n" in mine
    assert "ID 2" not in mine
    assert "- #2 " in proxy.render("@Alice", filter_by_agent=False).get(timeout=WAIT)
    assert [t.id for t in proxy.tasks().get(timeout=WAIT)] == [1, 2]


# -- search ------------------------------------------------------------------------------


def seed(proxy: PlanningProxy) -> None:
    proxy.update(
        "@Alice",
        create=[
            TaskCreate(description="Implement auth module", owner="@Alice", status="in_progress"),
            TaskCreate(description="Fix flaky database migration test", owner="@Bob"),
            TaskCreate(description="Write the login page for users"),
            TaskCreate(description="Review PR #42", owner="@Bob", output="approved", status="completed"),
        ],
    ).get(timeout=WAIT)
    proxy.update("@Carol", create=[TaskCreate(description="Plan the auth rollout", owner="@Carol")]).get(timeout=WAIT)


def test_search_filters_by_status_owner_and_creator(start: StartActor) -> None:
    proxy = start()
    seed(proxy)
    assert ids(proxy.search(status="completed").get(timeout=WAIT)) == [4]
    assert ids(proxy.search(owner="Bob").get(timeout=WAIT)) == [2, 4]
    assert ids(proxy.search(creator="@Carol").get(timeout=WAIT)) == [5]
    assert ids(proxy.search(owner="@Bob", status="pending").get(timeout=WAIT)) == [2]
    assert ids(proxy.search(owner="").get(timeout=WAIT)) == [3]
    assert {hit.match for hit in proxy.search().get(timeout=WAIT)} == {"filter"}
    assert len(proxy.search().get(timeout=WAIT)) == 5


def test_a_search_page_keeps_the_best_hits_and_counts_all_of_them(start: StartActor) -> None:
    proxy = start()
    words = ["auth", "login", "cache"]
    proxy.update(
        "@Alice",
        create=[TaskCreate(description=f"{words[i % 3]} step {i} of the rollout") for i in range(120)],
    ).get(timeout=WAIT)
    everything = proxy.search("rollout").get(timeout=WAIT)
    page = proxy.search_page("rollout", limit=7).get(timeout=WAIT)
    assert (page.total, len(everything)) == (120, 120)
    assert page.hits == everything[:7]
    assert [hit.task.id for hit in page.hits] == list(range(1, 8))  # equal scores: by id
    # Two words: tasks with both rank before tasks with one, each group by id.
    ranked = proxy.search_page("auth rollout", limit=5).get(timeout=WAIT)
    assert ranked.total == 120
    assert [hit.task.id for hit in ranked.hits] == [1, 4, 7, 10, 13]
    # Three words, at least two of them needed; a filter narrows before ranking.
    three = proxy.search_page("cache step unrelated", limit=3, status="pending").get(timeout=WAIT)
    assert (three.total, [hit.task.id for hit in three.hits]) == (40, [3, 6, 9])
    assert proxy.search_page("rollout", limit=3, owner="@Nobody").get(timeout=WAIT).total == 0
    # No words, only punctuation: the phrase itself must occur.
    assert proxy.search_page("!!!", limit=3).get(timeout=WAIT).total == 0
    assert render_search(page).endswith("... 113 more not shown; narrow the query or filters.")


def test_a_page_is_the_best_of_the_whole_search_for_every_kind_of_query(start: StartActor) -> None:
    proxy = start(embedding=HASHING)
    seed(proxy)
    proxy.update("@Alice", create=[TaskCreate(description=f"auth step {i} of the rollout") for i in range(60)]).get(
        timeout=WAIT
    )
    indexed(proxy)
    queries: list[dict[str, Any]] = [
        {"query": "rollout"},
        {"query": "auth module"},  # keyword and meaning: "both" hits
        {"query": "fix flaky databases migrations tests"},  # meaning only
        {"query": "rollout", "status": "pending", "owner": ""},
        {"query": None, "owner": "@Bob"},  # filters only
        {"query": "kubernetes"},  # nothing
        {"query": "!!!"},
    ]
    for arguments in queries:
        everything = proxy.search(**arguments).get(timeout=WAIT)
        for limit in (3, 50):
            page = proxy.search_page(**arguments, limit=limit).get(timeout=WAIT)
            assert page.total == len(everything), arguments
            assert [(hit.task.id, hit.match) for hit in page.hits] == [
                (hit.task.id, hit.match) for hit in everything[:limit]
            ], arguments


def test_keyword_search_without_an_embedding(start: StartActor) -> None:
    proxy = start()
    seed(proxy)
    hits = proxy.search("AUTH").get(timeout=WAIT)
    assert [(hit.task.id, hit.match) for hit in hits] == [(1, "keyword"), (5, "keyword")]
    assert [hit.task.id for hit in proxy.search("auth", owner="@Carol").get(timeout=WAIT)] == [5]
    assert [hit.task.id for hit in proxy.search("approved").get(timeout=WAIT)] == [4]  # output is searched
    assert [hit.task.id for hit in proxy.search("database migration").get(timeout=WAIT)] == [2]
    assert proxy.search("kubernetes").get(timeout=WAIT) == []


def test_semantic_search_with_the_hashing_embedder(start: StartActor) -> None:
    proxy = start(embedding=HASHING)
    seed(proxy)
    indexed(proxy)
    # Only 2 of the 5 query words occur in task 2 (no keyword match); the embedding is close.
    hits = proxy.search("fix flaky databases migrations tests").get(timeout=WAIT)
    assert hits[0].task.id == 2
    assert hits[0].match == "semantic"
    assert hits[0].similarity is not None and hits[0].similarity >= 0.5
    both = proxy.search("auth module").get(timeout=WAIT)
    assert (both[0].task.id, both[0].match) == (1, "both")
    assert all(hit.match in {"keyword", "both"} for hit in proxy.search("Review PR").get(timeout=WAIT)[:1])
    # Filters apply to semantic hits too.
    assert proxy.search("fix flaky databases migrations tests", owner="@Alice").get(timeout=WAIT) == []


def test_semantic_index_follows_description_changes_and_deletes(start: StartActor) -> None:
    proxy = start(embedding=HASHING)
    seed(proxy)
    indexed(proxy)
    proxy.update("@A", update=[TaskUpdate(id=2, description="Paint the office walls")]).get(timeout=WAIT)
    indexed(proxy)
    assert all(hit.task.id != 2 for hit in proxy.search("fix flaky databases migrations tests").get(timeout=WAIT))
    assert proxy.search("painting office wall").get(timeout=WAIT)[0].task.id == 2
    proxy.update("@A", delete=[2]).get(timeout=WAIT)
    assert proxy.search("painting office wall").get(timeout=WAIT) == []


def test_a_slow_embedder_never_holds_up_an_update_and_keyword_search_sees_it(
    start: StartActor, record_embeddings: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("toolcards.planning._actor.QUERY_EMBEDDING_TIMEOUT_S", 0.05)
    recorder = record_embeddings(HASHING, gated=True)  # every embed call blocks until released
    proxy = start(embedding=HASHING)
    report = proxy.update("@A", create=create("Implement auth module")).get(timeout=WAIT)
    assert report.created == [1]
    assert recorder.entered.wait(WAIT)  # the embedding is under way, and stuck
    assert proxy.update("@A", create=create("Second task")).get(timeout=WAIT).created == [2]
    hits = proxy.search("auth").get(timeout=WAIT)  # the query embedding times out: keyword only
    assert [(hit.task.id, hit.match) for hit in hits] == [(1, "keyword")]
    recorder.gate.set()
    indexed(proxy)
    assert proxy.search("auth module").get(timeout=WAIT)[0].match == "both"
    # Both descriptions were embedded, the second one batched after the first call.
    assert "Implement auth module" in recorder.texts
    assert "Second task" in recorder.texts


def test_unavailable_provider_degrades_to_keyword_search(
    start: StartActor, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("PLANNING_TEST_NO_KEY", raising=False)
    param = EmbeddingParam(provider="openai", api_key_env="PLANNING_TEST_NO_KEY", base_url="http://127.0.0.1:9")
    proxy = start(embedding=param)
    seed(proxy)
    indexed(proxy)  # resolves even though nothing could be embedded
    hits = proxy.search("auth").get(timeout=WAIT)
    assert [(hit.task.id, hit.match) for hit in hits] == [(1, "keyword"), (5, "keyword")]
    assert proxy.update("@A", update=[TaskUpdate(id=1, status="completed")]).get(timeout=WAIT).updated == [1]
    assert not get_embedding_service(param).available


def test_vectors_arriving_after_the_store_closed_are_a_shutdown_not_an_error(
    db_path: Path, start: StartActor, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(db_path)
    proxy = start(on=store, embedding=HASHING)
    seed(proxy)
    indexed(proxy)
    vector = TextVector(key="1", digest=text_digest("Implement auth module"), vector=np.zeros(384, np.float32))
    message = TextsEmbedded(model_id="hashing:384", keys=("1",), vectors=(vector,))
    actor = proxy.actor_ref

    store.close()
    with caplog.at_level(logging.DEBUG, logger="toolcards.vector"):
        actor.ask(message, timeout=WAIT)
    assert [r.levelno for r in caplog.records if "vectors" in r.getMessage()] == [logging.DEBUG]

    # A store that fails while open is still reported as an error.
    caplog.clear()
    reopened = SQLiteStore(db_path)
    failing = start(team_id="team-2", on=reopened, embedding=HASHING)
    seed(failing)
    indexed(failing)

    def broken_write(namespace: str, since: int | None) -> Any:
        raise StoreError("disk I/O error")

    reopened.write = broken_write  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="toolcards.vector"):
        failing.actor_ref.ask(message, timeout=WAIT)
    (error,) = [r for r in caplog.records if "vectors" in r.getMessage()]
    assert error.levelno == logging.ERROR and error.exc_info is None  # one line; the traceback at DEBUG
    assert "StoreError: disk I/O error" in error.getMessage() and "team-2/#PlanningTool" in error.getMessage()
    reopened.close()


def _embedding_threads(namespace: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(namespace) and t.is_alive()]


def test_a_crashed_board_leaves_no_embedding_thread_behind(start: StartActor) -> None:
    proxy = start(embedding=HASHING)
    seed(proxy)
    indexed(proxy)
    proxy.search("auth").get(timeout=WAIT)  # the query thread too
    assert _embedding_threads("team-1/#PlanningTool")
    actor = proxy.actor_ref
    proxy.get_task.defer(404)  # a told message that raises: the actor dies of it
    assert actor.actor_stopped.wait(WAIT)
    for thread in _embedding_threads("team-1/#PlanningTool"):
        thread.join(WAIT)
    assert _embedding_threads("team-1/#PlanningTool") == []


def test_a_message_the_board_does_not_know_is_logged_not_swallowed(
    start: StartActor, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = start(embedding=HASHING)
    with caplog.at_level(logging.WARNING, logger="pykka"):
        assert proxy.actor_ref.ask({"unknown": 1}, timeout=WAIT) is None
    assert any("Unexpected message" in r.getMessage() and "unknown" in r.getMessage() for r in caplog.records)


def test_local_model_finds_a_paraphrase(start: StartActor) -> None:
    param = EmbeddingParam(provider="local")
    service = get_embedding_service(param)
    if service.embed(["probe"]) is None:
        pytest.skip(f"local embedding model unavailable: {service.failure}")
    proxy = start(embedding=param)
    seed(proxy)
    indexed(proxy)
    hits = proxy.search("sign-in screen").get(timeout=WAIT)
    assert hits
    assert (hits[0].task.id, hits[0].match) == (3, "semantic")


# -- restart, crash, concurrency ---------------------------------------------------------


def test_restart_restores_the_board_vectors_and_seq(
    db_path: Path, start: StartActor, record_embeddings: Record
) -> None:
    first_store = SQLiteStore(db_path)
    first = start(on=first_store, embedding=HASHING)
    seed(first)
    first.update("@A", update=[TaskUpdate(id=2, dependencies=[1], output="half")], delete=[4]).get(timeout=WAIT)
    indexed(first)
    board, seq = first.tasks().get(timeout=WAIT), first.seq().get(timeout=WAIT)
    semantic = first.search("fix flaky databases migrations tests").get(timeout=WAIT)
    pykka.ActorRegistry.stop_all()
    first_store.close()

    recorder = record_embeddings(HASHING)
    second_store = SQLiteStore(db_path)
    second = start(on=second_store, embedding=HASHING)
    assert second.tasks().get(timeout=WAIT) == board
    indexed(second)
    assert recorder.texts == []  # vectors came from the store, none was re-embedded
    assert second.search("fix flaky databases migrations tests").get(timeout=WAIT) == semantic
    assert second.seq().get(timeout=WAIT) == seq
    report = second.update("@A", create=create("after restart")).get(timeout=WAIT)
    assert report.seq == seq + 1
    assert report.created == [6]  # deleted id 4 and existing ids are not reused
    second_store.close()


def test_restart_with_another_model_re_embeds(db_path: Path, start: StartActor, record_embeddings: Record) -> None:
    first_store = SQLiteStore(db_path)
    first = start(on=first_store, embedding=HASHING)
    seed(first)
    indexed(first)
    pykka.ActorRegistry.stop_all()
    first_store.close()

    smaller = EmbeddingParam(provider="hashing", dimensions=128)
    recorder = record_embeddings(smaller)
    second_store = SQLiteStore(db_path)
    second = start(on=second_store, embedding=smaller)
    indexed(second)
    assert sorted(recorder.texts) == sorted(t.description for t in second.tasks().get(timeout=WAIT))
    assert second.search("auth module").get(timeout=WAIT)[0].match == "both"
    rows = second_store.load("team-1/#PlanningTool").rows["vectors"]
    assert {row["model"] for row in rows.values()} == {"hashing:128"}
    second_store.close()


KILL_CHILD = textwrap.dedent(
    """
    import sys
    from toolcards.planning import TaskCreate, TaskUpdate
    from toolcards.planning._actor import PlanningActor
    from toolcards.store import SQLiteStore

    proxy = PlanningActor.start("team-kill", SQLiteStore(sys.argv[1])).proxy()
    for i in range(1, 1_000_000):
        update = [TaskUpdate(id=i - 1, status="completed", output=f"done {i - 1}")] if i > 1 else []
        report = proxy.update("@Worker", create=[TaskCreate(description=f"step {i}")], update=update).get()
        assert report.created == [i] and not report.errors, report
        print(f"ack {i} {report.seq}", flush=True)
    """
)


@pytest.mark.slow
def test_every_acknowledged_update_survives_a_sigkill(db_path: Path, tmp_path: Path, start: StartActor) -> None:
    script = tmp_path / "child.py"
    script.write_text(KILL_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    acks: list[tuple[int, int]] = []
    assert child.stdout is not None
    try:
        for line in child.stdout:
            acks.append(parse_ack(line))
            if len(acks) == 200:
                os.kill(child.pid, signal.SIGKILL)
                break
        # Lines already printed before the kill are acknowledgements too.
        acks.extend(parse_ack(line) for line in child.stdout if line.startswith("ack "))
    finally:
        child.kill()
        _, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err
    assert len(acks) >= 200

    reopened = SQLiteStore(db_path)
    proxy = start(team_id="team-kill", on=reopened)
    tasks = {task.id: task for task in proxy.tasks().get(timeout=WAIT)}
    last, last_seq = acks[-1]
    for i, _ in acks:
        assert tasks[i].description == f"step {i}"
        if i < last:
            assert (tasks[i].status, tasks[i].output) == ("completed", f"done {i}")
    assert proxy.seq().get(timeout=WAIT) >= last_seq
    # The board keeps going where the acknowledged state left it.
    report = proxy.update("@A", create=create("after the crash")).get(timeout=WAIT)
    assert report.created == [max(tasks) + 1]
    assert report.seq == proxy.seq().get(timeout=WAIT) and report.seq > last_seq
    reopened.close()


def test_twenty_agents_updating_at_once_lose_nothing(db_path: Path, start: StartActor) -> None:
    sqlite = SQLiteStore(db_path)
    events: list[StateChanged] = []
    proxy = start(on=sqlite, publish=events.append)
    proxy.update("@Setup", create=create("shared counter task")).get(timeout=WAIT)
    created: dict[str, list[int]] = {}
    failures: list[BaseException] = []
    barrier = threading.Barrier(20)

    def agent(name: str) -> None:
        try:
            mine: list[int] = []
            barrier.wait()
            for j in range(50):
                update = [TaskUpdate(id=mine[-1], status="completed")] if mine else []
                report = proxy.update(
                    name,
                    create=[TaskCreate(description=f"{name} step {j}", owner=name)],
                    update=[*update, TaskUpdate(id=1, output=f"{name} {j}")],
                ).get(timeout=WAIT)
                assert not report.errors, render_update_report(report)
                mine.extend(report.created)
            created[name] = mine
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=agent, args=(f"@Agent{n}",)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 4)
    assert not failures, failures
    all_ids = [task_id for ids in created.values() for task_id in ids]
    assert len(all_ids) == len(set(all_ids)) == 1000
    assert sorted(all_ids) == list(range(2, 1002))
    assert [e.seq for e in events] == list(range(1, 1002))

    pykka.ActorRegistry.stop_all()
    restarted = start(on=sqlite)  # what was acknowledged is what was persisted
    tasks = {task.id: task for task in restarted.tasks().get(timeout=WAIT)}
    assert len(tasks) == 1001
    for name, ids in created.items():
        assert all(tasks[i].creator == name and tasks[i].owner == name for i in ids)
        assert all(tasks[i].status == "completed" for i in ids[:-1])
        assert tasks[ids[-1]].status == "pending"
    assert restarted.seq().get(timeout=WAIT) == 1001
    sqlite.close()


def test_typed_proxy_matches_the_actor_methods() -> None:
    public = {
        name
        for name in vars(PlanningActor)
        if not name.startswith("_") and callable(getattr(PlanningActor, name)) and not name.startswith("on_")
    }
    assert public <= set(vars(PlanningProxy))
    proxy = cast(PlanningProxy, PlanningActor.start("t", MemoryStore()).proxy())
    assert proxy.seq().get(timeout=WAIT) == 0


def test_without_an_embedding_no_embedding_machinery_is_loaded() -> None:
    code = textwrap.dedent(
        """
        import sys
        from toolcards.planning import TaskCreate
        from toolcards.planning._actor import PlanningActor
        from toolcards.store import MemoryStore

        proxy = PlanningActor.start("t", MemoryStore()).proxy()
        proxy.update("@A", create=[TaskCreate(description="x")]).get()
        proxy.search("x").get()
        proxy.render("@A").get()
        proxy.stop()
        # The card imports the vector package's (light) config types; numpy and the providers must not load.
        heavy = ("numpy", "openai", "onnxruntime", "tokenizers")
        print(*sorted(m for m in sys.modules if m.startswith(heavy)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=WAIT)
    assert out.stdout.split() == []
