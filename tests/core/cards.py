"""Small cards used across the core tests."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, Field, PrivateAttr

from toolcards import COMMAND, SYSTEM_PROMPT, TOOL_CALL, BaseToolParam, Channels, RetriableError, ToolCard, capability


class GreetParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}
    greeting: str = "Hello"


class MotdParam(BaseToolParam):
    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class Item(BaseModel):
    name: str
    qty: int = 1


class GreeterCard(ToolCard):
    kind: ClassVar[str] = "test_greeter"

    greet: GreetParam | bool = True
    motd: MotdParam | bool = True
    motd_text: str = "Be kind."

    @capability("greet", name="greet_someone", serves={TOOL_CALL, COMMAND})
    def greet_someone(
        self,
        name: Annotated[str, Field(min_length=1, max_length=40)],
        times: int = 1,
        tone: Literal["warm", "dry"] = "warm",
    ) -> str:
        """Greet someone by name.

        Args:
            name: Who to greet.
            times: How many times.
        """
        if name == "Voldemort":
            raise RetriableError("That name must not be spoken. Greet someone else.")
        if name == "crash":
            raise ValueError("boom")
        greeting = self.param("greet", GreetParam).greeting
        suffix = "!" if tone == "warm" else "."
        return " ".join([f"{greeting}, {name}{suffix}"] * times)

    @capability("motd", name="message_of_the_day", serves={SYSTEM_PROMPT, COMMAND})
    def message_of_the_day(self) -> str:
        """The message of the day."""
        return self.motd_text


class BasketParam(BaseToolParam):
    pass


class BasketCard(ToolCard):
    kind: ClassVar[str] = "test_basket"

    add_items: BasketParam | bool = True
    _items: list[Item] = PrivateAttr(default_factory=list)

    @capability("add_items", name="add_items", mutates=True)
    def add(self, items: list[Item], note: str | None = None) -> str:
        """Add items to the basket.

        Args:
            items: The items to add.
            note: A note.
        """
        self._items.extend(items)
        return f"{len(self._items)} items"
