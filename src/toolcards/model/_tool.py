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

Whether an entry can run is decided in one place, :mod:`toolcards.model._build`. A model
string whose provider pydantic-ai does not know fails the bind. ``switch_model`` builds the
entry before it records the choice, and refuses one that cannot be built now, saying why. A
choice that stops building later (a key removed, a roster edited across a restart) does not
stop the member: its requests run on ``default``, or else on the agent's own model, and the
context says which choice cannot be used and why.

Needs a team member (``team.member(...)``, a runtime member, an MCP session).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
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
from toolcards.model._build import ModelUnavailable, build_model, model_string_problem, names_a_host_model
from toolcards.model._models import ModelName, ModelOption, RosterOption
from toolcards.store._default import default_store

__all__ = ["CurrentModelParam", "ListModelsParam", "ModelTool", "SwitchModelParam"]

logger = logging.getLogger("toolcards.model")


@dataclass(frozen=True, kw_only=True)
class _Fallback:
    """A member's requests run on another model than the one it chose, which cannot be built."""

    wanted: str
    """The roster name chosen (or the default), which cannot be built now."""
    reason: str
    """Why, in a sentence."""
    used: str | None
    """The roster name run instead; ``None``: the agent's own model."""


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
    _resolve: Callable[[Any], Any] | None = PrivateAttr(default=None)
    _hosted: bool = PrivateAttr(default=False)
    """Whether an agent's model selector has asked, handing over its resolver (maybe none)."""
    _fallback: _Fallback | None = PrivateAttr(default=None)
    _warned: set[tuple[str, str]] = PrivateAttr(default_factory=set)

    @model_validator(mode="after")
    def _default_in_roster(self) -> ModelTool:
        if self.default is not None and self.default not in self.roster:
            raise ValueError(f"default {self.default!r} is not in the roster ({', '.join(self.roster)})")
        return self

    def on_bind(self, observer: Any) -> None:
        """Start (or find) the team's choices actor, import the roster's factories and check its
        model strings against the providers pydantic-ai knows (no API key is needed yet).

        Raises:
            WiringError: the roster is empty, a factory cannot be imported or is not callable,
                or a model string's provider is one pydantic-ai does not have (every one is named).
        """
        if not self.roster:
            raise WiringError(
                "ModelTool has no models to switch between: give a roster, e.g. "
                "ModelTool(roster={'fast': 'openai:gpt-5-mini', 'deep': 'openai:gpt-5'})."
            )
        factories: dict[str, Callable[[], Any]] = {}
        problems: list[str] = []
        fixes: dict[str, None] = {}
        for name, option in self.roster.items():
            if option.factory is not None:
                try:
                    factories[name] = _import_factory(option.factory)
                except Exception as exc:
                    problems.append(f"roster[{name!r}].factory {option.factory!r}: {exc}")
                    fixes["Give an importable 'module:function'."] = None
            elif option.model is not None and (problem := model_string_problem(option.model)) is not None:
                problems.append(f"roster[{name!r}].model {option.model!r}: {problem}")
                fixes["Give 'provider:model' with a provider pydantic-ai has, e.g. 'openai:gpt-5-mini'."] = None
        if problems:
            raise WiringError("ModelTool: " + "; ".join(problems) + ". " + " ".join(fixes))
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

    def selected_model(self, resolve: Callable[[Any], Any] | None = None) -> Any | None:
        """The model the member's next request runs on, built: that of :meth:`active_name`;
        when it cannot be built now, ``default``'s, else ``None`` (the agent's own), and
        ``current_model`` says which choice cannot be used and why (the log too, once).

        Args:
            resolve: How the agent's host turns a roster value into a model before pydantic-ai
                does (a team runtime's registered models); ``ModelSwitch`` hands over its own,
                and ``switch_model`` checks a choice through it too.
        """
        self._resolve, self._hosted = resolve, True
        wanted = self.active_name()
        if wanted is None:
            self._fallback = None
            return None
        try:
            model = self._build(wanted)
        except ModelUnavailable as exc:
            reason = str(exc)
        else:
            self._fallback = None
            return model
        used: str | None = None
        model = None
        if self.default is not None and self.default != wanted:
            with contextlib.suppress(ModelUnavailable):  # then the agent's own model runs
                model, used = self._build(self.default), self.default
        self._fallback = _Fallback(wanted=wanted, reason=reason, used=used)
        if (wanted, reason) not in self._warned:
            self._warned.add((wanted, reason))
            instead = f"roster entry {used!r}" if used is not None else "the agent's own model"
            logger.warning("%s: model %r cannot be used (%s); running on %s", self._member, wanted, reason, instead)
        return model

    def _build(self, name: str) -> Any:
        """The model of roster entry ``name``, built through :func:`build_model` (kept once built).

        Raises:
            ModelUnavailable: it cannot be built now (its factory failed too).
        """
        with self._lock:
            if name in self._built:
                return self._built[name]
            option = self.roster[name]
            value: Any = option.model
            if option.factory is not None:
                try:
                    value = self._factories[name]()
                except Exception as exc:
                    raise ModelUnavailable(f"its factory {option.factory} failed: {exc}") from exc
            self._built[name] = model = build_model(value, self._resolve)
            return model

    def _in_use(self) -> tuple[str | None, _Fallback | None]:
        """The roster name the member's requests run on (``None``: its agent's own model), and
        why it is not the one chosen, when it is not (as the last request found)."""
        name = self.active_name()
        fallback = self._fallback
        if fallback is not None and fallback.wanted == name:
            return fallback.used, fallback
        return name, None

    def _on_tool_call(self, field: str) -> bool:
        param = self.param(field)
        return param is not None and TOOL_CALL in param.expose and not (self.read_only and field == "switch_model")

    # -- capabilities ------------------------------------------------------------------------

    @capability("current_model")
    def show_current(self) -> str:
        """The model in use."""
        name, fallback = self._in_use()
        line = f"Model: {name}{_described(self.roster[name])}".rstrip(".") + "." if name else "Model: the agent's own."
        if fallback is not None:
            line += f" Your choice, {fallback.wanted}, cannot be used now: {fallback.reason}."
        others = [other for other in self.roster if other != name and (fallback is None or other != fallback.wanted)]
        if others and self._on_tool_call("switch_model"):
            line += f" switch_model picks another: {', '.join(others)}."
        return line

    @capability("list_models")
    def list_roster(self) -> str:
        """The models you can switch to."""
        name, fallback = self._in_use()
        unusable = fallback.wanted if fallback is not None else None
        return "\n".join(
            f"- {other}{_described(option)}{' (in use)' if other == name else ''}"
            f"{' (cannot be used now)' if other == unusable else ''}"
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
        in_use, fallback = self._in_use()
        if in_use == name and fallback is None:
            return f"Already on {name}."
        option = self.roster[name]
        # A name without a provider may be one the agent's host registers; until the host's
        # selector has asked (handing over its resolver), the next request judges it instead.
        if self._hosted or option.model is None or not names_a_host_model(option.model):
            try:
                self._build(name)
            except ModelUnavailable as exc:
                staying = f"You stay on {in_use}" if in_use else "You stay on the agent's own model"
                others = [other for other in self.roster if other not in (name, in_use)]
                pick = f"; switch_model can pick {', '.join(others)}" if others else ""
                raise RetriableError(f"Model {name} cannot be used now: {exc}. {staying}{pick}.") from None
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
