"""The models a member may run on (a roster), and the choice kept per member.

A roster maps short names to :class:`ModelOption`: a pydantic-ai model string
(``"openai:gpt-5-mini"``, ``"google:gemini-2.5-flash"``, ``"test"``) or a factory, the
import path of a function returning a pydantic-ai model (for a model that needs settings or a
client a string cannot carry), with a description the model reads when it picks one. Whether
an entry can be built is :mod:`toolcards.model._build`'s to say, when the card is bound, when a
member switches and before every request.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

__all__ = ["MODEL_NAME_PATTERN", "ActiveModel", "ModelName", "ModelOption", "RosterOption", "validate_model_name"]

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
"""What a roster name may look like: 1 to 40 letters, digits, ``.``, ``_`` or ``-``."""
_FACTORY_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def validate_model_name(name: str) -> str:
    """``name`` if it can name a roster entry.

    Raises:
        ValueError: it does not match :data:`MODEL_NAME_PATTERN`.
    """
    if not MODEL_NAME_PATTERN.fullmatch(name):
        raise ValueError(f"model name {name!r} is not valid: use 1 to 40 letters, digits, '.', '_' or '-'")
    return name


ModelName = Annotated[str, AfterValidator(validate_model_name)]
"""A roster name, checked when the roster is built."""


def _from_string(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class ModelOption(BaseModel):
    """One model of a roster: a model string or a factory, and what it is good for.

    A plain string stands for ``{"model": <string>}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1, max_length=200)
    """A pydantic-ai model string, e.g. ``"openai:gpt-5-mini"``: a provider pydantic-ai does not
    have fails the bind; the model is built (API key, provider package) when a member switches to
    it. A name without a provider (``"quick"``) is left to the agent's host, such as a model a
    team runtime registers under that name."""
    factory: str | None = None
    """Instead of ``model``: ``"package.module:function"``, a function without arguments returning
    a pydantic-ai model (or model string); imported when the card is bound, called when the
    option is first used."""
    description: str = Field(default="", max_length=200)
    """What the model is good for (one line); ``list_models`` and the context show it."""

    @model_validator(mode="after")
    def _one_source(self) -> ModelOption:
        if (self.model is None) == (self.factory is None):
            raise ValueError("give either model (a pydantic-ai model string) or factory ('module:function')")
        if self.factory is not None and not _FACTORY_PATH.fullmatch(self.factory):
            raise ValueError(f"factory {self.factory!r} must be 'package.module:function'")
        if "\n" in self.description:
            raise ValueError("description must be one line")
        return self


RosterOption = Annotated[ModelOption, BeforeValidator(_from_string)]
"""A roster value: a :class:`ModelOption`, or a model string standing for one."""


class ActiveModel(BaseModel):
    """The model a member chose, as the store keeps it (one row per member)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    choice: str
    """The roster name chosen."""
    at: float
    """When it was chosen (seconds since the epoch)."""
