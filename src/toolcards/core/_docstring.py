"""Google-style docstrings → a tool description and per-parameter descriptions.

Only what a model needs is kept: the text before the first section is the tool's
description, and the ``Args:`` section gives each parameter's description. Other
sections (``Returns:``, ``Raises:``, ``Example:``) are for developers and never reach
the model.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|Warnings?|See Also|Attributes)"
    r"\s*:\s*$"
)
_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, kw_only=True)
class ParsedDocstring:
    """The parts of a docstring that reach a model."""

    description: str
    """The text before the first section, paragraphs kept, whitespace normalised."""
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name → description, from the ``Args:`` section."""


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a Google-style docstring into its description and ``Args:`` entries."""
    if not doc:
        return ParsedDocstring(description="")
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(stripped)
        if header and (len(line) - len(line.lstrip())) == 0:
            section = header.group(1).lower()
            current, arg_indent = None, None
            continue
        if section is None:
            description.append(stripped)
            continue
        if section not in {"args", "arguments", "parameters", "params"} or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG.match(stripped)
        if match and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = match.group(1).lstrip("*")
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    text = "\n".join(description).strip()
    # Keep paragraph breaks, join wrapped lines inside a paragraph.
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return ParsedDocstring(description="\n\n".join(paragraphs), params=params)
