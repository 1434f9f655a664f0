"""Spilling: an output over a tool's budget is kept whole where the model can read it back.

The pipeline (:mod:`toolcards.core._tool`) decides *when*: a ``str`` result, or a dict or list
whose JSON is, longer than the tool's ``output_budget``. A :class:`SpillSink` keeps the whole
text (structured results as JSON indented one space a level, so they page by line) and the
answer is its head, its tail, what was left out and the sink's words on reading on. Images
and binary content are never budgeted.

The core knows no sink: cards offer them as team services, and each tool's :class:`TeamSpill`
looks them up at every call in the order of :data:`~toolcards.core._services.SPILL_SERVICES`
(the workspace, then the store), using one only when the caller can call its
:attr:`SpillSink.reader` on the call's channel. Without a usable sink, or when the sink fails
(a full disk, the quota, a store out of reach), the output is cut with a notice saying why; the
call never fails for it. The sink runs in the caller's thread and blocks on its write.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from toolcards.core._channels import Channels
from toolcards.core._services import SPILL_SERVICES
from toolcards.errors import StoreError, ToolcardsError

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["NOTICE_ROOM", "SpillSink", "TeamSpill", "budgeted_answer", "cut_answer", "head_and_tail"]

logger = logging.getLogger("toolcards.spill")

NOTICE_ROOM = 700
"""Characters of a spilled answer's budget left for the marker of what was left out and the
notice: the head and the tail share the rest, two thirds to the head."""


class SpillSink(Protocol):
    """Keeps an output over a tool's budget whole, and says how to read it back.

    Offered by a card as a team service (:data:`~toolcards.core._services.SPILL_SERVICES`).
    """

    @property
    def reader(self) -> str:
        """The tool that reads a kept output back (``workspace_read``): the sink is used only
        for agents that can call it."""

    def __call__(self, text: str, *, tool: str, call_id: str, agent: str | None, from_line: int, from_char: int) -> str:
        """Keep ``text``, the whole output of a call of ``tool`` made by ``agent`` (its handle,
        ``@Alice``), and return the sentences that tell the model where it is and how to read
        it on from line ``from_line`` (from 1) or character ``from_char`` (from 0), the first
        the answer leaves out.

        Raises:
            Exception: anything; the pipeline then cuts the output and its notice gives the
                reason (the message of a ``ToolcardsError``, the ``strerror`` of an ``OSError``).
        """


class TeamSpill:
    """The factory's way to its team's sinks: per call, the first one offered whose reader the
    agent can call on that channel.

    Args:
        team: The team handle (:meth:`~toolcards.actors.TeamHandle.service` is asked at each call,
            so a card bound later still counts).
        readers: For each channel, the tools the agent can call there.
    """

    __slots__ = ("_readers", "_team")

    def __init__(self, team: Any, readers: Mapping[Channels, frozenset[str]]) -> None:
        self._team = team
        self._readers = readers

    def __call__(self, channel: Channels) -> SpillSink | None:
        """The sink for a call on ``channel``, or ``None``: the output is cut."""
        callable_here = self._readers.get(channel, frozenset())
        for name in SPILL_SERVICES:
            sink: SpillSink | None = self._team.service(name)
            if sink is not None and sink.reader in callable_here:
                return sink
        return None


def budgeted_answer(tool: Tool, text: str, channel: Channels, call_id: str | None, *, value: Any = None) -> str:
    """What the model reads of ``text``, a result of ``tool`` longer than its budget: its head
    and tail and where the whole is kept, or (no sink, or the sink failed) its cut.

    ``value`` is the structured result ``text`` is the compact JSON of, if any: a sink keeps it
    indented instead. The answer is wrapped in the untrusted-output envelope for a tool that
    returns outside data; the notice follows the envelope (it is ours, not the data's).
    """
    budget = tool.output_budget
    sink = tool.spill(channel) if tool.spill is not None else None
    if sink is None:
        return cut_answer(text, budget, tool)
    if value is not None:
        import json

        text = json.dumps(value, ensure_ascii=False, default=str, indent=1)
    head_end, tail_start = head_and_tail(text, budget)
    from_line = text.count("\n", 0, head_end) + 1
    try:
        where = sink(
            text,
            tool=tool.name,
            call_id=call_id or _fresh_call_id(tool.name),
            agent=tool.agent,
            from_line=from_line,
            from_char=head_end,
        )
    except Exception as exc:
        return cut_answer(text, budget, tool, unsaved=_reason(tool.name, exc))
    if channel is Channels.TOOL_CALL and tool.unreachable:
        from toolcards.core._mentions import without_unreachable

        where = without_unreachable(where, tool.unreachable - {tool.name})
    newlines = text.count("\n")
    lines = newlines + (0 if text.endswith("\n") else 1)
    tail_line = newlines - text.count("\n", tail_start) + 1
    head = text[:head_end]
    left_out = f"{tail_start - head_end:,} characters"
    if head.endswith("\n") and tail_line > from_line:
        left_out += f", lines {from_line:,}-{tail_line - 1:,},"
    separator = "" if head.endswith("\n") else "\n"
    shown = f"{head}{separator}[… {left_out} not shown …]\n{text[tail_start:]}"
    notice = (
        f"[The output has {len(text):,} characters in {lines:,} line{'' if lines == 1 else 's'}, more than "
        f"the {budget:,} an answer shows. {where}]"
    )
    return _with_notice(shown, notice, tool)


def cut_answer(text: str, budget: int, tool: Tool | None = None, *, unsaved: str | None = None) -> str:
    """The first ``budget`` characters of ``text`` and a notice saying what was cut (and, with
    ``unsaved``, why the whole could not be kept), enveloped for a tool of outside data."""
    why = f"; the whole could not be saved: {unsaved}" if unsaved else ""
    notice = (
        f"[output cut: showed {budget:,} of {len(text):,} characters{why}. "
        "Narrow the request (a smaller range, a more specific query) to see the rest.]"
    )
    return _with_notice(text[:budget], notice, tool)


def _with_notice(shown: str, notice: str, tool: Tool | None) -> str:
    if tool is not None and tool.untrusted_output:
        from toolcards.core._output import wrap_untrusted

        shown = wrap_untrusted(shown, tool.name)
    return f"{shown}\n{notice}"


def head_and_tail(text: str, budget: int) -> tuple[int, int]:
    """Where the head ends and the tail starts when ``text`` is shown in ``budget`` characters
    (the tail is where a long answer or refusal ends): at line ends when one falls in the last
    fifth of each part's room."""
    room = max(budget - NOTICE_ROOM, budget // 2)
    head = room * 2 // 3
    tail = room - head
    newline = text.rfind("\n", head - head // 5, head)
    head_end = newline + 1 if newline >= 0 else head
    start = len(text) - tail
    newline = text.find("\n", start - 1, start + tail // 5)
    tail_start = newline + 1 if newline >= 0 else start
    return head_end, max(tail_start, head_end)


def _reason(tool_name: str, exc: Exception) -> str:
    """Why a spill failed, in words a model can pass on; the failure is logged."""
    if isinstance(exc, StoreError):
        logger.warning("the output of %s could not be kept in the store: %s", tool_name, exc)
        return "the team's store could not take it"
    if isinstance(exc, ToolcardsError):
        logger.warning("the output of %s could not be kept: %s", tool_name, exc)
        return str(exc).rstrip(".")
    if isinstance(exc, OSError):  # its strerror only: the whole message may name a host path
        said = (exc.strerror or type(exc).__name__).lower()
        logger.warning("the output of %s could not be kept: %s", tool_name, said)
        return said
    from toolcards.core._unexpected import log_unexpected

    log_unexpected(logger, f"keeping the output of {tool_name}", exc)
    return f"an unexpected {type(exc).__name__}"


def _fresh_call_id(tool_name: str) -> str:
    import secrets

    return f"{tool_name}-{secrets.token_hex(3)}"
