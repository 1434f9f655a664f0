"""A function's signature → an argument validator and the compact JSON schema a model reads.

The signature is the schema: parameter names, annotations (``Annotated[..., Field(...)]``
bounds and descriptions kept), defaults, and the ``Args:`` section of the docstring. The
JSON schema is trimmed of what costs tokens and tells a model nothing: no ``title`` keys,
``$ref``s inlined where they are not recursive, ``additionalProperties: false`` on every
object we own.

Validation is lax, as models write arguments loosely: ``"5"`` for an integer is accepted,
and so is a JSON string where a list, dict or model is expected. Unknown keys are refused
with a message naming the accepted parameters.

A string that is not text (one holding a lone UTF-16 surrogate, such as JSON's ``"\\ud800"``),
at any depth and in keys too, is refused before anything else is checked, naming where it is
(:mod:`toolcards.core._surrogates`): it would fail later, wherever the value is written.

A refusal stays short and cheap whatever the input: at most ten problems are listed, with
the total count; values are shown clipped; and when there are thousands of problems (a
list of a million wrong items), the examples come from a sample of the arguments (lists and
maps cut to their first items), because reading every one of pydantic's errors would take
seconds.
"""

from __future__ import annotations

import functools
import inspect
import json
import reprlib
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from toolcards.core._docstring import parse_docstring
from toolcards.core._shipped_schemas import schema_key, shipped_schema
from toolcards.core._surrogates import find_surrogate
from toolcards.errors import RetriableError, WiringError

__all__ = ["ArgsSchema", "build_args_schema"]

_CONTAINER_ORIGINS = (list, dict, set, frozenset, tuple)

_PROBLEMS_SHOWN = 10
_ERRORS_READ = 200
"""At most this many of pydantic's errors are read (each costs a few µs to convert)."""
_SAMPLE_ITEMS = (5, 1)
"""Items kept per list and map when sampling arguments with too many problems, in turn."""
# Clipped values for error messages: bounded work whatever the size of the value.
_CLIPPED = reprlib.Repr()
_CLIPPED.maxlevel, _CLIPPED.maxlist, _CLIPPED.maxdict, _CLIPPED.maxtuple, _CLIPPED.maxset = 3, 6, 4, 6, 6
_CLIPPED.maxstring, _CLIPPED.maxother, _CLIPPED.maxlong = 60, 60, 60


class ArgsSchema:
    """How one function's arguments are validated and described.

    The pydantic model and the JSON schema are built on first use, not when the tool is
    made: binding a card then costs reading its signatures, and a capability nobody calls
    or lists never pays for a model. One schema serves every card object of a class
    (:func:`build_args_schema` keeps them per function); treat it as read-only.
    """

    def __init__(
        self,
        *,
        name: str,
        fields: Mapping[str, Any],
        description: str,
        signature: inspect.Signature,
        structured: frozenset[str],
        shipped_key: str | None = None,
    ) -> None:
        self._name = name
        self._shipped_key = shipped_key
        self._fields = dict(fields)
        self.description = description
        """The docstring's description (without the ``Args:`` section)."""
        self.signature = signature
        """The LLM-facing signature: ``self`` removed, annotations resolved."""
        self.structured = structured
        """Parameters that take lists, dicts or models, which may arrive as JSON strings."""

    @functools.cached_property
    def model(self) -> type[BaseModel]:
        """The pydantic model the arguments are validated against."""
        return create_model(
            f"{self._name}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **self._fields,
        )

    @functools.cached_property
    def _validate_python(self) -> Callable[[Any], BaseModel]:
        # model_validate without its wrapper, which checks keyword options on every call.
        validate: Callable[[Any], BaseModel] = self.model.__pydantic_validator__.validate_python
        return validate

    @functools.cached_property
    def json_schema(self) -> dict[str, Any]:
        """The compact JSON schema sent to models and MCP clients: the shipped one of a built-in
        capability (:mod:`toolcards.core._shipped_schemas`), without building the model."""
        if self._shipped_key is not None:
            shipped = shipped_schema(self._shipped_key)
            if shipped is not None:
                return shipped
        return compact_json_schema(self.model.model_json_schema())

    def validate(self, tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce ``args``; raise ``RetriableError`` naming every problem.

        Changed in 0.3: a string holding a lone surrogate is refused, naming where it is.
        """
        if self.structured:
            args = _decode_json_strings(args, self.structured)
        not_text = find_surrogate(args)
        if not_text is not None:
            raise RetriableError(
                f"Invalid arguments for {tool_name}: {not_text.describe()}, so nothing was done. "
                "Send the text as UTF-8."
            )
        if not args and not self._fields:  # nothing to check, nothing to fill in
            return {}
        try:
            validated = self._validate_python(args)
        except ValidationError as exc:
            errors, total = _read_errors(self.model, exc, args)
            raise RetriableError(_describe_errors(tool_name, errors, total, self.json_schema)) from None
        return dict(validated.__dict__)


def build_args_schema(func: Callable[..., Any], *, name: str) -> ArgsSchema:
    """The validator and JSON schema of ``func`` (a function or bound method).

    Kept per function and name: every card object of a class shares its capabilities'
    schemas (a bound method's schema does not depend on the object it is bound to).

    Raises:
        WiringError: a parameter has no annotation, or is ``*args``/``**kwargs``; every
            problem is listed under the function's qualified name.
    """
    function = getattr(func, "__func__", func)
    try:
        # Weakly: a function made per session (a closure over its tools) must not stay alive,
        # with everything it refers to, because its schema was once built.
        built = _SCHEMAS.setdefault(function, {})
    except TypeError:  # a callable that cannot be referred to weakly: build it every time
        return _build_args_schema(func, name=name)
    key = (hasattr(func, "__self__"), name)
    cached = built.get(key)
    if cached is None:
        cached = built[key] = _build_args_schema(func, name=name)
    return cached


_SCHEMAS: weakref.WeakKeyDictionary[Callable[..., Any], dict[tuple[bool, str], ArgsSchema]] = (
    weakref.WeakKeyDictionary()
)
"""Function → (bound, tool name) → its schema."""


def _build_args_schema(func: Callable[..., Any], *, name: str) -> ArgsSchema:
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise WiringError(f"{_qualname(func)}: cannot resolve annotations ({exc}).") from exc
    doc = parse_docstring(func.__doc__)
    problems: list[str] = []
    fields: dict[str, Any] = {}
    params: list[inspect.Parameter] = []
    structured: set[str] = set()
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            problems.append(f"parameter {param.name!r} is *args/**kwargs; tools need named parameters")
            continue
        if param.name not in hints:
            problems.append(f"parameter {param.name!r} has no type annotation")
            continue
        annotation = hints[param.name]
        params.append(param.replace(annotation=annotation))
        if _is_structured(annotation):
            structured.add(param.name)
        default: Any = ... if param.default is inspect.Parameter.empty else param.default
        description = doc.params.get(param.name)
        if isinstance(default, FieldInfo):
            fields[param.name] = (annotation, default)
        elif description is not None and not _has_description(annotation):
            fields[param.name] = (annotation, Field(default, description=description))
        else:
            fields[param.name] = (annotation, default)
    if problems:
        raise WiringError(f"{_qualname(func)} cannot be a tool: " + "; ".join(problems) + ".")
    return ArgsSchema(
        name=name,
        fields=fields,
        description=doc.description,
        signature=signature.replace(parameters=params, return_annotation=hints.get("return", Any)),
        structured=frozenset(structured),
        shipped_key=schema_key(func, name),
    )


def compact_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline non-recursive ``$ref``s, drop ``title`` keys, close every object."""
    defs: dict[str, Any] = schema.pop("$defs", {})

    def walk(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in seen:  # recursive: keep the reference and its definition
                kept_defs.add(key)
                return node
            # A model's docstring is developer documentation: only a description given where the
            # model is used (a Field or an Args: entry) reaches the schema.
            target = {k: v for k, v in walk(defs[key], seen | {key}).items() if k != "description"}
            extra = {k: walk(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                out[key] = {name: walk(sub, seen) for name, sub in value.items()}
            else:
                out[key] = walk(value, seen)
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return _drop_optional_null(out)

    kept_defs: set[str] = set()
    result: dict[str, Any] = walk(schema, frozenset())
    result.pop("description", None)
    result["additionalProperties"] = False
    result.setdefault("properties", {})
    if kept_defs:
        result["$defs"] = {key: walk(defs[key], frozenset({key})) for key in sorted(kept_defs)}
    return result


def _drop_optional_null(node: dict[str, Any]) -> dict[str, Any]:
    """``X | None = None`` → ``X``: a model omits an optional argument rather than sending
    null, and the ``anyOf``/``default`` pair costs tokens on every request. Validation
    still accepts an explicit null."""
    options = node.get("anyOf")
    if node.get("default", ...) is not None or not isinstance(options, list) or len(options) != 2:
        return node
    others = [option for option in options if option != {"type": "null"}]
    if len(others) != 1:
        return node
    rest = {key: value for key, value in node.items() if key not in ("anyOf", "default")}
    return {**others[0], **rest}


def _decode_json_strings(args: Mapping[str, Any], structured: frozenset[str]) -> Mapping[str, Any]:
    decoded: dict[str, Any] | None = None
    for key in structured:
        value = args.get(key)
        if isinstance(value, str) and value[:1] in ("[", "{"):
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):  # left as text: validation says what is wrong
                continue
            if decoded is None:
                decoded = dict(args)
            decoded[key] = parsed
    return args if decoded is None else decoded


def _read_errors(model: type[BaseModel], exc: ValidationError, args: Mapping[str, Any]) -> tuple[list[Any], int]:
    """Up to ``_ERRORS_READ`` of the validation's errors, and how many there were."""
    total = exc.error_count()
    if total <= _ERRORS_READ:
        return list(exc.errors(include_url=False)), total
    known = set(model.model_fields)
    for keep in _SAMPLE_ITEMS:
        sample = {
            key: _sample(value, keep)
            for index, (key, value) in enumerate(args.items())
            if key in known or index < keep + len(known)
        }
        try:
            model.model_validate(sample)
        except ValidationError as sampled:
            if sampled.error_count() <= _ERRORS_READ:
                # Cutting lists and maps can make a required key missing or a list too short.
                return [e for e in sampled.errors(include_url=False) if not _made_by_sampling(e)], total
        else:
            break
    return [], total


def _sample(value: Any, keep: int) -> Any:
    if isinstance(value, list | tuple):
        return [_sample(item, keep) for item in value[:keep]]
    if isinstance(value, Mapping):
        return (
            {k: _sample(v, keep) for k, v in list(value.items())[:keep]}
            if len(value) > keep
            else {k: _sample(v, keep) for k, v in value.items()}
        )
    return value


def _made_by_sampling(error: Any) -> bool:
    nested_missing = error["type"] == "missing" and len(error["loc"]) > 1
    return nested_missing or (error["type"] in ("too_short", "too_long") and not isinstance(error.get("input"), str))


def _describe_errors(tool_name: str, errors: list[Any], total: int, schema: dict[str, Any]) -> str:
    problems: list[str] = []
    unknown: list[str] = []
    for error in errors:
        loc = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
            unknown.append(loc)
            continue
        got = error.get("input")
        shown = "" if error["type"] == "missing" else f" (got {_clip(got)})"
        problems.append(f"{loc}: {error['msg']}{shown}")
    if unknown:
        problems.append(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown[:_PROBLEMS_SHOWN])}")
    listed = problems[:_PROBLEMS_SHOWN]
    if len(errors) < total or len(problems) > _PROBLEMS_SHOWN or len(unknown) > _PROBLEMS_SHOWN:
        listed.append(f"{total:,} problems in all")
    accepted = _describe_parameters(schema)
    return f"Invalid arguments for {tool_name}: " + "; ".join(listed) + f". Accepted parameters: {accepted}."


def _describe_parameters(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type") or "|".join(
            str(option["type"]) for option in prop.get("anyOf", ()) if option.get("type") not in (None, "null")
        )
        kind = kind or ("enum" if "enum" in prop else "value")
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts) or "none"


def _clip(value: Any, limit: int = 60) -> str:
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    else:
        try:
            text = _CLIPPED.repr(value)
        except ValueError:  # an integer too long to convert
            text = "a very long number"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_structured(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_structured(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_structured(arg) for arg in typing.get_args(annotation))
    if origin in _CONTAINER_ORIGINS or annotation in _CONTAINER_ORIGINS:
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in typing.get_args(annotation)[1:])


def _qualname(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
