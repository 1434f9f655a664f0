"""Provenance and time: who recorded each fact, supersede / invalidate, ``as_of`` searches,
disagreements, merging duplicates, and the refusals that leave the graph as it was."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pykka
import pytest

from tests.knowledge_graph.conftest import StartGraph
from toolcards import RetriableError, ToolFactory
from toolcards.knowledge_graph import (
    EntityCreate,
    EntityUpdate,
    KnowledgeGraphProxy,
    KnowledgeGraphTool,
    RelationCreate,
)
from toolcards.knowledge_graph._actor import KnowledgeGraphActor
from toolcards.knowledge_graph._render import render_search_result
from toolcards.knowledge_graph._tool import MergeEntitiesParam, parse_as_of
from toolcards.planning import PlanningTool
from toolcards.store import MemoryStore, SQLiteStore, Store
from toolcards.testing import FakeObserver

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand: each change is recorded at the time it shows."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: int = 60) -> datetime:
        self.now += timedelta(minutes=minutes)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kg(start_graph: StartGraph, clock: Clock) -> KnowledgeGraphProxy:
    return start_graph(clock=clock)


def ent(name: str, *observations: str, entity_type: str = "service") -> EntityCreate:
    return EntityCreate(name=name, entity_type=entity_type, observations=list(observations))


def entity_of(kg: KnowledgeGraphProxy, name: str) -> Any:
    return next(e for e in kg.entities().get() if e.name == name)


def seed(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    """api (by @Ann, task 3, at T0) uses db; at T0+1h @Bob supersedes its port."""
    kg.update(
        "@Ann",
        create_entities=[ent("api", "listens on 8080"), ent("db", "PostgreSQL 15", entity_type="database")],
        create_relations=[RelationCreate(from_entity="api", to_entity="db", relation_type="uses")],
        task_id=3,
    ).get()
    clock.advance()
    report = kg.update(
        "@Bob", update_entities=[EntityUpdate(name="api", supersede={"listens on 8080": "listens on 9090"})]
    ).get()
    assert report.errors == [] and report.invalidated == ["api: listens on 8080"]


# -- provenance and supersession ----------------------------------------------------------


def test_every_fact_carries_who_which_task_and_when(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)
    api = entity_of(kg, "api")
    assert (api.created_by, api.task_id, api.created_at) == ("@Ann", 3, T0)
    old, new = api.observations
    assert (old.text, old.created_by, old.task_id, old.created_at) == ("listens on 8080", "@Ann", 3, T0)
    assert (old.invalid_at, old.invalidated_by, old.reason, old.superseded_by) == (
        T0 + timedelta(hours=1),
        "@Bob",
        "superseded",
        new.id,
    )
    assert (new.text, new.created_by, new.task_id, new.current) == ("listens on 9090", "@Bob", None, True)
    (relation,) = kg.graph().get().relations
    assert (relation.created_by, relation.task_id, relation.created_at) == ("@Ann", 3, T0)
    assert [o.text for o in api.current_observations()] == ["listens on 9090"]


def test_invalidate_observations_relations_and_entities_with_reasons(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)
    clock.advance()
    report = kg.update(
        "@Cy",
        update_entities=[
            EntityUpdate(name="api", invalidate={"listens on 9090": "moved behind the proxy", "-[uses]-> db": "cut"}),
            EntityUpdate(name="db", invalidate={"db": "decommissioned"}),
        ],
    ).get()
    assert report.errors == []
    assert report.invalidated == ["api: listens on 9090", "api -[uses]-> db", "db"]
    api, db = entity_of(kg, "api"), entity_of(kg, "db")
    assert api.current_observations() == [] and len(api.observations) == 2
    assert (api.observations[1].reason, api.observations[1].invalidated_by) == ("moved behind the proxy", "@Cy")
    assert (db.invalid_at, db.reason) == (clock.now, "decommissioned")
    (relation,) = kg.graph().get().relations
    assert (relation.current, relation.reason) == (False, "cut")
    # The summary counts what holds now.
    assert "1 entities, 0 relations" in kg.summary().get()


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (EntityUpdate(name="api", supersede={"listens on 7070": "x"}), "has no such observation"),
        (EntityUpdate(name="api", supersede={"listens on 8080": "x"}), "already no longer holds (by @Bob"),
        (EntityUpdate(name="api", supersede={"listens on 9090": "listens on 9090"}), "same text"),
        (EntityUpdate(name="api", invalidate={"nothing like it": "r"}), "has no such observation"),
        (EntityUpdate(name="api", invalidate={"-[calls]-> db": "r"}), "outgoing relation types: uses"),
        (EntityUpdate(name="ghost", invalidate={"ghost": "r"}), "does not exist"),
    ],
)
def test_bad_supersede_or_invalidate_changes_nothing(
    kg: KnowledgeGraphProxy, clock: Clock, update: EntityUpdate, expected: str
) -> None:
    seed(kg, clock)
    before, seq = kg.graph().get(), kg.seq().get()
    report = kg.update("@Ann", update_entities=[update, EntityUpdate(name="db", add_observations=["fine"])]).get()
    assert any(expected in error for error in report.errors), report.errors
    assert (kg.graph().get(), kg.seq().get()) == (before, seq)


def test_an_entity_invalidated_twice_is_refused(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)
    kg.update("@Ann", update_entities=[EntityUpdate(name="db", invalidate={"db": "gone"})]).get()
    report = kg.update("@Bob", update_entities=[EntityUpdate(name="db", invalidate={"db": "gone"})]).get()
    assert "already no longer holds" in report.errors[0]


def test_an_entity_that_no_longer_holds_refuses_changes_in_words(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    # They used to be "applied" and then shown nowhere.
    seed(kg, clock)
    kg.update("@Ann", update_entities=[EntityUpdate(name="db", invalidate={"db": "gone"})]).get()
    refused = [
        kg.update("@Bob", update_entities=[EntityUpdate(name="db", add_observations=["still here"])]).get(),
        kg.update(
            "@Bob", create_relations=[RelationCreate(from_entity="api", to_entity="db", relation_type="uses")]
        ).get(),
        kg.update("@Bob", create_entities=[ent("db")]).get(),
    ]
    assert "Entity 'db' no longer holds (by @Ann" in refused[0].errors[0]
    assert "entity 'db' no longer holds (by @Ann" in refused[1].errors[0]
    assert (
        "exists but no longer holds (by @Ann" in refused[2].errors[0] and "Choose another name" in refused[2].errors[0]
    )
    assert not any(report.updated_entities or report.created_relations for report in refused)


# -- search through time ------------------------------------------------------------------


def test_search_as_of_answers_as_the_graph_stood(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)
    now = kg.search("listens", "keyword").get()
    assert [h.entity.name for h in now.hits] == ["api"]
    assert "listens on 9090" in render_search_result(now) and "8080" not in render_search_result(now)

    before = kg.search("8080", "keyword", as_of=T0 + timedelta(minutes=30)).get()
    assert [h.entity.name for h in before.hits] == ["api"]
    text = render_search_result(before)
    assert "listens on 8080" in text and "9090" not in text and "as of 2026-03-01 09:30 UTC" in text

    # Before anything was recorded, nothing is found; the old port is not found now.
    assert kg.search("api", "keyword", as_of=T0 - timedelta(minutes=1)).get().hits == []
    assert kg.search("8080", "keyword").get().hits == []


def test_include_invalid_shows_what_no_longer_holds_marked(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)
    kg.update("@Cy", update_entities=[EntityUpdate(name="api", invalidate={"-[uses]-> db": "cut"})]).get()
    result = kg.search("8080", "keyword", include_invalid=True, include_edges=True).get()
    text = render_search_result(result)
    assert "- listens on 8080 (no longer holds since 2026-03-01 10:00, @Bob: superseded)" in text
    assert "- listens on 9090" in text
    assert "api -[uses]-> db (no longer holds since" in text and ": cut" in text
    assert kg.search("api", "keyword", include_edges=True).get().edges == []


def test_as_of_must_be_aware(kg: KnowledgeGraphProxy) -> None:
    with pytest.raises(ValueError, match="aware"):
        kg.search("x", as_of=datetime(2026, 1, 1)).get()


def test_parse_as_of_refuses_the_future_and_the_unreadable() -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert parse_as_of("2026-03-01", now) == datetime(2026, 3, 1, tzinfo=UTC)
    assert parse_as_of("2026-03-01T11:00:00+01:00", now) == datetime(2026, 3, 1, 10, tzinfo=UTC)
    with pytest.raises(RetriableError, match="in the future"):
        parse_as_of("2026-03-02", now)
    with pytest.raises(RetriableError, match="not a date"):
        parse_as_of("yesterday", now)
    assert parse_as_of("0001-01-01T05:00:00+05:00", now) == datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("as_of", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"])
def test_an_as_of_outside_the_calendar_in_utc_is_refused_in_words(alice: FakeObserver, as_of: str) -> None:
    tools = {t.name: t for t in ToolFactory([KnowledgeGraphTool()], observer=alice).tools()}
    tools["update_graph"].call_sync({"create_entities": [{"name": "api", "entity_type": "service"}]})
    with pytest.raises(RetriableError, match=r"falls outside the years 1 to 9999 in UTC: give a date in between"):
        tools["search_graph"].call_sync({"query": "api", "as_of": as_of})
    # The first moment there is reads the graph as it stood then: empty.
    assert tools["search_graph"].call_sync({"query": "api", "as_of": "0001-01-01T00:00:00Z"}) == (
        "No entities match 'api'."
    )


def test_two_members_who_disagree_are_both_shown(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    seed(kg, clock)  # @Bob replaced @Ann's "listens on 8080"
    clock.advance()
    kg.update("@Ann", update_entities=[EntityUpdate(name="api", add_observations=["listens on 8080"])]).get()
    text = render_search_result(kg.search("api", "keyword").get())
    assert "- listens on 9090 (@Bob; disputed by @Ann: 'listens on 8080')" in text
    assert "- listens on 8080 (@Ann; disputed by @Bob: 'listens on 9090')" in text


def test_taking_back_ones_own_fact_is_no_disagreement(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    kg.update("@Ann", create_entities=[ent("api", "listens on 8080")]).get()
    kg.update("@Ann", update_entities=[EntityUpdate(name="api", invalidate={"listens on 8080": "typo"})]).get()
    kg.update("@Ann", update_entities=[EntityUpdate(name="api", add_observations=["listens on 8080"])]).get()
    assert "disputed" not in render_search_result(kg.search("api", "keyword").get())


# -- merging duplicates --------------------------------------------------------------------


def duplicates(kg: KnowledgeGraphProxy) -> None:
    kg.update(
        "@Ann",
        create_entities=[
            ent("auth-service", "issues tokens"),
            ent("AuthSvc", "issues tokens", "written in Go"),
            ent("auth", "rate limited"),
            ent("gateway"),
        ],
        create_relations=[
            RelationCreate(from_entity="gateway", to_entity="AuthSvc", relation_type="calls"),
            RelationCreate(from_entity="gateway", to_entity="auth-service", relation_type="calls"),
            RelationCreate(from_entity="AuthSvc", to_entity="auth", relation_type="wraps"),
        ],
    ).get()


def test_creating_a_near_duplicate_suggests_it_without_merging(kg: KnowledgeGraphProxy) -> None:
    duplicates(kg)
    report = kg.update("@Bob", create_entities=[ent("Auth Service"), ent("Alice Smyth"), ent("task 2")]).get()
    assert ("Auth Service", "auth-service") in report.similar_names
    assert not any(new == "task 2" for new, _ in report.similar_names)
    assert {"Auth Service", "auth-service"} <= {e.name for e in kg.entities().get()}


def test_merge_dry_run_lists_what_would_move_and_changes_nothing(kg: KnowledgeGraphProxy) -> None:
    duplicates(kg)
    before, seq = kg.graph().get(), kg.seq().get()
    report = kg.merge("@Bob", "auth-service", ["AuthSvc", "auth"], dry_run=True).get()
    assert report.dry_run and report.errors == []
    assert (report.moved_observations, report.folded_observations) == (2, 1)
    assert report.aliases == ["AuthSvc", "auth"]
    assert len(report.dropped_relations) == 2  # gateway calls both; AuthSvc wraps auth
    assert (kg.graph().get(), kg.seq().get()) == (before, seq)


def test_merge_moves_everything_and_keeps_names_as_searchable_aliases(kg: KnowledgeGraphProxy) -> None:
    duplicates(kg)
    report = kg.merge("@Bob", "auth-service", ["AuthSvc", "auth"]).get()
    assert report.errors == [] and report.seq is not None
    graph = kg.graph().get()
    assert sorted(e.name for e in graph.entities) == ["auth-service", "gateway"]
    merged = entity_of(kg, "auth-service")
    assert merged.aliases == ["AuthSvc", "auth"]
    assert [o.text for o in merged.current_observations()] == ["issues tokens", "written in Go", "rate limited"]
    assert [r.key for r in graph.relations] == [("gateway", "auth-service", "calls")]
    # An alias finds the entity, and naming it in an update means the entity.
    assert kg.search("AuthSvc", "keyword").get().hits[0].entity.name == "auth-service"
    assert "aka AuthSvc, auth" in render_search_result(kg.search("authsvc", "keyword").get())
    kg.update("@Ann", update_entities=[EntityUpdate(name="auth", add_observations=["on port 1"])]).get()
    assert "on port 1" in [o.text for o in entity_of(kg, "auth-service").observations]
    refused = kg.update("@Ann", create_entities=[ent("AuthSvc")]).get()
    assert "is its alias" in refused.errors[0]


@pytest.mark.parametrize(
    ("into", "sources", "expected"),
    [
        ("auth-service", ["auth-service"], "into itself"),
        ("auth-service", ["nope"], "no such entity"),
        ("nope", ["auth"], "Cannot merge into 'nope'"),
        ("auth-service", [], "at least one"),
    ],
)
def test_bad_merges_are_refused_and_change_nothing(
    kg: KnowledgeGraphProxy, into: str, sources: list[str], expected: str
) -> None:
    duplicates(kg)
    before = kg.graph().get()
    report = kg.merge("@Bob", into, sources).get()
    assert any(expected in e for e in report.errors), report.errors
    assert kg.graph().get() == before


def test_merging_an_alias_again_says_where_it_went(kg: KnowledgeGraphProxy) -> None:
    duplicates(kg)
    kg.merge("@Bob", "auth-service", ["auth"]).get()
    assert "already merged into 'auth-service'" in kg.merge("@Bob", "AuthSvc", ["auth"]).get().errors[0]
    assert "alias of 'auth-service'" in kg.merge("@Bob", "auth", ["AuthSvc"]).get().errors[0]


def test_aliases_follow_a_chain_of_merges(kg: KnowledgeGraphProxy) -> None:
    # Merging m (alias s) into q used to drop s: the target was indexed with it, then the
    # source's removal took it out again.
    kg.update("@Ann", create_entities=[ent("s", "first"), ent("m", "second"), ent("q", "third")]).get()
    kg.merge("@Ann", "m", ["s"]).get()
    kg.merge("@Ann", "q", ["m"]).get()
    report = kg.update("@Ann", update_entities=[EntityUpdate(name="s", add_observations=["via the old name"])]).get()
    assert not report.errors and report.updated_entities == ["q"]
    refused = kg.update("@Ann", create_entities=[ent("s"), ent("m")]).get()
    assert [error.split(";")[0] for error in refused.errors] == [
        "'s' was merged into 'q' and is its alias",
        "'m' was merged into 'q' and is its alias",
    ]
    assert [view.entity.name for view in kg.get_entities(["s", "M"]).get().entities] == ["q"]


# -- the card: claimed task, as_of, merge_entities ----------------------------------------


def test_the_card_records_the_members_claimed_task(alice: FakeObserver) -> None:
    tools = {t.name: t for t in ToolFactory([PlanningTool(), KnowledgeGraphTool()], observer=alice).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "map the services"}]})
    tools["update_graph"].call_sync({"create_entities": [{"name": "early", "entity_type": "t"}]})
    tools["claim_task"].call_sync({"task_id": 1})
    tools["update_graph"].call_sync({"create_entities": [{"name": "api", "entity_type": "service"}]})
    out = tools["merge_entities"].call_sync({"into": "api", "sources": ["early"], "dry_run": True})
    assert out.startswith("Merging early into api would move 0 observations") and "Nothing was changed" in out
    graph = tools["search_graph"].call_sync({"query": "api", "as_of": "2000-01-01"})
    assert "No entities match" in graph
    with pytest.raises(RetriableError, match="in the future"):
        tools["search_graph"].call_sync({"query": "api", "as_of": "2999-01-01"})
    proxy = cast(KnowledgeGraphProxy, pykka.ActorRegistry.get_by_class_name("KnowledgeGraphActor")[0].proxy())
    task_of = {e.name: (e.created_by, e.task_id) for e in proxy.entities().get()}
    assert task_of == {"early": ("@Alice", None), "api": ("@Alice", 1)}


def test_the_card_suggests_merging_and_refuses_a_bad_merge(alice: FakeObserver) -> None:
    tools = {t.name: t for t in ToolFactory([KnowledgeGraphTool()], observer=alice).tools()}
    tools["update_graph"].call_sync({"create_entities": [{"name": "user-db", "entity_type": "db"}]})
    out = tools["update_graph"].call_sync({"create_entities": [{"name": "User DB", "entity_type": "db"}]})
    assert "Similar names exist (nothing merged): 'User DB' ~ 'user-db'. If one is the same" in out
    assert "call merge_entities" in out
    with pytest.raises(RetriableError, match="into itself"):
        tools["merge_entities"].call_sync({"into": "user-db", "sources": ["user-db"]})
    done = tools["merge_entities"].call_sync({"into": "user-db", "sources": ["User DB"]})
    assert done == "Merged User DB into user-db: moved 0 observations; re-pointed 0 relations; added aliases User DB."
    assert "aka User DB" in tools["search_graph"].call_sync({"query": "User DB"})


def test_merge_is_also_a_command(alice: FakeObserver) -> None:
    factory = ToolFactory([KnowledgeGraphTool()], observer=alice)
    update = {t.name: t for t in factory.tools()}["update_graph"]
    update.call_sync({"create_entities": [{"name": "a", "entity_type": "t"}, {"name": "A.", "entity_type": "t"}]})
    merge = factory.get_commands()[MergeEntitiesParam]
    assert merge(into="a", sources=["A."], dry_run=True).startswith("Merging A. into a would")
    assert merge(into="a", sources=["A."]).startswith("Merged A. into a")
    with pytest.raises(RetriableError, match="already merged into 'a'"):
        merge(into="a", sources=["A."])


# -- every store: what is recorded survives a restart -------------------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened: Store
    if request.param == "memory":
        opened = MemoryStore()
    elif request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "state.db")
    else:
        from toolcards.store._postgres import PostgresStore

        opened = PostgresStore(request.getfixturevalue("postgres_url"))
    yield opened
    opened.close()


def test_provenance_history_and_aliases_hold_on_every_store(any_store: Store, clock: Clock) -> None:
    def start() -> KnowledgeGraphProxy:
        return cast(KnowledgeGraphProxy, KnowledgeGraphActor.start("team-1", any_store, clock=clock).proxy())

    first = start()
    seed(first, clock)
    duplicates(first)
    first.merge("@Cy", "auth-service", ["AuthSvc"]).get()
    expected = first.graph().get()
    # A second actor on the same store (another process would do the same) reads it all.
    second = start()
    assert second.graph().get() == expected
    then = render_search_result(second.search("8080", "keyword", as_of=T0).get())
    assert "- listens on 8080" in then and "9090" not in then
    assert second.search("AuthSvc", "keyword").get().hits[0].entity.name == "auth-service"
    # A write through one is seen by the other, with its provenance.
    clock.advance()
    second.update("@Dee", update_entities=[EntityUpdate(name="db", invalidate={"PostgreSQL 15": "upgraded"})]).get()
    db = entity_of(first, "db")
    assert (db.observations[0].invalidated_by, db.observations[0].reason) == ("@Dee", "upgraded")
    written = second.graph().get()
    pykka.ActorRegistry.stop_all()
    assert start().graph().get() == written


def test_an_older_graph_without_provenance_loads(store: MemoryStore, start_graph: StartGraph) -> None:
    txn_rows = {"name": "old", "entity_type": "t", "observations": ["kept as it was"]}
    from toolcards.store._base import Change

    with store.write("team-1/#KnowledgeGraphTool", since=0) as txn:
        txn.stage([Change(collection="entities", key="old", value=txn_rows)])
    kg = start_graph()
    (old,) = kg.entities().get()
    assert [(o.id, o.text, o.created_by, o.current) for o in old.observations] == [
        ("old#0", "kept as it was", "", True)
    ]
    assert kg.search("kept", "keyword", as_of=T0).get().hits[0].entity.name == "old"
