"""The client's roots as the team's workspace: ``toolcards serve --roots``.

An MCP client may name the directories it works in (``roots/list``, capability ``roots``).
With ``roots`` set in the config (``--roots``), the server asks for them once the client
is initialized, and again on ``notifications/roots/list_changed``. The first root that is a
local directory (a ``file://`` URI) becomes the workspace of the client's agent:

* it is given a workspace id (:func:`~toolcards.fs._locations.mount_workspace`), and every
  card of the agent with a ``workspace_id`` field (the workspace, the sandbox) gets that id,
  so its files and commands stay contained in that directory exactly as in any tree;
* ``roots: read-only`` (the default of ``--roots``) also sets ``read_only`` on those cards,
  which drops every tool that changes files or runs commands (a card left with nothing, the
  sandbox, is not bound); ``roots: writable`` keeps them, and commands run in the root
  (a sandbox of its own, ``#SandboxActor:<workspace id>``).

A client without roots (or whose roots are all remote) works on the team's configured tree,
as without ``--roots``. When the roots change, the agent's next request opens a session on
the new tree (the old one is released). The stateless 2026-07-28 protocol has no roots
(SEP-2577): its clients always get the configured tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from toolcards.core._card import ToolCard

__all__ = ["RootsMode", "first_local_root", "rooted_cards"]

logger = logging.getLogger("toolcards.server")

RootsMode = Literal["off", "read-only", "writable"]
"""Whether the client's roots become its workspace, and whether it may change them."""


def first_local_root(result: Mapping[str, Any]) -> tuple[Path, str] | None:
    """The first root of a ``roots/list`` result that is an existing local directory, with its
    name (``None`` when there is none)."""
    roots = result.get("roots")
    if not isinstance(roots, list):
        return None
    for root in roots:
        if not isinstance(root, Mapping) or not isinstance(root.get("uri"), str):
            continue
        parts = urlsplit(root["uri"])
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            continue
        path = Path(unquote(parts.path))
        if path.is_absolute() and path.is_dir():
            name = root.get("name")
            return path, name if isinstance(name, str) else ""
        logger.info("client root %s is not a directory here; skipped", root["uri"])
    return None


def rooted_cards(
    make_cards: Callable[[], Sequence[ToolCard]], workspace_id: str, mode: RootsMode
) -> Callable[[], list[ToolCard]]:
    """A maker of the team's cards working on ``workspace_id`` (read-only unless ``writable``)."""

    def cards() -> list[ToolCard]:
        made: list[ToolCard] = []
        for card in make_cards():
            if "workspace_id" in type(card).model_fields:
                card.workspace_id = workspace_id  # type: ignore[attr-defined]
                if mode != "writable":
                    card.read_only = True
                    if next(card.capabilities(), None) is None:
                        continue  # nothing left to offer (the sandbox runs commands only): not bound
            made.append(card)
        return made

    return cards
