"""Taking one change back out of a file that changed since: the line rule of ``workspace_undo``.

When a file still holds exactly what a change left, undoing the change restores the bytes it
had before, whatever they are. When the file changed again since, :func:`revert_lines`
takes the change's hunks back out of the current text, as ``git revert`` does, provided no
later change touched the same lines or the lines right next to them (adjacent lines count
as touching: two hunks that meet have no line in between to tell them apart). Otherwise
it gives ``None``, and the undo is refused naming the later change.

Only text is merged this way: a version holding a NUL byte, or larger than
:data:`MAX_MERGE_BYTES`, is compared whole (any later change conflicts). Lines end with
``\\n``, ``\\r\\n`` or ``\\r`` and keep their endings, so the bytes outside the reverted hunks
stay exactly as they are.
"""

from __future__ import annotations

from difflib import SequenceMatcher

__all__ = ["MAX_MERGE_BYTES", "is_mergeable", "revert_lines"]

MAX_MERGE_BYTES = 2 * 1024 * 1024
"""Versions larger than this are not merged line by line (the comparison is quadratic at worst)."""


def is_mergeable(*versions: bytes) -> bool:
    """Whether every one of ``versions`` is text small enough to merge line by line."""
    return all(len(data) <= MAX_MERGE_BYTES and b"\0" not in data for data in versions)


def revert_lines(after: bytes, before: bytes, current: bytes) -> bytes | None:
    """``current`` with the change from ``before`` to ``after`` taken back out.

    Returns ``None`` when a change made since (from ``after`` to ``current``) touched the
    lines the change made, or the lines next to them.
    """
    if current == after:
        return before
    a, b, c = after.splitlines(keepends=True), before.splitlines(keepends=True), current.splitlines(keepends=True)
    undo = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    since = SequenceMatcher(None, a, c, autojunk=False).get_opcodes()
    changed = [(i1, i2) for tag, i1, i2, _, _ in since if tag != "equal"]
    kept = [(i1, i2, j1) for tag, i1, i2, j1, _ in since if tag == "equal"]
    replacements: list[tuple[int, int, list[bytes]]] = []
    for _, i1, i2, j1, j2 in undo:
        if any(i1 <= k2 and k1 <= i2 for k1, k2 in changed):
            return None
        block = next((k for k in kept if k[0] <= i1 and i2 <= k[1]), None)
        if block is None:
            return None
        offset = block[2] - block[0]
        replacements.append((i1 + offset, i2 + offset, b[j1:j2]))
    result = list(c)
    for start, end, lines in reversed(replacements):
        result[start:end] = lines
    return b"".join(result)
