"""A call's arguments at the pipeline's door: decoded, and refused past a size.

Every call's arguments pass here before validation does any work, whatever the channel:
JSON text is decoded (a ``RetriableError`` saying where it is broken), anything but an
object of parameter names to values is refused, and arguments larger than the tool's
``max_argument_chars`` are refused at once with a ``RetriableError`` giving both sizes.

The size is the length of the arguments as compact JSON text, in characters: a string
argument counts its length, nested lists and objects their JSON encoding. Text longer than
the limit is refused before it is parsed; for an already decoded mapping the top-level
strings are counted first, so one huge string is refused without encoding anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolcards.errors import RetriableError

__all__ = ["DEFAULT_MAX_ARGUMENT_CHARS", "arguments_size", "decode_arguments"]

DEFAULT_MAX_ARGUMENT_CHARS = 8_000_000
"""Characters of one call's arguments (as JSON) accepted by default: about 8 MB."""


def decode_arguments(tool_name: str, arguments: Mapping[str, Any] | str | None, limit: int) -> Mapping[str, Any]:
    """``arguments`` as a mapping of parameter names to values, checked against ``limit``.

    Raises:
        RetriableError: the text is not JSON, the value is not an object, or the arguments
            are larger than ``limit`` characters.
    """
    if not arguments and (arguments is None or type(arguments) in (dict, str)):  # nothing to decode
        return {}
    if isinstance(arguments, str):
        if len(arguments) > limit:
            raise _too_large(tool_name, len(arguments), limit)
        if not arguments.strip():
            return {}
        try:
            decoded = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise RetriableError(
                f"Arguments for {tool_name} are not valid JSON ({exc.msg} at position {exc.pos}). "
                "Send a JSON object of parameter names to values."
            ) from None
        except (ValueError, RecursionError):  # an integer too long to convert, nesting too deep
            raise _unmeasurable(tool_name) from None
        if not isinstance(decoded, Mapping):
            raise _not_an_object(tool_name, decoded)
        return decoded
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        raise _not_an_object(tool_name, arguments)
    size = arguments_size(tool_name, arguments, limit)
    if size > limit:
        raise _too_large(tool_name, size, limit)
    return arguments


def arguments_size(tool_name: str, arguments: Mapping[str, Any], limit: int) -> int:
    """The length of ``arguments`` as compact JSON, counted until it is past ``limit``.

    Raises:
        RetriableError: a nested value cannot be encoded (nested too deeply, circular).
    """
    total = 2
    nested: list[Any] = []
    for key, value in arguments.items():
        total += len(str(key)) + 4
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, int):  # bool included; no str(): huge ints convert slowly
            total += value.bit_length() // 3 + 1
        elif value is None or isinstance(value, float):
            total += 24
        else:
            nested.append(value)
        if total > limit:
            return total
    for value in nested:
        try:
            total += len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
        except (ValueError, RecursionError):
            raise _unmeasurable(tool_name) from None
        if total > limit:
            return total
    return total


def _too_large(tool_name: str, size: int, limit: int) -> RetriableError:
    return RetriableError(
        f"The arguments of {tool_name} are {size:,} characters, over its limit of {limit:,}, so the call "
        "did not run. Send less per call: split the work into several smaller calls."
    )


def _unmeasurable(tool_name: str) -> RetriableError:
    return RetriableError(
        f"The arguments of {tool_name} are nested too deeply or hold a number too long to read. "
        "Send plain JSON: objects, lists, strings and ordinary numbers."
    )


def _not_an_object(tool_name: str, value: Any) -> RetriableError:
    return RetriableError(
        f"Arguments for {tool_name} must be an object of parameter names to values, not {type(value).__name__}."
    )
