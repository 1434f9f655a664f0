"""``TeamRuntime``: hiring, firing and messaging the LLM members of one team.

The runtime sits on a team's orchestrator (:class:`~toolcards.actors._system.TeamHandle`): role
profiles go in its catalog, members (:class:`~toolcards.team._member.MemberActor`) in its
roster::

    runtime = TeamRuntime(system.team("t1"), models={"scripted": lambda profile: FunctionModel(...)})
    runtime.register_profile(RoleProfile(role="builder", description="Builds.", model="scripted"))
    address = runtime.hire("builder")                 # @Builder-1
    runtime.send("Builder-1", "Build the parser.")    # to its durable mailbox; returns at once
    runtime.wait_idle()                               # until nobody has work left

A profile's ``model`` is looked up in ``models`` (name → factory of a pydantic-ai model), else
given to pydantic-ai as a model string; a member with a ``ModelTool`` runs each request on the
model it chose. :meth:`TeamRuntime.ask`, :meth:`~TeamRuntime.wait_idle` and
:meth:`~TeamRuntime.fire` with ``wait=True`` wait for members' runs, so they refuse to run
inside a member's run, where they would deadlock; do not call them from event subscribers
either, which run on the orchestrator's thread that members' tools ask.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import pykka

from toolcards.actors._address import ActorAddress
from toolcards.actors._asking import ask
from toolcards.actors._system import TeamHandle
from toolcards.core._registry import load_cards
from toolcards.errors import ActorUnavailable, RetriableError, WiringError
from toolcards.team._delivery import deliver
from toolcards.team._member import MemberActor, MemberProxy, running_member
from toolcards.team._models import (
    MemberFired,
    MemberHired,
    RoleProfile,
    SendReport,
    TeamMessage,
    default_member_name,
    find_member,
    validate_member_name,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from toolcards.core._commands import CommandRegistry

__all__ = ["ModelFactory", "TeamRuntime"]

ModelFactory = Callable[[RoleProfile], Any]
"""Builds the pydantic-ai model (or model string) for a member of the given profile; or a
prebuilt ``pydantic_ai.Agent`` (or a function returning one), which members of the profile
run with the cards' toolsets and their identity added to each run."""


@dataclass(kw_only=True)
class _Membership:
    address: ActorAddress
    ref: pykka.ActorRef[MemberActor]
    proxy: MemberProxy
    leaving: threading.Event
    commands: CommandRegistry


class TeamRuntime:
    """Hire, fire and message the agent members of ``team``.

    Thread-safe: hires and fires are serialised; everything else is an ask to the
    orchestrator or a member. Use it as a context manager, or call :meth:`stop`, to stop
    the members it hired (``ActorSystem.stop()`` stops them too).

    Args:
        team: The team's orchestrator handle, ``system.team(team_id)``.
        models: Model factories by name, for profiles whose ``model`` is that name.
        user_id: The human the team works for, passed to cards through the members.
    """

    def __init__(
        self,
        team: TeamHandle,
        *,
        models: Mapping[str, ModelFactory] | None = None,
        user_id: str | None = None,
    ) -> None:
        self.team = team
        self.user_id = user_id
        self._models: dict[str, ModelFactory] = dict(models or {})
        self._staffing = threading.RLock()
        self._members: dict[str, _Membership] = {}
        self._used_names: set[str] = set()
        self._activity_lock = threading.Lock()
        self._activity = 0

    @property
    def team_id(self) -> str:
        """The team's id."""
        return self.team.team_id

    # -- catalog ------------------------------------------------------------------------------

    def register_model(self, name: str, factory: ModelFactory) -> None:
        """Make profiles whose ``model`` is ``name`` use ``factory(profile)``."""
        with self._staffing:
            self._models[name] = factory

    def register_profile(self, profile: RoleProfile | Mapping[str, Any]) -> RoleProfile:
        """Add or replace the profile of ``profile.role`` in the team's catalog; returns it.

        Blocks briefly (an ask to the orchestrator).

        Raises:
            WiringError: the profile's cards do not load (unknown kind, invalid fields).
            pydantic.ValidationError: a mapping that is not a valid profile.
        """
        checked = profile if isinstance(profile, RoleProfile) else RoleProfile.model_validate(profile)
        try:
            load_cards(checked.cards)
        except WiringError as exc:
            raise WiringError(f"Role {checked.role!r}: {exc}") from exc
        self.team.register_profile(checked.role, checked)
        return checked

    def profiles(self) -> dict[str, RoleProfile]:
        """The team's role catalog, by role (profiles registered as dicts are validated)."""
        return {
            role: p if isinstance(p, RoleProfile) else RoleProfile.model_validate(p)
            for role, p in self.team.profiles().items()
        }

    # -- staffing -----------------------------------------------------------------------------

    def hire(self, role: str, name: str | None = None, *, by: ActorAddress | None = None) -> ActorAddress:
        """Start a member of ``role`` and add it to the roster; returns its address.

        ``name`` defaults to the first free ``<Role>-<n>`` (numbers are not reused within
        this runtime). ``by`` is the member hiring, who may only hire ``hireable`` roles;
        the application (``by=None``) may hire any registered role. Blocks while the member
        is built and started (model, cards, actor thread).

        Raises:
            RetriableError: unknown or non-hireable role, invalid or taken name; the message
                lists the valid choices.
            WiringError: the role's model or cards cannot be used.
        """
        with self._staffing:
            profiles = self.profiles()
            allowed = sorted(r for r, p in profiles.items() if by is None or p.hireable)
            wanted = role.strip()
            profile = profiles.get(wanted) or next(
                (p for r, p in profiles.items() if r.lower() == wanted.lower()), None
            )
            if profile is None or profile.role not in allowed:
                raise RetriableError(_role_problem(role, profile, allowed))
            # Every process's members: a name held elsewhere would be refused at registration.
            taken = list({m.name for m in self.team.members()} | {m.name for m in self.team.present_members()})
            if name is None:
                name = default_member_name(profile.role, [*taken, *self._used_names])
            else:
                name = validate_member_name(name)
                if name.lower() in {t.lower() for t in taken}:
                    free = default_member_name(profile.role, [*taken, *self._used_names])
                    raise RetriableError(
                        f"The name {name!r} is taken. Choose another name, or omit the name to get {free}."
                    )
            model = self._model_for(profile)
            address = ActorAddress(name=name, role=profile.role, team_id=self.team_id, agent_id=uuid.uuid4().hex)
            leaving = threading.Event()
            ref = MemberActor.start(self, address, profile, model, leaving=leaving)
            try:
                self.team.register_member(address, ref)
            except ValueError:
                ref.stop(block=False)
                raise RetriableError(f"The name {name!r} is taken. Choose another name.") from None
            proxy = cast(MemberProxy, ref.proxy())
            # The new member's mailbox holds nothing else yet: this answers at once.
            commands = ask(proxy.commands(), actor=address.handle)
            self._members[ref.actor_urn] = _Membership(
                address=address, ref=ref, proxy=proxy, leaving=leaving, commands=commands
            )
            self._used_names.add(name.lower())
        self._note_activity()
        self.team.publish(MemberHired(team_id=self.team_id, member=address, hired_by=by.handle if by else None))
        return address

    def fire(
        self, name: str, *, by: ActorAddress | None = None, wait: bool = True, timeout: float = 30.0
    ) -> ActorAddress:
        """Remove member ``name`` from the roster and stop its actor; returns its address.

        Messages still queued for it are dropped unread; a run in progress finishes first.
        With ``wait`` (the default) this blocks until the actor has stopped; ``by`` (the
        member firing) may not fire itself.

        Raises:
            RetriableError: no member called ``name``, or ``by`` names itself; the message
                lists the members.
            RuntimeError: ``wait=True`` inside a member's run, where it could deadlock.
            ActorUnavailable: ``wait=True`` and the member did not stop within ``timeout``.
        """
        if wait:
            _refuse_inside_run("fire(wait=True)")
        with self._staffing:
            members = self.team.members()
            target = find_member(members, name)
            others = [m for m in members if by is None or m.name != by.name]
            if target is None:
                raise RetriableError(f"No member called {name!r}. {_member_choices(others)}")
            if by is not None and target.name == by.name:
                raise RetriableError(f"You cannot fire yourself ({by.handle}). {_member_choices(others)}")
            ref = self.team.member_ref(target.name)
            record = self._members.get(ref.actor_urn) if ref is not None else None
            if record is not None:
                record.leaving.set()
            self.team.unregister_member(target.name, reason="fired")
        self.team.publish(MemberFired(team_id=self.team_id, member=target, fired_by=by.handle if by else None))
        if ref is not None:
            if not wait:
                ref.stop(block=False)
                return target
            try:
                ref.stop(block=True, timeout=timeout)
            except pykka.Timeout as exc:
                raise ActorUnavailable(f"{target.handle} did not stop within {timeout:g} s.") from exc
            with self._staffing:
                # Stopped: nothing is left to wait for. Kept, the record (its agent, factory
                # and tools) would outlive it until the next wait_idle() or stop().
                self._members.pop(ref.actor_urn, None)
        return target

    def roster(self) -> list[ActorAddress]:
        """The team's members, in the order they joined."""
        return self.team.members()

    def stop(self, timeout: float = 30.0) -> None:
        """Fire every member this runtime hired, waiting for each to stop. Idempotent."""
        _refuse_inside_run("stop()")
        with self._staffing:
            records = [r for r in self._members.values() if r.ref.is_alive()]
        for record in records:
            try:
                self.fire(record.address.name, wait=True, timeout=timeout)
            except (RetriableError, ActorUnavailable):
                record.ref.stop(block=True, timeout=timeout)

    # -- messages -----------------------------------------------------------------------------

    def send(self, to: str, text: str, *, sender: str = "user") -> SendReport:
        """Put a message from ``sender`` in the durable mailbox of member ``to`` (or of every
        member of the role ``to``) and return at once.

        The member may run in another process of the team: its mailbox is in the team's store.
        A member of this runtime that is idle starts a run on it; one mid-run reads it before its
        next model request.

        Raises:
            RetriableError: no live member or role is called ``to``, or its mailbox is full.
        """
        return deliver(self.team, to, text, sender=sender)

    def ask(self, to: str, text: str, *, sender: str = "user", timeout: float | None = None) -> str:
        """Send a message to member ``to`` and wait for its final answer to it.

        Blocks until the member has handled every message queued before this one and this
        one. The answer is also published as a :class:`~toolcards.team._models.RunFinished`.

        Raises:
            RetriableError: no member called ``to`` reads messages.
            RuntimeError: called inside a member's run (use ``send_message`` there).
            ActorUnavailable: the member stopped or did not answer within ``timeout``.
            Exception: what the member's agent run raised.
        """
        _refuse_inside_run("ask()")
        target, ref = self._recipient(to)
        message = TeamMessage(team_id=self.team_id, sender=sender, recipient=target.handle, text=text)
        self.team.publish(message)
        proxy = self._proxy(ref)
        answer: str = ask(proxy.handle(message), actor=target.handle, timeout=timeout)
        return answer

    def history(self, name: str) -> list[ModelMessage]:
        """A copy of member ``name``'s message history (waits for its current run)."""
        _refuse_inside_run("history()")
        target, ref = self._recipient(name)
        messages: list[ModelMessage] = ask(self._proxy(ref).history(), actor=target.handle)
        return messages

    def commands(self, name: str) -> CommandRegistry:
        """Member ``name``'s commands (``/team_roster``, ``/send_message Bob hi``, ...).

        Commands run in the calling thread, so they answer while the member is mid-run.
        """
        target, ref = self._recipient(name)
        with self._staffing:
            record = self._members.get(ref.actor_urn)
        if record is not None:
            return record.commands
        registry: CommandRegistry = ask(self._proxy(ref).commands(), actor=target.handle)
        return registry

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until every member this runtime hired has no message left to handle.

        Members reply to each other, so one pass is not enough: this asks every member to
        answer once its mailbox is empty, and repeats until a full pass saw no member
        handle a message and no one hired.

        Raises:
            TimeoutError: the team was still busy after ``timeout`` seconds.
            RuntimeError: called inside a member's run.
        """
        _refuse_inside_run("wait_idle()")
        deadline = time.monotonic() + timeout
        while True:
            before = self._activity_count()
            with self._staffing:
                records = list(self._members.values())
            for record in records:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"team {self.team_id} was still busy after {timeout:g} s")
                try:
                    record.proxy.ping().get(timeout=remaining)
                except pykka.ActorDeadError:
                    with self._staffing:
                        self._members.pop(record.ref.actor_urn, None)
                except pykka.Timeout:
                    raise TimeoutError(
                        f"{record.address.handle} was still busy after {timeout:g} s (team {self.team_id})"
                    ) from None
            if self._activity_count() == before:
                return

    def __enter__(self) -> TeamRuntime:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------------------------

    def _note_activity(self) -> None:
        """Count a handled message or a hire (members call this; it never blocks for long)."""
        with self._activity_lock:
            self._activity += 1

    def _activity_count(self) -> int:
        with self._activity_lock:
            return self._activity

    def model_named(self, choice: Any, profile: RoleProfile) -> Any:
        """What a member of ``profile`` runs on for a model card's ``choice``: the model of the
        factory registered under that name, when ``choice`` is one; else ``choice`` itself (a
        pydantic-ai model or model string)."""
        with self._staffing:
            factory = self._models.get(choice) if isinstance(choice, str) else None
        if factory is None or _is_agent(factory):
            return choice
        return factory(profile)

    def _model_for(self, profile: RoleProfile) -> Any:
        factory = self._models.get(profile.model)
        try:
            if factory is not None:
                return factory if _is_agent(factory) else factory(profile)
            from pydantic_ai.models import infer_model

            return infer_model(profile.model)
        except Exception as exc:
            known = ", ".join(sorted(self._models)) or "none"
            raise WiringError(
                f"Role {profile.role!r}: model {profile.model!r} cannot be used ({type(exc).__name__}: {exc}). "
                f"Fix the profile's model, or register a factory (registered: {known})."
            ) from exc

    def _recipient(self, name: str) -> tuple[ActorAddress, pykka.ActorRef[Any]]:
        members = self.team.members()
        target = find_member(members, name)
        ref = self.team.member_ref(target.name) if target is not None else None
        if target is None or ref is None:
            agents = [m for m in members if m is not target]
            raise RetriableError(f"No member called {name!r} reads messages. {_member_choices(agents)}")
        return target, ref

    def _proxy(self, ref: pykka.ActorRef[Any]) -> MemberProxy:
        with self._staffing:
            record = self._members.get(ref.actor_urn)
        return record.proxy if record is not None else cast(MemberProxy, ref.proxy())


def _refuse_inside_run(what: str) -> None:
    member = running_member()
    if member is not None:
        raise RuntimeError(
            f"TeamRuntime.{what} waits for members' runs and was called inside {member.handle}'s run, "
            "where it would deadlock; send messages (send_message / TeamRuntime.send) instead."
        )


def _role_problem(role: str, profile: RoleProfile | None, allowed: list[str]) -> str:
    choices = f"Roles you can hire: {', '.join(allowed)}." if allowed else "No role can be hired; tell the user."
    if profile is None:
        return f"Unknown role {role!r}. {choices}"
    return f"Role {profile.role!r} cannot be hired by team members. {choices}"


def _member_choices(members: list[ActorAddress]) -> str:
    if not members:
        return "There is no other member."
    return f"Members: {', '.join(m.handle for m in members)}. Retry with one of these names."


def _is_agent(value: Any) -> bool:
    """Whether ``value`` is a pydantic-ai agent (without importing pydantic-ai to tell)."""
    module = type(value).__module__
    if not module.startswith("pydantic_ai"):
        return False
    from pydantic_ai.agent import AbstractAgent

    return isinstance(value, AbstractAgent)
