"""What both drivers build and how they time it; standard library only (it runs in both venvs).

Each driver runs as a script (``python bench/peer/<driver>.py SUITE DIRECTORY``), so this
module is imported as ``fixtures`` from the script's own directory.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BOARD_SIZES = (200, 500, 5_000, 20_000)
UPDATE_SIZES = (500, 20_000)
RENDER_SIZES = (500, 20_000)
GRAPH_SIZES = (500, 20_000)
TREE_SIZES = (1_000, 10_000)
AGENTS = [f"@Agent{n}" for n in range(10)]
STATUSES = ("pending", "started", "completed", "abort")
BUDGET_S = 2.0
"""Longest one case is timed in one round (at least ``MIN_SAMPLES`` samples are kept)."""
MIN_SAMPLES = 3
_WORDS = [
    "implement",
    "review",
    "fix",
    "benchmark",
    "document",
    "refactor",
    "deploy",
    "test",
    "migrate",
    "design",
    "auth",
    "search",
    "cache",
    "planner",
    "store",
    "vector",
    "index",
    "login",
    "page",
    "database",
    "parser",
    "report",
    "dashboard",
    "api",
    "schema",
    "queue",
]


def description(i: int) -> str:
    """Task ``i``'s description; every one ends with ``for component <i>``."""
    words = [_WORDS[(i * k + k) % len(_WORDS)] for k in (1, 3, 7, 11, 13)]
    return f"{' '.join(words).capitalize()} for component {i}"


def broad_query(i: int) -> str:
    """A keyword query matching every task on both sides: the peer matches the whole query as a
    substring of the description, toolcards by words; ``component`` is in every description."""
    return "component"


def entity(i: int) -> dict[str, Any]:
    """Entity ``i`` of a graph: name, type, description, two observations, every 500th a root."""
    return {
        "name": f"entity {i} {_WORDS[i % len(_WORDS)]}",
        "entity_type": f"type{i % 20}",
        "description": f"{description(i)} in the graph",
        "observations": [f"observed {_WORDS[(i * 3) % len(_WORDS)]} {i}", f"noted {_WORDS[(i * 7) % len(_WORDS)]}"],
        "is_root": i % 500 == 0,
    }


def relation(i: int) -> dict[str, str] | None:
    """Entity ``i``'s relation to an earlier entity (none for the first)."""
    if i == 0:
        return None
    return {
        "from_entity": entity(i)["name"],
        "to_entity": entity((i * 7919) % i)["name"],
        "relation_type": f"rel{i % 15}",
    }


def build_tree(tree: Path, files: int) -> None:
    """``files`` source files of about 1 KB, 20 to a directory, under ``tree/tree``; plus ``small.txt`` (2 KB)."""
    directories = max(1, files // 20)
    for index in range(files):
        directory = tree / "tree" / f"pkg{index % directories:03}" / ("sub" if index % 3 else "")
        directory.mkdir(parents=True, exist_ok=True)
        suffix = (".py", ".ts", ".md", ".txt")[index % 4]
        body = [f"# module {index}", "import os", ""]
        body += [f"def handler_{index}_{n}(value):\n    return value * {n}\n" for n in range(12)]
        (directory / f"file_{index:05}{suffix}").write_text("\n".join(body))
    (tree / "small.txt").write_text(("x" * 63 + "\n") * 32)


GREP_PATTERN = r"def handler_5\d\d_3\b"
SMALL = ("y" * 63 + "\n") * 32
"""2 KB in short lines."""


def sample(
    call: Callable[[], object],
    *,
    repeat: int = 200,
    warmup: int = 3,
    undo: Callable[[], object] | None = None,
    budget_s: float = BUDGET_S,
) -> list[float]:
    """Milliseconds of ``call()``, at most ``repeat`` samples or ``budget_s`` of them."""
    for _ in range(warmup):
        started = time.perf_counter()
        call()
        slow = time.perf_counter() - started > budget_s / 8
        if undo is not None:
            undo()
        if slow:  # one warm-up is enough for a call this slow
            break
    samples: list[float] = []
    spent = 0.0
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        samples.append(elapsed * 1000)
        spent += elapsed
        if undo is not None:
            undo()
        if spent > budget_s and len(samples) >= MIN_SAMPLES:
            break
    return samples


class Results:
    """Collects each case's samples and note; :meth:`emit` prints them for the runner."""

    def __init__(self) -> None:
        self.cases: dict[str, dict[str, Any]] = {}

    def add(self, label: str, samples: list[float], note: str = "") -> None:
        self.cases[label] = {"samples": [round(value, 5) for value in samples], "note": note}
        print(f"  {label}: {statistics.median(samples):.3f} ms", file=sys.stderr, flush=True)

    def skip(self, label: str, why: str) -> None:
        self.cases[label] = {"samples": [], "note": f"skipped: {why}"}
        print(f"  {label}: skipped: {why}", file=sys.stderr, flush=True)

    def emit(self) -> None:
        print("RESULT " + json.dumps(self.cases), flush=True)
