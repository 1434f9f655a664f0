"""An exception as one line, for a log record or a message that must fit on one line.

Shared by the command line, the stores and the embedding keeper, so a failure reads the same
wherever it is reported.
"""

from __future__ import annotations

__all__ = ["one_line", "typed_line"]


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its message with whitespace collapsed (its type if it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def typed_line(exc: BaseException) -> str:
    """``exc`` as one line of a log: its type and its message's words."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
