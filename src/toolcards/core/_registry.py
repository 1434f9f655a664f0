"""Cards as configuration: card kinds, and ``dump_cards`` / ``load_cards``.

Each card class has a ``kind``. A list of cards dumps to plain data (``[{"kind": ...,
...fields}]``) that round-trips exactly through JSON and YAML, so a team's abilities are
a config file. Built-in kinds are imported only when a config names them; third-party
cards register through the entry-point group ``toolcards.cards`` (``name = "pkg.mod:Card"``).
Bad config, whatever its shape, is a :class:`~toolcards.errors.WiringError` naming what was
expected and what was given.
"""

from __future__ import annotations

import importlib
import reprlib
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolcards.errors import WiringError

if TYPE_CHECKING:
    from toolcards.core._card import ToolCard

__all__ = [
    "BUILTIN_CARDS",
    "card_class",
    "card_kinds",
    "dump_cards",
    "load_cards",
    "register_card_class",
    "registered_card_classes",
]

BUILTIN_CARDS: dict[str, str] = {
    "workspace": "toolcards.workspace._tool:WorkspaceTool",
    "planning": "toolcards.planning._tool:PlanningTool",
    "knowledge_graph": "toolcards.knowledge_graph._tool:KnowledgeGraphTool",
    "exec": "toolcards.sandbox._tool:ExecTool",
    "search": "toolcards.search._tool:SearchTool",
    "mcp": "toolcards.mcp._tool:MCPTool",
    "team": "toolcards.team._tool:TeamTool",
    "messaging": "toolcards.team._tool:MessagingTool",
    "spilled_output": "toolcards.spill._tool:SpilledOutputTool",
    "usage": "toolcards.usage._tool:UsageTool",
    "skills": "toolcards.skills._tool:SkillsTool",
    "metadata": "toolcards.metadata._tool:MetadataTool",
    "model": "toolcards.model._tool:ModelTool",
}
"""Kind → ``module:Class`` of the cards shipped with toolcards, imported on demand."""

ENTRY_POINT_GROUP = "toolcards.cards"

_registered: dict[str, type[ToolCard]] = {}
_lock = threading.Lock()


def register_card_class(cls: type[ToolCard]) -> None:
    """Record ``cls`` under its kind (called for every ``ToolCard`` subclass when defined).

    A later class with the same kind replaces the earlier one, so a redefined class (in a
    reloaded module or a test) wins.
    """
    with _lock:
        _registered[cls.kind] = cls


def registered_card_classes() -> list[type[ToolCard]]:
    """The card classes defined (imported) in this process so far; imports nothing."""
    with _lock:
        return list(_registered.values())


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def card_kinds() -> dict[str, str]:
    """Every known kind → where its class lives (built-ins, entry points, registered classes)."""
    kinds = dict(BUILTIN_CARDS)
    for ep in _entry_points():
        kinds.setdefault(ep.name, ep.value)
    with _lock:
        for kind, cls in _registered.items():
            kinds.setdefault(kind, f"{cls.__module__}:{cls.__qualname__}")
    return kinds


def card_class(kind: str) -> type[ToolCard]:
    """The card class for ``kind``, importing it if needed.

    Raises:
        WiringError: no built-in, entry-point or registered card has that kind.
    """
    with _lock:
        cls = _registered.get(kind)
    if cls is not None:
        return cls
    target = BUILTIN_CARDS.get(kind)
    if target is None:
        matches = [ep.value for ep in _entry_points() if ep.name == kind]
        target = matches[0] if matches else None
    if target is None:
        known = ", ".join(sorted(card_kinds()))
        raise WiringError(f"Unknown card kind {kind!r}. Known kinds: {known}.")
    module_name, _, attr = target.partition(":")
    loaded = getattr(importlib.import_module(module_name), attr)
    with _lock:
        _registered.setdefault(kind, loaded)
    return _registered[kind]


def dump_cards(cards: Iterable[ToolCard]) -> list[dict[str, Any]]:
    """Plain data for ``cards`` (JSON/YAML-ready), each with its ``kind`` first."""
    return [{"kind": type(card).kind, **card.model_dump(mode="json")} for card in cards]


def load_cards(data: Iterable[Mapping[str, Any]]) -> list[ToolCard]:
    """Cards from data made by :func:`dump_cards` (or written by hand).

    Args:
        data: a list (or another iterable, but not a string or a mapping) of mappings, each
            with a ``kind`` and that card's fields.

    Raises:
        WiringError: ``data`` is not a list of card mappings (``None``, a string, one card's
            mapping on its own...); or an entry is not a mapping, has no ``kind``, names an
            unknown kind or has invalid fields: every problem is listed with its position.
    """
    from pydantic import ValidationError

    cards: list[ToolCard] = []
    problems: list[str] = []
    for index, entry in enumerate(_entries(data)):
        if not isinstance(entry, Mapping):
            problems.append(f"card #{index}: must be a mapping with a 'kind' key, not {_given(entry)}")
            continue
        if "kind" not in entry:
            keys = ", ".join(str(key) for key in entry) or "no keys"
            problems.append(f"card #{index}: needs a 'kind' key (it has {keys})")
            continue
        kind = entry["kind"]
        if not isinstance(kind, str):
            problems.append(f"card #{index}: 'kind' must be the name of a card kind (text), not {_given(kind)}")
            continue
        fields = {k: v for k, v in entry.items() if k != "kind"}
        try:
            cards.append(card_class(kind).model_validate(fields))
        except WiringError as exc:
            problems.append(f"card #{index}: {exc}")
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors(include_url=False)
            )
            problems.append(f"card #{index} ({kind}): {details}")
    if problems:
        raise WiringError("Invalid card config: " + " | ".join(problems))
    return cards


def _entries(data: object) -> Iterable[object]:
    """``data`` if it can be a list of cards; a string or a mapping iterates, but as characters or keys."""
    expected = "Card config must be a list of card mappings ([{'kind': ...}, ...])"
    if isinstance(data, Mapping):
        hint = ""
        if "kind" in data:
            more = ", ..." if len(data) > 1 else ""
            hint = f" If it is one card, put it in a list: [{{'kind': {data['kind']!r}{more}}}]."
        raise WiringError(f"{expected}, not {_given(data)}.{hint}")
    if isinstance(data, str | bytes) or not isinstance(data, Iterable):
        raise WiringError(f"{expected}, not {_given(data)}.")
    return data


def _given(value: object) -> str:
    """What a config held where something else was expected, short enough for one line."""
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        keys = [str(key) for key in value]
        shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
        return f"a mapping (keys: {shown})" if keys else "an empty mapping"
    return f"{type(value).__name__} {reprlib.repr(value)}"
