"""What the command line prints besides results: progress and errors on stderr, one line each.

stdout is for results (and, for ``toolcards serve`` over stdio, for the protocol only), so
everything here writes to stderr.

Exit codes (see :func:`exit_code`): 0 success; 1 a failure of something the command line
names but cannot check by itself (a config file's content, a store, a port in use, a
package not installed); 2 a usage error, the command line itself is wrong (an option
value, options that contradict each other, an unknown kind, tool or command); 130
interrupted.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["UsageError", "configure_logging", "exit_code", "one_line", "progress", "root_error"]


class UsageError(Exception):
    """The command line is wrong (exit code 2); the message names the value and the fix."""


def progress(message: str) -> None:
    """Tell the user what is happening, on stderr."""
    print(f"toolcards: {message}", file=sys.stderr, flush=True)


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its message with whitespace collapsed (its type if it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def root_error(exc: BaseException) -> BaseException:
    """The error an exception group (a task group's, say) stands for: its first leaf that is
    not a cancellation, else its first leaf; ``exc`` itself when it is not a group."""
    while isinstance(exc, BaseExceptionGroup):
        leaves = [error for error in exc.exceptions if not _is_cancellation(error)]
        exc = (leaves or list(exc.exceptions))[0]
    return exc


def exit_code(exc: BaseException) -> int:
    """The exit code for a command that failed with ``exc``: 2 for a :class:`UsageError`, else 1."""
    return 2 if isinstance(root_error(exc), UsageError) else 1


def _is_cancellation(exc: BaseException) -> bool:
    import asyncio

    return isinstance(exc, asyncio.CancelledError)


def configure_logging(*, debug: bool = False, info: bool = False) -> None:
    """Log to stderr: warnings (toolcards' own info lines when ``info``), everything when ``debug``.

    Replaces the handler an earlier call installed; handlers installed by others stay.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("toolcards: %(levelname)s %(name)s: %(message)s" if debug else "toolcards: %(message)s")
    )
    handler._toolcards_cli = True  # type: ignore[attr-defined]
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_toolcards_cli", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("toolcards").setLevel(logging.DEBUG if debug else logging.INFO if info else logging.WARNING)
