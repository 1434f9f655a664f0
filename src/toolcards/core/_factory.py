"""``ToolFactory``: binds cards to an observer and aggregates what they produce per channel.

The factory is where wiring mistakes surface, all at once and loudly: two capabilities
with the same name on a channel, a capability exposed on a channel its card cannot serve,
a card bound to an observer of the wrong kind. Nothing is dropped silently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from toolcards.core._approval import Approver
from toolcards.core._callables import command_function, prompt_function, tool_function
from toolcards.core._card import ToolCard, observer_hint
from toolcards.core._channels import Channels
from toolcards.core._events import ToolExecutionRecord
from toolcards.core._guards import Guard
from toolcards.core._params import BaseToolParam
from toolcards.core._spill import TeamSpill
from toolcards.core._tool import Tool
from toolcards.errors import StoreError, ToolcardsError, WiringError

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

    from toolcards.core._catalog import CatalogEntry
    from toolcards.core._commands import CommandRegistry
    from toolcards.core._steering import StopRequest
    from toolcards.core._views import View
    from toolcards.pydantic_ai._toolset import CardToolset, ContextMode

__all__ = ["ToolFactory"]

logger = logging.getLogger("toolcards.factory")

RecordSubscriber = Callable[[ToolExecutionRecord], None]


class ToolFactory:
    """Bind ``tool_cards`` to ``observer`` and expose what they produce, per channel.

    Args:
        tool_cards: The cards, bound to ``observer``. A card already bound to another live
            agent is copied for this one (``factory.cards`` holds what was bound), so one
            card object can configure many agents without their identities mixing.
        observer: The agent the cards work for; required by cards with ``requires_observer``.
        retry_exception: The framework's retry signal (e.g. pydantic-ai's ``ModelRetry``):
            functions from :meth:`get_tools` raise it for a ``RetriableError``. Without it,
            those functions return the error message as their result.
        guards: Policy checks run on every call of every tool, before the card's own.
        approve: Asked to approve every call of a tool whose param sets
            ``requires_approval`` (see :mod:`toolcards.core._approval`), on every channel:
            ``get_tools()`` functions, ``get_commands()``, ``command_registry()`` and the
            tools' own ``call``/``call_sync``. Without it such a call is refused with
            ``ApprovalRequired`` unless its caller passes ``approved=True``; the pydantic-ai
            toolset then defers it to the application (``DeferredToolRequests``).

    Raises:
        WiringError: listing every problem found while binding.
    """

    def __init__(
        self,
        tool_cards: Iterable[ToolCard],
        observer: Any = None,
        retry_exception: type[Exception] | None = None,
        *,
        guards: Sequence[Guard] = (),
        approve: Approver | None = None,
    ) -> None:
        self.cards = _cards_only(tool_cards)
        self.observer = observer
        self.retry_exception = retry_exception
        self.approve = approve
        self._subscribers: list[RecordSubscriber] = []
        self._records = _RecordFanOut(getattr(observer, "notify_event", None), self._subscribers)
        self._lock = threading.Lock()
        self._entry_parts: tuple[Sequence[CatalogEntry], ...] | None = None
        self._entries: tuple[CatalogEntry, ...] = ()
        self._tools = self._bind(tuple(guards))
        self._steering = [card for card in self.cards if _steers(card)]

    def _bind(self, guards: tuple[Guard, ...]) -> list[Tool]:
        problems: list[str] = []
        tools: list[Tool] = []
        owners: dict[tuple[Channels, str], tuple[int, str]] = {}
        if self.observer is not None:
            # A card serves one agent: rebinding one bound to another agent would make that
            # agent's tools act as this one. This agent gets its own copy of the config.
            self.cards = [
                type(card).model_validate(card.model_dump()) if _bound_elsewhere(card, self.observer) else card
                for card in self.cards
            ]
        for index, card in enumerate(self.cards):
            label = type(card).__name__
            try:
                if self.observer is not None:
                    card.observer(self.observer)
                elif type(card).requires_observer is not None:
                    required = type(card).requires_observer
                    assert required is not None
                    raise WiringError(
                        f"{label} needs an observer implementing {required.__name__} and none was given. "
                        + observer_hint(label, required.__name__)
                    )
                built = card.build_tools()
            except WiringError as exc:
                problems.append(str(exc))
                continue
            seen_in_card: dict[Channels, set[str]] = {channel: set() for channel in Channels}
            for tool in built:
                for channel in tool.channels:
                    if channel is Channels.SYSTEM_PROMPT:
                        continue
                    other_index, other = owners.setdefault((channel, tool.name), (index, label))
                    if (other_index, other) != (index, label) or tool.name in seen_in_card[channel]:
                        problems.append(
                            f"{tool.name!r} on {channel.value} is produced by both {other} and {label}; "
                            "disable one of them (set its field to False) or rename it"
                        )
                    seen_in_card[channel].add(tool.name)
                tools.append(tool)
        if problems:
            raise WiringError("Cannot bind cards: " + "; ".join(p.rstrip(".") for p in problems) + ".")
        from toolcards.core._mentions import known_tool_names

        callable_names = {tool.name for tool in tools if Channels.TOOL_CALL in tool.channels}
        unreachable = (known_tool_names() | {tool.name for tool in tools}) - callable_names
        siblings = frozenset(callable_names)
        for card in self.cards:
            card.on_tools_bound(siblings)
        spill = self._spill(tools, siblings)
        # The team's ledger (None without a team, or a team that keeps none): every call is
        # admitted against its budgets and noted (toolcards.core._ledger).
        ledger = getattr(getattr(self.observer, "team", None), "ledger", None)
        return [
            tool.replace(
                guards=guards + tool.guards,
                record_sink=self._records,
                approver=self.approve,
                unreachable=unreachable,
                spill=spill,
                ledger=ledger,
            )
            for tool in tools
        ]

    def _spill(self, tools: list[Tool], callable_names: frozenset[str]) -> TeamSpill | None:
        """Where this agent's outputs over their budget are kept: its team's sinks, found at
        each call; ``None`` without a team (outputs are cut)."""
        team = getattr(self.observer, "team", None)
        if team is None or not callable(getattr(team, "service", None)):
            return None
        commands = frozenset(tool.name for tool in tools if Channels.COMMAND in tool.channels)
        readers = {
            Channels.TOOL_CALL: callable_names,
            Channels.SYSTEM_PROMPT: callable_names,  # the model reading the prompt calls tools
            Channels.COMMAND: commands,
        }
        return TeamSpill(team, readers)

    # -- events -----------------------------------------------------------------------------

    def subscribe(self, subscriber: RecordSubscriber) -> Callable[[], None]:
        """Receive every :class:`ToolExecutionRecord`; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    # -- channels ---------------------------------------------------------------------------

    def tools(self, channel: Channels | None = None) -> list[Tool]:
        """The bound :class:`Tool` objects, optionally only those exposed on ``channel``."""
        if channel is None:
            return list(self._tools)
        return [tool for tool in self._tools if channel in tool.channels]

    def get_tools(self) -> list[Callable[..., Any]]:
        """Functions for ``Agent(tools=...)``: one per TOOL_CALL capability, same signature.

        A tool that ``requires_approval`` runs only if the factory's ``approve`` hook
        approves the call; otherwise the function returns the refusal as text (pydantic-ai
        cannot defer a plain function's call: use :meth:`toolset` for that).
        """
        return [tool_function(tool, self.retry_exception) for tool in self.tools(Channels.TOOL_CALL)]

    def get_system_prompts(self) -> list[Callable[[], str | None]]:
        """Callables for ``Agent(instructions=...)``, re-evaluated before every model request."""
        return [prompt_function(tool) for tool in self.tools(Channels.SYSTEM_PROMPT)]

    def get_commands(self) -> dict[type[BaseToolParam], Callable[..., Any]]:
        """Callables for orchestrator code, keyed by param type. They raise ``RetriableError``
        or ``ToolFailed`` on failure, and ``ApprovalRequired`` for a tool that
        ``requires_approval`` unless the factory's ``approve`` hook approves the call."""
        return {type(tool.param): command_function(tool) for tool in self.tools(Channels.COMMAND)}

    def get_toolsets(self) -> list[Any]:
        """Ready-made toolsets from cards that wrap external servers (MCP)."""
        return [toolset for card in self.cards for toolset in card.get_toolsets()]

    @property
    def steers(self) -> bool:
        """Whether a card hands the agent texts or stop requests between its steps
        (:meth:`deliveries`, :meth:`take_stop`); adapters skip both checks when none does."""
        return bool(self._steering)

    def deliveries(self) -> list[str]:
        """Every card's :meth:`~toolcards.core._card.ToolCard.deliveries`, in card order: texts the
        agent reads before its next model request, each returned once. May block briefly.

        A card whose store cannot be reached delivers nothing this time (logged): its texts
        stay in the store for the next request, and the request goes on."""
        texts: list[str] = []
        for card in self._steering:
            try:
                texts += card.deliveries()
            except StoreError as exc:
                logger.warning("%s: deliveries skipped, the store failed: %s", type(card).__name__, exc)
        return texts

    def take_stop(self) -> StopRequest | None:
        """The first card's :meth:`~toolcards.core._card.ToolCard.take_stop`: a request that the
        agent stop, taken (it is not returned again), or ``None``. May block briefly.

        A card whose store cannot be reached counts as no request (logged): a stop waiting
        there is taken at a later check, and a call that needs no store (reading a file)
        still runs during an outage; one that needs it fails in its own words."""
        for card in self._steering:
            try:
                stop = card.take_stop()
            except StoreError as exc:
                logger.warning("%s: stop check skipped, the store failed: %s", type(card).__name__, exc)
                continue
            if stop is not None:
                return stop
        return None

    @overload
    def toolset(
        self,
        *,
        max_retries: int = 2,
        context: ContextMode = "rewrite",
        tool_search: Literal[False] = False,
        hot_tools: Iterable[str] = (),
    ) -> CardToolset: ...
    @overload
    def toolset(
        self,
        *,
        max_retries: int = 2,
        context: ContextMode = "rewrite",
        tool_search: bool,
        hot_tools: Iterable[str] = (),
    ) -> AbstractToolset[Any]: ...
    def toolset(
        self,
        *,
        max_retries: int = 2,
        context: ContextMode = "rewrite",
        tool_search: bool = False,
        hot_tools: Iterable[str] = (),
    ) -> AbstractToolset[Any]:
        """One pydantic-ai toolset with every tool and the system prompts as its instructions.

        ``Agent(model, toolsets=[factory.toolset()])`` attaches everything. ``context`` says how
        a changed system prompt reaches the model (:class:`~toolcards.pydantic_ai.CardToolset`):
        rendered afresh into the instructions (the default), or ``"append"``ed as a change so the
        start of every request stays cacheable. With a provider that caches prompts,
        ``Agent(model, capabilities=[TeamContext(factory)])`` costs least (``docs/tokens.md``).

        ``tool_search=True`` lists only ``search_tools``, ``describe_tool``, the ``hot_tools``
        and the tools the cards' context names; the others are found by search and loaded
        for the rest of the conversation (:class:`~toolcards.pydantic_ai.CatalogToolset`).
        The toolset then carries the cards' MCP toolsets (``get_toolsets()``) too, so their
        tools are searched with the cards': do not attach those a second time.

        Raises:
            WiringError: ``hot_tools`` without ``tool_search``, or naming a tool the cards do
                not have (when no MCP toolset could have it).
        """
        from toolcards.pydantic_ai._toolset import factory_toolset

        return factory_toolset(
            self, max_retries=max_retries, context=context, tool_search=tool_search, hot_tools=hot_tools
        )

    # -- what searches and model switches read -----------------------------------------------

    def catalog_entries(self) -> Sequence[CatalogEntry]:
        """Every card's :meth:`~toolcards.core._card.ToolCard.catalog_entries` (skills), as one
        tuple: the same object while no card's changed, so a search rebuilds its index only then."""
        parts = tuple(card.catalog_entries() for card in self.cards if _overrides(card, "catalog_entries"))
        with self._lock:
            previous = self._entry_parts
            if (
                previous is None
                or len(previous) != len(parts)
                or any(a is not b for a, b in zip(previous, parts, strict=True))
            ):
                self._entry_parts = parts
                self._entries = tuple(entry for part in parts for entry in part)
            return self._entries

    def context_tools(self) -> frozenset[str]:
        """The tool-call tools the cards' context tells the model to call (kept listed by tool search)."""
        callable_names = {tool.name for tool in self.tools(Channels.TOOL_CALL)}
        return frozenset(name for card in self.cards for name in card.context_tools()) & callable_names

    def model_selector(self) -> Callable[..., Any | None] | None:
        """What the cards chose for the agent's next model request (``ModelTool``'s
        ``switch_model``): a function returning a pydantic-ai model, a model string or
        ``None`` (no choice), called before every request (with the host's ``resolve``, see
        :meth:`ToolCard.selected_model`); ``None`` when no card chooses.

        Raises:
            WiringError: two cards choose the model.
        """
        choosers = [card for card in self.cards if _overrides(card, "selected_model")]
        if not choosers:
            return None
        if len(choosers) > 1:
            names = ", ".join(type(card).__name__ for card in choosers)
            raise WiringError(f"Two cards choose this agent's model ({names}); keep one.")
        return choosers[0].selected_model

    def views(self) -> dict[str, View]:
        """Every view of the bound cards, by name (see :mod:`toolcards.core._views`).

        Raises:
            WiringError: two cards offer a view of the same name (two boards in one team).
        """
        found: dict[str, View] = {}
        problems: list[str] = []
        for card in self.cards:
            for view in card.views():
                other = found.setdefault(view.name, view)
                if other is not view:
                    problems.append(f"view {view.name!r} is offered by both {other.card} and {view.card}")
        if problems:
            raise WiringError("Cannot gather views: " + "; ".join(problems) + ". Keep one card of each kind per team.")
        return found

    def command_registry(self) -> CommandRegistry:
        """Slash-command dispatch (``/name arg key=value``) and descriptors for help screens."""
        from toolcards.core._commands import CommandRegistry

        return CommandRegistry(self.tools(Channels.COMMAND))


def _cards_only(tool_cards: Iterable[ToolCard]) -> list[ToolCard]:
    """``tool_cards`` as a list, refusing in words what is not a card (a kind's name, a card
    class, a nested list), which would otherwise fail later with an attribute error."""
    if isinstance(tool_cards, ToolCard):
        raise WiringError(f"Expected a list of cards, got one card: pass [{type(tool_cards).__name__}(...)].")
    if isinstance(tool_cards, (str, bytes)):
        raise WiringError(f"Expected a list of cards, got {_what(tool_cards)}: pass instances, e.g. [WorkspaceTool()].")
    cards = list(tool_cards)
    wrong = [f"item {index}: {_what(card)}" for index, card in enumerate(cards) if not isinstance(card, ToolCard)]
    if wrong:
        raise WiringError(
            "Every item must be a card instance (e.g. WorkspaceTool(), not WorkspaceTool or 'workspace'): "
            + "; ".join(wrong)
            + "."
        )
    return cards


def _what(value: object) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__} (call it: {value.__name__}())"
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _overrides(card: ToolCard, method: str) -> bool:
    return getattr(type(card), method) is not getattr(ToolCard, method)


def _steers(card: ToolCard) -> bool:
    """Whether ``card`` overrides a steering hook (the defaults hand over nothing)."""
    kind = type(card)
    return kind.deliveries is not ToolCard.deliveries or kind.take_stop is not ToolCard.take_stop


def _bound_elsewhere(card: ToolCard, observer: Any) -> bool:
    if not card.is_bound:
        return False
    try:
        current = card.get_observer()
    except ToolcardsError:  # its agent is gone: rebinding takes nothing from anyone
        return False
    return current is not observer


class _RecordFanOut:
    """The factory's record sink: the observer's ``notify_event`` and the subscribers.

    False while neither listens, so the pipeline builds no record for nobody (a record is a
    few microseconds of a call that may take one).
    """

    __slots__ = ("_notify", "_subscribers")

    def __init__(self, notify: Callable[[Any], None] | None, subscribers: list[RecordSubscriber]) -> None:
        self._notify = notify
        self._subscribers = subscribers

    def __bool__(self) -> bool:
        return self._notify is not None or bool(self._subscribers)

    def __call__(self, record: ToolExecutionRecord) -> None:
        if self._notify is not None:
            self._notify(record)
        for subscriber in tuple(self._subscribers):
            subscriber(record)
