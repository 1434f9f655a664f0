"""Workspace edit benchmark: one find-and-replace in a 2,000-line file, exact and fuzzy.

``run()`` returns :class:`~bench.timing.Case` rows. The file is generated Python-like code
(~80 KB, 4-space indentation, lines of varied length). The exact edit replaces a unique
3-line block; the fuzzy edit's old text has a misspelt name, a changed literal and other
indentation, so every strategy before ``fuzzy`` is tried and fails first. Nothing is
asserted: the machine is noisy. The targets (exact <= 1 ms, fuzzy <= 2 ms) are for the edit
end to end (``bench/workspace.py``); the engine is a part of them.
"""

from __future__ import annotations

import random

from bench.timing import Case, measure
from toolcards.workspace._edit import apply_edit

__all__ = ["run"]

_LINES = 2_000


def edit_cases(text: str) -> tuple[str, str, str, str]:
    """(exact old, exact new, fuzzy old, fuzzy new) for a text made by :func:`_source`: a
    unique 3-line block, and a 6-line block with two typos and its indentation stripped."""
    lines = text.split("\n")
    exact_old = "\n".join(lines[1_000:1_003])
    exact_new = exact_old.replace("value", "amount")
    fuzzy_block = [line.strip() for line in lines[1_200:1_206]]
    fuzzy_new = "\n".join(fuzzy_block) + "\n# reviewed"
    fuzzy_block[1] = _swap(fuzzy_block[1], 5)
    fuzzy_block[4] = _swap(fuzzy_block[4], 9)
    return exact_old, exact_new, "\n".join(fuzzy_block), fuzzy_new


def run() -> list[Case]:
    """Time both edits; takes about a second."""
    text = _source(_LINES)
    exact_old, exact_new, fuzzy_old, fuzzy_new = edit_cases(text)

    exact = apply_edit(text, exact_old, exact_new)
    fuzzy = apply_edit(text, fuzzy_old, fuzzy_new)
    if (exact.strategy, fuzzy.strategy) != ("exact", "fuzzy"):  # the benchmark would measure the wrong path
        raise AssertionError(f"unexpected strategies {exact.strategy}, {fuzzy.strategy}")
    return [
        Case.timed(
            f"apply_edit exact, {_LINES:,}-line file",
            measure(lambda: apply_edit(text, exact_old, exact_new), repeat=500),
            "3-line block, unique; median of 500",
        ),
        Case.timed(
            f"apply_edit fuzzy, {_LINES:,}-line file",
            measure(lambda: apply_edit(text, fuzzy_old, fuzzy_new), repeat=500),
            f"6-line block, 2 typos, other indent ({fuzzy.strategy}); median of 500",
        ),
    ]


def _swap(line: str, index: int) -> str:
    """A typo: two neighbouring characters swapped."""
    return line[:index] + line[index + 1] + line[index] + line[index + 2 :]


def _source(count: int) -> str:
    rng = random.Random(7)
    names = ["value", "total", "items", "result", "record", "offset", "buffer", "payload", "cursor", "limit"]
    lines: list[str] = []
    for number in range(count):
        depth = 0 if number % 40 == 0 else 1 + rng.randrange(3)
        if depth == 0:
            lines.append(f"def handler_{number}(request, options=None):")
            continue
        name = f"{rng.choice(names)}_{number}"
        other = rng.choice(names)
        kind = rng.randrange(4)
        if kind == 0:
            body = f"{name} = {other}.get({rng.randrange(100)!r}, {rng.randrange(100)})"
        elif kind == 1:
            body = f"if {name} > {rng.randrange(100)}: {other}.append({name})"
        elif kind == 2:
            body = f"for {name} in range(len({other})):  # step {rng.randrange(10)}"
        else:
            body = f"return compute({name}, {other}, limit={rng.randrange(1000)})"
        lines.append("    " * depth + body)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("workspace_edit", case) for case in run()), end="")
