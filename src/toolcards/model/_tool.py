"""``ModelTool``: a member picks the model it runs on from a roster, and keeps it across restarts.

| capability | default channels | what the model sees |
|---|---|---|
| ``current_model`` | SYSTEM_PROMPT, COMMAND | the model in use and the others it may pick, before every request |
| ``list_models`` | TOOL_CALL, COMMAND | the roster: each name and what it is good for |
| ``switch_model(name)`` | TOOL_CALL, COMMAND | switches; the next model request runs on the new model |

The choice is kept per member in the team's store (``"<team>/#ModelTool"``), so it survives a
restart and every process of the team reads the same one. It reaches the model requests
through the card's :meth:`ModelTool.selected_model`, asked before every request by
``toolcards.pydantic_ai.ModelSwitch`` (attach it to your own agent; a team runtime's members
and ``TeamContext`` have it already). Until a member switches it runs on ``default`` (a
roster name), or on its agent's own model when there is none.

Needs a team member (``team.member(...)``, a runtime member, an MCP session).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr, model_validator

from toolcards.core._card import ToolCard, capability
from toolcards.core._catalog import did_you_mean
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.errors import RetriableError, WiringError
from toolcards.model._actor import MODEL_ACTOR_NAME, ModelChoiceActor, ModelChoiceProxy
from toolcards.model._models import ModelName, ModelOption, RosterOption
from toolcards.store._default import default_store

__all__ = ["CurrentModelParam", "ListModelsParam", "ModelTool", "SwitchModelParam"]


class CurrentModelParam(BaseToolParam):
    """The model in use, in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class ListModelsParam(BaseToolParam):
    """The roster."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class SwitchModelParam(BaseToolParam):
    """Switch to another model of the roster."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ModelTool(ToolCard):
    """Models a member may switch between, its choice kept in the team's store."""

    kind: ClassVar[str] = "model"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    roster: dict[ModelName, RosterOption] = Field(default_factory=dict)
    """Name → model: a pydantic-ai model string (``"openai:gpt-5-mini"``) or a ``ModelOption``
    with a ``factory`` instead, and a ``description`` the model reads when it picks one. At
    least one is needed to bind the card."""
    default: str | None = None
    """The roster name a member runs on until it switches; ``None``: its agent's own model."""
    current_model: CurrentModelParam | bool = True
    list_models: ListModelsParam | bool = True
    switch_model: SwitchModelParam | bool = True
    _choices: ModelChoiceProxy | None = PrivateAttr(default=None)
    _factories: dict[str, Callable[[], Any]] = PrivateAttr(default_factory=dict)
    _built: dict[str, Any] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _default_in_roster(self) -> ModelTool:
        if self.default is not None and self.default not in self.roster:
            raise ValueError(f"default {self.default!r} is not in the roster ({', '.join(self.roster)})")
        return self

    def on_bind(self, observer: Any) -> None:
        """Start (or find) the team's choices actor and import the roster's factories.

        Raises:
            WiringError: the roster is empty, or a factory cannot be imported or is not
                callable (every one is named).
        """
        if not self.roster:
            raise WiringError(
                "ModelTool has no models to switch between: give a roster, e.g. "
                "ModelTool(roster={'fast': 'openai:gpt-5-mini', 'deep': 'openai:gpt-5'})."
            )
        factories: dict[str, Callable[[], Any]] = {}
        problems: list[str] = []
        for name, option in self.roster.items():
            if option.factory is None:
                continue
            try:
                factories[name] = _import_factory(option.factory)
            except Exception as exc:
                problems.append(f"roster[{name!r}].factory {option.factory!r}: {exc}")
        if problems:
            raise WiringError("ModelTool: " + "; ".join(problems) + ". Give an importable 'module:function'.")
        agent: ActorToolObserver = observer
        self._choices = agent.team.get_or_spawn(
            MODEL_ACTOR_NAME, ModelChoiceActor, agent.team_id, default_store(), proxy=ModelChoiceProxy
        )
        self._factories = factories

    @property
    def choices(self) -> ModelChoiceProxy:
        """The team's choices actor (after binding)."""
        return self.bound(self._choices)

    @property
    def _member(self) -> str:
        observer: ActorToolObserver = self.get_observer()
        return observer.address.name

    def active_name(self) -> str | None:
        """The roster name this member runs on: its choice (if still in the roster), else
        ``default``; ``None``: its agent's own model. Reads the store (cheaply)."""
        chosen = self.ask(self.choices.active(self._member), actor=MODEL_ACTOR_NAME)
        return chosen if chosen in self.roster else self.default

    def selected_model(self) -> Any | None:
        """The model of :meth:`active_name`: its model string, or what its factory made (once)."""
        name = self.active_name()
        if name is None:
            return None
        option = self.roster[name]
        if option.model is not None:
            return option.model
        with self._lock:
            if name not in self._built:
                try:
                    self._built[name] = self._factories[name]()
                except Exception as exc:
                    raise WiringError(f"ModelTool roster[{name!r}].factory {option.factory!r} failed: {exc}") from exc
            return self._built[name]

    def _on_tool_call(self, field: str) -> bool:
        param = self.param(field)
        return param is not None and TOOL_CALL in param.expose and not (self.read_only and field == "switch_model")

    # -- capabilities ------------------------------------------------------------------------

    @capability("current_model")
    def show_current(self) -> str:
        """The model in use."""
        name = self.active_name()
        line = f"Model: {name}{_described(self.roster[name])}".rstrip(".") + "." if name else "Model: the agent's own."
        others = [other for other in self.roster if other != name]
        if others and self._on_tool_call("switch_model"):
            line += f" switch_model picks another: {', '.join(others)}."
        return line

    @capability("list_models")
    def list_roster(self) -> str:
        """The models you can switch to."""
        name = self.active_name()
        return "\n".join(
            f"- {other}{_described(option)}{' (in use)' if other == name else ''}"
            for other, option in self.roster.items()
        )

    @capability("switch_model", mutates=True, hints=ToolHints(idempotent=True))
    def switch(self, name: str) -> str:
        """Run your next model requests on another model.

        Args:
            name: A model's name.
        """
        if name not in self.roster:
            close = did_you_mean(name, self.roster)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise RetriableError(f"No model is called {name!r}.{hint} Models: {', '.join(self.roster)}.")
        before = self.active_name()
        if before == name:
            return f"Already on {name}."
        self.ask(self.choices.switch(self._member, name), actor=MODEL_ACTOR_NAME)
        return f"Switched to {name}: your next model request runs on it."


def _described(option: ModelOption) -> str:
    return f" — {option.description}" if option.description else ""


def _import_factory(path: str) -> Callable[[], Any]:
    module, _, attr = path.partition(":")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{attr} is not callable")
    return target  # type: ignore[no-any-return]
