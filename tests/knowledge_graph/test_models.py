"""The LLM-facing schemas (limits, no noise) and the rendered text of reports and results."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from toolcards.knowledge_graph._models import (
    Entity,
    EntityCreate,
    EntityUpdate,
    GraphPath,
    Neighbour,
    Relation,
    RelationCreate,
    RelationDelete,
    SearchHit,
    SearchResult,
    UpdateReport,
)
from toolcards.knowledge_graph._render import path_text, render_search_result, render_update_report

INPUTS: list[type[BaseModel]] = [EntityCreate, EntityUpdate, RelationCreate, RelationDelete]


@pytest.mark.parametrize("model", INPUTS)
def test_input_schemas_carry_no_titles_docstrings_or_defaults(model: type[BaseModel]) -> None:
    schema = model.model_json_schema()
    text = json.dumps(schema)
    assert '"title"' not in text
    assert "description" not in schema
    assert "null" not in text
    assert "default" not in text
    assert schema["additionalProperties"] is False


def test_length_limits_are_enforced_but_not_listed_in_the_schema() -> None:
    from pydantic import ValidationError

    # Every request pays for every word of the schema: the bounds are checked, not shown.
    for schema in (EntityCreate.model_json_schema(), EntityUpdate.model_json_schema()):
        assert "maxLength" not in str(schema) and "maxItems" not in str(schema)
    for too_long in (
        {"name": "n" * 121, "entity_type": "t"},
        {"name": "n", "entity_type": "t" * 61},
        {"name": "n", "entity_type": "t", "description": "d" * 501},
        {"name": "n", "entity_type": "t", "observations": ["o" * 4001]},
        {"name": "n", "entity_type": "t", "observations": ["o"] * 51},
        {"name": " ", "entity_type": "t"},
    ):
        with pytest.raises(ValidationError):
            EntityCreate.model_validate(too_long)
    with pytest.raises(ValidationError, match="at most 60 characters"):
        RelationCreate(from_entity="a", to_entity="b", relation_type="r" * 61)


def test_the_whole_input_schema_stays_small() -> None:
    # Every character here is paid for on every model request.
    total = sum(len(json.dumps(model.model_json_schema(), separators=(",", ":"))) for model in INPUTS)
    assert total < 1800


@pytest.mark.parametrize(
    "data",
    [
        {"name": "x" * 121, "entity_type": "t"},
        {"name": "  ", "entity_type": "t"},
        {"name": "a", "entity_type": "t" * 61},
        {"name": "a", "entity_type": "t", "description": "d" * 501},
        {"name": "a", "entity_type": "t", "observations": ["o" * 4001]},
        {"name": "a", "entity_type": "t", "observations": [f"o{i}" for i in range(51)]},
        {"name": "a", "entity_type": "t", "observation": ["typo field"]},
    ],
)
def test_entity_create_rejects_what_the_schema_forbids(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        EntityCreate.model_validate(data)


def test_inputs_strip_surrounding_whitespace() -> None:
    entity = EntityCreate(name="  Alice ", entity_type=" person", observations=[" likes tea "])
    assert (entity.name, entity.entity_type, entity.observations) == ("Alice", "person", ["likes tea"])


def test_entity_update_leaves_unset_fields_as_none() -> None:
    update = EntityUpdate(name="Alice")
    assert (update.entity_type, update.description, update.is_root) == (None, None, None)
    assert update.add_observations == [] and update.remove_observations == []


def test_relation_key_is_the_triple() -> None:
    assert Relation(from_entity="a", to_entity="b", relation_type="uses").key == ("a", "b", "uses")
    assert RelationDelete(from_entity="a", to_entity="b", relation_type="uses").key == ("a", "b", "uses")


def test_update_report_renders_applied_and_skipped() -> None:
    rel = Relation(from_entity="A", to_entity="B", relation_type="uses")
    report = UpdateReport(created_entities=["A", "B"], created_relations=[rel], skipped_relations=[rel])
    assert report.changed
    assert render_update_report(report) == (
        "Applied: created entities A, B; created 1 relation.\nSkipped existing relations: A -[uses]-> B."
    )
    replayed = report.model_copy(update={"seq": 4, "replayed": True})
    assert render_update_report(replayed).startswith(
        "This call was already applied (graph change 4); nothing was written again.\nApplied: created entities A, B"
    )


def test_update_report_with_refusals_says_nothing_was_applied() -> None:
    report = UpdateReport(errors=["Entity 'C' does not exist.", "bad"])
    assert not report.changed
    assert report.summary_line() == "no changes"
    assert render_update_report(report) == (
        "Nothing was applied (a batch is all or nothing). Fix these and send the whole batch again:\n"
        "- Entity 'C' does not exist.\n- bad"
    )
    assert render_update_report(UpdateReport()) == "No changes applied."


def test_update_report_caps_listed_names() -> None:
    report = UpdateReport(created_entities=[f"e{i}" for i in range(25)])
    assert report.summary_line() == "created entities e0, e1, e2, e3, e4, e5, e6, e7, e8, e9 (+15 more)"


def test_path_render_keeps_each_relation_direction() -> None:
    path = GraphPath(
        nodes=["A", "B", "C"],
        relations=[
            Relation(from_entity="A", to_entity="B", relation_type="works_at"),
            Relation(from_entity="C", to_entity="B", relation_type="owns"),
        ],
    )
    assert path_text(path) == "A -[works_at]-> B <-[owns]- C"


def test_search_result_render() -> None:
    hit = SearchHit(
        entity=Entity(name="A", entity_type="person", description="d", observations=["o1"], is_root=True),
        score=0.8125,
        neighbours=[Neighbour(name="B", entity_type="team", relation_type="leads", outgoing=True)],
        more_neighbours=2,
    )
    result = SearchResult(
        query="a", mode="keyword", hits=[hit], edges=[], paths=[], max_path_length=4, note="fell back"
    )
    assert render_search_result(result) == (
        "Note: fell back\n"
        "1 hit for 'a' (keyword):\n"
        "1. A [person root] 0.81\n"
        "   d\n"
        "   - o1\n"
        "   neighbours: -[leads]-> B [team] (+2 more)\n"
        "Edges: none.\n"
        "Paths: none within 4 hops between the top hits."
    )


def test_search_result_without_hits_says_so() -> None:
    assert render_search_result(SearchResult(query="zzz", mode="hybrid")) == "No entities match 'zzz'."
