"""``toolcards cards``: the card kinds available, their capabilities, channels and schemas.

Kinds come from :func:`toolcards.core._registry.card_kinds` (built-in cards and the
``toolcards.cards`` entry points). Each is imported to describe it; a kind whose import
fails is listed with the error instead of stopping the listing. A kind asked for that is
not known is a usage error (exit code 2). ``--json`` prints one JSON list for machines.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from toolcards.cli._console import UsageError, one_line, progress, summary

if TYPE_CHECKING:
    from toolcards.core._card import ToolCard

__all__ = ["describe_card", "describe_kinds", "register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``cards`` to the command line."""
    parser = subparsers.add_parser(
        "cards", parents=parents, help="list the card kinds available", description=summary(__doc__)
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("kinds", nargs="*", metavar="KIND", help="only these kinds")
    parser.set_defaults(handler=run)


def describe_card(card_class: type[ToolCard]) -> dict[str, Any]:
    """A card class as data: summary, observer, config fields and capabilities with schemas.

    A capability's ``channels`` are those its default param exposes (empty when off by
    default); ``serves`` are those it can be exposed on.
    """
    from toolcards.core._tool import Tool

    try:
        card = card_class()
    except Exception:
        # Required fields: describe the capabilities from an unvalidated instance.
        card = card_class.model_construct()
    capability_fields = {cap.field for cap in card.capabilities()}
    capabilities = []
    for cap in card.capabilities():
        param = card.param(cap.field)
        tool = Tool.from_function(cap.handler, name=cap.name, instructions=param.instructions if param else None)
        capabilities.append(
            {
                "name": cap.name,
                "field": cap.field,
                "description": tool.description,
                "channels": sorted(channel.value for channel in (param.expose if param else ())),
                "serves": sorted(channel.value for channel in cap.serves),
                "mutates": cap.mutates,
                "requires_approval": bool(param and param.requires_approval),
                "parameters": tool.parameters_schema,
            }
        )
    fields = {
        name: _json_value(getattr(card, name, info.default))
        for name, info in type(card).model_fields.items()
        if name not in capability_fields
    }
    required = type(card).requires_observer
    return {
        "kind": card_class.kind,
        "class": f"{card_class.__module__}:{card_class.__qualname__}",
        "summary": (card_class.__doc__ or "").strip().split("\n", 1)[0],
        "requires_observer": required.__name__ if required is not None else None,
        "fields": fields,
        "capabilities": capabilities,
    }


def describe_kinds(kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Every known kind (or ``kinds``) described; a kind that fails to import has ``error``."""
    from toolcards.core._registry import card_class, card_kinds

    known = card_kinds()
    wanted = kinds or sorted(known)
    described: list[dict[str, Any]] = []
    for kind in wanted:
        try:
            described.append(describe_card(card_class(kind)))
        except Exception as exc:
            described.append(
                {"kind": kind, "class": known.get(kind), "error": f"{type(exc).__name__}: {one_line(exc)}"}
            )
    return described


def run(args: argparse.Namespace) -> int:
    """Print the card kinds; returns 0 (a kind that fails to import is reported, not fatal).

    Raises:
        UsageError: a kind asked for is not known (none is described then).
    """
    from toolcards.core._registry import card_kinds

    known = card_kinds()
    unknown = [kind for kind in args.kinds if kind not in known]
    if unknown:
        names = ", ".join(repr(kind) for kind in unknown)
        raise UsageError(
            f"unknown card kind{'s' if len(unknown) > 1 else ''} {names}. Known kinds: {', '.join(sorted(known))} "
            "(a kind of your own is known once its module is imported or it has a toolcards.cards entry point)."
        )
    if not args.json:
        progress("loading card kinds")
    described = describe_kinds(args.kinds or None)
    if args.json:
        json.dump(described, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    for entry in described:
        print(f"{entry['kind']}  ({entry.get('class')})")
        if "error" in entry:
            print(f"  unavailable: {entry['error']}")
            continue
        if entry["summary"]:
            print(f"  {entry['summary']}")
        for cap in entry["capabilities"]:
            channels = ", ".join(cap["channels"]) or "off by default"
            print(f"  {_signature(cap)}  [{channels}]")
            print(f"      {cap['description'].splitlines()[0] if cap['description'] else ''}")
    return 0


def _signature(capability: dict[str, Any]) -> str:
    schema = capability["parameters"]
    required = set(schema.get("required", ()))
    params = [
        f"{name}: {_type_name(prop)}" if name in required else f"{name}: {_type_name(prop)} = …"
        for name, prop in schema.get("properties", {}).items()
    ]
    return f"{capability['name']}({', '.join(params)})"


def _type_name(prop: dict[str, Any]) -> str:
    if "type" in prop:
        return str(prop["type"])
    options = [str(p.get("type")) for p in prop.get("anyOf", []) if p.get("type") not in (None, "null")]
    return "|".join(options) or "any"


def _json_value(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
