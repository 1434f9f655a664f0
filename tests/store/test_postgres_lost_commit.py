"""A COMMIT whose answer is lost, on a real PostgreSQL server behind a TCP proxy that loses it.

The proxy (``tests/pg_proxy.py``) lets the server commit, then swallows the answer and
hangs up: what a network failure at that moment looks like to the client. The store must
then find out what happened instead of guessing, and the pipeline must say what it knows:
committed (the call succeeds), rolled back (nothing changed, retry), or unknown (check
before retrying) — and a retry with the same idempotency key must never write twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg_proxy import PgProxy
from tests.postgres_server import PostgresServer
from toolcards import Tool, ToolFactory
from toolcards.errors import OutcomeUnknown, StoreError
from toolcards.planning._actor import PLANNING_ACTOR_NAME, PlanningActor, PlanningProxy
from toolcards.planning._tool import PlanningTool
from toolcards.store import Change, MemoryStore
from toolcards.testing import FakeObserver

pytest.importorskip("psycopg", reason="needs the postgres extra: pip install 'toolcards[postgres]'")

from toolcards.store._postgres import PostgresStore


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[PgProxy]:
    opened = PgProxy(postgres_server.port)
    yield opened
    opened.close()


def row(collection: str, key: str, value: object) -> Change:
    return Change(collection=collection, key=key, value=value)


def test_a_commit_whose_answer_is_lost_is_settled_as_committed(proxy: PgProxy, postgres_url: str) -> None:
    store = PostgresStore(proxy.url(postgres_url), settle_timeout=10)
    try:
        proxy.drop_next_commit_answer()
        with store.write("ns", since=0) as txn:
            txn.stage([row("tasks", "1", {"description": "once"})])
        assert proxy.dropped == 1
        assert txn.committed == 1  # the server said it committed: the write succeeded
        direct = PostgresStore(postgres_url)
        assert direct.load("ns").rows == {"tasks": {"1": {"description": "once"}}}
        direct.close()
        # The store goes on working through the proxy.
        with store.write("ns", since=1) as txn:
            txn.stage([row("tasks", "2", {"description": "next"})])
        assert store.version("ns") == 2
    finally:
        store.close()


def test_a_lost_commit_the_server_cannot_be_asked_about_is_unknown(proxy: PgProxy, postgres_url: str) -> None:
    store = PostgresStore(proxy.url(postgres_url), settle_timeout=0.5)
    try:
        proxy.drop_next_commit_answer()
        proxy.refuse_connections = True  # the server is out of reach while the store asks
        with pytest.raises(OutcomeUnknown, match="may or may not be in the store") as err, store.write("ns", 0) as txn:
            txn.stage([row("tasks", "1", {"description": "once"})])
        assert err.value.transient and txn.committed is None
        assert proxy.dropped == 1
    finally:
        proxy.refuse_connections = False
        store.close()
    direct = PostgresStore(postgres_url)
    assert direct.version("ns") == 1  # it had committed
    direct.close()


def test_a_connection_lost_before_commit_is_a_transient_failure(proxy: PgProxy, postgres_url: str) -> None:
    """The server never got the COMMIT: it rolls back, and the store says nothing was written."""
    store = PostgresStore(proxy.url(postgres_url), settle_timeout=10)
    try:
        with pytest.raises(StoreError, match="rolled it back: nothing was written") as err, store.write("ns", 0) as txn:
            txn.stage([row("tasks", "1", {"description": "never"})])
            proxy.close_all_connections()
        assert err.value.transient and not isinstance(err.value, OutcomeUnknown)
    finally:
        store.close()
    direct = PostgresStore(postgres_url)
    assert direct.version("ns") == 0
    direct.close()


# -- through the pipeline ------------------------------------------------------------------------------------


def update_tool(observer: FakeObserver) -> Tool:
    return next(
        tool for tool in ToolFactory([PlanningTool()], observer=observer).tools() if tool.name == "update_planning"
    )


@pytest.fixture
def board_on_proxy(proxy: PgProxy, postgres_url: str, alice: FakeObserver) -> Iterator[PostgresStore]:
    """Alice's team board, kept in PostgreSQL through the proxy (the store asks for 0.5 s at most)."""
    store = PostgresStore(proxy.url(postgres_url), settle_timeout=0.5)
    team = alice.team
    team.get_or_spawn(PLANNING_ACTOR_NAME, PlanningActor, alice.team_id, store, None, team.publish, proxy=PlanningProxy)
    yield store
    store.close()


def test_an_unknown_outcome_is_said_and_a_retry_with_the_same_key_writes_once(
    proxy: PgProxy, postgres_url: str, alice: FakeObserver, board_on_proxy: PostgresStore
) -> None:
    update = update_tool(alice)
    arguments = {"create_tasks": [{"description": "Ship the release"}]}

    proxy.drop_next_commit_answer()
    proxy.refuse_connections = True
    with pytest.raises(OutcomeUnknown) as err:
        update.call_sync(arguments, idempotency_key="call-1")
    message = str(err.value)
    assert message.startswith("update_planning may or may not have been applied")
    assert "search_planning shows whether it was" in message
    assert "nothing was changed" not in message and "operator" not in message

    proxy.refuse_connections = False
    answer = update.call_sync(arguments, idempotency_key="call-1")
    assert answer == "This call was already applied (board change 1); nothing was written again. Created task 1."

    direct = PostgresStore(postgres_url)
    tasks = direct.load(f"{alice.team_id}/{PLANNING_ACTOR_NAME}").rows["tasks"]
    direct.close()
    assert [task["description"] for task in tasks.values()] == ["Ship the release"]

    # A new call (a new key) with the same arguments is a new task: keys, not texts, decide.
    assert update.call_sync(arguments, idempotency_key="call-2") == "Created task 2."


def test_a_settled_commit_answers_the_call_normally(
    proxy: PgProxy, alice: FakeObserver, board_on_proxy: PostgresStore
) -> None:
    update = update_tool(alice)
    proxy.drop_next_commit_answer()
    assert update.call_sync({"create_tasks": [{"description": "once"}]}, idempotency_key="k") == "Created task 1."
    assert proxy.dropped == 1


def test_a_transient_outage_says_so_and_changes_nothing(alice: FakeObserver) -> None:
    class Unreachable(MemoryStore):
        def write(self, namespace: str, since: int | None):  # type: ignore[no-untyped-def]
            raise StoreError("Store x: starting a write failed (connection refused). Check the server.", transient=True)

    team = alice.team
    team.get_or_spawn(
        PLANNING_ACTOR_NAME, PlanningActor, alice.team_id, Unreachable(), None, team.publish, proxy=PlanningProxy
    )
    update = update_tool(alice)
    with pytest.raises(StoreError) as err:
        update.call_sync({"create_tasks": [{"description": "x"}]})
    assert str(err.value) == (
        "update_planning could not reach the team's shared state for the moment (Store x: starting a write failed "
        "(connection refused)), so nothing was changed. The store reconnects by itself: retry in a few seconds; if "
        "it keeps failing, tell the user."
    )
    assert err.value.transient
