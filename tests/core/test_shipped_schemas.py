"""The shipped argument schemas are the ones the signatures give, and a server lists them
without building a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolcards
from toolcards.core import _shipped_schemas
from toolcards.core._schema import build_args_schema
from toolcards.core._shipped_schemas import SHIPPED_SCHEMAS_FILE, current_schemas, schema_key, table_text
from toolcards.workspace import WorkspaceTool

TABLE = Path(toolcards.__file__).parent / SHIPPED_SCHEMAS_FILE


def test_the_table_is_what_the_signatures_give_now() -> None:
    written = TABLE.read_text(encoding="utf-8")
    assert written == table_text(current_schemas()), (
        "A built-in capability's signature or Args: changed: run `.venv/bin/python scripts/tool_schemas.py`."
    )


def test_every_capability_of_the_built_in_cards_is_in_the_table() -> None:
    schemas = json.loads(TABLE.read_text(encoding="utf-8"))["schemas"]
    card = WorkspaceTool()
    names = {capability.name for capability in type(card)._capabilities}
    assert {"workspace_read", "workspace_list", "workspace_move"} <= names
    for capability in type(card)._capabilities:
        assert schema_key(capability.bound_to(card).handler, capability.name) in schemas


def test_a_listed_built_in_schema_builds_no_model() -> None:
    card = WorkspaceTool()
    handler = next(c for c in type(card)._capabilities if c.name == "workspace_info").bound_to(card).handler
    schema = build_args_schema(handler, name="workspace_info")
    schema.__dict__.pop("model", None)
    schema.__dict__.pop("json_schema", None)
    assert schema.json_schema["properties"]["path"]["type"] == "string"
    assert "model" not in schema.__dict__  # built at the first call, not to list the tool


def test_a_card_of_your_own_gets_its_schema_from_its_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    def lookup(days: int, city: str = "Paris") -> str:
        """Look the weather up."""
        return city

    assert schema_key(lookup, "lookup") is None
    monkeypatch.setattr(_shipped_schemas, "_table", {})  # a table that lost its entries changes nothing either
    card = WorkspaceTool()
    handler = next(c for c in type(card)._capabilities if c.name == "workspace_move").bound_to(card).handler
    shipped = json.loads(TABLE.read_text(encoding="utf-8"))["schemas"][schema_key(handler, "workspace_move")]
    rebuilt = build_args_schema(handler, name="workspace_move")
    rebuilt.__dict__.pop("json_schema", None)
    assert rebuilt.json_schema == shipped
    assert list(build_args_schema(lookup, name="lookup").json_schema["properties"]) == ["days", "city"]
