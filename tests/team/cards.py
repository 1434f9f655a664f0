"""Test doubles for the team tests: a shared board card, a rendezvous card, scripted models.

``BoardTool`` (kind ``team_test_board``) stands in for a team-wide card such as the
planning board: members reach one ``#TestBoard`` actor through ``observer.team.get_or_spawn``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import pykka
from pydantic import PrivateAttr
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import (
    COMMAND,
    SYSTEM_PROMPT,
    TOOL_CALL,
    ActorAddress,
    ActorToolObserver,
    BaseToolParam,
    Channels,
    ToolCard,
    capability,
)
from toolcards.actors import ActorSystem, ask
from toolcards.team import TeamRuntime
from toolcards.testing import FakeObserver


class BoardActor(pykka.ThreadingActor):
    """A team-wide list of notes."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def post(self, author: str, text: str) -> int:
        self.notes.append(f"{author}: {text}")
        return len(self.notes)

    def read(self) -> list[str]:
        return list(self.notes)


class PostParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ShowParam(BaseToolParam):
    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class BoardTool(ToolCard):
    kind: ClassVar[str] = "team_test_board"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    post: PostParam | bool = True
    show: ShowParam | bool = True
    _board: Any = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        self._board = observer.team.get_or_spawn("#TestBoard", BoardActor)

    @capability("post", name="post_note", serves={TOOL_CALL, COMMAND}, mutates=True)
    def post_note(self, text: str) -> str:
        """Post a note on the team board.

        Args:
            text: The note.
        """
        author = cast(ActorToolObserver, self.get_observer()).address.handle
        count = ask(self._board.post(author, text), actor="#TestBoard")
        return f"Posted note {count}."

    @capability("show", name="board", serves={SYSTEM_PROMPT, COMMAND})
    def render_board(self) -> str:
        """The team board."""
        notes: list[str] = ask(self._board.read(), actor="#TestBoard")
        return "Board: " + ("; ".join(notes) if notes else "empty")


RENDEZVOUS = threading.Barrier(2, timeout=20)
"""Both members of the mutual-messaging test wait here, so their runs overlap."""


class RendezvousTool(ToolCard):
    kind: ClassVar[str] = "team_test_rendezvous"

    meet: PostParam | bool = True

    @capability("meet", name="rendezvous", serves={TOOL_CALL, COMMAND})
    def wait_for_partner(self) -> str:
        """Wait until the other member is mid-run too."""
        RENDEZVOUS.wait()
        return "met"


class ProbeTool(ToolCard):
    """Calls the member's observer methods from inside a tool call (the member's own run)."""

    kind: ClassVar[str] = "team_test_probe"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    probe: PostParam | bool = True

    @capability("probe", name="probe", serves={TOOL_CALL, COMMAND})
    def probe_observer(self) -> str:
        """Report the roster and hireable roles as the observer sees them."""
        observer = cast(Any, self.get_observer())
        names = ",".join(m.name for m in observer.roster())
        roles = ",".join(sorted(observer.hireable_roles()))
        return f"thread={threading.current_thread().name} roster={names} roles={roles}"


# -- scripted models ------------------------------------------------------------------------


class Turn:
    """What a scripted model sees of the current run: the prompt, the step, the tool returns,
    and the messages handed to the run after it started (steering)."""

    def __init__(self, messages: list[ModelMessage], info: AgentInfo) -> None:
        self.info = info
        prompted = [
            i
            for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
        ]
        # A run's first request carries its run id; a message steered into it may not (yet).
        run_ids = [m.run_id for m in messages if m.run_id]
        current = run_ids[-1] if run_ids else None
        start = next((i for i in prompted if messages[i].run_id == current), max(prompted))
        request = cast(ModelRequest, messages[start])
        self.prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        later = messages[start + 1 :]
        self.step = sum(1 for m in later if isinstance(m, ModelResponse))
        self.returns = [p for m in later for p in m.parts if isinstance(p, ToolReturnPart)]
        requests = [m for m in later if isinstance(m, ModelRequest)]
        self.steered = [str(p.content) for m in requests for p in m.parts if isinstance(p, UserPromptPart)]
        self.history = messages[:start]

    @property
    def sender(self) -> str:
        """``@Name`` or ``user`` from the ``Message from ...:`` header."""
        return self.prompt.split("\n", 1)[0].removeprefix("Message from ").removesuffix(":")

    @property
    def text(self) -> str:
        return self.prompt.split("\n", 1)[1] if "\n" in self.prompt else self.prompt

    @property
    def me(self) -> str:
        """The member's own name, read from its identity instructions."""
        instructions = self.info.instructions or ""
        return instructions.removeprefix("You are @").split(" ", 1)[0]


Behaviour = Callable[[Turn], Sequence[ModelResponsePart] | str]


def scripted(behaviour: Behaviour) -> FunctionModel:
    """A model that answers each request with ``behaviour(turn)``: parts, or final text."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = behaviour(Turn(messages, info))
        parts = [TextPart(reply)] if isinstance(reply, str) else list(reply)
        return ModelResponse(parts=parts)

    return FunctionModel(respond)


def call(tool: str, **args: Any) -> ToolCallPart:
    return ToolCallPart(tool, args)


class FakeManager(FakeObserver):
    """A team member without an LLM that may manage the team, through a runtime."""

    def __init__(self, name: str, runtime: TeamRuntime, system: ActorSystem) -> None:
        super().__init__(name, runtime.team_id, system=system, role="lead")
        self.runtime = runtime

    def hire_member(self, role: str, name: str | None = None) -> ActorAddress:
        return self.runtime.hire(role, name, by=self.address)

    def fire_member(self, name: str) -> ActorAddress:
        return self.runtime.fire(name, by=self.address, wait=False)

    def roster(self) -> list[ActorAddress]:
        return self.runtime.roster()

    def hireable_roles(self) -> dict[str, str]:
        return {role: p.description for role, p in self.runtime.profiles().items() if p.hireable}
