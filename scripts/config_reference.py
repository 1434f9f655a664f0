"""The configuration reference, written from the code: card kinds, params, settings, the CLI.

    python scripts/config_reference.py            # the whole reference, as Markdown
    python scripts/config_reference.py cards cli  # only these sections

The docs site calls :func:`section` from its build hook (``scripts/mkdocs_hooks.py``) for
each ``<!-- reference: NAME -->`` marker, so the published reference is rebuilt from the
card classes, ``ServeConfig``, the task models and the argument parser every time the site
is built, and cannot drift from them. What it reads: each built-in card kind and each one
installed packages register (:func:`published_kinds`); each field's annotation, default and
constraints; its description from ``Field(description=...)``, the attribute docstring under
it, or the class docstring's ``Args:``/``Attributes:`` entry, in that order; each
capability's tool name, channels and flags from ``card.capabilities()``; the YAML of a
default card from :func:`toolcards.dump_cards`.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from toolcards import BaseToolParam, ToolCard, dump_cards
from toolcards.core._channels import Channels
from toolcards.core._registry import BUILTIN_CARDS, ENTRY_POINT_GROUP, card_class

__all__ = ["SECTIONS", "field_docs", "main", "nested_models", "published_kinds", "section"]

CHANNEL_WORDS = {Channels.TOOL_CALL: "tool call", Channels.SYSTEM_PROMPT: "system prompt", Channels.COMMAND: "command"}
OBSERVER_WORDS = {
    None: "any agent, or none (no team needed)",
    "ActorToolObserver": "a member of a team (`team.member(...)`, an MCP session, `FakeObserver` in tests)",
    "TeamManagementToolObserver": "a member of a `TeamRuntime`, which can hire and fire",
}


# -- docstrings -------------------------------------------------------------------------------


def _class_docstring_entries(cls: type) -> dict[str, str]:
    """``name: text`` entries of the ``Args:`` and ``Attributes:`` sections of ``cls.__doc__``."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    entries: dict[str, str] = {}
    for block in re.finditer(r"^(?:Args|Attributes):\n((?:[ \t]+.*\n?|\n)+)", doc, flags=re.M):
        name = None
        for line in textwrap.dedent(block.group(1)).splitlines():
            match = re.match(r"^(\w+)(?: \([^)]*\))?: ?(.*)$", line)
            if match:
                name = match.group(1)
                entries[name] = match.group(2)
            elif name and line.strip():
                entries[name] += " " + line.strip()
    return entries


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The string literal under each annotated attribute of ``cls``'s own body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    found = {}
    for statement, following in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field of ``model`` → its description (empty when it has none)."""
    docs: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if isinstance(klass, type) and issubclass(klass, BaseModel) and klass is not BaseModel:
            docs.update(_class_docstring_entries(klass))
            docs.update(_attribute_docstrings(klass))
    return {
        name: (info.description or docs.get(name, "")).strip()
        for name, info in model.model_fields.items()
        if not info.exclude
    }


def markdown(text: str) -> str:
    """A docstring's text as Markdown on one line: reStructuredText roles and literals become
    code spans, and outside them the characters Markdown would read as markup are escaped."""
    text = re.sub(r":\w+:`([^`<]*?)\s*<[^>]*>`", r"\1", text)
    text = re.sub(r":\w+:`~([^`]*)`", lambda m: f"``{m.group(1).rsplit('.', 1)[-1]}``", text)
    text = re.sub(r":\w+:`([^`]*)`", r"``\1``", text)
    text = text.replace("``", "`")
    pieces = re.split(r"(`[^`]*`)", " ".join(text.split()))
    for index in range(0, len(pieces), 2):
        pieces[index] = pieces[index].replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")
    return "".join(pieces).replace("|", "\\|")


def summary(func: Callable[..., Any]) -> str:
    """The first paragraph of ``func``'s docstring."""
    return markdown(inspect.cleandoc(func.__doc__ or "").split("\n\n", 1)[0])


# -- types and values -------------------------------------------------------------------------


def type_name(annotation: Any) -> str:
    """``annotation`` as a reader writes it: ``int``, ``str | None``, ``"off" | "normal"``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(arg) for arg in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        inner = ", ".join("..." if arg is Ellipsis else type_name(arg) for arg in args)
        return f"{name}[{inner}]"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel) and annotation.model_fields:
            return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def constraints(info: FieldInfo) -> str:
    """``info``'s bounds in words: ``>= 1, <= 3600``."""
    words = []
    for item in info.metadata:
        for attribute, symbol in BOUNDS:
            value = getattr(item, attribute, None)
            if value is not None:
                words.append(f"{symbol} `{value}`")
    return ", ".join(dict.fromkeys(words))


BOUNDS = (
    ("gt", ">"),
    ("ge", ">="),
    ("lt", "<"),
    ("le", "<="),
    ("min_length", "min length"),
    ("max_length", "max length"),
    ("pattern", "pattern"),
)


def default_value(info: FieldInfo) -> str:
    """``info``'s default as it reads in a config file, or *required*."""
    if info.default is PydanticUndefined and info.default_factory is None:
        return "*required*"
    value = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return f"`{type(value).__name__}()`"
    if isinstance(value, set | frozenset):
        value = sorted(value, key=str)
    plain = to_jsonable_python(value)
    text = json.dumps(plain)
    if len(text) > 60:
        return f"{len(plain)} items" if isinstance(plain, list) else "*see the YAML below*"
    return f"`{text}`"


def fields_table(model: type[BaseModel], *, skip: set[str] = frozenset(), docs: dict[str, str] | None = None) -> str:
    """A Markdown table of ``model``'s fields: name, type, default, description."""
    docs = field_docs(model) if docs is None else docs
    rows = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in skip or info.exclude:
            continue
        kind = type_name(info.annotation)
        bounds = constraints(info)
        kind += f" ({bounds})" if bounds else ""
        rows.append(f"| `{name}` | {kind} | {default_value(info)} | {markdown(docs.get(name, ''))} |")
    return "\n".join(rows)


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


# -- cards ------------------------------------------------------------------------------------


def published_kinds() -> list[str]:
    """The built-in card kinds, then those installed packages register under the entry-point
    group ``toolcards.cards`` (not classes that a script or a test merely defined)."""
    from importlib.metadata import entry_points

    kinds = list(BUILTIN_CARDS)
    return kinds + [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in kinds]


def _param_class(card: type[ToolCard], field: str) -> type[BaseToolParam]:
    for model in _models_in(card.model_fields[field].annotation):
        if issubclass(model, BaseToolParam):
            return model
    raise TypeError(f"{card.__name__}.{field} is not a capability field")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _channels(channels: Any) -> str:
    return ", ".join(CHANNEL_WORDS[c] for c in Channels if c in channels) or "none"


def card_section(kind: str) -> str:
    """One card kind: what it is, its capabilities, its settings, its options, its YAML."""
    cls = card_class(kind)
    card = cls()
    observer = cls.requires_observer.__name__ if cls.requires_observer is not None else None
    binds_to = OBSERVER_WORDS.get(observer, f"an observer implementing `{observer}`")
    lines = [
        f"### `{kind}`: {cls.__name__} {{#{kind.replace('_', '-')}}}",
        "",
        f"`{cls.__module__.rsplit('.tool', 1)[0]}.{cls.__name__}` · binds to {binds_to}.",
        "",
        markdown(inspect.cleandoc(cls.__doc__ or "").split("\n\n", 1)[0]),
        "",
    ]
    capabilities = list(card.capabilities())
    capability_fields = {cap.field for cap in capabilities}
    if capabilities:
        lines += [
            "| tool | field default | channels by default | can serve | changes state | outside data | what it does |",
            "|---|---|---|---|---|---|---|",
        ]
        for cap in capabilities:
            param = card.param(cap.field)
            expose = param.expose if param is not None else _param_class(cls, cap.field)().expose
            on = "on" if param is not None else "off"
            lines.append(
                f"| `{cap.name}` | {on} | {_channels(expose)} | {_channels(cap.serves)} | "
                f"{_yes(cap.mutates)} | {_yes(cap.untrusted_output)} | {summary(cap.handler)} |"
            )
        lines.append("")
        for field in dict.fromkeys(cap.field for cap in capabilities):
            param_cls = _param_class(cls, field)
            own = set(param_cls.model_fields) - set(BaseToolParam.model_fields)
            if own:
                lines += [
                    f"Options of `{field}` (`{param_cls.__name__}`), beside the [common ones](#capability-options):",
                    "",
                    fields_table(param_cls, skip=set(BaseToolParam.model_fields)),
                    "",
                ]
    elif type(card).get_toolsets is not ToolCard.get_toolsets:
        lines += [
            "No tools of its own: its toolsets (`factory.get_toolsets()`) carry the tools of what it connects to.",
            "",
        ]
    settings = [name for name in cls.model_fields if name not in capability_fields]
    lines += [
        "Settings:",
        "",
        fields_table(cls, skip=set(cls.model_fields) - set(settings)),
        "",
        "The default card as configuration (`toolcards.dump_cards([...])`):",
        "",
        "```yaml",
        yaml.safe_dump(dump_cards([card]), sort_keys=False).rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


def cards_section() -> str:
    """Every published card kind (:func:`published_kinds`)."""
    return "\n".join(card_section(kind) for kind in published_kinds())


def capability_options_section() -> str:
    """The fields every param has (``BaseToolParam``)."""
    return fields_table(BaseToolParam)


def _sandbox_option_models() -> list[type[BaseModel]]:
    try:
        from toolcards.sandbox import SANDBOX_ACTOR_CLASSES
    except ImportError:  # pragma: no cover - a card kind that cannot be imported here
        return []
    return [actor.options_class for actor in SANDBOX_ACTOR_CLASSES.values()]


def nested_models() -> list[type[BaseModel]]:
    """Every model a card's settings or its params' options hold, directly or deeper, once,
    plus the sandbox's per-mode ``options``."""
    found: dict[type[BaseModel], None] = {}
    queue: list[type[BaseModel]] = [card_class(kind) for kind in published_kinds()]
    seen: set[type[BaseModel]] = set()
    while queue:
        model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        if not issubclass(model, ToolCard | BaseToolParam):
            found[model] = None
        for info in model.model_fields.values():
            queue.extend(_models_in(info.annotation))
        if model is card_class("exec"):
            queue.extend(_sandbox_option_models())
    return [model for model in found if model.model_fields]


def nested_section() -> str:
    """One table per nested settings model, each with an anchor the card tables link to."""
    parts = []
    for model in nested_models():
        doc = markdown(inspect.cleandoc(model.__doc__ or "").split("\n\n", 1)[0])
        heading = f"### `{model.__name__}` {{#{model.__name__.lower()}}}"
        parts += [heading, "", f"`{model.__module__}` · {doc}", "", fields_table(model), ""]
    return "\n".join(parts)


# -- the served team, tasks -------------------------------------------------------------------


def serve_config_section() -> str:
    """``ServeConfig``'s fields, and the team served without a config file, as YAML."""
    from toolcards.server._config import ServeConfig, default_config

    return "\n".join(
        [
            fields_table(ServeConfig),
            "",
            "The team `toolcards serve` serves without `--config`, as a config file:",
            "",
            "```yaml",
            yaml.safe_dump(default_config().model_dump(mode="json"), sort_keys=False).rstrip(),
            "```",
        ]
    )


def tasks_section() -> str:
    """The task as stored, and the two inputs a model sends to change the board."""
    from toolcards.planning._models import DESCRIPTION_MAX, OUTPUT_MAX, Task, TaskCreate, TaskStatus, TaskUpdate

    statuses = ", ".join(f"`{status}`" for status in typing.get_args(TaskStatus))
    parts = [
        f"Statuses: {statuses}. A description holds at most {DESCRIPTION_MAX} characters; an output is cut to "
        f"{OUTPUT_MAX}.",
        "",
    ]
    for model, what in (
        (Task, "a task as stored and shown"),
        (TaskCreate, "one entry of `update_planning(create_tasks=[...])`"),
        (TaskUpdate, "one entry of `update_planning(update_tasks=[...])`"),
    ):
        parts += [f"`{model.__name__}`: {what}.", "", fields_table(model), ""]
    return "\n".join(parts)


def graph_section() -> str:
    """What the knowledge graph stores and what a model sends to change it."""
    from toolcards.knowledge_graph._models import Entity, EntityCreate, EntityUpdate, Relation, RelationCreate

    parts = []
    for model, what in (
        (Entity, "an entity as stored"),
        (Relation, "a relation as stored"),
        (EntityCreate, "one entry of `update_graph(create_entities=[...])`"),
        (EntityUpdate, "one entry of `update_graph(update_entities=[...])`"),
        (RelationCreate, "one entry of `update_graph(create_relations=[...])`"),
    ):
        parts += [f"`{model.__name__}`: {what}.", "", fields_table(model), ""]
    return "\n".join(parts)


# -- the command line -------------------------------------------------------------------------


def cli_section() -> str:
    """Every ``toolcards`` subcommand: its usage line and a table of its options."""
    from toolcards.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = []
    for name, sub in commands.choices.items():
        sub.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
        usage = " ".join(sub.format_usage().split())
        parts += [f"### `toolcards {name}`", "", markdown(sub.description or ""), "", "```text", usage, "```", ""]
        rows = ["| option | what it does |", "|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flags = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.metavar or action.dest}`"
            if action.option_strings and action.nargs != 0:
                flags += f" `{action.metavar or action.dest.upper()}`"
            choices = f" (one of {', '.join(f'`{c}`' for c in action.choices)})" if action.choices else ""
            rows.append(f"| {flags} | {markdown(action.help or '')}{choices} |")
        parts += [*rows, ""]
    return "\n".join(parts)


SECTIONS: dict[str, Callable[[], str]] = {
    "capability-options": capability_options_section,
    "cards": cards_section,
    "nested": nested_section,
    "serve-config": serve_config_section,
    "tasks": tasks_section,
    "graph": graph_section,
    "cli": cli_section,
}
"""Marker name → the function writing that part of the reference."""


def section(name: str) -> str:
    """The Markdown of reference section ``name``.

    Raises:
        KeyError: no section has that name (the message lists those that do).
    """
    if name not in SECTIONS:
        raise KeyError(f"no reference section {name!r}; known: {', '.join(SECTIONS)}")
    return SECTIONS[name]()


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(SECTIONS)
    for name in names:
        print(f"<!-- {name} -->\n{section(name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
