from __future__ import annotations

import gc
import json
import weakref
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from toolcards import RetriableError, WiringError
from toolcards.core._schema import build_args_schema


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Point(BaseModel):
    x: int
    y: int


def sample(
    path: str,
    mode: Literal["a", "b"] = "a",
    limit: Annotated[int, Field(ge=1, le=10, description="At most ten.")] = 5,
    points: list[Point] | None = None,
) -> str:
    """Do a thing.

    More detail here.

    Args:
        path: Where to do it,
            across two lines.
        mode: Which mode.

    Returns:
        Never shown to models.
    """
    return path


def schema_text(schema: dict[str, object]) -> str:
    return json.dumps(schema)


def test_schema_is_compact_and_closed() -> None:
    args = build_args_schema(sample, name="sample")
    schema = args.json_schema
    assert '"title"' not in schema_text(schema)
    assert "$defs" not in schema and "$ref" not in schema_text(schema)
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["path"]
    props = schema["properties"]
    assert props["path"] == {"description": "Where to do it, across two lines.", "type": "string"}
    assert props["mode"]["enum"] == ["a", "b"] and props["mode"]["type"] == "string"
    assert props["limit"]["minimum"] == 1 and props["limit"]["maximum"] == 10
    assert props["limit"]["description"] == "At most ten."
    # Optional (X | None = None) arguments are shown as X: models omit them rather than send null.
    assert "null" not in schema_text(props["points"]) and "default" not in props["points"]
    point = props["points"]["items"]
    assert point["additionalProperties"] is False and set(point["properties"]) == {"x", "y"}
    assert args.description == "Do a thing.\n\nMore detail here."
    assert "Returns" not in args.description


def test_recursive_models_keep_their_definitions() -> None:
    def tree(root: Node) -> str:
        """Walk a tree."""
        return root.label

    schema = build_args_schema(tree, name="tree").json_schema
    assert "Node" in schema["$defs"]
    assert '"title"' not in schema_text(schema)


def test_validation_is_lax_where_models_are_loose() -> None:
    args = build_args_schema(sample, name="sample")
    out = args.validate("sample", {"path": "x", "limit": "7", "points": '[{"x": 1, "y": "2"}]'})
    assert out["limit"] == 7
    assert out["points"] == [Point(x=1, y=2)]


def test_unknown_keys_are_refused_naming_the_accepted_parameters() -> None:
    args = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError) as err:
        args.validate("sample", {"path": "x", "pth": "y"})
    message = str(err.value)
    assert "unknown parameter pth" in message
    assert "Accepted parameters: path (string, required), mode (string), limit (integer)" in message


def test_bad_values_name_the_field_and_the_value() -> None:
    args = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError) as err:
        args.validate("sample", {"path": "x", "limit": 50, "mode": "z"})
    message = str(err.value)
    assert "limit: Input should be less than or equal to 10 (got 50)" in message
    assert "mode: Input should be 'a' or 'b' (got 'z')" in message


def test_missing_annotations_and_varargs_are_wiring_errors() -> None:
    def bad(a, *rest: int) -> None:  # type: ignore[no-untyped-def]
        """Bad."""

    with pytest.raises(WiringError) as err:
        build_args_schema(bad, name="bad")
    assert "'a' has no type annotation" in str(err.value)
    assert "'rest' is *args/**kwargs" in str(err.value)


class Documented(BaseModel):
    """Developer notes that must not reach a model."""

    value: int


def test_model_docstrings_stay_out_of_schemas() -> None:
    def use(plain: Documented, described: Annotated[Documented, Field(description="What to use.")]) -> None:
        """Use them."""

    props = build_args_schema(use, name="use").json_schema["properties"]
    assert "description" not in props["plain"]
    assert props["described"]["description"] == "What to use."
    assert "Developer notes" not in schema_text(props)


def test_a_million_bad_items_give_a_short_answer_with_the_count() -> None:
    schema = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError) as err:
        schema.validate("sample", {"path": "p", "points": [{"x": "no", "y": 1}] * 1_000_000})
    message = str(err.value)
    assert message.startswith("Invalid arguments for sample: points.0.x: Input should be a valid integer")
    assert "points.4.x" in message and "points.5.x" not in message  # examples from a sample
    assert "1,000,000 problems in all" in message and len(message) < 1000


def test_at_most_ten_problems_are_listed() -> None:
    schema = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError) as err:
        schema.validate("sample", {"path": "p", "points": [{"x": "no", "y": 1}] * 30})
    message = str(err.value)
    assert "points.9.x" in message and "points.10.x" not in message and "30 problems in all" in message


def test_values_in_messages_are_clipped_cheaply() -> None:
    schema = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError) as err:
        schema.validate("sample", {"path": {"deep": [list(range(10**6))] * 3}, "limit": 10**10_000})
    message = str(err.value)
    assert (
        "path: Input should be a valid string (got {'deep': [[0, 1, 2, 3, 4, 5, ...], [0, 1, 2, 3, 4, 5, ......)"
        in message
    )
    assert "limit: Input should be less than or equal to 10 (got a very long number)" in message
    assert len(message) < 500


def test_json_text_nested_too_deeply_is_a_validation_error() -> None:
    schema = build_args_schema(sample, name="sample")
    with pytest.raises(RetriableError, match="points: Input should be a valid list"):
        schema.validate("sample", {"path": "p", "points": "[" * 100_000 + "]" * 100_000})


def test_a_schema_is_built_once_per_capability_and_only_when_used() -> None:
    from tests.core.cards import GreeterCard
    from toolcards.core._schema import build_args_schema

    first, second = GreeterCard(), GreeterCard(motd_text="other")
    schema = build_args_schema(first.greet_someone, name="greet_someone")
    # Every card object of the class shares it: binding another one costs no model.
    assert build_args_schema(second.greet_someone, name="greet_someone") is schema
    fresh = build_args_schema(first.greet_someone, name="greet_someone_again")
    assert "model" not in vars(fresh)  # nothing built yet
    assert fresh.json_schema["required"] == ["name"]
    assert "model" in vars(fresh)


def test_a_function_made_per_session_is_not_kept_by_its_schema() -> None:
    # A server makes some tools per session (a closure over that session's tools): once the
    # session ends, its function and everything it refers to must be free to go.
    class Held:
        pass

    def make_tool(held: Held) -> object:
        def context(detail: bool = False) -> str:
            """Say what is held."""
            return repr(held) if detail else "held"

        return context

    held = Held()
    tool = make_tool(held)
    first = build_args_schema(tool, name="context")  # type: ignore[arg-type]
    assert build_args_schema(tool, name="context") is first  # built once per function
    kept_alive = weakref.ref(held)
    del held, tool, first
    gc.collect()
    assert kept_alive() is None
