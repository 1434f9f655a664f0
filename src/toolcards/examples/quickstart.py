"""Quickstart: a card with one tool, one system prompt and one command, driven offline.

Run it with ``python -m toolcards.examples.quickstart``: a scripted pydantic-ai model (no network,
no API key) calls the card's tool through the same pipeline every channel uses.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import COMMAND, SYSTEM_PROMPT, TOOL_CALL, BaseToolParam, Channels, RetriableError, ToolCard, ToolFactory
from toolcards import capability as capability_of


class AddNoteParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}
    max_notes: int = 100


class ShowNotesParam(BaseToolParam):
    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class NotesCard(ToolCard):
    """A scratchpad the agent writes to and sees before every model request."""

    kind: ClassVar[str] = "notes"
    add_note: AddNoteParam | bool = True
    show_notes: ShowNotesParam | bool = True
    notes: list[str] = []

    @capability_of("add_note", name="add_note", mutates=True)
    def add(self, text: str) -> str:
        """Add a note to the scratchpad.

        Args:
            text: The note, one sentence.
        """
        if len(self.notes) >= self.param("add_note", AddNoteParam).max_notes:
            raise RetriableError("The scratchpad is full. Summarise what you know instead of adding notes.")
        self.notes.append(text)
        return f"Noted ({len(self.notes)} notes)."

    @capability_of("show_notes", name="show_notes")
    def show(self) -> str:
        """The scratchpad."""
        return "Notes: " + ("; ".join(self.notes) if self.notes else "none yet")


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: calls add_note once, then reports what it saw."""
    if any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts):
        return ModelResponse(parts=[TextPart(f"Done. My context said: {info.instructions}")])
    return ModelResponse(parts=[ToolCallPart("add_note", {"text": "the build is green"})])


def main() -> None:
    card = NotesCard()
    factory = ToolFactory([card])
    agent = Agent(FunctionModel(scripted_model), toolsets=[factory.toolset()])
    print(agent.run_sync("Record that the build is green.").output)
    # The same capability from orchestrator code, and as a slash command:
    print(factory.get_commands()[AddNoteParam](text="deploy on Friday"))
    print(factory.command_registry().dispatch("/show_notes"))


if __name__ == "__main__":
    main()
