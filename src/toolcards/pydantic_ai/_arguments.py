"""The arguments pydantic-ai hands a toolset: parsed, not validated (the pipeline validates).

pydantic-ai parses a model's arguments (JSON text) with the validator each tool definition
carries, before the toolset sees them. pydantic-core's parser refuses a string holding a lone
UTF-16 surrogate (JSON's ``"\\ud800"``) as invalid JSON, so the model would read "Invalid JSON:
unexpected end of hex escape" where every other channel answers the pipeline's refusal naming
the argument (:mod:`toolcards.core._surrogates`). :data:`PASS_THROUGH` parses such text again
with Python's ``json``, which keeps the surrogate, and hands the arguments on for the pipeline
to refuse; any other invalid text stays pydantic-ai's to answer.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic_core import SchemaValidator, ValidationError, core_schema

from toolcards.core._surrogates import find_surrogate

__all__ = ["PASS_THROUGH", "PassedThrough"]

_OBJECT = SchemaValidator(core_schema.dict_schema())


class PassedThrough:
    """A tool's arguments as a dict, whatever they hold: pydantic-ai's ``SchemaValidatorProt``."""

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        """The JSON object ``input`` as a dict; one whose strings are not all text as well.

        Raises:
            ValidationError: ``input`` is not a JSON object (pydantic-ai asks the model again).
        """
        try:
            return _OBJECT.validate_json(input, allow_partial=allow_partial, **kwargs)
        except ValidationError:
            parsed = _holding_surrogates(input)
            if parsed is None:
                raise
            return parsed

    def validate_python(
        self,
        input: Any,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        """``input`` as a dict.

        Raises:
            ValidationError: ``input`` is not a mapping.
        """
        return _OBJECT.validate_python(input, allow_partial=allow_partial, **kwargs)


PASS_THROUGH = PassedThrough()
"""The validator of every tool definition the toolsets give pydantic-ai."""


def _holding_surrogates(text: str | bytes | bytearray) -> dict[str, Any] | None:
    """``text`` as parsed by Python's ``json`` when it is an object holding a lone surrogate
    (the one thing pydantic-core refuses that is JSON); ``None`` otherwise."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) and find_surrogate(parsed) is not None else None
