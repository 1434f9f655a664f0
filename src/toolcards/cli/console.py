"""What the command line prints besides results: progress and errors on stderr, one line each.

stdout is for results (and, for ``toolcards serve`` over stdio, for the protocol only), so
everything here writes to stderr.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_logging", "one_line", "progress"]


def progress(message: str) -> None:
    """Tell the user what is happening, on stderr."""
    print(f"toolcards: {message}", file=sys.stderr, flush=True)


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its message with whitespace collapsed (its type if it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


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
