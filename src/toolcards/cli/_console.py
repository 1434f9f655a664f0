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

import gc
import logging
import re
import sys
from pathlib import Path

from toolcards.core._error_text import one_line

__all__ = [
    "UsageError",
    "configure_logging",
    "exit_code",
    "install_hint",
    "one_line",
    "plain",
    "progress",
    "root_error",
    "summary",
]


class UsageError(Exception):
    """The command line is wrong (exit code 2); the message names the value and the fix."""


def start_up_over() -> None:
    """End the start-up of a long-running command (``main`` turns the collector off while a
    command starts): the objects made so far are kept out of every later collection, and the
    cyclic garbage collector runs again."""
    gc.freeze()
    gc.enable()


def progress(message: str) -> None:
    """Tell the user what is happening, on stderr."""
    print(f"toolcards: {message}", file=sys.stderr, flush=True)


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


def plain(text: str) -> str:
    """``text`` written for a terminal: the reST markup of docstrings taken out.

    ``:role:`~a.b.Name``` becomes ``Name``, ``:role:`title <target>``` becomes ``title``,
    double and single backquotes and ``**`` are dropped, and a paragraph's closing ``::``
    becomes ``:``. Help text is built from docstrings, which are written for the docs.
    """
    text = re.sub(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)\s*(?:<[^>]*>)?`", _role_text, text)
    text = text.replace("``", "").replace("**", "")
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"::(\s|$)", r":\1", text)


def _role_text(match: re.Match[str]) -> str:
    target = match[1]
    # ~a.b.Name shows Name, as Sphinx does; a role with an explicit title keeps the title.
    return target.rsplit(".", 1)[-1] if match[0].split("`", 1)[1].startswith("~") else target


def summary(doc: str | None) -> str | None:
    """A command's description for ``--help``: the first paragraph of its module docstring, plain."""
    if not doc:
        return None
    return plain(" ".join(doc.strip().split("\n\n", 1)[0].split()))


def install_hint(extra: str) -> str:
    """How to install the ``extra`` that is missing: ``pip install 'toolcards[<extra>]'``, and in a
    clone of the repository, ``make venv``, which installs every extra into ``.venv``."""
    hint = f"pip install 'toolcards[{extra}]'"
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "Makefile").is_file() and (checkout / "pyproject.toml").is_file():
        hint += f" (in this clone, {checkout}: make venv installs every extra into .venv)"
    return hint


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
