"""KnowledgeGraphActor: the update rules, summary, search, events and concurrent use."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.knowledge_graph.conftest import HASHING, StartGraph
from toolcards.core._events import StateChanged
from toolcards.errors import RetriableError, StoreError
from toolcards.knowledge_graph import (
    Entity,
    EntityCreate,
    EntityUpdate,
    KnowledgeGraphProxy,
    RelationCreate,
    RelationDelete,
)
from toolcards.knowledge_graph._actor import KnowledgeGraphActor, _relation_key, _relation_row_key
from toolcards.knowledge_graph._render import (
    SUMMARY_TOP,
    path_text,
    render_graph_summary,
    render_search_result,
    render_update_report,
)
from toolcards.store import Change, MemoryStore, SQLiteStore, Transaction
from toolcards.store._transaction import StagedWrite


def ent(name: str, entity_type: str = "thing", description: str = "", *obs: str, root: bool = False) -> EntityCreate:
    return EntityCreate(
        name=name, entity_type=entity_type, description=description, observations=list(obs), is_root=root
    )


def rel(a: str, b: str, relation_type: str = "uses", description: str = "") -> RelationCreate:
    return RelationCreate(from_entity=a, to_entity=b, relation_type=relation_type, description=description)


def texts(entity: Entity) -> list[str]:
    """The texts of the observations that hold."""
    return [o.text for o in entity.current_observations()]


def relations_of(kg: KnowledgeGraphProxy) -> set[tuple[str, str, str]]:
    return {r.key for r in kg.graph().get().relations}


def names_of(kg: KnowledgeGraphProxy) -> list[str]:
    return [e.name for e in kg.entities().get()]


@pytest.fixture
def kg(start_graph: StartGraph) -> KnowledgeGraphProxy:
    return start_graph()


# -- rules ---------------------------------------------------------------------------


def test_entity_and_relation_to_it_can_be_created_in_one_batch(kg: KnowledgeGraphProxy) -> None:
    report = kg.update("a", create_entities=[ent("A"), ent("B")], create_relations=[rel("A", "B")]).get()
    assert report.errors == []
    assert report.created_entities == ["A", "B"]
    assert relations_of(kg) == {("A", "B", "uses")}


def test_duplicate_entity_name_is_an_error(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A", "person", "first")]).get()
    report = kg.update("a", create_entities=[ent("A", "team", "second"), ent("A", "x"), ent("B")]).get()
    assert report.created_entities == []
    assert [e.name for e in kg.entities().get()] == ["A"]
    assert len(report.errors) == 2
    assert "'A' already exists" in report.errors[0]
    assert "update_entities" in report.errors[0]
    (a,) = [e for e in kg.entities().get() if e.name == "A"]
    assert (a.entity_type, a.description) == ("person", "first")


def test_relation_to_a_missing_entity_is_an_error_with_a_suggestion(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("Authentication Service"), ent("B")]).get()
    report = kg.update("a", create_relations=[rel("B", "Authentication Servce"), rel("Nobody", "Nothing at all")]).get()
    assert report.created_relations == []
    assert "did you mean 'Authentication Service'?" in report.errors[0]
    assert "'Nobody' and 'Nothing at all' do not exist" in report.errors[1]
    assert relations_of(kg) == set()
    # Case aside, as reads compare names: creating 'AUTHENTICATION SERVICE' would duplicate it.
    report = kg.update("a", create_relations=[rel("B", "AUTHENTICATION SERVICE")]).get()
    assert "did you mean 'Authentication Service'?" in report.errors[0]


def test_duplicate_relation_triple_is_skipped_not_duplicated(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A"), ent("B")], create_relations=[rel("A", "B")]).get()
    report = kg.update(
        "a",
        create_relations=[rel("A", "B", description="again"), rel("A", "B", "owns"), rel("A", "B", "owns")],
    ).get()
    assert report.errors == []
    assert [r.key for r in report.created_relations] == [("A", "B", "owns")]
    assert [r.key for r in report.skipped_relations] == [("A", "B", "uses"), ("A", "B", "owns")]
    assert relations_of(kg) == {("A", "B", "uses"), ("A", "B", "owns")}
    assert "Skipped existing relations" in render_update_report(report)


def test_deleting_an_entity_deletes_its_relations(kg: KnowledgeGraphProxy) -> None:
    kg.update(
        "a",
        create_entities=[ent("A"), ent("B"), ent("C")],
        create_relations=[rel("A", "B"), rel("C", "A", "owns"), rel("B", "C"), rel("A", "A", "self")],
    ).get()
    report = kg.update("a", delete_entities=["A"]).get()
    assert report.deleted_entities == ["A"]
    assert {r.key for r in report.deleted_relations} == {("A", "B", "uses"), ("C", "A", "owns"), ("A", "A", "self")}
    assert names_of(kg) == ["B", "C"]
    assert relations_of(kg) == {("B", "C", "uses")}
    assert kg.search("A", mode="keyword", include_neighbors=True).get().hits == []
    hit = kg.search("B", mode="keyword", include_neighbors=True).get().hits[0]
    assert [n.name for n in hit.neighbours] == ["C"]


def test_update_adds_and_removes_observations_and_sets_fields(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A", "person", "old", "likes tea", "lives in Paris")]).get()
    report = kg.update(
        "a",
        update_entities=[
            EntityUpdate(
                name="A",
                entity_type="robot",
                is_root=True,
                remove_observations=["lives in Paris"],
                add_observations=["lives in Lyon", "likes tea"],
            )
        ],
    ).get()
    assert report.updated_entities == ["A"] and report.errors == []
    (a,) = kg.entities().get()
    assert texts(a) == ["likes tea", "lives in Lyon"]
    assert (a.entity_type, a.description, a.is_root) == ("robot", "old", True)


def test_removing_a_missing_observation_is_refused_and_nothing_applies(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A", "t", "", "fact one")]).get()
    report = kg.update(
        "a", update_entities=[EntityUpdate(name="A", remove_observations=["fact two"], add_observations=["fact 3"])]
    ).get()
    assert report.updated_entities == []
    assert "no observation 'fact two'" in report.errors[0]
    assert texts(kg.entities().get()[0]) == ["fact one"]


def test_update_without_effect_changes_nothing(kg: KnowledgeGraphProxy, events: list[StateChanged]) -> None:
    kg.update("a", create_entities=[ent("A", "t", "", "fact")]).get()
    report = kg.update("a", update_entities=[EntityUpdate(name="A", add_observations=["fact"])]).get()
    assert not report.changed and report.seq is None
    assert len(events) == 1


def test_unknown_entities_and_relations_are_errors(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A"), ent("B")], create_relations=[rel("A", "B", "owns")]).get()
    report = kg.update(
        "a",
        update_entities=[EntityUpdate(name="Zed", description="x")],
        delete_relations=[RelationDelete(from_entity="A", to_entity="B", relation_type="uses")],
        delete_entities=["Nobody"],
    ).get()
    assert not report.changed
    assert "'Zed' does not exist" in report.errors[0] and "create_entities" in report.errors[0]
    assert "does not exist. Relations from 'A' to 'B': owns." in report.errors[1]
    assert "'Nobody' does not exist" in report.errors[2]


def test_fixed_order_lets_a_batch_create_then_delete(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("A"), ent("B")], create_relations=[rel("A", "B")]).get()
    report = kg.update(
        "a",
        create_entities=[ent("C")],
        create_relations=[rel("C", "A")],
        update_entities=[EntityUpdate(name="C", add_observations=["new"])],
        delete_relations=[RelationDelete(from_entity="A", to_entity="B", relation_type="uses")],
        delete_entities=["B"],
    ).get()
    assert report.errors == []
    assert names_of(kg) == ["A", "C"]
    assert relations_of(kg) == {("C", "A", "uses")}
    assert [texts(e) for e in kg.entities().get()] == [[], ["new"]]


def test_all_refusals_come_together_and_nothing_is_written(kg: KnowledgeGraphProxy, store: MemoryStore) -> None:
    report = kg.update(
        "a",
        create_entities=[ent("A"), ent("A")],
        create_relations=[rel("A", "Missing"), rel("A", "A")],
        update_entities=[EntityUpdate(name="Ghost")],
        delete_entities=["Ghost"],
    ).get()
    assert len(report.errors) == 4
    assert (report.created_entities, report.created_relations, report.seq) == ([], [], None)
    rendered = render_update_report(report)
    assert rendered.startswith("Nothing was applied (a batch is all or nothing). Fix these and send the whole batch")
    assert rendered.count("\n- ") == 4
    assert store.load("team-1/#KnowledgeGraphTool").rows == {}


def test_one_store_transaction_per_batch(start_graph: StartGraph) -> None:
    class CountingStore(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.applies: list[list[Change]] = []

        @contextlib.contextmanager
        def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
            with super().write(namespace, since) as txn:
                yield txn
            if txn.committed is not None:
                assert isinstance(txn, StagedWrite)
                self.applies.append([Change(collection=c, key=k, value=v) for (c, k), v in txn.staged.items()])

    counting = CountingStore()
    kg = start_graph(on=counting)
    kg.update("a", create_entities=[ent(f"e{i}") for i in range(20)], create_relations=[rel("e0", "e1")]).get()
    kg.update("a", delete_entities=["e0"]).get()
    assert len(counting.applies) == 2
    assert {c.collection for c in counting.applies[0]} == {"entities", "relations", "meta"}


def test_a_failed_transaction_changes_nothing(start_graph: StartGraph, events: list[StateChanged]) -> None:
    class FailingStore(MemoryStore):
        failing = False

        @contextlib.contextmanager
        def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
            with super().write(namespace, since) as txn:
                yield txn
                if self.failing and isinstance(txn, StagedWrite) and txn.staged:
                    raise StoreError("disk full")

    failing = FailingStore()
    kg = start_graph(HASHING, on=failing)
    kg.update("a", create_entities=[ent("A", "t", "alpha")]).get()
    before = kg.graph().get()
    failing.failing = True
    with pytest.raises(StoreError):
        kg.update("a", create_entities=[ent("B", "t", "beta")], delete_entities=["A"]).get()
    assert kg.graph().get() == before
    assert kg.seq().get() == 1
    assert kg.search("beta").get().hits == []
    assert [e.seq for e in events] == [1]
    failing.failing = False
    assert kg.update("a", create_entities=[ent("B")]).get().seq == 2


def test_a_batch_is_seen_by_the_next_call_of_any_caller(start_graph: StartGraph) -> None:
    # The batch is put into memory after its answer: whoever calls next finds it there, in
    # every read, whether the caller or the actor's own thread gets to it first.
    kg = start_graph()
    kg.update("a", create_entities=[ent(f"e{i}", "t", f"alpha {i}") for i in range(50)]).get()
    assert kg.seq().get() == 1
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(len(kg.search("alpha", top_k=100).get().hits)))
    reader.start()
    reader.join()
    assert seen == [50]
    for seq in range(2, 6):
        name = f"r{seq}"
        kg.update("a", create_entities=[ent(name, "t", "beta")], create_relations=[rel(name, "e0")]).get()
        assert name in names_of(kg)
        assert (name, "e0", "uses") in relations_of(kg)
        assert kg.seq().get() == seq


def test_a_failure_putting_a_batch_into_memory_reads_the_graph_again(
    start_graph: StartGraph, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    kg = start_graph()
    kg.update("a", create_entities=[ent("A", "t", "alpha")]).get()
    real = KnowledgeGraphActor._apply
    failures = iter([True])

    def apply_once_failing(self: KnowledgeGraphActor, *args: object) -> None:
        if next(failures, False):
            raise RuntimeError("a bug while mirroring")
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(KnowledgeGraphActor, "_apply", apply_once_failing)
    with caplog.at_level("ERROR", logger="toolcards.store._namespace_actor"):
        report = kg.update("a", create_entities=[ent("B", "t", "beta")], create_relations=[rel("B", "A")]).get()
        assert report.created_entities == ["B"]  # committed, whatever memory then does
        assert names_of(kg) == ["A", "B"]
    assert relations_of(kg) == {("B", "A", "uses")}
    assert kg.seq().get() == 2
    assert [hit.entity.name for hit in kg.search("beta").get().hits] == ["B"]
    assert any("reading it from the store" in record.getMessage() for record in caplog.records)


# -- summary -------------------------------------------------------------------------


def test_summary_of_an_empty_graph_is_one_sentence(kg: KnowledgeGraphProxy) -> None:
    assert kg.summary().get() == "The knowledge graph is empty."


def test_summary_lists_counts_types_roots_and_the_search_hint(kg: KnowledgeGraphProxy) -> None:
    kg.update(
        "a",
        create_entities=[ent("Alice", "person", root=True), ent("Bob", "person"), ent("Core", "team", root=True)],
        create_relations=[rel("Alice", "Core", "leads"), rel("Bob", "Core", "member_of")],
    ).get()
    assert kg.summary().get() == (
        "Knowledge graph: 3 entities, 2 relations.\n"
        "Entity types: person 2, team 1.\n"
        "Relation types: leads 1, member_of 1.\n"
        "Root entities: Alice [person], Core [team].\n"
        "Use search_graph to find entities, their observations and relations."
    )
    assert "search_graph" not in kg.summary(search_tool=None).get()


def test_summary_size_does_not_grow_with_the_graph(kg: KnowledgeGraphProxy) -> None:
    def add(start: int, stop: int) -> None:
        kg.update(
            "a",
            create_entities=[ent(f"entity {i:05d}", f"type{i % 40}", root=i % 3 == 0) for i in range(start, stop)],
            create_relations=[
                rel(f"entity {i:05d}", f"entity {i + 1:05d}", f"rel{i % 30}") for i in range(start, stop - 1)
            ],
        ).get()

    add(0, 100)
    small = kg.summary().get()
    for start in range(100, 2000, 100):
        add(start, start + 100)
    large = kg.summary().get()
    assert large.count("\n") == small.count("\n")
    assert len(large) <= len(small) + 40  # only the digits of the counts grow
    assert "(+30 more types)" in large
    assert "(+657 more)" in large


# -- search --------------------------------------------------------------------------


@pytest.fixture
def team(start_graph: StartGraph) -> KnowledgeGraphProxy:
    kg = start_graph(HASHING)
    kg.update(
        "a",
        create_entities=[
            ent("Alice", "person", "Leads the platform team", "likes rust", root=True),
            ent("Bob", "person", "Writes the billing code"),
            ent("Platform", "team", "Runs the deploy pipeline"),
            ent("Billing", "service", "Charges customers monthly"),
            ent("Auth Service", "service", "Issues login tokens"),
        ],
        create_relations=[
            rel("Alice", "Platform", "leads"),
            rel("Bob", "Billing", "maintains"),
            rel("Platform", "Auth Service", "owns"),
            rel("Billing", "Auth Service", "depends_on"),
        ],
    ).get()
    return kg


def test_keyword_search_covers_name_type_description_and_observations(team: KnowledgeGraphProxy) -> None:
    for query, expected in [
        ("alice", "Alice"),
        ("service", "Auth Service"),
        ("customers", "Billing"),
        ("rust", "Alice"),
    ]:
        result = team.search(query, mode="keyword").get()
        assert result.hits[0].entity.name == expected, query
        assert result.mode == "keyword"


def test_keyword_hits_rank_name_matches_first(team: KnowledgeGraphProxy) -> None:
    hits = team.search("platform", mode="keyword").get().hits
    assert [h.entity.name for h in hits] == ["Platform", "Alice"]
    assert hits[0].score == 1.0 and 0 < hits[1].score < 1.0


def test_hybrid_score_is_the_documented_fusion(team: KnowledgeGraphProxy) -> None:
    result = team.search("alice rust").get()
    assert result.mode == "hybrid" and result.note is None
    top = result.hits[0]
    assert top.entity.name == "Alice"
    for hit in result.hits:
        assert hit.cosine is not None and 0.0 <= hit.score <= 1.0


def test_threshold_applies_to_the_raw_cosine(start_graph: StartGraph) -> None:
    strict = start_graph(HASHING, team="strict", threshold=0.999)
    loose = start_graph(HASHING, team="loose", threshold=-1.0)
    for kg in (strict, loose):
        kg.update("a", create_entities=[ent("Alpha", "t", "first letter"), ent("Beta", "t", "second letter")]).get()
    assert strict.search("first letter", mode="vector").get().hits == []
    hits = loose.search("first letter", mode="vector").get().hits
    assert [h.entity.name for h in hits] == ["Alpha", "Beta"]
    assert hits[0].score == hits[0].cosine and hits[0].keyword_score is None


def test_vector_and_hybrid_fall_back_to_keyword_without_embeddings(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent("Alice", "person", "likes rust")]).get()
    for mode in ("vector", "hybrid"):
        result = kg.search("rust", mode=mode).get()
        assert result.mode == "keyword"
        assert [h.entity.name for h in result.hits] == ["Alice"]
        assert result.note is not None and "\n" not in result.note
        assert render_search_result(result).startswith("Note: vector search needs an embedding model")


def test_neighbours_and_edges_on_request(team: KnowledgeGraphProxy) -> None:
    plain = team.search("Platform", mode="keyword", top_k=1).get()
    assert plain.hits[0].neighbours == [] and plain.edges is None and plain.paths is None
    result = team.search("Platform", mode="keyword", top_k=1, include_neighbors=True, include_edges=True).get()
    hit = result.hits[0]
    assert {(n.name, n.relation_type, n.outgoing) for n in hit.neighbours} == {
        ("Alice", "leads", False),
        ("Auth Service", "owns", True),
    }
    assert result.edges is not None
    assert {r.key for r in result.edges} == {("Alice", "Platform", "leads"), ("Platform", "Auth Service", "owns")}
    text = render_search_result(result)
    assert "<-[leads]- Alice [person]" in text and "- Platform -[owns]-> Auth Service" in text


def test_neighbours_are_capped_per_hit(kg: KnowledgeGraphProxy) -> None:
    kg.update(
        "a",
        create_entities=[ent("Hub"), *(ent(f"n{i}") for i in range(25))],
        create_relations=[rel("Hub", f"n{i}") for i in range(25)],
    ).get()
    hit = kg.search("Hub", mode="keyword", top_k=1, include_neighbors=True).get().hits[0]
    assert len(hit.neighbours) == 20 and hit.more_neighbours == 5


def test_paths_between_top_hits(team: KnowledgeGraphProxy) -> None:
    result = team.search("alice bob", mode="keyword", top_k=2, find_paths=True).get()
    assert [h.entity.name for h in result.hits] == ["Alice", "Bob"]
    assert result.paths is not None
    assert [path_text(p) for p in result.paths] == [
        "Alice -[leads]-> Platform -[owns]-> Auth Service <-[depends_on]- Billing <-[maintains]- Bob"
    ]


def test_paths_are_bounded_in_length(start_graph: StartGraph) -> None:
    kg = start_graph(max_path_length=3)
    kg.update(
        "a",
        create_entities=[ent(n) for n in ["start", "m1", "m2", "m3", "finish"]],
        create_relations=[rel("start", "m1"), rel("m1", "m2"), rel("m2", "m3"), rel("m3", "finish")],
    ).get()
    result = kg.search("start finish", mode="keyword", find_paths=True).get()
    assert result.paths == []
    assert "Paths: none within 3 hops" in render_search_result(result)


def test_empty_query_is_a_retriable_error(kg: KnowledgeGraphProxy) -> None:
    with pytest.raises(RetriableError, match="empty"):
        kg.search("   ").get()


def test_top_k_limits_the_hits(kg: KnowledgeGraphProxy) -> None:
    kg.update("a", create_entities=[ent(f"item {i}", "widget") for i in range(30)]).get()
    assert len(kg.search("widget", mode="keyword", top_k=5).get().hits) == 5
    assert len(kg.search("widget", mode="keyword", top_k=0).get().hits) == 1


def test_results_are_copies(team: KnowledgeGraphProxy) -> None:
    hit = team.search("alice", mode="keyword").get().hits[0]
    hit.entity.observations.append("tampered")
    team.entities().get()[0].observations.append("tampered")
    assert "tampered" not in team.search("alice", mode="keyword").get().hits[0].entity.observations


# -- events and seq ------------------------------------------------------------------


def test_each_change_emits_state_changed_with_increasing_seq(
    kg: KnowledgeGraphProxy, events: list[StateChanged]
) -> None:
    kg.update("alice", create_entities=[ent("A"), ent("B")], create_relations=[rel("A", "B")]).get()
    kg.update("bob", create_entities=[ent("A")]).get()  # only an error: no change, no event
    kg.update("bob", delete_entities=["B"]).get()
    assert [(e.seq, e.source, e.team_id) for e in events] == [
        (1, "#KnowledgeGraphTool", "team-1"),
        (2, "#KnowledgeGraphTool", "team-1"),
    ]
    assert events[0].summary == "alice: created entities A, B; created 1 relation"
    assert events[1].summary == "bob: deleted 1 relation; deleted entities B"
    assert kg.seq().get() == 2


def test_a_failing_subscriber_does_not_fail_the_update(store: MemoryStore) -> None:
    def publish(event: StateChanged) -> None:
        raise RuntimeError("subscriber bug")

    kg = cast(KnowledgeGraphProxy, KnowledgeGraphActor.start("t", store, None, publish).proxy())
    assert kg.update("a", create_entities=[ent("A")]).get().seq == 1
    assert names_of(kg) == ["A"]


# -- concurrency ---------------------------------------------------------------------


def test_concurrent_updates_lose_nothing(kg: KnowledgeGraphProxy, events: list[StateChanged]) -> None:
    threads, per_thread = 8, 25
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(per_thread):
                name = f"t{t}-{i}"
                links = [rel(name, f"t{t}-{i - 1}")] if i else []
                report = kg.update(
                    f"agent{t}", create_entities=[ent(name, "n", "", f"written by {t}")], create_relations=links
                ).get()
                assert report.errors == []
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert len(names_of(kg)) == threads * per_thread
    assert len(relations_of(kg)) == threads * (per_thread - 1)
    assert kg.seq().get() == threads * per_thread
    assert sorted(e.seq for e in events) == list(range(1, threads * per_thread + 1))


def test_searching_an_empty_graph_says_only_that_nothing_matches(start_graph: StartGraph) -> None:
    assert render_search_result(start_graph(HASHING).search("anything").get()) == "No entities match 'anything'."


# -- names first -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "vector"])
def test_an_entity_named_by_a_stop_word_or_one_letter_is_found_first(start_graph: StartGraph, mode: str) -> None:
    kg = start_graph(HASHING)
    kg.update(
        "a",
        create_entities=[
            ent("IT", "team", "runs the servers"),
            ent("A", "grade", "the best grade"),
            ent("The", "band", "a band"),
            ent("The Team", "team", "it is the team that ships it"),
            ent("Platform", "team", "it builds what IT runs; the team of the year"),
        ],
    ).get()

    for query in ("IT", "it", "A", "The", "the team"):
        hits = kg.search(query, mode).get().hits
        assert hits, (query, mode)
        assert hits[0].entity.name.casefold() == query.casefold(), (query, mode, [h.entity.name for h in hits])


def test_names_starting_with_the_query_come_right_after_an_exact_one(start_graph: StartGraph) -> None:
    kg = start_graph()
    kg.update(
        "a",
        create_entities=[
            ent("AuthServiceClient", "service"),
            ent("Billing", "service", "calls auth and auth again; auth is everywhere"),
            ent("AuthService", "service"),
            ent("Auth", "concept"),
        ],
    ).get()

    names = [hit.entity.name for hit in kg.search("auth", "keyword").get().hits]

    assert names[:3] == ["Auth", "AuthService", "AuthServiceClient"]
    assert "Billing" in names


def summary_from_scratch(kg: KnowledgeGraphProxy) -> str:
    """The summary rendered from a full copy of the graph, as if nothing were kept between calls."""
    graph = kg.graph().get()
    roots = sorted(entity.name for entity in graph.entities if entity.is_root)
    types = {entity.name: entity.entity_type for entity in graph.entities}
    return render_graph_summary(
        entity_count=len(graph.entities),
        relation_count=len(graph.relations),
        entity_types=Counter(entity.entity_type for entity in graph.entities),
        relation_types=Counter(relation.relation_type for relation in graph.relations),
        first_roots=[(name, types[name]) for name in roots[:SUMMARY_TOP]],
        root_count=len(roots),
        search_tool="search_graph",
    )


def test_summary_kept_between_calls_follows_every_kind_of_change(start_graph: StartGraph, store: MemoryStore) -> None:
    kg = start_graph()
    assert kg.summary().get() == summary_from_scratch(kg)
    # Enough roots at once to be sorted in as a run, then one by one.
    kg.update(
        "a",
        create_entities=[ent(f"node {i:03d}", f"type{i % 3}", root=i % 2 == 0) for i in range(100)],
        create_relations=[rel(f"node {i:03d}", f"node {i + 1:03d}", f"rel{i % 4}") for i in range(99)],
    ).get()
    assert kg.summary().get() == summary_from_scratch(kg)
    steps: list[dict[str, object]] = [
        {"create_entities": [ent("a root", "type9", root=True), ent("zzz", "type0")]},
        {"update_entities": [EntityUpdate(name="node 000", is_root=False), EntityUpdate(name="zzz", is_root=True)]},
        {"update_entities": [EntityUpdate(name="node 001", is_root=True, entity_type="type7")]},
        {"delete_entities": ["node 002", "a root"]},
        {"delete_relations": [RelationDelete(from_entity="node 010", to_entity="node 011", relation_type="rel2")]},
        {"create_relations": [rel("zzz", "node 004", "rel9")]},
        {"update_entities": [EntityUpdate(name="node 004", description="no change to the summary")]},
    ]
    for step in steps:
        before = kg.summary().get()
        kg.update("a", **step).get()
        expected = summary_from_scratch(kg)
        assert kg.summary().get() == expected
        assert kg.summary(search_tool=None).get() == expected.rsplit("\n", 1)[0]
        assert before != expected or "description" in str(step)
    # A restart rebuilds what the summary keeps from the store.
    expected = summary_from_scratch(kg)
    kg.stop()
    assert start_graph().summary().get() == expected


def test_summary_follows_another_writer_of_a_shared_store(start_graph: StartGraph, sqlite_store: SQLiteStore) -> None:
    ours = start_graph(on=sqlite_store)
    ours.update("a", create_entities=[ent("Alice", "person", root=True)]).get()
    first = ours.summary().get()
    other_store = SQLiteStore(sqlite_store.path)  # its own connection, as another process has
    try:
        other = cast(KnowledgeGraphProxy, KnowledgeGraphActor.start("team-1", other_store, None).proxy())
        other.update("b", create_entities=[ent("Bob", "person", root=True)], delete_entities=["Alice"]).get()
        other.stop()
    finally:
        other_store.close()
    assert ours.summary().get() == summary_from_scratch(ours) != first
    assert "Root entities: Bob [person]." in ours.summary().get()


@given(st.lists(st.text(min_size=1, max_size=8), min_size=3, max_size=3))
def test_a_relation_row_key_is_its_triple_as_json(triple: list[str]) -> None:
    key = (triple[0], triple[1], triple[2])
    assert _relation_row_key(key) == json.dumps(triple, ensure_ascii=False)
    assert _relation_key(_relation_row_key(key)) == key


def test_what_a_search_returns_cannot_change_the_graph(kg: KnowledgeGraphProxy) -> None:
    """Hits share the graph's observations (they are immutable) but not its lists."""
    kg.update("a", create_entities=[ent("Ann", "person", "", "likes tea", "lives in Oslo")]).get()
    hit = kg.search("tea", "keyword").get().hits[0]
    hit.entity.observations.clear()
    hit.entity.aliases.append("Annie")
    with pytest.raises(ValidationError):
        kg.search("tea", "keyword").get().hits[0].entity.observations[0].text = "likes coffee"
    (again,) = kg.search("tea", "keyword").get().hits
    assert texts(again.entity) == ["likes tea", "lives in Oslo"] and again.entity.aliases == []
