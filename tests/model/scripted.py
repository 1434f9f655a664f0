"""Scripted models for the model card's tests: ``fast`` asks to switch, ``deep`` answers.

Roster factories point here (``"tests.model.scripted:fast"``); every request is recorded in
:data:`CALLS` as the name of the model that served it.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

CALLS: list[str] = []


def _fast(messages: list[Any], info: AgentInfo) -> ModelResponse:
    CALLS.append("fast")
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[ToolCallPart("switch_model", {"name": "deep"})])
    return ModelResponse(parts=[TextPart("fast answered")])


def _deep(messages: list[Any], info: AgentInfo) -> ModelResponse:
    CALLS.append("deep")
    return ModelResponse(parts=[TextPart("deep answered")])


def fast() -> FunctionModel:
    """A model that switches to ``deep`` at its first request."""
    return FunctionModel(_fast)


def deep() -> FunctionModel:
    """A model that answers at once."""
    return FunctionModel(_deep)


not_callable = 42


def broken() -> FunctionModel:
    """A factory that fails, as one needing a device this machine lacks would."""
    raise RuntimeError("no GPU on this machine")
