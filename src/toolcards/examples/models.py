"""Two scripted models for the model card's samples: one switches, the other answers.

``ModelTool(roster={"quick": {"factory": "toolcards.examples.models:quick"}, "careful":
{"factory": "toolcards.examples.models:careful"}})`` gives a member both. ``quick`` answers a
request that asks for care by calling ``switch_model("careful")``; ``careful`` answers every
request, saying so. Neither needs a network or an API key.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["careful", "quick"]


def _prompt(messages: list[ModelMessage]) -> str:
    last = next(
        m
        for m in reversed(messages)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    )
    return " ".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))


def _quick(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    asked_for_care = "careful" in _prompt(messages).lower()
    if asked_for_care and isinstance(messages[-1], ModelRequest) and len(messages[-1].parts) == 1:
        return ModelResponse(parts=[ToolCallPart("switch_model", {"name": "careful"})])
    return ModelResponse(parts=[TextPart("quick: done")])


def _careful(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("careful: checked twice, done")])


def quick() -> FunctionModel:
    """A model that switches to ``careful`` when the request asks for care, else answers."""
    return FunctionModel(_quick, model_name="quick")


def careful() -> FunctionModel:
    """A model that answers every request."""
    return FunctionModel(_careful, model_name="careful")
