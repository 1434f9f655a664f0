"""What a client may know about a tool before calling it: ``ToolHints``.

The pipeline never reads them; they describe a capability to clients that show, schedule or
guard tools (MCP's tool annotations and title, output schema, long-running calls offered as
tasks, argument completion). A card declares them where it declares the capability::

    @capability("workspace_write", mutates=True,
                hints=ToolHints(title="Write file", destructive=True, idempotent=True))

Whether a tool changes anything is not a hint: it is ``mutates``, which the pipeline uses
(read-only cards drop such tools), and clients read it as ``readOnlyHint``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["NO_HINTS", "Completer", "ToolHints", "default_title"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class ToolHints:
    """How a tool behaves, as its card declares it (see the module docstring)."""

    title: str = ""
    """A few words a person reads in a client's list of tools ("Write a file"). Empty: made
    from the tool's name (:func:`default_title`)."""
    destructive: bool = False
    """A call may delete or overwrite what it did not create (only meaningful with ``mutates``)."""
    idempotent: bool = False
    """Calling again with the same arguments changes nothing more (only meaningful with ``mutates``)."""
    open_world: bool = False
    """The tool reaches things outside the team's own state and files: the web, other
    servers, a network a command may use."""
    long_running: bool = False
    """A call may take minutes (a shell command): clients may run it as a task they poll."""
    output_schema: Mapping[str, Any] | None = None
    """The JSON schema of the records the tool returns besides its text
    (:class:`~toolcards.core._records.Records`), or ``None`` when it returns only text."""
    completions: Mapping[str, str | Completer] = field(default_factory=lambda: _EMPTY)
    """Argument name → what lists values for it (task ids, entity names, file paths), for
    clients that complete arguments: the name of a card method ``(prefix: str) -> list[str]``
    on a capability, that method itself on a bound tool."""


Completer = Callable[[str], Sequence[str]]
"""Lists the values of an argument that start with a prefix, best first."""


NO_HINTS = ToolHints()
"""The hints of a capability that declares none."""


def default_title(tool_name: str) -> str:
    """A title made from a tool's name: ``workspace_read`` → ``Workspace read``."""
    words = re.sub(r"[_\-]+", " ", tool_name).strip()
    return words[:1].upper() + words[1:]
