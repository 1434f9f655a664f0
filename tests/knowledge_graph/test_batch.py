"""stage_update: the fixed order of a batch, over committed state it never modifies."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from toolcards.knowledge_graph._batch import Stamp, stage_update
from toolcards.knowledge_graph._models import (
    Entity,
    EntityCreate,
    EntityUpdate,
    Relation,
    RelationCreate,
    RelationDelete,
    RelationKey,
)

STAMP = Stamp(agent="@Ann", task_id=7, now=datetime(2026, 3, 1, tzinfo=UTC), seq=5)


def committed() -> tuple[dict[str, Entity], dict[RelationKey, Relation], dict[str, dict[RelationKey, None]]]:
    entities = {n: Entity(name=n, entity_type="t", observations=["o"]) for n in ("A", "B")}
    relation = Relation(from_entity="A", to_entity="B", relation_type="uses")
    return entities, {relation.key: relation}, {"A": {relation.key: None}, "B": {relation.key: None}}


def test_staging_leaves_the_committed_graph_untouched() -> None:
    entities, relations, links = committed()
    before = copy.deepcopy((entities, relations, links))
    batch = stage_update(
        entities,
        relations,
        links,
        stamp=STAMP,
        create_entities=[EntityCreate(name="C", entity_type="t")],
        create_relations=[RelationCreate(from_entity="C", to_entity="A", relation_type="uses")],
        update_entities=[EntityUpdate(name="A", add_observations=["p"])],
        delete_entities=["B"],
    )
    assert (entities, relations, links) == before
    staged = batch.entities["A"]
    assert staged is not None and [o.text for o in staged.observations] == ["o", "p"]
    assert [(o.id, o.created_by, o.task_id) for o in staged.observations] == [("A#0", "", None), ("5.1", "@Ann", 7)]
    assert batch.entities["B"] is None
    assert set(batch.relations) == {("C", "A", "uses"), ("A", "B", "uses")}
    assert batch.relations[("A", "B", "uses")] is None
    assert batch.report.changed and batch.report.errors == []


def test_relations_created_in_the_batch_are_deleted_with_their_entity() -> None:
    entities, relations, links = committed()
    batch = stage_update(
        entities,
        relations,
        links,
        stamp=STAMP,
        create_entities=[EntityCreate(name="C", entity_type="t")],
        create_relations=[RelationCreate(from_entity="C", to_entity="B", relation_type="x")],
        delete_relations=[RelationDelete(from_entity="C", to_entity="B", relation_type="x")],
        delete_entities=["C"],
    )
    assert batch.report.errors == []
    assert batch.entities == {"C": None}
    assert batch.relations == {("C", "B", "x"): None}
    assert [r.key for r in batch.report.deleted_relations] == [("C", "B", "x")]


def test_delete_names_are_stripped() -> None:
    entities, relations, links = committed()
    batch = stage_update(entities, relations, links, stamp=STAMP, delete_entities=["  A "])
    assert batch.report.deleted_entities == ["A"]
