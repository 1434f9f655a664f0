"""A pipeline tool as an MCP tool definition, in the shape each protocol version knows.

What a card declares reaches the client without a list in the server:

* ``title`` — the capability's :class:`~toolcards.core._hints.ToolHints` title, else one made
  from the name (2025-06-18 and later; ``annotations.title`` on 2025-03-26);
* ``annotations`` (2025-03-26 and later). MCP's defaults assume the worst (not read-only,
  destructive, not idempotent, open world), so only what is better is said: ``readOnlyHint``
  for a tool that does not ``mutate``; for one that does, ``destructiveHint: false`` unless
  it is ``destructive``, and ``idempotentHint`` when it is ``idempotent``. ``openWorldHint``
  is said only for a tool that is ``open_world`` (the web, commands, other servers), where it
  is also the default: stating ``false`` on every other tool would cost about 6 tokens a
  tool on every ``tools/list``, and the list's annotations and titles together must stay
  within a tenth of what it cost without them (``python -m bench tokens``);
* ``outputSchema`` for a tool that returns records (2025-06-18 and later);
* ``execution.taskSupport: "optional"`` for a ``long_running`` tool where the server offers
  tasks (2025-11-25 only).

Descriptions and input schemas are the pipeline's, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcards.core._hints import default_title

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["tool_annotations", "tool_definition"]

_ANNOTATIONS_SINCE = "2025-03-26"
_TITLE_SINCE = "2025-06-18"
_TASKS_IN = frozenset({"2025-11-25"})


def tool_annotations(tool: Tool) -> dict[str, Any]:
    """The tool's MCP annotations, only those that differ from the protocol's defaults."""
    hints = tool.hints
    found: dict[str, Any] = {}
    if not tool.mutates:
        found["readOnlyHint"] = True
    else:
        if not hints.destructive:
            found["destructiveHint"] = False
        if hints.idempotent:
            found["idempotentHint"] = True
    if hints.open_world:
        found["openWorldHint"] = True
    return found


def tool_definition(tool: Tool, version: str, *, tasks: bool = False) -> dict[str, Any]:
    """The ``tools/list`` entry of ``tool`` for a client speaking ``version``.

    ``tasks``: the server offers task-augmented calls (adds ``execution`` on 2025-11-25).
    """
    definition: dict[str, Any] = {"name": tool.name}
    title = tool.hints.title or default_title(tool.name)
    if version >= _TITLE_SINCE:
        definition["title"] = title
    definition["description"] = tool.description
    definition["inputSchema"] = tool.parameters_schema
    if version >= _ANNOTATIONS_SINCE:
        found = tool_annotations(tool)
        if version < _TITLE_SINCE:
            found = {"title": title, **found}
        if found:
            definition["annotations"] = found
    if tool.hints.output_schema is not None and version >= _TITLE_SINCE:
        definition["outputSchema"] = dict(tool.hints.output_schema)
    if tasks and tool.hints.long_running and version in _TASKS_IN:
        definition["execution"] = {"taskSupport": "optional"}
    return definition
