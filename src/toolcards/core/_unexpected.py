"""Logging an exception nobody expected, without what it says.

A tool that raises something other than a toolcards error has a bug (or met a failure nobody
translated into words). That is logged once, where the pipeline turns it into a failed call:
the tool, the exception's type and its traceback, so an operator can find the line. Its
message is left out, and so are the messages of the exceptions chained to it. A message is
built from the values at hand, and in a tool those are a model's arguments and the
workspace's files: a ``KeyError`` of a path, a ``ValueError`` quoting a line, a pydantic
``ValidationError`` quoting its input, an ``OSError`` naming a host path. A log is read by more
people than the call's answer and kept longer; the caller, which is answered with the message,
is the one to show it.
"""

from __future__ import annotations

import logging
import traceback

__all__ = ["log_unexpected", "traceback_without_messages"]


def log_unexpected(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """Log at ERROR that ``what`` (say ``"tool workspace_read"``) raised ``exc``: its type and
    :func:`traceback_without_messages`, never its message."""
    logger.error(
        "%s raised %s (its message is left out of the log: it may quote arguments or file text)\n%s",
        what,
        _type_name(type(exc)),
        traceback_without_messages(exc).rstrip("\n"),
    )


def traceback_without_messages(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it, chained exceptions included, with each exception
    shown by its type alone."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        else:
            current = None if current.__suppress_context__ else current.__context__
    parts: list[str] = []
    for earlier, later in zip([None, *reversed(chain)], reversed(chain), strict=False):
        if earlier is not None:
            cause = later.__cause__ is earlier
            parts.append(
                "\nThe above exception was the direct cause of the following exception:\n\n"
                if cause
                else "\nDuring handling of the above exception, another exception occurred:\n\n"
            )
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(later.__traceback__))
        parts.append(f"{_type_name(type(later))}\n")
    return "".join(parts)


def _type_name(kind: type[BaseException]) -> str:
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
