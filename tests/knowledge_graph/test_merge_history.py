"""Merging keeps what holds and the history: a relation the target no longer holds gives way
to the source's that does, an entity that no longer holds cannot be merged (in any process),
and ``as_of`` reads the graph as it stood before the merge."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pykka
import pytest

from tests.knowledge_graph.conftest import StartGraph
from tests.knowledge_graph.test_provenance import T0, Clock, ent
from toolcards.knowledge_graph import EntityUpdate, KnowledgeGraphProxy, RelationCreate
from toolcards.knowledge_graph._render import render_merge_report, render_search_result
from toolcards.store import SQLiteStore


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kg(start_graph: StartGraph, clock: Clock) -> KnowledgeGraphProxy:
    return start_graph(clock=clock)


def rel(from_entity: str, to_entity: str, relation_type: str) -> RelationCreate:
    return RelationCreate(from_entity=from_entity, to_entity=to_entity, relation_type=relation_type)


# -- relations: the one that holds is kept ------------------------------------------------


def test_a_merge_records_again_a_relation_the_target_no_longer_holds(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    kg.update(
        "@Ann",
        create_entities=[ent("api"), ent("API service"), ent("postgres", entity_type="database")],
        create_relations=[rel("api", "postgres", "uses"), rel("API service", "postgres", "uses")],
    ).get()
    clock.advance()
    kg.update("@Ann", update_entities=[EntityUpdate(name="api", invalidate={"-[uses]-> postgres": "on sqlite"})]).get()
    clock.advance()

    report = kg.merge("@Bob", "api", ["API service"]).get()

    assert report.errors == [] and report.dropped_relations == []
    assert [r.key for r in report.moved_relations] == [("api", "postgres", "uses")]
    (relation,) = kg.graph().get().relations
    # The source's relation, with its own provenance, in place of the one that no longer held.
    assert relation.key == ("api", "postgres", "uses") and relation.current and relation.created_at == T0
    text = render_search_result(kg.search("postgres", "keyword", include_edges=True).get())
    assert "Edges:\n- api -[uses]-> postgres" in text
    assert "neighbours: -[uses]-> postgres [database]" in render_search_result(
        kg.search("api", "keyword", include_neighbors=True).get()
    )


def test_a_merge_keeps_the_targets_relation_when_the_sources_no_longer_holds(
    kg: KnowledgeGraphProxy, clock: Clock
) -> None:
    kg.update(
        "@Ann",
        create_entities=[ent("api"), ent("API service"), ent("postgres")],
        create_relations=[rel("api", "postgres", "uses"), rel("API service", "postgres", "uses")],
    ).get()
    clock.advance()
    kg.update(
        "@Ann", update_entities=[EntityUpdate(name="API service", invalidate={"-[uses]-> postgres": "on sqlite"})]
    ).get()

    report = kg.merge("@Bob", "api", ["API service"]).get()

    assert [r.from_entity for r in report.dropped_relations] == ["API service"] and report.moved_relations == []
    assert "dropped 1 relation between them or already on api (API service -[uses]-> postgres)" in (
        render_merge_report(report)
    )
    (relation,) = kg.graph().get().relations
    assert relation.key == ("api", "postgres", "uses") and relation.current


# -- entities that no longer hold ---------------------------------------------------------


def retired_and_live(kg: KnowledgeGraphProxy, clock: Clock) -> None:
    """``legacy`` (runs on host9) no longer holds, ``modern`` (serves traffic on 443) does."""
    kg.update("@Ann", create_entities=[ent("legacy", "runs on host9"), ent("modern", "serves traffic on 443")]).get()
    clock.advance()
    kg.update("@Ann", update_entities=[EntityUpdate(name="legacy", invalidate={"legacy": "decommissioned"})]).get()


@pytest.mark.parametrize(
    ("into", "source", "words"),
    [
        (
            "modern",
            "legacy",
            "Cannot merge 'legacy': it no longer holds (by @Ann on 2026-03-01 10:00 UTC: "
            "decommissioned), and merging it would make its facts hold again",
        ),
        (
            "legacy",
            "modern",
            "Cannot merge into 'legacy': it no longer holds (by @Ann on 2026-03-01 10:00 UTC: "
            "decommissioned), so what moved into it would not show",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_merge_naming_an_entity_that_no_longer_holds_is_refused(
    kg: KnowledgeGraphProxy, clock: Clock, into: str, source: str, words: str, dry_run: bool
) -> None:
    retired_and_live(kg, clock)
    before, seq = kg.graph().get(), kg.seq().get()

    report = kg.merge("@Bob", into, [source], dry_run=dry_run).get()

    assert len(report.errors) == 1 and report.errors[0].startswith(words), report.errors
    assert (kg.graph().get(), kg.seq().get()) == (before, seq)
    # Nothing came back, nothing vanished, and the live name is still its own.
    assert kg.search("host9", "keyword").get().hits == []
    assert [h.entity.name for h in kg.search("traffic 443", "keyword").get().hits] == ["modern"]
    updated = kg.update("@Ann", update_entities=[EntityUpdate(name="modern", add_observations=["on 8443 too"])]).get()
    assert updated.errors == [] and updated.updated_entities == ["modern"]


_RETIRE = textwrap.dedent(
    """
    import sys
    from toolcards.knowledge_graph import EntityUpdate
    from toolcards.knowledge_graph._actor import KnowledgeGraphActor
    from toolcards.store import SQLiteStore

    store = SQLiteStore(sys.argv[1])
    ref = KnowledgeGraphActor.start("team-1", store)
    report = ref.proxy().update(
        "@Cy", update_entities=[EntityUpdate(name="legacy", invalidate={"legacy": "decommissioned"})]
    ).get()
    assert report.errors == [], report.errors
    ref.stop()
    store.close()
    """
)


def test_a_merge_sees_an_entity_another_process_said_no_longer_holds(
    start_graph: StartGraph, sqlite_store: SQLiteStore, db_path: Path
) -> None:
    kg = start_graph(on=sqlite_store)
    kg.update("@Ann", create_entities=[ent("legacy", "runs on host9"), ent("modern")]).get()
    assert kg.graph().get().entities[0].current  # this process has read legacy as holding

    subprocess.run(
        [sys.executable, "-c", _RETIRE, str(db_path)],
        check=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    report = kg.merge("@Bob", "modern", ["legacy"]).get()

    assert report.errors and "@Cy" in report.errors[0] and "decommissioned" in report.errors[0]
    graph = kg.graph().get()
    assert [(e.name, e.current, e.aliases) for e in graph.entities] == [("legacy", False, []), ("modern", True, [])]
    assert kg.search("host9", "keyword").get().hits == []


# -- as_of: the graph as it stood before the merge ----------------------------------------


def test_as_of_reads_the_graph_as_it_stood_before_a_merge(
    kg: KnowledgeGraphProxy, clock: Clock, start_graph: StartGraph
) -> None:
    kg.update(
        "@Ann",
        create_entities=[ent("old-db", "stores user rows", entity_type="db"), ent("app")],
        create_relations=[rel("app", "old-db", "reads")],
    ).get()
    then = clock.advance(30)
    clock.advance(30)
    kg.update("@Ann", create_entities=[ent("user-db", "keeps sessions", entity_type="db")]).get()
    clock.advance()
    kg.merge("@Bob", "user-db", ["old-db"]).get()

    def as_of_then(graph: KnowledgeGraphProxy, query: str) -> str:
        result = graph.search(query, "keyword", as_of=then, include_edges=True).get()
        assert [h.entity.name for h in result.hits][:1] == ["user-db"], render_search_result(result)
        return render_search_result(result)

    def check(graph: KnowledgeGraphProxy) -> None:
        text = as_of_then(graph, "user rows")
        assert "- stores user rows" in text and "aka old-db" in text
        assert "keeps sessions" not in text  # recorded after then
        assert "- app -[reads]-> user-db" in text
        assert graph.search("old-db", "keyword", as_of=then).get().exact  # by the source's name
        assert "- stores user rows" in as_of_then(graph, "old-db")
        # Before anything was recorded, nothing was there.
        assert graph.search("user rows", "keyword", as_of=T0 - timedelta(minutes=1)).get().hits == []

    check(kg)
    pykka.ActorRegistry.stop_all()
    check(start_graph(clock=clock))  # the index rebuilt from the store
