"""Resource templates and argument completion, from what the cards declare.

A read-only tool whose one required argument has a completer
(:attr:`~toolcards.core._hints.ToolHints.completions`: task ids, entity names, file paths) is
also a resource template, ``toolcards://<team>/<tool>/{<argument>}`` (``{+path}`` for a
path, which may hold slashes):

* ``resources/templates/list`` lists them;
* ``resources/read`` of a URI they match calls the tool with that argument, through the
  pipeline like any call, and returns its text (a failure is a missing resource);
* ``completion/complete`` for a template's variable asks the tool's completer for values
  starting with what the user typed (at most :data:`MAX_COMPLETIONS`).

Which tools these are is decided by the cards; the server knows no tool by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from toolcards.core._hints import Completer
    from toolcards.core._tool import Tool

__all__ = ["MAX_COMPLETIONS", "Template", "completion_result", "matching", "template_by_uri", "templates_for"]

MAX_COMPLETIONS = 100
"""The most values one ``completion/complete`` answer carries (MCP's limit)."""
PATH_ARGUMENTS = frozenset({"path"})
"""Arguments whose values may contain ``/`` (RFC 6570 reserved expansion, ``{+path}``)."""


@dataclass(frozen=True, kw_only=True)
class Template:
    """One tool offered as a resource template."""

    tool: Tool
    argument: str
    completer: Completer
    prefix: str
    """The URI up to the variable: ``toolcards://<team>/<tool>/``."""

    @property
    def uri_template(self) -> str:
        """The RFC 6570 template."""
        operator = "+" if self.argument in PATH_ARGUMENTS else ""
        return f"{self.prefix}{{{operator}{self.argument}}}"

    def wire(self) -> dict[str, Any]:
        """The ``resources/templates/list`` entry."""
        summary = self.tool.description.strip().split("\n", 1)[0]
        return {
            "uriTemplate": self.uri_template,
            "name": self.tool.name,
            "description": summary,
            "mimeType": "text/plain",
        }

    def value(self, uri: str) -> str | None:
        """The argument's value in ``uri``, or ``None`` when ``uri`` does not match."""
        if not uri.startswith(self.prefix):
            return None
        value = unquote(uri[len(self.prefix) :])
        if not value or ("/" in value and self.argument not in PATH_ARGUMENTS):
            return None
        return value

    def complete(self, typed: str) -> dict[str, Any]:
        """The ``completion/complete`` result for what the user typed."""
        return completion_result(self.completer(typed))


def templates_for(team_id: str, tools: Sequence[Tool]) -> list[Template]:
    """The templates among ``tools`` (see the module docstring), in their order."""
    found: list[Template] = []
    for tool in tools:
        if tool.mutates or not tool.hints.completions:
            continue
        required = tool.parameters_schema.get("required", [])
        if len(required) != 1 or required[0] not in tool.hints.completions:
            continue
        completer = tool.hints.completions[required[0]]
        if isinstance(completer, str):  # not bound to a card: nothing can list its values
            continue
        prefix = f"toolcards://{quote(team_id, safe='')}/{quote(tool.name, safe='')}/"
        found.append(Template(tool=tool, argument=required[0], completer=completer, prefix=prefix))
    return found


def completion_result(values: Sequence[str]) -> dict[str, Any]:
    """A ``completion/complete`` result for ``values`` (best first; the first 100 are sent)."""
    shown = [str(value) for value in values[:MAX_COMPLETIONS]]
    return {"completion": {"values": shown, "total": len(values), "hasMore": len(values) > MAX_COMPLETIONS}}


def template_by_uri(templates: Sequence[Template], uri: str) -> Template | None:
    """The template whose URI template is ``uri`` (as a client names it in a completion)."""
    return next((template for template in templates if template.uri_template == uri), None)


def matching(templates: Sequence[Template], uri: str) -> tuple[Template, str] | None:
    """The template ``uri`` is an instance of, with the argument's value."""
    for template in templates:
        value = template.value(uri)
        if value is not None:
            return template, value
    return None
