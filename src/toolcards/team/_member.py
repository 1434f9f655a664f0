"""``MemberActor``: a team member as a Pykka actor hosting a pydantic-ai agent.

A member runs its agent on its own thread and event loop, continuing its message history. Its
work comes from its durable mailbox (:mod:`toolcards.team._mailbox`): messages reaching it idle
wake it and become the next run's prompt; messages reaching it mid-run are steered into that
run. A :meth:`TeamRuntime.ask <toolcards.team._runtime.TeamRuntime.ask>` runs one message and
answers it; ``stop_member`` ends the run at its next step
(:class:`~toolcards.errors.MemberStopped`). The member is its cards' observer
(:class:`~toolcards.core._observer.ActorToolObserver`, and
:class:`~toolcards.core._observer.TeamManagementToolObserver` when a ``team`` card lets it hire
and fire).

Why nothing deadlocks: the run occupies the actor thread, and pydantic-ai runs the sync tools
in worker threads, which may ask other actors. The observer methods
(:meth:`MemberActor.roster`, :meth:`~MemberActor.hire_member`, ...) are called directly on the
instance from those threads and only ask the orchestrator, never the member's own busy mailbox.
Messages to teammates go to their mailboxes, which wake them with a ``tell``: a member never
waits for another's run, and :func:`running_member` lets the runtime refuse a call that would
block on a member from inside its own run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from typing import TYPE_CHECKING, Any

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._address import ActorAddress
from toolcards.actors._system import TeamHandle
from toolcards.core._card import ToolCard
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT
from toolcards.core._factory import ToolFactory
from toolcards.core._observer import log_tool_call
from toolcards.core._registry import load_cards
from toolcards.errors import ActorUnavailable, MemberStopped
from toolcards.team._models import MailboxMessage, RoleProfile, RunFinished, TeamMessage
from toolcards.team._tool import MessagingTool, TeammatesParam, TeamTool

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.messages import ModelMessage

    from toolcards.core._commands import CommandRegistry
    from toolcards.team._runtime import TeamRuntime

__all__ = ["MemberActor", "MemberProxy", "running_member"]

logger = logging.getLogger("toolcards.team")

_running: contextvars.ContextVar[ActorAddress | None] = contextvars.ContextVar("toolcards_team_member", default=None)


def running_member() -> ActorAddress | None:
    """The member whose agent run the calling code is part of (its tools and prompts), or ``None``.

    Code that blocks until a member finishes a run must not be called from inside a run:
    the runtime checks this and raises instead of deadlocking.
    """
    return _running.get()


class MemberActor(pykka.ThreadingActor):
    """One team member: a pydantic-ai agent with its cards, history and mailbox.

    Started by :meth:`TeamRuntime.hire <toolcards.team._runtime.TeamRuntime.hire>`; the
    constructor runs in the hiring thread, so a broken profile fails the hire there.

    Args:
        runtime: The team runtime (hiring and firing go through it).
        address: The member's address (name, role, team).
        profile: Its role profile: instructions and cards.
        model: The pydantic-ai model (or model string) its agent runs.
        leaving: Set when the member is fired: messages still queued are dropped unread.

    Raises:
        WiringError: the profile's cards are invalid or cannot be bound.
    """

    def __init__(
        self,
        runtime: TeamRuntime,
        address: ActorAddress,
        profile: RoleProfile,
        model: Any,
        *,
        leaving: threading.Event,
    ) -> None:
        super().__init__()
        self._runtime = runtime
        self._address = address
        self._profile = profile
        self._leaving = leaving
        self._history: list[ModelMessage] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._factory = ToolFactory(_member_cards(profile), observer=self)
        self._agent, self._run_options = _build_agent(model, address, profile, self._factory, runtime)
        self._messaging = next((card for card in self._factory.cards if isinstance(card, MessagingTool)), None)
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._unlisten: Any = None

    # -- the observer contract (called directly, from the member's tool threads) --------------

    @property
    def address(self) -> ActorAddress:
        """This member's address."""
        return self._address

    @property
    def team(self) -> TeamHandle:
        """The team's orchestrator handle."""
        return self._runtime.team

    @property
    def team_id(self) -> str:
        """The team this member belongs to."""
        return self._address.team_id

    @property
    def user_id(self) -> str | None:
        """The human the team works for, if the runtime knows."""
        return self._runtime.user_id

    @property
    def profile(self) -> RoleProfile:
        """The role profile this member was hired with."""
        return self._profile

    @property
    def leaving(self) -> bool:
        """Whether the member was fired: its run in progress finishes, but is handed no new
        messages (they stay in its mailbox)."""
        return self._leaving.is_set()

    def notify_event(self, event: Any) -> None:
        """Forward tool execution records to the team's event log, batched (never blocks).

        System prompt sections render before every model request; only their failures are
        forwarded, so the log shows what members did rather than what they read.
        """
        log_tool_call(self._runtime.team, event)

    def hire_member(self, role: str, name: str | None = None) -> ActorAddress:
        """Hire a member of a hireable ``role``; blocks briefly while it starts.

        Raises:
            RetriableError: the role is unknown or not hireable, or the name is invalid or taken.
            WiringError: the role's profile cannot be used (its cards or model).
        """
        return self._runtime.hire(role, name, by=self._address)

    def fire_member(self, name: str) -> ActorAddress:
        """Fire member ``name`` without waiting for it to stop (it may be mid-run).

        Raises:
            RetriableError: no member has that name, or it is this member.
        """
        return self._runtime.fire(name, by=self._address, wait=False)

    def roster(self) -> list[ActorAddress]:
        """The team's members, in the order they joined (asks the orchestrator)."""
        return self._runtime.team.members()

    def hireable_roles(self) -> dict[str, str]:
        """Role → description for every hireable role in the team's catalog."""
        return {role: p.description for role, p in self._runtime.profiles().items() if p.hireable}

    # -- messages (handled on the actor thread) ---------------------------------------------

    def on_start(self) -> None:
        """Create the member's private event loop, on its own thread, and listen to its mailbox
        (messages waiting there already wake it at once)."""
        self._loop = asyncio.new_event_loop()
        if self._messaging is not None:
            try:
                self._unlisten = self._messaging.listen(self._wake)
            except Exception:
                logger.exception("%s cannot listen to its mailbox; it reads messages only when asked", self._address)

    def on_receive(self, message: Any) -> Any:
        """Handle news in the mailbox (its unread messages become one run), or a
        :class:`TeamMessage` sent with ``tell`` (one run on it).

        A failed run is logged and published as a :class:`RunFinished` with its error; it
        never stops the member.
        """
        if isinstance(message, _Wake):
            self._read_mailbox()
            return None
        if not isinstance(message, TeamMessage):
            return super().on_receive(message)
        self._guarded(lambda: self._handle(message), message.sender)
        return None

    def handle(self, message: TeamMessage) -> str:
        """Run the agent on ``message`` and return its final answer (through a proxy: an ask).

        Raises:
            ActorUnavailable: the member was fired.
            Exception: whatever the agent run raised (the model failed, usage limits, ...).
        """
        return self._handle(message)

    def ping(self) -> None:
        """Answer once every message queued before this one is handled."""

    def history(self) -> list[ModelMessage]:
        """A copy of the member's message history."""
        return list(self._history)

    def commands(self) -> CommandRegistry:
        """The member's commands (slash commands of its cards), usable from any thread."""
        return self._factory.command_registry()

    def on_stop(self) -> None:
        """Leave the roster (unless a namesake replaced this member) and close the event loop.

        Messages still in its mailbox stay there, for a member joining later with its name."""
        if self._unlisten is not None:
            self._unlisten()
        try:
            team = self._runtime.team
            if team.ref.is_alive():
                ref = team.member_ref(self._address.name)
                if ref is not None and ref.actor_urn == self.actor_urn:
                    team.unregister_member(self._address.name)
        except ActorUnavailable:
            pass  # the orchestrator stopped first; there is no roster to leave
        finally:
            self._close_loop()

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """Close the event loop when the actor dies of an unexpected error."""
        self._close_loop()

    # -- internals ---------------------------------------------------------------------------

    def _wake(self) -> None:
        """The mailbox's listener: news arrived. Runs under the mailbox's lock: only a tell,
        and one at a time (a wake already queued reads everything that arrives meanwhile)."""
        with self._wake_lock:
            if self._wake_pending:
                return
            self._wake_pending = True
        with contextlib.suppress(pykka.ActorDeadError):  # stopped: its messages stay in its mailbox
            self.actor_ref.tell(_Wake())

    def _read_mailbox(self) -> None:
        """Take the stop request and the unread messages waiting (runs between runs)."""
        with self._wake_lock:
            self._wake_pending = False
        messaging = self._messaging
        if messaging is None or self._leaving.is_set():
            return
        try:
            # Between runs there is no run to stop: a request arriving now is delivered and done.
            messaging.take_stop()
            while not self._leaving.is_set():
                messages = messaging.take_messages()
                if not messages:
                    return
                self._guarded(lambda batch=messages: self._handle_mail(batch), messages[0].sender)
        except Exception:
            logger.exception("%s could not read its mailbox", self._address.handle)

    def _guarded(self, run: Any, sender: str) -> None:
        try:
            run()
        except ActorUnavailable:
            logger.debug("%s dropped a message from %s: it is leaving", self._address.handle, sender)
        except MemberStopped as exc:
            logger.info("%s", exc)
        except Exception:
            logger.exception("%s failed to handle a message from %s", self._address.handle, sender)

    def _handle(self, message: TeamMessage) -> str:
        try:
            if self._leaving.is_set():
                raise ActorUnavailable(f"{self._address.handle} was fired and reads no more messages.")
            return self._run(message.as_prompt(), message.sender)
        finally:
            self._runtime._note_activity()

    def _handle_mail(self, messages: list[MailboxMessage]) -> str:
        try:
            prompt = "\n\n".join(message.as_prompt() for message in messages)
            return self._run(prompt, messages[0].sender)
        finally:
            self._runtime._note_activity()

    def _run(self, prompt: str, sender: str) -> str:
        from pydantic_ai import capture_run_messages

        assert self._loop is not None, "on_start creates the loop before any message"
        token = _running.set(self._address)
        try:
            with capture_run_messages() as captured:
                try:
                    result = self._loop.run_until_complete(
                        self._agent.run(prompt, message_history=self._history, **self._run_options)
                    )
                except MemberStopped:
                    # The run up to its stop, the refused tool call included: the member's next
                    # run knows what it did and why it stopped.
                    self._history = list(captured)
                    raise
        except Exception as exc:
            self._publish(
                RunFinished(
                    team_id=self.team_id,
                    member=self._address.handle,
                    sender=sender,
                    error=f"{type(exc).__name__}: {exc}",
                )
            )
            raise
        finally:
            _running.reset(token)
        self._history = result.all_messages()
        output = _output_text(result.output)
        self._publish(RunFinished(team_id=self.team_id, member=self._address.handle, sender=sender, output=output))
        return output

    def _publish(self, event: Any) -> None:
        try:
            self._runtime.team.publish(event)
        except pykka.ActorDeadError:
            logger.debug("event from %s dropped: the team is stopped", self._address.handle)

    def _close_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


class _Wake:
    """The mailbox's news for a member: read it between runs."""


class MemberProxy(ActorMemberMixin, pykka.ActorProxy[MemberActor]):
    """A typed proxy of :class:`MemberActor`: each method returns a ``pykka.Future``.

    ``cast(MemberProxy, ref.proxy())``. Never call it from the member's own run
    (its tools): the member's mailbox waits for that run, so an ask would deadlock.
    """

    commands = proxy_method(MemberActor.commands)
    handle = proxy_method(MemberActor.handle)
    history = proxy_method(MemberActor.history)
    ping = proxy_method(MemberActor.ping)


def _member_cards(profile: RoleProfile) -> list[ToolCard]:
    """The profile's cards plus the built-in messaging card, if the profile has none.

    When a team card already shows the roster, the messaging card's teammate list stays a
    command only, so the model does not read the team twice per request.
    """
    cards = load_cards(profile.cards)
    if not any(isinstance(card, MessagingTool) for card in cards):
        shows_roster = any(
            isinstance(card, TeamTool)
            and (param := card.param("team_roster")) is not None
            and SYSTEM_PROMPT in param.expose
            for card in cards
        )
        cards.append(MessagingTool(teammates=TeammatesParam(expose={COMMAND}) if shows_roster else True))
    return cards


def _build_agent(
    model: Any, address: ActorAddress, profile: RoleProfile, factory: ToolFactory, runtime: TeamRuntime
) -> tuple[AbstractAgent[Any, Any], dict[str, Any]]:
    """The member's agent and what each of its runs adds.

    For a model (or model string), a new agent with the member's identity, instructions and
    cards. For a prebuilt agent, that agent as it is — its own tools, output type, history
    processors — with the identity, instructions and cards given to each run, so one agent
    object may serve several members.
    """
    from pydantic_ai import Agent
    from pydantic_ai.agent import AbstractAgent

    identity = f"You are {address.handle} ({profile.role}) in team {address.team_id}. {profile.description}"
    instructions = [identity, profile.instructions] if profile.instructions else [identity]
    toolsets = [factory.toolset(), *factory.get_toolsets()]
    capabilities = _model_switch(factory, runtime, profile)
    if isinstance(model, AbstractAgent):
        extra = {"capabilities": capabilities} if capabilities else {}
        return model, {"instructions": instructions, "toolsets": toolsets, **extra}
    agent: Agent[None, str] = Agent(
        model, name=address.name, instructions=instructions, toolsets=toolsets, capabilities=capabilities
    )
    return agent, {}


def _model_switch(factory: ToolFactory, runtime: TeamRuntime, profile: RoleProfile) -> list[Any]:
    """A ``ModelSwitch`` when a card chooses the member's model (``ModelTool``): each request
    runs on the choice, a registered model's name giving that factory's model (made once)."""
    if factory.model_selector() is None:
        return []
    from toolcards.pydantic_ai._model_switch import ModelSwitch

    made: dict[str, Any] = {}

    def resolve(choice: Any) -> Any:
        if not isinstance(choice, str):
            return choice
        if choice not in made:
            made[choice] = runtime.model_named(choice, profile)
        return made[choice]

    return [ModelSwitch(factory, resolve=resolve)]


def _output_text(output: Any) -> str:
    """A run's output as text: a structured output (a pydantic model) as its JSON."""
    dump = getattr(output, "model_dump_json", None)
    return str(dump()) if callable(dump) else str(output)
