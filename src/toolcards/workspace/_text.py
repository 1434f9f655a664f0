"""Line endings and unified-diff rendering for workspace text.

A line ends with ``"\\n"`` or ``"\\r\\n"``; a lone ``"\\r"`` is an ordinary character, as it is
for git and GNU patch. The last line of a text may have no ending. Everything here is a pure
function over ``str`` (or a file's ``bytes``): nothing reads or writes files, nothing blocks.

* :func:`file_text` — a file's bytes as text, or the refusal of a file that is not text
  (:class:`NotText`): the one rule (UTF-8 without a NUL byte) by which every workspace tool
  tells text from binary; :func:`is_text` answers the same question when the text is not needed.
* :func:`detect_newline` — the ending a text mostly uses, so an edit can keep it.
* :func:`to_newline` — rewrite every line ending to one style.
* :func:`split_lines` — split into lines, each keeping its ending.
* :func:`unified_diff` — a GNU unified diff of two versions, capped for a model to read;
  :func:`change_diff` the same diff computed on the changed region only (fast on big files).
* :func:`quote_lines` — a few numbered lines, for error messages that show a model the text;
  :func:`closest_block` finds the lines to quote when a model's text is not found.
* :func:`quote_file_text` — text taken from a file, clipped and inside the untrusted-output
  envelope, for any message that shows a model what a file holds (a diff, a mismatch).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Literal

from toolcards.core._output import wrap_untrusted
from toolcards.errors import RetriableError

__all__ = [
    "FILE_TEXT_SOURCE",
    "QUOTE_CHARS",
    "NotText",
    "best_possible_ratio",
    "binary_error",
    "change_diff",
    "closest_block",
    "detect_newline",
    "file_text",
    "is_text",
    "quote_file_text",
    "quote_lines",
    "split_lines",
    "to_newline",
    "unified_diff",
]

QUOTE_CHARS = 8_000
"""Characters of file text :func:`quote_file_text` shows at most by default."""

QUOTE_LINE_CHARS = 500
"""Longer lines are clipped by :func:`quote_file_text`."""

FILE_TEXT_SOURCE = "workspace file"
"""How the envelope of :func:`quote_file_text` names where its text came from."""

_NEXT_STEP = {
    "read": "so it cannot be shown as lines. For an image call workspace_view; PDF, DOCX, XLSX and PPTX "
    "documents are converted to text when read.",
    "edit": "so it cannot be edited. Overwrite it whole with workspace_write, or leave it.",
}
_NO_NEWLINE_MARKER = "\\ No newline at end of file\n"
_CONTEXT = 3
"""Lines of context around each change in a diff."""
_BLOCK = 4096
_CLOSEST_FLOOR = 30.0
"""Below this similarity (percent) no region is worth quoting as the closest one."""
_HUNK_HEADER = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@", re.MULTILINE)


class NotText(RetriableError):
    """A file is not text, so it cannot be shown as lines or edited (the message says what to do
    instead). Its own type, so a tool can tell this refusal from the others of a read and say
    how such a file is replaced."""


def file_text(data: bytes, shown_as: str, *, doing: Literal["read", "edit"] = "read") -> str:
    """The text of the file bytes ``data``, or the refusal of a file that is not text.

    A file is text when it is UTF-8 and holds no NUL byte; a leading byte-order mark stays in
    the text. :func:`~toolcards.workspace._files.read_page` applies the same rule to a file it
    streams.

    Raises:
        NotText: ``data`` is not text (:func:`binary_error` naming ``shown_as``, with the
            next step for ``doing``).
    """
    if b"\x00" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise binary_error(shown_as, doing=doing)


def is_text(data: bytes) -> bool:
    """Whether the file bytes ``data`` are text by the rule of :func:`file_text`."""
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def binary_error(shown_as: str, *, doing: Literal["read", "edit"] = "read") -> NotText:
    """The refusal of the file ``shown_as``, which is not text, to a tool that would ``doing`` (read or edit) it."""
    return NotText(f"{shown_as!r} looks binary (it is not UTF-8 text), {_NEXT_STEP[doing]}")


def detect_newline(text: str) -> str:
    """Return the line ending ``text`` mostly uses: ``"\\r\\n"`` or ``"\\n"``.

    ``"\\r\\n"`` wins only when it ends more lines than a bare ``"\\n"`` does; a text
    without any line break (or a tie) gives ``"\\n"``.
    """
    if "\r" not in text:  # a one-byte scan, much faster than counting "\r\n"
        return "\n"
    crlf = text.count("\r\n")
    bare = text.count("\n") - crlf
    return "\r\n" if crlf > bare else "\n"


def to_newline(text: str, nl: str) -> str:
    """Return ``text`` with every ``"\\r\\n"`` and ``"\\n"`` line ending replaced by ``nl``.

    Raises ``ValueError`` when ``nl`` is neither ``"\\n"`` nor ``"\\r\\n"`` (a programming error).
    """
    if nl not in ("\n", "\r\n"):
        raise ValueError(f"nl must be '\\n' or '\\r\\n', got {nl!r}")
    unix = text.replace("\r\n", "\n") if "\r" in text else text
    return unix if nl == "\n" else unix.replace("\n", "\r\n")


def split_lines(text: str) -> list[str]:
    """Return the lines of ``text``, each with its ending (``"\\n"``, ``"\\r\\n"``, or none for a
    last line without one); ``""`` gives ``[]``. ``"".join(split_lines(t)) == t`` always holds.
    """
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def quote_lines(lines: Sequence[str], first_line: int, *, limit: int = 8, width: int = 120) -> str:
    """Return ``lines`` numbered from ``first_line``, one ``"  <n> | <text>"`` per line.

    Line endings are dropped, lines longer than ``width`` characters are cut with ``"..."``,
    and past ``limit`` lines one last line says how many more there are. ``[]`` gives ``""``.
    """
    last = first_line + len(lines) - 1
    digits = len(str(last))
    out: list[str] = []
    for number, line in enumerate(lines[:limit], first_line):
        body = line.rstrip("\r\n")
        if len(body) > width:
            body = body[: width - 3] + "..."
        out.append(f"  {number:>{digits}} | {body}")
    if len(lines) > limit:
        out.append(f"  ... {len(lines) - limit} more line{'' if len(lines) - limit == 1 else 's'}")
    return "\n".join(out)


def closest_block(lines: Sequence[str], block: Sequence[str]) -> tuple[int, int, float] | None:
    """Find the run of ``lines`` most similar to ``block``, for a "did you mean" message.

    Lines are compared with surrounding whitespace stripped (rapidfuzz ``ratio``). Returns
    ``(start, count, score)``: the 0-based first line, the number of lines (``len(block)``,
    or all of ``lines`` when it is shorter) and the similarity in percent. Returns ``None``
    when either sequence is empty. Scores every run, so use it on error paths only.
    """
    if not lines or not block:
        return None
    count = min(len(block), len(lines))
    query = "\n".join(line.strip() for line in block)
    stripped = [line.strip() for line in lines]
    joined = "\n".join(stripped)
    if best_possible_ratio(len(query), len(joined)) < _CLOSEST_FLOOR:
        # Far longer than the whole text (or far shorter): nothing can be close, and scoring
        # every window of a huge query would cost a quarter of a second per megabyte.
        return None
    from rapidfuzz import fuzz  # loaded only when something can be close: ~0.1 s the first time

    offsets = list(accumulate((len(s) + 1 for s in stripped), initial=0))
    best_start, best_score = 0, -1.0
    for start in range(len(lines) - count + 1):
        window = joined[offsets[start] : offsets[start + count] - 1]
        # A cutoff at the best score so far lets rapidfuzz reject most windows early.
        score = fuzz.ratio(query, window, score_cutoff=max(best_score, 0.0) + 1e-9)
        if score > best_score:
            best_start, best_score = start, score
    return best_start, count, max(best_score, 0.0)


def best_possible_ratio(query_chars: int, text_chars: int) -> float:
    """rapidfuzz ``ratio``'s ceiling (percent) for a query against any window of a text, from
    lengths alone: what a window at most ``text_chars`` long can score."""
    if not query_chars or not text_chars:
        return 0.0
    shorter = min(query_chars, text_chars)
    return 200.0 * shorter / (query_chars + shorter)


def quote_file_text(text: str, *, max_chars: int = QUOTE_CHARS, max_line_chars: int = QUOTE_LINE_CHARS) -> str:
    """``text`` taken from a file, ready for a message a model reads.

    Each line longer than ``max_line_chars`` is clipped (with the number of characters
    cut), the whole is cut at a line once it passes ``max_chars`` (with a note), and the
    result is wrapped in the untrusted-output envelope
    (:func:`~toolcards.core._output.wrap_untrusted`), so text in the file can neither pass
    itself off as instructions nor close the envelope. The envelope names its source
    :data:`FILE_TEXT_SOURCE`: the message around it names the file.
    """
    out: list[str] = []
    size = 0
    lines = text.split("\n")
    for index, line in enumerate(lines):
        shown = (
            line
            if len(line) <= max_line_chars
            else f"{line[:max_line_chars]}… [{len(line) - max_line_chars} more characters]"
        )
        if size + len(shown) > max_chars and out:
            out.append(f"… [{len(lines) - index} more line{'' if len(lines) - index == 1 else 's'} cut]")
            break
        out.append(shown)
        size += len(shown) + 1
    return wrap_untrusted("\n".join(out), FILE_TEXT_SOURCE)


def unified_diff(
    old: str | None,
    new: str | None,
    path: str,
    max_lines: int | None = 200,
    *,
    context: int = _CONTEXT,
) -> str:
    """Return a GNU unified diff from ``old`` to ``new`` for the file ``path``.

    ``None`` stands for an absent file: the header then names ``/dev/null``, as for a file
    added or deleted. Headers are ``--- a/<path>`` and ``+++ b/<path>``; a last line without
    a newline is followed by ``\\ No newline at end of file``. Line endings are shown as
    ``"\\n"``; when the two versions differ only in their line endings the result is a
    one-line note saying so. Equal versions give ``""``.

    When the diff is longer than ``max_lines`` lines (``None``: no cap), the first
    ``max_lines`` are kept and a last line says how many were cut. Uncapped output parses
    with :func:`toolcards.workspace._patch.parse_patch` and applied to ``old`` gives ``new``.

    Raises ``ValueError`` when ``max_lines`` is not positive (a programming error).
    """
    if max_lines is not None and max_lines < 1:
        raise ValueError(f"max_lines must be positive or None, got {max_lines}")
    if old == new:
        return ""
    old_unix = to_newline(old or "", "\n")
    new_unix = to_newline(new or "", "\n")
    if old_unix == new_unix and old is not None and new is not None:
        before, after = _newline_name(old), _newline_name(new)
        return f"{path}: only the line endings changed ({before} -> {after}).\n"
    out: list[str] = []
    for line in difflib.unified_diff(
        split_lines(old_unix),
        split_lines(new_unix),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
        n=context,
    ):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.extend((line + "\n", _NO_NEWLINE_MARKER))
    if max_lines is not None and len(out) > max_lines:
        cut = len(out) - max_lines
        out = [*out[:max_lines], f"... {cut} more diff line{'' if cut == 1 else 's'} cut\n"]
    return "".join(out)


def _newline_name(text: str) -> str:
    return "CRLF" if detect_newline(text) == "\r\n" else "LF"


def change_diff(
    old: str,
    new: str,
    path: str,
    max_lines: int | None = 200,
    *,
    same_head: int = 0,
    same_head_lines: int = 0,
    same_tail: int = 0,
) -> str:
    """A unified diff of ``old`` → ``new`` computed on the changed region only.

    The format of :func:`unified_diff` (hunks with 3 lines of context, true line numbers,
    capped at ``max_lines``), but only the lines between the first and last difference go
    through ``difflib``, so a one-line edit in a 2,000-line file costs tens of microseconds
    rather than milliseconds. The result is the same diff,
    except that where repeated lines make a change's place ambiguous it may be shown at
    another of the equivalent places; uncapped, it always applies to ``old`` to give ``new``.

    A caller that knows where it changed the text may say so: the first ``same_head``
    characters (holding ``same_head_lines`` line breaks) and the last ``same_tail``
    characters are equal in both texts. The search for the first and last difference then
    starts there, so nothing before or after the change is scanned; the diff is the same.
    Wrong hints give a wrong diff (a programming error).
    """
    limit = min(len(old), len(new))
    prefix = _common_run(old, new, limit, start=min(same_head, limit))
    suffix = _common_run(old, new, limit - prefix, from_end=True, start=min(same_tail, limit - prefix))
    # Line `changed` is the first that differs; it starts at the same offset in both texts.
    if same_head <= prefix:
        changed = same_head_lines + old.count("\n", same_head, prefix)
    else:
        changed = old.count("\n", 0, prefix)
    start = old.rfind("\n", 0, prefix) + 1
    first = changed
    while first > changed - _CONTEXT and first > 0:
        start = old.rfind("\n", 0, start - 1) + 1
        first -= 1
    # Lines after the first "\n" of the common suffix are identical in both texts; keep
    # the first few of them as context and leave out the rest.
    window_a = old[start : _context_end(old, suffix)]
    window_b = new[start : _context_end(new, suffix)]
    diff = unified_diff(window_a, window_b, path, max_lines=max_lines)
    if not first or not diff.startswith("---"):
        return diff

    def shift(match: re.Match[str]) -> str:
        return f"@@ -{int(match[1]) + first}{match[2]} +{int(match[3]) + first}{match[4]} @@"

    return _HUNK_HEADER.sub(shift, diff)


def _common_run(a: str, b: str, limit: int, *, from_end: bool = False, start: int = 0) -> int:
    """Length of the longest common prefix (or suffix, ``from_end``) of ``a`` and ``b``, at
    most ``limit``, knowing that the first ``start`` characters agree: compared a block at a
    time (in C), then bisected within the first block that differs."""
    size_a, size_b = len(a), len(b)

    def same(low: int, high: int) -> bool:
        if from_end:
            return a[size_a - high : size_a - low] == b[size_b - high : size_b - low]
        return a[low:high] == b[low:high]

    low = start
    while low < limit:
        high = min(limit, low + _BLOCK)
        if not same(low, high):
            break
        low = high
    else:
        return limit
    while high - low > 1:  # the first `low` characters agree, the first `high` do not
        middle = (low + high) // 2
        if same(low, middle):
            low = middle
        else:
            high = middle
    return low


def _context_end(text: str, suffix: int) -> int:
    """Where a diff window of ``text`` ends: a few whole lines into its last ``suffix``
    characters (which the other version shares), or at the end when fewer lines are there."""
    end = text.find("\n", len(text) - suffix) + 1
    if not end:
        return len(text)
    for _ in range(_CONTEXT):
        end = text.find("\n", end) + 1
        if not end:
            return len(text)
    return end
