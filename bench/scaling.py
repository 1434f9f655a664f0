"""Scaling: how each operation's cost grows with the state it works on.

For the planning board at 500 / 5,000 / 20,000 tasks, the knowledge graph at 500 / 5,000 /
20,000 entities and the workspace tree at 1,000 / 10,000 files, every operation is timed at
every size, and its **growth exponent** between two sizes is ``log(t2 / t1) / log(n2 / n1)``
(0: flat; 1: linear; 2: quadratic), for each pair of neighbouring sizes and the worst.
Targets: <= 0.1 for an operation that touches one item (update, get, create, a single-file
read, write or edit), <= 1.0 for one that must visit everything (render, a search matching
every task, grep, glob). An exponent on a noisy machine is only as good as its medians: read
one near its target together with the medians it comes from.

Every call is a tool call as a model makes it (``Tool.call_sync`` on the tool-call channel
of a card bound to a :class:`~toolcards.testing.FakeObserver`): validation, the actor ask,
the store transaction and the text returned are all in it. Each size is its own team (and
tree), all alive at once, and the sizes take turns (``ROUNDS`` rounds of each operation at
each size), so drift on a shared machine hits them alike.

Fixtures are built in bulk: a board is filled by one ``update`` of the board actor (one
store transaction); the graph by one ``update`` of the graph actor per size, its vectors
(``hashing``, 384 dimensions: deterministic, no model needed) embedded in the background,
which the build waits for; the tree by writing files directly. The whole group takes about
two minutes on 2 cores.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.peer.fixtures import build_tree
from bench.planning import _broad_query, _description, _selective_query
from bench.timing import Case, Stats, measure

__all__ = ["EVERYTHING", "ONE_ITEM", "exponent", "run"]

BOARD_SIZES = (500, 5_000, 20_000)
GRAPH_SIZES = (500, 5_000, 20_000)
TREE_SIZES = (1_000, 10_000)
ONE_ITEM = 0.1
"""Target growth exponent of an operation that touches one item."""
EVERYTHING = 1.0
"""Target growth exponent of an operation that must visit everything."""
ROUNDS = 5
"""The sizes take turns this many times per operation."""
SAMPLES = 200
"""Samples per operation and size (fewer for a slow one: see ``BUDGET_S``)."""
BUDGET_S = 0.5
"""Longest one operation is timed at one size in one round (at least 5 samples are kept)."""
WARMUP = 5

_AGENTS = [f"@Agent{n}" for n in range(10)]
_HASHING = {"provider": "hashing", "dimensions": 384}
_CREATED = re.compile(r"Created task (\d+)\.")


def exponent(n1: float, t1: float, n2: float, t2: float) -> float:
    """The growth exponent between ``(n1, t1)`` and ``(n2, t2)``: ``log(t2/t1) / log(n2/n1)``."""
    if min(t1, t2) <= 0 or math.isnan(t1) or math.isnan(t2) or n1 == n2:
        return math.nan
    return math.log(t2 / t1) / math.log(n2 / n1)


Call = Callable[[], object]


class _Operation:
    """One operation at every size: ``calls[size]`` makes one call, ``undos[size]`` (if any) undoes it."""

    def __init__(self, label: str, target: float, note: str = "") -> None:
        self.label = label
        self.target = target
        self.note = note
        self.calls: dict[int, Call] = {}
        self.undos: dict[int, Call | None] = {}


def _interleaved(operation: _Operation, sizes: Sequence[int]) -> dict[int, Stats]:
    """Time ``operation`` at every size, the sizes taking turns for ``ROUNDS`` rounds."""
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for size in sizes:
        measure(operation.calls[size], repeat=0, warmup=WARMUP, undo=operation.undos.get(size))
    for _ in range(ROUNDS):
        for size in sizes:
            stats = _samples(operation.calls[size], operation.undos.get(size))
            samples[size].extend(stats)
    return {size: Stats.of(values) for size, values in samples.items()}


def _samples(call: Call, undo: Call | None) -> list[float]:
    out: list[float] = []
    spent = 0.0
    for _ in range(SAMPLES // ROUNDS):
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        out.append(elapsed * 1000)
        spent += elapsed
        if undo is not None:
            undo()
        if spent > BUDGET_S and len(out) >= 5:
            break
    return out


def _rows(domain: str, unit: str, operations: list[_Operation], sizes: Sequence[int]) -> list[Case]:
    rows: list[Case] = []
    for operation in operations:
        stats = _interleaved(operation, sizes)
        for size in sizes:
            note = f"median of {stats[size].count}"
            if operation.note:
                note = f"{operation.note}; {note}"
            rows.append(Case.timed(f"{domain} {operation.label}, {size:,} {unit}", stats[size], note))
        exponents = []
        for small, large in itertools.pairwise(sizes):
            value = exponent(small, stats[small].median, large, stats[large].median)
            exponents.append(value)
            rows.append(
                Case(
                    f"{domain} {operation.label}: growth {small:,} → {large:,}",
                    value,
                    f"exponent, log(t2/t1)/log(n2/n1) of the medians ({stats[small].median:.3f} → "
                    f"{stats[large].median:.3f} ms)",
                    unit="",
                    target=operation.target,
                )
            )
        if len(exponents) > 1:
            worst = max(exponents, key=lambda e: -math.inf if math.isnan(e) else e)
            rows.append(
                Case(
                    f"{domain} {operation.label}: growth, worst",
                    worst,
                    f"the largest of the {len(exponents)} exponents above",
                    unit="",
                    target=operation.target,
                )
            )
    return rows


# -- tools ----------------------------------------------------------------------------------


def _tools(cards: list[Any], observer: Any) -> dict[str, Callable[..., object]]:
    """The cards' tools by name, each called as a model's tool call is."""
    from toolcards import ToolFactory
    from toolcards.core._channels import Channels

    def caller(tool: Any) -> Callable[..., object]:
        # get_planning is a system prompt by default: it is then called as a command.
        channel = Channels.TOOL_CALL if Channels.TOOL_CALL in tool.channels else Channels.COMMAND

        def call(**arguments: Any) -> object:
            return tool.call_sync(arguments, channel=channel)

        return call

    return {tool.name: caller(tool) for tool in ToolFactory(cards, observer=observer).tools()}


# -- the board ------------------------------------------------------------------------------


def _board_at(size: int, system: Any) -> dict[str, tuple[Call, Call | None]]:
    """A board of ``size`` tasks (one batch, ten owners); each operation's call and undo."""
    from toolcards.planning import PlanningTool, TaskCreate
    from toolcards.testing import FakeObserver

    observer = FakeObserver("Agent1", f"scale-board-{size}", system=system)
    card = PlanningTool()
    tools = _tools([card], observer)
    statuses = ("pending", "in_progress", "completed", "aborted")
    tasks = [
        TaskCreate(description=_description(i), owner=_AGENTS[i % len(_AGENTS)], status=statuses[i % 4])  # type: ignore[arg-type]
        for i in range(size)
    ]
    card.board.update("@Setup", create=tasks).get()
    middle = size // 2
    counter = iter(range(10**9))
    created: list[int] = []

    def update() -> object:
        i = next(counter)
        change = {"id": middle, "status": "in_progress" if i % 2 else "pending", "output": f"run {i}"}
        return tools["update_planning"](update_tasks=[change])

    def create() -> object:
        answer = tools["update_planning"](create_tasks=[{"description": "A task created to be deleted"}])
        found = _CREATED.search(str(answer))
        if found is None:
            raise RuntimeError(f"update_planning did not create the task: {answer}")
        created.append(int(found[1]))
        return answer

    def delete_created() -> None:
        card.board.update("@Agent1", delete=[created.pop()]).get()

    return {
        "update": (update, None),
        "get": (lambda: tools["get_planning_task"](task_id=middle), None),
        "create": (create, delete_created),
        "render": (tools["get_planning"], None),
        "broad": (lambda: tools["search_planning"](query=_broad_query(next(counter))), None),
        "selective": (lambda: tools["search_planning"](query=_selective_query(next(counter))), None),
    }


def _board_rows(system: Any) -> list[Case]:
    operations = {
        "update": _Operation("update 1 task", ONE_ITEM, "update_planning, status and output"),
        "get": _Operation("get 1 task", ONE_ITEM, "get_planning_task"),
        "create": _Operation("create 1 task", ONE_ITEM, "update_planning; deleted untimed after each"),
        "render": _Operation("render (get_planning)", EVERYTHING, "the plan as the model reads it"),
        "broad": _Operation("search matching every task", EVERYTHING, "search_planning, keyword"),
        "selective": _Operation("search, selective", EVERYTHING, "search_planning, keyword, a few hits"),
    }
    for size in BOARD_SIZES:
        for key, (call, undo) in _board_at(size, system).items():
            operations[key].calls[size], operations[key].undos[size] = call, undo
    return _rows("board", "tasks", list(operations.values()), BOARD_SIZES)


# -- the graph ------------------------------------------------------------------------------


def _vocabulary(size: int = 3_000) -> list[str]:
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "to", "vash", "qui", "dor", "el", "ban", "sun", "tri", "og", "pel"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _fill_graph(graph: Any, size: int, words: list[str]) -> list[str]:
    """``size`` entities with one relation each to an earlier one, in one update; waits for their vectors.

    Returns the entities' names.
    """
    from toolcards.knowledge_graph import EntityCreate, RelationCreate

    rng = random.Random(size)
    names = [f"{rng.choice(words)} {rng.choice(words)} {i}" for i in range(size)]
    entities = [
        EntityCreate(
            name=name,
            entity_type=f"type{i % 20}",
            description=" ".join(rng.choices(words, k=6)),
            observations=[" ".join(rng.choices(words, k=4))],
            is_root=i % 500 == 0,
        )
        for i, name in enumerate(names)
    ]
    relations = [
        RelationCreate(from_entity=name, to_entity=names[rng.randrange(i)], relation_type=f"rel{i % 15}")
        for i, name in enumerate(names)
        if i
    ]
    report = graph.update("@Setup", create_entities=entities, create_relations=relations).get()
    if report.errors:
        raise RuntimeError(f"building the graph of {size:,} failed: {report.errors[:3]}")
    deadline = time.monotonic() + 300
    while graph.pending_embeddings().get():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the graph of {size:,} entities was not embedded within 300 s")
        time.sleep(0.05)
    return names


def _graph_at(size: int, system: Any, words: list[str]) -> dict[str, tuple[Call, Call | None]]:
    """A graph of ``size`` entities with their vectors; each operation's call and undo."""
    from toolcards.knowledge_graph import KnowledgeGraphTool
    from toolcards.testing import FakeObserver
    from toolcards.vector import EmbeddingParam

    observer = FakeObserver("Agent1", f"scale-graph-{size}", system=system)
    card = KnowledgeGraphTool(embedding=EmbeddingParam(**_HASHING))
    tools = _tools([card], observer)
    names = _fill_graph(card.graph, size, words)
    target = names[size // 2]
    counter = iter(range(10**9))
    rng = random.Random(size)
    created: list[str] = []

    def create() -> object:
        name = f"fresh entity {next(counter)}"
        created.append(name)
        entity = {"name": name, "entity_type": "type1", "description": "created to be deleted"}
        relations = [{"from_entity": name, "to_entity": target, "relation_type": "rel1"}]
        return tools["update_graph"](create_entities=[entity], create_relations=relations)

    def delete_created() -> None:
        card.graph.update("@Agent1", delete_entities=[created.pop()]).get()

    def update() -> object:
        description = f"{' '.join(rng.choices(words, k=6))} {next(counter)}"
        return tools["update_graph"](update_entities=[{"name": target, "description": description}])

    def query() -> str:
        return " ".join(rng.choices(words, k=rng.randint(1, 2)))

    return {
        "create": (create, delete_created),
        "update": (update, None),
        "get": (tools["get_graph"], None),
        "keyword": (lambda: tools["search_graph"](query=query(), mode="keyword"), None),
        "hybrid": (lambda: tools["search_graph"](query=query(), mode="hybrid"), None),
    }


def _graph_rows(system: Any) -> list[Case]:
    words = _vocabulary()
    operations = {
        "create": _Operation("create 1 entity", ONE_ITEM, "update_graph, one relation; deleted untimed after each"),
        "update": _Operation("update 1 entity", ONE_ITEM, "update_graph, new description (re-embedded)"),
        "get": _Operation("get (summary)", ONE_ITEM, "get_graph"),
        "keyword": _Operation("keyword search", EVERYTHING, "search_graph mode=keyword, top 10"),
        "hybrid": _Operation("hybrid search", EVERYTHING, "search_graph mode=hybrid, hashing-384, top 10"),
    }
    for size in GRAPH_SIZES:
        for key, (call, undo) in _graph_at(size, system, words).items():
            operations[key].calls[size], operations[key].undos[size] = call, undo
    return _rows("graph", "entities", list(operations.values()), GRAPH_SIZES)


# -- the tree -------------------------------------------------------------------------------


def _build_tree(tree: Path, files: int) -> None:
    """The peer comparison's tree of ``files`` source files (``build_tree``), with this group's
    2 KB ``small.txt`` (one line) and a 60-line ``edit.txt``."""
    build_tree(tree, files)
    (tree / "small.txt").write_bytes(b"x" * 2047 + b"\n")
    (tree / "edit.txt").write_text("".join(f"line number {n} of the file\n" for n in range(60)))


def _tree_at(size: int, system: Any, root: Path) -> dict[str, tuple[Call, Call | None]]:
    """A tree of ``size`` files; each operation's call."""
    from toolcards.testing import FakeObserver
    from toolcards.workspace import WorkspaceTool

    workspace = f"scale-tree-{size}"
    _build_tree(root / workspace, size)
    observer = FakeObserver("Agent1", workspace, system=system)
    tools = _tools([WorkspaceTool(workspace_id=workspace)], observer)
    payload = ("y" * 63 + "\n") * 32  # 2 KB in short lines: a read shows all of it
    tools["workspace_read"](path="edit.txt")  # the read-before-write gate
    tools["workspace_write"](path="out.txt", content=payload)
    tools["workspace_read"](path="out.txt")
    flips = iter(range(10**9))

    def edit() -> object:
        old, new = ("number 30 ", "NUMBER 30 ") if next(flips) % 2 == 0 else ("NUMBER 30 ", "number 30 ")
        return tools["workspace_edit"](path="edit.txt", old_string=old, new_string=new)

    return {
        "read": (lambda: tools["workspace_read"](path="small.txt"), None),
        "write": (lambda: tools["workspace_write"](path="out.txt", content=payload), None),
        "edit": (edit, None),
        "glob": (lambda: tools["workspace_glob"](pattern="**/*.py", path="tree"), None),
        "grep": (lambda: tools["workspace_grep"](pattern=r"def handler_5\d\d_3\b", path="tree"), None),
    }


def _tree_rows(system: Any, root: Path) -> list[Case]:
    operations = {
        "read": _Operation("read 2 KB file", ONE_ITEM, "workspace_read"),
        "write": _Operation("write 2 KB file", ONE_ITEM, "workspace_write, overwrite, fsync"),
        "edit": _Operation("edit 1 file", ONE_ITEM, "workspace_edit, exact, 60-line file"),
        "glob": _Operation("glob **/*.py", EVERYTHING, "workspace_glob"),
        "grep": _Operation("grep", EVERYTHING, "workspace_grep, ~100 matching lines at every size"),
    }
    for size in TREE_SIZES:
        for key, (call, undo) in _tree_at(size, system, root).items():
            operations[key].calls[size], operations[key].undos[size] = call, undo
    return _rows("tree", "files", list(operations.values()), TREE_SIZES)


# -- running --------------------------------------------------------------------------------


@contextmanager
def _environment(directory: Path) -> Iterator[Path]:
    """Workspaces and the default store in ``directory`` for the run; restored after."""
    saved = {name: os.environ.get(name) for name in ("TOOLCARDS_WORKSPACES_ROOT", "TOOLCARDS_STORE")}
    root = directory / "workspaces"
    root.mkdir()
    os.environ["TOOLCARDS_WORKSPACES_ROOT"] = str(root)
    os.environ["TOOLCARDS_STORE"] = str(directory / "state.db")
    try:
        yield root.resolve()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run() -> list[Case]:
    """Build the fixtures and time every operation at every size; about two minutes."""
    import pykka

    from toolcards.actors import ActorSystem
    from toolcards.store import close_default_stores
    from toolcards.workspace._actor import stop_workspace_actors

    rows: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-scaling-") as temp, _environment(Path(temp)) as root:
        try:
            with ActorSystem() as system:
                rows += _board_rows(system)
            with ActorSystem() as system:
                rows += _graph_rows(system)
            with ActorSystem() as system:
                rows += _tree_rows(system, root)
        finally:
            stop_workspace_actors()
            pykka.ActorRegistry.stop_all()
            close_default_stores()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("scaling", case) for case in run()), end="")
