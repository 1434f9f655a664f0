"""No tool is named to a model that cannot call it.

A message a tool returns may point at another tool ("Call search_planning to list task
ids"). When that tool is switched off for this agent (or not exposed to the model), the hint
is a dangling name: the model would try to call something that does not exist. The factory
gives each tool the set of tool names the model cannot call, and the pipeline drops every
sentence of a model-facing error that names one (:func:`without_unreachable`). What is left
still says what went wrong; only the pointer goes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from toolcards.core._output import ENVELOPE, ENVELOPE_BEGIN, ENVELOPE_END

__all__ = ["known_tool_names", "without_unreachable"]

_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=\S)")
_QUOTED = re.compile(r"(?<!\w)(?:'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`)(?!\w)")


def known_tool_names() -> frozenset[str]:
    """The name of every capability of every card class defined in this process.

    Only classes already imported count: a message can only come from a card that is
    loaded, and importing every kind (or scanning entry points) would make each bind pay
    for cards it does not use.
    """
    from toolcards.core._registry import registered_card_classes

    return frozenset(capability.name for cls in registered_card_classes() for capability in cls._capabilities)


def without_unreachable(text: str, unreachable: Iterable[str]) -> str:
    """``text`` without the sentences that name a tool in ``unreachable`` (whole words only).

    Lines are kept as lines; a line left empty is dropped. ``text`` comes back unchanged
    when it names none of them. A one-word name (``teammates``, ``usage``) is also a word of
    the message's own prose, so only names that cannot be (``send_message``) are looked for.
    """
    names = sorted({name for name in unreachable if "_" in name}, key=len, reverse=True)
    if not names:
        return text
    # A name only counts as our own words: not inside a path or file name (``notes.md``),
    # not inside quotes, and never inside an untrusted envelope, which is passed on as it is.
    pattern = re.compile(r"(?<![\w./\\-])(?:" + "|".join(re.escape(name) for name in names) + r")(?![\w/\\-]|\.\w)")

    def names_one(piece: str) -> bool:
        return pattern.search(_QUOTED.sub("", piece)) is not None

    if not names_one(ENVELOPE.sub("", text)):
        return text
    kept_lines = []
    inside = False
    for line in text.split("\n"):
        if ENVELOPE_BEGIN.match(line):
            inside = True
        if inside or not names_one(line):
            kept_lines.append(line)
        else:
            parts = _SENTENCE_END.split(line)
            sentences = [sentence for sentence in parts if not names_one(sentence)]
            if sentences:
                kept_lines.append(_tidy(" ".join(sentences), capitalise=sentences[0] is not parts[0]))
        if ENVELOPE_END.match(line):
            inside = False
    return "\n".join(kept_lines).strip()


def _tidy(line: str, *, capitalise: bool) -> str:
    """A line left by dropping sentences ends with a full stop, and starts with a capital
    when its first sentence went."""
    text = line.rstrip()
    if text and text[-1] in ";:,":
        text = text[:-1] + "."
    if capitalise:
        start = len(text) - len(text.lstrip())
        text = text[:start] + text[start : start + 1].upper() + text[start + 1 :]
    return text
