"""The same call through the tool-call channel and the command channel gives the same answer."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.core.cards import GreeterCard, GreetParam
from toolcards import RetriableError, ToolFactory

CASES: list[dict[str, Any]] = [
    {"name": "Ann"},
    {"name": "Ann", "times": "3", "tone": "dry"},
    {"name": ""},
    {"name": "Ann", "tone": "loud"},
    {"name": "Ann", "extra": 1},
    {"times": 2},
    {"name": "Voldemort"},
]


def via_agent(factory: ToolFactory, args: dict[str, Any]) -> str:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(str(returns[0].content))])
        return ModelResponse(parts=[ToolCallPart("greet_someone", args)])

    return Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("go").output


def via_command(factory: ToolFactory, args: dict[str, Any]) -> str:
    try:
        return str(factory.get_commands()[GreetParam](**args))
    except RetriableError as exc:
        return str(exc)


@pytest.mark.parametrize("args", CASES)
def test_channel_parity(args: dict[str, Any]) -> None:
    factory = ToolFactory([GreeterCard(motd=False)])
    assert via_agent(factory, args) == via_command(factory, args)
