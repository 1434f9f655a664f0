"""The argument schemas of the built-in cards' capabilities, written once per release.

Answering a first ``tools/list`` used to build a pydantic model for every capability only to
write its JSON schema: tens of milliseconds of a server's start-up, for models most of which
no call ever needs. ``toolcards/_tool_schemas.json`` holds those schemas as
:func:`~toolcards.core._schema.build_args_schema` writes them, keyed by the handler's module,
qualified name and tool name; a capability's model is then built at its first call.

The table is written by ``python scripts/tool_schemas.py`` and checked by
``tests/core/test_shipped_schemas.py``, which fails when any entry differs from what the
signature gives now. A handler not in the table (a card of your own, a subclass's override) has
its schema built from its signature, as before.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SHIPPED_SCHEMAS_FILE", "current_schemas", "schema_key", "shipped_schema", "table_text"]

SHIPPED_SCHEMAS_FILE = "_tool_schemas.json"
"""The table's file name, in the ``toolcards`` package."""

_table: dict[str, dict[str, Any]] | None = None
_lock = threading.Lock()


def schema_key(func: Callable[..., Any], name: str) -> str | None:
    """The table's key of ``func`` (a function or bound method) offered as ``name``; ``None``
    for a function outside the ``toolcards`` package."""
    function = getattr(func, "__func__", func)
    module = getattr(function, "__module__", None) or ""
    if not module.startswith("toolcards."):
        return None
    return f"{module}:{getattr(function, '__qualname__', '')}:{name}"


def shipped_schema(key: str) -> dict[str, Any] | None:
    """The shipped JSON schema for ``key``, or ``None``. Shared: treat it as read-only."""
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                try:
                    text = (Path(__file__).parents[1] / SHIPPED_SCHEMAS_FILE).read_text(encoding="utf-8")
                    _table = json.loads(text)["schemas"]
                except (OSError, ValueError, KeyError):  # no table (a partial install): build them all
                    _table = {}
    return _table.get(key)


def current_schemas() -> dict[str, dict[str, Any]]:
    """Every built-in card capability's schema as its signature gives it now (what the table
    must hold). Imports every built-in card."""
    from toolcards.core._registry import BUILTIN_CARDS, card_class
    from toolcards.core._schema import build_args_schema, compact_json_schema

    table: dict[str, dict[str, Any]] = {}
    for kind in sorted(BUILTIN_CARDS):
        card = card_class(kind).model_construct()
        for capability in type(card)._capabilities:
            handler = capability.bound_to(card).handler
            key = schema_key(handler, capability.name)
            if key is not None:
                model = build_args_schema(handler, name=capability.name).model
                table[key] = compact_json_schema(model.model_json_schema())
    return table


def table_text(schemas: dict[str, dict[str, Any]]) -> str:
    """The table file's content for ``schemas``: the keys sorted, each schema's own order kept
    (a model reads the parameters in that order), indented so a change shows as a small diff."""
    ordered = {key: schemas[key] for key in sorted(schemas)}
    return json.dumps({"schemas": ordered}, indent=1, ensure_ascii=False) + "\n"
