"""Small cards for the server and CLI tests, registered by defining them.

A config lists them with ``imports: [tests.server.cards]`` so a server subprocess knows
them too (its working directory must be the repository root).
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, ClassVar

import pykka
from pydantic import Field, PrivateAttr

from toolcards import (
    COMMAND,
    SYSTEM_PROMPT,
    TOOL_CALL,
    ActorToolObserver,
    BaseToolParam,
    Channels,
    RetriableError,
    StateChanged,
    ToolCard,
    capability,
)
from toolcards.actors._asking import ask
from toolcards.store import default_store

WIPES: list[str] = []
"""One entry per run of ``wipe``'s handler, so tests can tell that a refused call did not run."""

# A 1x1 red PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")


class Image:
    """Shaped like pydantic-ai's BinaryContent: ``data`` bytes and a ``media_type``."""

    def __init__(self, data: bytes, media_type: str) -> None:
        self.data = data
        self.media_type = media_type


class EchoParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ApprovalParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL}
    requires_approval: bool = True


class MotdParam(BaseToolParam):
    expose: set[Channels] = {SYSTEM_PROMPT}


class EchoTool(ToolCard):
    """Stateless tools that report who called them."""

    kind: ClassVar[str] = "test_echo"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    echo: EchoParam | bool = True
    whoami: EchoParam | bool = True
    pixel: EchoParam | bool = True
    crash: EchoParam | bool = True
    fussy: EchoParam | bool = True
    stats: EchoParam | bool = True
    wipe: ApprovalParam | bool = True
    motd: MotdParam | bool = True
    motd_text: str = "Be kind."

    @capability("echo", name="echo", serves={TOOL_CALL, COMMAND})
    def echo_text(self, text: Annotated[str, Field(min_length=1)], times: int = 1) -> str:
        """Repeat some text.

        Args:
            text: What to repeat.
            times: How many times.
        """
        return " ".join([text] * times)

    @capability("whoami", name="whoami", serves={TOOL_CALL, COMMAND})
    def who_am_i(self) -> str:
        """The caller's handle."""
        observer: ActorToolObserver = self.get_observer()
        return observer.address.handle

    @capability("pixel", name="pixel", serves={TOOL_CALL, COMMAND})
    def red_pixel(self, caption: str | None = None) -> Any:
        """A red pixel as a PNG image.

        Args:
            caption: Text to send along with the image.
        """
        image = Image(PNG, "image/png")
        return [caption, image] if caption else image

    @capability("crash", name="crash", serves={TOOL_CALL, COMMAND})
    def always_crash(self) -> str:
        """Fail with an unexpected error."""
        raise ValueError("boom")

    @capability("fussy", name="fussy", serves={TOOL_CALL, COMMAND})
    def greet_fussily(self, name: Annotated[str, Field(min_length=1, max_length=20)]) -> str:
        """Greet someone, but not everyone.

        Args:
            name: Who to greet.
        """
        if name == "Voldemort":
            raise RetriableError("That name must not be spoken. Greet someone else.")
        return f"Hello, {name}!"

    @capability("stats", name="stats", serves={TOOL_CALL, COMMAND})
    def caller_stats(self) -> dict[str, Any]:
        """Facts about the caller as an object."""
        observer: ActorToolObserver = self.get_observer()
        return {"agent": observer.address.handle, "team": observer.team_id}

    @capability("wipe", name="wipe", serves={TOOL_CALL}, mutates=True)
    def wipe_everything(self) -> str:
        """Delete everything (needs a human's approval)."""
        WIPES.append("wiped")
        return "wiped"

    @capability("motd", name="motd", serves={SYSTEM_PROMPT})
    def message_of_the_day(self) -> str:
        """The message of the day."""
        observer: ActorToolObserver = self.get_observer()
        return f"{self.motd_text} You are {observer.address.handle}."


class NotesActor(pykka.ThreadingActor):
    """A team's notes, written through the default store; counts its stops."""

    def __init__(self, team_id: str, publish: Any) -> None:
        super().__init__()
        self.team_id = team_id
        self.namespace = f"{team_id}/#NotesTool"
        self.publish = publish
        self.notes: list[dict[str, str]] = []
        self.stops = 0

    def on_start(self) -> None:
        rows = default_store().load(self.namespace).rows
        self.notes = [rows["notes"][key] for key in sorted(rows.get("notes", {}), key=int)]
        self.stops = int(rows.get("meta", {}).get("stops", 0))

    def add(self, text: str, author: str) -> int:
        self.notes.append({"text": text, "author": author})
        number = len(self.notes)
        default_store().put(self.namespace, "notes", {str(number): self.notes[-1]})
        self.publish(
            StateChanged(team_id=self.team_id, source="#NotesTool", seq=number, summary=f"added note {number}")
        )
        return number

    def all(self) -> list[dict[str, str]]:
        return list(self.notes)

    def on_stop(self) -> None:
        default_store().put(self.namespace, "meta", {"stops": self.stops + 1})


class NotesParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class BoardParam(BaseToolParam):
    expose: set[Channels] = {SYSTEM_PROMPT}


class NotesTool(ToolCard):
    """A shared notes board backed by a team actor."""

    kind: ClassVar[str] = "test_notes"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    add_note: NotesParam | bool = True
    list_notes: NotesParam | bool = True
    board: BoardParam | bool = True
    _notes: Any = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        self._notes = observer.team.get_or_spawn("#NotesTool", NotesActor, observer.team_id, observer.team.publish)

    @capability("add_note", name="add_note", serves={TOOL_CALL, COMMAND}, mutates=True)
    def add(self, text: Annotated[str, Field(min_length=1)]) -> str:
        """Add a note to the team's board.

        Args:
            text: The note.
        """
        observer: ActorToolObserver = self.get_observer()
        number = ask(self._notes.add(text, observer.address.handle), actor="#NotesTool")
        return f"Added note {number}."

    @capability("list_notes", name="list_notes", serves={TOOL_CALL, COMMAND})
    def list_all(self) -> list[dict[str, str]]:
        """Every note on the board, oldest first."""
        notes: list[dict[str, str]] = ask(self._notes.all(), actor="#NotesTool")
        return notes

    @capability("board", name="notes_board", serves={SYSTEM_PROMPT})
    def render_board(self) -> str:
        """The team's notes board."""
        notes: list[dict[str, str]] = ask(self._notes.all(), actor="#NotesTool")
        observer: ActorToolObserver = self.get_observer()
        me = observer.address.handle
        lines = [f"{i}. {n['text']} ({n['author']})" for i, n in enumerate(notes, 1)]
        mine = sum(1 for n in notes if n["author"] == me)
        return "\n".join(["# Notes", *lines, f"You wrote {mine} of {len(notes)}."])
