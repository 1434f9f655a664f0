"""Views: what a card shows to someone looking at the team, read-only and structured.

A tool answers a model in words; a view answers a person's screen (the dashboard) in data.
A card offers a view by marking a method with :func:`view`: the method returns
JSON-serialisable data (dicts, lists, strings, numbers), or a :class:`FileBytes` for the
content of a file, and changes nothing. Each view may name a *version* method: a cheap
stamp (an int, a string, a tuple) that changes whenever what the view returns may have
changed, so a watcher polls versions and renders only what moved::

    class NotesCard(ToolCard):
        def notes_version(self) -> int:
            return len(self.notes)

        @view("notes.list", version=notes_version)
        def notes_view(self) -> dict[str, Any]:
            return {"notes": list(self.notes)}

Views never reach a model and are not tools: they go through no pipeline, take their
arguments as keywords, and may raise ``RetriableError``/``ToolFailed`` with a message for
the person looking (a file that is gone, a path outside the tree).
:meth:`~toolcards.core._factory.ToolFactory.views` gathers the views of every bound card.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["FileBytes", "View", "view"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True)
class FileBytes:
    """A file's content as a view returns it (an image to show as it is)."""

    media_type: str
    """Its media type, from its content (``image/png``...), never from its name alone."""
    data: bytes
    """The bytes, already capped by the view."""


@dataclass(frozen=True, kw_only=True)
class View:
    """One view of a bound card."""

    name: str
    """Unique among a factory's views, ``"<subject>.<what>"``: ``"planning.board"``."""
    title: str
    """What the view shows, in a few words (the method's docstring summary)."""
    card: str
    """The class name of the card that offers it."""
    render: Callable[..., Any]
    """Returns the view's data; keyword arguments only. Read-only; may block on actor asks."""
    version: Callable[[], Hashable] | None = None
    """A cheap stamp that changes whenever :attr:`render` may return something else
    (``None``: compare nothing, render every time it is asked)."""

    def current_version(self) -> Hashable:
        """The view's version now (``None`` when it has no version method)."""
        return None if self.version is None else self.version()


@dataclass(frozen=True, kw_only=True)
class ViewSpec:
    """A :func:`view` mark on a card method, before the card is bound."""

    name: str
    handler: Callable[..., Any]
    version: Callable[..., Hashable] | None

    def bind(self, card: Any) -> View:
        """This view of ``card``."""
        doc = (self.handler.__doc__ or "").strip().split("\n", 1)[0].rstrip(".")
        version = self.version.__get__(card, type(card)) if self.version is not None else None
        return View(
            name=self.name,
            title=doc or self.name,
            card=type(card).__name__,
            render=self.handler.__get__(card, type(card)),
            version=version,
        )


def view(name: str, *, version: Callable[..., Hashable] | None = None) -> Callable[[F], F]:
    """Mark a card method as the view ``name``.

    Args:
        name: The view's name, unique in a team (``"<subject>.<what>"``).
        version: A method of the same card (defined above this one) returning a cheap stamp
            that changes when the view's data may have.
    """

    def mark(func: F) -> F:
        func.__toolcards_view__ = ViewSpec(name=name, handler=func, version=version)  # type: ignore[attr-defined]
        return func

    return mark
