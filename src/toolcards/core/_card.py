"""``ToolCard``: serialisable configuration that, once bound to an agent, produces tools.

A card is a pydantic model. Each capability is one field typed ``SomeParam | bool``
(``False`` turns it off on every channel, ``True`` means the default param) and one
method marked with :func:`capability`, whose signature is what the model sees::

    class GreetParam(BaseToolParam):
        expose: set[Channels] = {TOOL_CALL, COMMAND}
        greeting: str = "Hello"

    class GreeterCard(ToolCard):
        kind: ClassVar[str] = "greeter"
        greet: GreetParam | bool = True

        @capability("greet")  # the tool is named after its field: "greet"
        def greet_someone(self, name: str) -> str:
            \"\"\"Greet someone by name.\"\"\"
            return f"{self.param('greet').greeting}, {name}!"

One rule names things: a capability's tool (and command) is named after its field, and the
channels it can serve follow from its signature (no arguments: every channel, a system
prompt included; arguments: tool calls and commands). ``name=`` and ``serves=`` exist for
the exceptions.

Runtime handles (actor proxies, clients) are ``PrivateAttr``s; every field serialises,
and ``arbitrary_types_allowed`` is refused. A card holds its observer weakly: using a tool
after its agent is gone raises :class:`~toolcards.errors.ObserverGone`.
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, PrivateAttr

from toolcards.core._arguments import DEFAULT_MAX_ARGUMENT_CHARS
from toolcards.core._callables import command_function, prompt_function, tool_function
from toolcards.core._channels import Channels
from toolcards.core._hints import NO_HINTS, ToolHints
from toolcards.core._output import DEFAULT_OUTPUT_BUDGET
from toolcards.core._params import BaseToolParam
from toolcards.core._tool import Tool
from toolcards.core._views import View, ViewSpec
from toolcards.errors import ObserverGone, WiringError

if TYPE_CHECKING:
    import pykka

    from toolcards.core._catalog import CatalogEntry
    from toolcards.core._steering import StopRequest

__all__ = ["Capability", "ToolCard", "capability", "observer_hint"]

F = TypeVar("F", bound=Callable[..., Any])
P = TypeVar("P", bound=BaseToolParam)
H = TypeVar("H")
T = TypeVar("T")

_ALL_CHANNELS = frozenset(Channels)
_CALLED_CHANNELS = frozenset({Channels.TOOL_CALL, Channels.COMMAND})


@dataclass(frozen=True, kw_only=True)
class Capability:
    """One thing a card can do, before it is bound: a handler and how it may be offered."""

    field: str
    """The card field holding this capability's ``Param | bool``."""
    handler: Callable[..., Any]
    """The function (a bound method once the card is bound) whose signature is the schema."""
    name: str
    """The tool and command name."""
    serves: frozenset[Channels]
    """The channels the handler can serve (a SYSTEM_PROMPT handler takes no arguments)."""
    untrusted_output: bool = False
    """The result carries outside data: wrap it in the untrusted-output envelope."""
    mutates: bool = False
    """The capability changes state; read-only cards drop it."""
    timeout_s: float | None = None
    """The card's default timeout (a param's ``timeout_s`` overrides it)."""
    max_concurrency: int | None = None
    """The card's default concurrency limit (a param's ``max_concurrency`` overrides it)."""
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    """The card's default output budget (a param's ``output_budget`` overrides it)."""
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS
    """The card's default cap on a call's arguments (a param's ``max_argument_chars`` overrides it)."""
    hints: ToolHints = NO_HINTS
    """What clients may know about the tool before calling it (MCP annotations, title...)."""

    def bound_to(self, card: Any) -> Capability:
        """This capability with its handler bound to ``card``.

        ``dataclasses.replace`` without its per-field loop: every bind makes one per capability.
        """
        bound = object.__new__(Capability)
        bound.__dict__.update(self.__dict__, handler=self.handler.__get__(card, type(card)))
        return bound


def capability(
    field: str,
    *,
    name: str | None = None,
    serves: set[Channels] | frozenset[Channels] | None = None,
    untrusted_output: bool = False,
    mutates: bool = False,
    timeout_s: float | None = None,
    max_concurrency: int | None = None,
    output_budget: int = DEFAULT_OUTPUT_BUDGET,
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
    hints: ToolHints | None = None,
) -> Callable[[F], F]:
    """Mark a card method as the handler of the capability configured by ``field``.

    Args:
        field: The card field (``Param | bool``) that switches and configures it.
        name: The tool/command name (default: ``field``).
        serves: The channels the method can serve; exposing it elsewhere is a ``WiringError``.
            Default: every channel for a method without arguments, else tool calls and
            commands (a system prompt is rendered without arguments).
        untrusted_output: Wrap results in the untrusted-output envelope.
        mutates: The capability changes state (dropped by read-only cards).
        timeout_s: Default timeout. max_concurrency: default concurrency limit.
        output_budget: Default characters of output kept.
        max_argument_chars: Default cap on a call's arguments, in characters of JSON text.
        hints: How the tool behaves, for clients (:class:`~toolcards.core._hints.ToolHints`:
            title, destructive, idempotent, open world, long running, output schema,
            completions). The pipeline never reads them.

    Changed in 0.3: ``hints``.
    """

    def mark(func: F) -> F:
        func.__toolcards_capability__ = Capability(  # type: ignore[attr-defined]
            field=field,
            handler=func,
            name=name or field,
            serves=frozenset(serves) if serves is not None else _channels_for(func),
            untrusted_output=untrusted_output,
            mutates=mutates,
            timeout_s=timeout_s,
            max_concurrency=max_concurrency,
            output_budget=output_budget,
            max_argument_chars=max_argument_chars,
            hints=hints or NO_HINTS,
        )
        return func

    return mark


def _channels_for(func: Callable[..., Any]) -> frozenset[Channels]:
    """Every channel for a handler that takes no arguments (besides the card), else the called ones."""
    parameters = list(inspect.signature(func).parameters.values())[1:]
    return _ALL_CHANNELS if not parameters else _CALLED_CHANNELS


class ToolCard(BaseModel):
    """Base class of every card. See the module docstring for how to write one."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    kind: ClassVar[str] = ""
    """The name a card is stored under in config files (default: derived from the class name)."""
    requires_observer: ClassVar[type | None] = None
    """The observer protocol this card needs to be bound (``None``: works unbound)."""
    _capabilities: ClassVar[tuple[Capability, ...]] = ()
    _views: ClassVar[tuple[ViewSpec, ...]] = ()
    _observer_ref: Callable[[], Any] | None = PrivateAttr(default=None)

    read_only: bool = False
    """Offer only the capabilities that change nothing (``mutates=False``), on every channel."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.model_config.get("arbitrary_types_allowed"):
            raise WiringError(
                f"{cls.__name__}: arbitrary_types_allowed is refused on cards; every field must "
                "serialise. Keep runtime handles in PrivateAttr."
            )
        if not cls.__dict__.get("kind"):
            cls.kind = _default_kind(cls.__name__)
        found: dict[str, Capability] = {}
        views: dict[str, ViewSpec] = {}
        for klass in reversed(cls.__mro__):
            # A copy, and pydantic's own names skipped: touching a deferred schema
            # (defer_build=True) builds it, which adds to the class's namespace.
            for attr, value in list(vars(klass).items()):
                if attr.startswith("__pydantic"):
                    continue
                cap = getattr(value, "__toolcards_capability__", None)
                if isinstance(cap, Capability):
                    found[attr] = cap
                spec = getattr(value, "__toolcards_view__", None)
                if isinstance(spec, ViewSpec):
                    views[attr] = spec
        problems = [
            f"@capability({cap.field!r}) on {attr}: {cls.__name__} has no field {cap.field!r}"
            for attr, cap in found.items()
            if cap.field not in cls.model_fields
        ]
        # pydantic turns a method named like a field into that field's default.
        problems += [
            f"{cls.__name__}.{attr} is both a field and a capability method; rename the method "
            f"and keep the tool name with @capability(..., name={attr!r})"
            for attr, info in cls.model_fields.items()
            if hasattr(info.default, "__toolcards_capability__")
        ]
        if problems:
            raise WiringError("; ".join(problems))
        cls._capabilities = tuple(found.values())
        cls._views = tuple(views.values())
        for attr, private in cls.__private_attributes__.items():
            # Not where a class (this one or a base) already defines the name: a base's
            # descriptor is inherited, and anything else defined there must stay found first.
            if not hasattr(private, "__get__") and not any(attr in klass.__dict__ for klass in cls.__mro__):
                setattr(cls, attr, _PrivateValue(attr))
        from toolcards.core._registry import register_card_class

        register_card_class(cls)

    def __eq__(self, other: object) -> bool:
        """Cards are configuration: equal when of the same kind with the same fields, whatever
        agent each is bound to (runtime handles are not compared)."""
        if not isinstance(other, ToolCard):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable configuration

    # -- binding ------------------------------------------------------------------------

    def observer(self, observer: Any) -> ToolCard:
        """Bind this card to ``observer`` (held weakly) and return the card.

        Raises:
            WiringError: the card needs an observer of another kind (``requires_observer``).
        """
        required = type(self).requires_observer
        if required is not None and not isinstance(observer, required):
            raise WiringError(
                f"{type(self).__name__} needs an observer implementing {required.__name__}, "
                f"got {type(observer).__name__}. {observer_hint(type(self).__name__, required.__name__)}"
            )
        try:
            self._observer_ref = weakref.ref(observer)
        except TypeError:  # objects without weakref support are held strongly
            self._observer_ref = lambda: observer
        self.on_bind(observer)
        return self

    def on_bind(self, observer: Any) -> None:
        """Hook: set up runtime handles (actor proxies, clients) for ``observer``."""

    def on_tools_bound(self, tool_names: frozenset[str]) -> None:
        """Hook: the names of every tool the agent can call through the factory that bound
        this card (its own and its sibling cards'), once they are all built.

        Added in 0.3.
        """

    def deliveries(self) -> list[str]:
        """Hook: texts the agent must read before its next model request, each handed over once.

        The pydantic-ai toolset calls it (through :meth:`ToolFactory.deliveries
        <toolcards.core._factory.ToolFactory.deliveries>`) before every model request of a run
        and adds each text to that request as a user message, so an agent mid-run reads news
        without waiting for its run to end (:mod:`toolcards.core._steering`). What it returns
        is delivered: the card marks it so, and never returns it again. Called from a worker
        thread; may block briefly (an actor ask). Default: nothing.

        Added in 0.3.
        """
        return []

    def take_stop(self) -> StopRequest | None:
        """Hook: a request that the agent stop its run, taken by this call, or ``None``.

        Checked by the adapters before every model request and every tool call of an agent
        (:mod:`toolcards.core._steering`): a request returned here is delivered, and never
        returned again. Called from a worker thread; should cost next to nothing when there is
        no request. Default: ``None``.

        Added in 0.3.
        """
        return None

    def get_observer(self) -> Any:
        """The bound observer; annotate the variable it is assigned to with the protocol the
        card requires (the factory checked it at bind).

        Raises:
            WiringError: the card was never bound.
            ObserverGone: the observer was garbage-collected.
        """
        if self._observer_ref is None:
            name = type(self).__name__
            raise WiringError(f"{name} is not bound. " + observer_hint(name, "ActorToolObserver"))
        observer = self._observer_ref()
        if observer is None:
            raise ObserverGone(
                f"The agent {type(self).__name__} was bound to no longer exists; bind the card to a live agent."
            )
        return observer

    @property
    def is_bound(self) -> bool:
        """Whether :meth:`observer` was called."""
        return self._observer_ref is not None

    def bound(self, handle: H | None) -> H:
        """``handle`` (a runtime handle :meth:`on_bind` set up), or the error that says why it
        is missing: the card was never bound, or its agent is gone.

        Raises:
            WiringError: the card was never bound.
            ObserverGone: the observer was garbage-collected.
        """
        if handle is None:
            self.get_observer()
            raise WiringError(f"{type(self).__name__} is not set up: its on_bind did not finish.")
        return handle

    def ask(self, future: pykka.Future[T], *, actor: str) -> T:
        """Wait for an actor's answer (``future``, from a proxy call) in this thread.

        Raises:
            ActorUnavailable: the actor is stopped (its team is shutting down).
            Exception: whatever the actor's method raised, unchanged.
        """
        from toolcards.actors._asking import ask

        return ask(future, actor=actor)

    # -- capabilities -----------------------------------------------------------------------

    @overload
    def param(self, field: str) -> Any: ...
    @overload
    def param(self, field: str, kind: type[P]) -> P: ...
    def param(self, field: str, kind: type[Any] | None = None) -> Any:
        """The param configuring ``field``: its value, or the field's param type with its
        defaults when it is ``True`` (one instance per card class and field, built once:
        treat it as read-only), or ``None`` when it is ``False`` or ``None``."""
        value = getattr(self, field)
        if value is False or value is None:
            return None
        if value is True:
            key = (type(self), field)
            default = _DEFAULT_PARAMS.get(key)
            if default is None:
                default = _DEFAULT_PARAMS[key] = _param_type(type(self), field)()
            return default
        return value

    def describe(self, field: str) -> str | None:
        """Words about capability ``field`` that depend on this card's configuration.

        Appended to the tool's description (before the param's own ``instructions``), so the
        model reads what this configuration allows (``ExecTool``: the commands and whether
        there is a network). ``None`` (the default) adds nothing.
        """
        return None

    def capabilities(self) -> Iterator[Capability]:
        """The capabilities this card offers, bound to this card (override for dynamic ones);
        without those that mutate when :attr:`read_only`."""
        for cap in type(self)._capabilities:
            if not (self.read_only and cap.mutates):
                yield cap.bound_to(self)

    @classmethod
    def offers_views(cls) -> bool:
        """Whether this kind of card has any :func:`~toolcards.core._views.view`."""
        return bool(cls._views)

    def views(self) -> list[View]:
        """This card's views (see :mod:`toolcards.core._views`), bound to this card.

        Read-only by contract: a view changes nothing, so a card bound only to show its views
        (the dashboard's) never writes. Added in 0.2.
        """
        return [spec.bind(self) for spec in type(self)._views]

    def build_tools(self) -> list[Tool]:
        """One :class:`Tool` per enabled capability, its channels taken from the param.

        Raises:
            WiringError: a param exposes a capability on a channel its handler cannot serve.
        """
        tools: list[Tool] = []
        problems: list[str] = []
        agent = _agent_name(self)
        for cap in self.capabilities():
            param = self.param(cap.field)
            if param is None or not param.expose:
                continue
            channels = frozenset(param.expose)
            unserved = channels - cap.serves
            if unserved:
                problems.append(
                    f"{type(self).__name__}.{cap.field} exposes {cap.name} on "
                    f"{', '.join(sorted(c.value for c in unserved))}, which it cannot serve "
                    f"(it serves {', '.join(sorted(c.value for c in cap.serves))})"
                )
                continue
            tools.append(
                Tool.from_function(
                    cap.handler,
                    name=cap.name,
                    instructions="\n\n".join(text for text in (self.describe(cap.field), param.instructions) if text)
                    or None,
                    channels=channels,
                    param=param,
                    card=type(self).__name__,
                    agent=agent,
                    requires_approval=param.requires_approval,
                    timeout_s=param.timeout_s if param.timeout_s is not None else cap.timeout_s,
                    max_concurrency=param.max_concurrency or cap.max_concurrency,
                    output_budget=param.output_budget or cap.output_budget,
                    max_argument_chars=param.max_argument_chars or cap.max_argument_chars,
                    untrusted_output=cap.untrusted_output,
                    mutates=cap.mutates,
                    hints=_bound_hints(self, cap.hints),
                )
            )
        if problems:
            raise WiringError("; ".join(problems) + ". Remove the channel from the param's expose.")
        return tools

    # -- the hooks adapters use ---------------------------------------------------------------

    def get_tools(self) -> list[Callable[..., Any]]:
        """Functions for the TOOL_CALL channel, ready for ``Agent(tools=...)``."""
        return [tool_function(t) for t in self.build_tools() if Channels.TOOL_CALL in t.channels]

    def get_system_prompts(self) -> list[Callable[[], str | None]]:
        """Zero-argument callables for the SYSTEM_PROMPT channel, re-run before each request."""
        return [prompt_function(t) for t in self.build_tools() if Channels.SYSTEM_PROMPT in t.channels]

    def get_commands(self) -> dict[type[BaseToolParam], Callable[..., Any]]:
        """Callables for the COMMAND channel, keyed by their param type."""
        return {type(t.param): command_function(t) for t in self.build_tools() if Channels.COMMAND in t.channels}

    def get_toolsets(self) -> list[Any]:
        """Ready-made pydantic-ai toolsets (for cards wrapping MCP servers); none by default."""
        return []

    # -- what searches and model switches read ---------------------------------------------

    def catalog_entries(self) -> Sequence[CatalogEntry]:
        """What ``search_tools`` finds of this card besides its tools (a skill); none by default.

        Asked at every search: return the same sequence object while nothing changed, since a
        search rebuilds its index when it gets another one.
        """
        return ()

    def context_tools(self) -> frozenset[str]:
        """The tools this card's context tells the model to call (``use_skill`` for the skill
        menu); an agent that finds its tools by search keeps them listed. None by default."""
        return frozenset()

    def selected_model(self, resolve: Callable[[Any], Any] | None = None) -> Any | None:
        """The model this card chose for its agent's next request, or ``None`` for no choice.

        Asked before every model request by the adapters that can switch a run's model
        (:class:`toolcards.pydantic_ai.ModelChoice`, a team runtime's members): a pydantic-ai
        model or model string. Only the model card chooses; the default is ``None``.

        Args:
            resolve: How the agent's host turns a chosen value into a model before pydantic-ai
                does (a team runtime's registered models), for a card that builds its choice
                (``ModelTool`` builds it, and chooses another when it cannot be built).
        """
        return None


def _bound_hints(card: ToolCard, hints: ToolHints) -> ToolHints:
    """``hints`` with each completion's method name replaced by that method of ``card``."""
    if not hints.completions:
        return hints
    import dataclasses

    bound = {
        argument: getattr(card, method) if isinstance(method, str) else method
        for argument, method in hints.completions.items()
    }
    return dataclasses.replace(hints, completions=bound)


class _PrivateValue:
    """Reads one private attribute of a card from the instance's private values.

    Runtime handles are private attributes, read on every call. Without this, a read misses
    the normal lookup and goes through pydantic's ``__getattr__``, which probes the attribute
    for a descriptor on every read (a failed ``hasattr``, so an exception, after the one the
    missed lookup raised; pydantic issue #12081), an order of magnitude slower. What
    is stored, and how pydantic sets, copies and deletes it, is unchanged; attributes whose
    default is a descriptor are left to pydantic.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, card: ToolCard | None, owner: type[ToolCard] | None = None) -> Any:
        if card is None:  # on the class: what pydantic gives there
            assert owner is not None
            return owner.__private_attributes__[self.name]
        try:
            return card.__pydantic_private__[self.name]  # type: ignore[index]
        except (KeyError, TypeError):  # never set, or private values not made yet
            raise AttributeError(f"{type(card).__name__!r} object has no attribute {self.name!r}") from None

    def __set__(self, card: ToolCard, value: Any) -> None:
        # pydantic's __setattr__ stores private values itself; this is object.__setattr__'s way.
        card.__pydantic_private__[self.name] = value  # type: ignore[index]


_DEFAULT_PARAMS: dict[tuple[type[ToolCard], str], BaseToolParam] = {}
"""The default param of each card class's ``True`` fields (:meth:`ToolCard.param`)."""


def _param_type(card_class: type[ToolCard], field: str) -> type[BaseToolParam]:
    annotation = card_class.model_fields[field].annotation
    for candidate in getattr(annotation, "__args__", (annotation,)):
        if isinstance(candidate, type) and issubclass(candidate, BaseToolParam):
            return candidate
    raise WiringError(f"{card_class.__name__}.{field} is not typed 'SomeParam | bool'.")


def _agent_name(card: ToolCard) -> str | None:
    if card._observer_ref is None:
        return None
    observer = card._observer_ref()
    address = getattr(observer, "address", None)
    return cast(str | None, getattr(address, "handle", None))


def _default_kind(class_name: str) -> str:
    stem = class_name.removesuffix("Card").removesuffix("Tool") or class_name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


def observer_hint(card: str, required: str) -> str:
    """What to pass for a card that needs an observer of kind ``required``, with an example."""
    if required == "TeamManagementToolObserver":
        return (
            f"{card} hires and fires, so it works for members of a runtime: "
            f"team = toolcards.Team('acme'); runtime = team.runtime(); then list {card} in a role's cards."
        )
    return (
        f"{card} works for a member of a team: team = toolcards.Team('acme'); "
        f"Agent(model, toolsets=[team.member('Alice').toolset({card}())]), "
        "or ToolFactory(cards, observer=team.member('Alice'))."
    )
