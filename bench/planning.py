"""Planning board benchmark: one write, one plan, one search, and that a write does not grow with the board.

``run()`` returns rows ``(name, median_ms, note)``. Every call goes through a ``PlanningActor``
proxy (``proxy.method(...).get()``), the way a card calls it, on a SQLite store in a temporary
directory (WAL, ``synchronous="normal"``). Boards are filled with one batch, then measured; ten
agents own the tasks. Nothing is asserted: the machine is noisy. Target: an update costs at
most 1 ms (median) at both board sizes.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pykka

from toolcards.planning import PlanningActor, PlanningProxy, TaskCreate, TaskUpdate
from toolcards.store import SQLiteStore
from toolcards.vector import EmbeddingParam

__all__ = ["run"]

_AGENTS = [f"@Agent{n}" for n in range(10)]
_VOCABULARY = (
    "implement review fix benchmark document refactor deploy test migrate design auth search cache "
    "planner store vector index login page database parser report dashboard api schema queue"
)
_WORDS = _VOCABULARY.split()


def _description(i: int) -> str:
    words = [_WORDS[(i * k + k) % len(_WORDS)] for k in (1, 3, 7, 11, 13)]
    return f"{' '.join(words).capitalize()} for component {i}"


def _selective_query(i: int) -> str:
    """Three vocabulary words that occur together in a few tasks."""
    return _description(i * 37).split(" for ")[0].rsplit(" ", 2)[0]


def _broad_query(i: int) -> str:
    """A word in every description plus one vocabulary word: matches the whole board."""
    return f"{_WORDS[i % len(_WORDS)]} component"


def _start(store: SQLiteStore, size: int, embedding: EmbeddingParam | None = None) -> PlanningProxy:
    proxy = cast(PlanningProxy, PlanningActor.start(f"bench-{size}", store, embedding).proxy())
    statuses = ("pending", "started", "completed", "abort")
    tasks = [
        TaskCreate(
            description=_description(i),
            owner=_AGENTS[i % len(_AGENTS)],
            status=statuses[i % 4],  # type: ignore[arg-type]
        )
        for i in range(size)
    ]
    proxy.update("@Setup", create=tasks).get()
    return proxy


def _median_ms(call: Callable[[int], object], repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _writes(directory: Path, size: int) -> list[tuple[str, float, str]]:
    store = SQLiteStore(directory / f"board-{size}.db")
    proxy = _start(store, size)
    target = size // 2

    def update(i: int) -> object:
        change = TaskUpdate(id=target, status="started" if i % 2 else "pending", output=f"run {i}")
        return proxy.update("@Agent1", update=[change]).get()

    def create(i: int) -> object:
        return proxy.update("@Agent2", create=[TaskCreate(description=f"New task {i}")]).get()

    note = "through the actor proxy, SQLite commit included; median of 300"
    rows = [
        (f"update 1 task, board of {size:,}", _median_ms(update, 300), note),
        (f"create 1 task, board of {size:,}", _median_ms(create, 300), note),
    ]
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def _renders(directory: Path, size: int) -> list[tuple[str, float, str]]:
    store = SQLiteStore(directory / f"render-{size}.db")
    proxy = _start(store, size)

    def own(i: int) -> object:
        return proxy.render(_AGENTS[i % len(_AGENTS)]).get()

    def everything(i: int) -> object:
        return proxy.render("@Agent0", False).get()

    rows = [
        (f"render, board of {size:,}, own tasks", _median_ms(own, 100), "<= 50 listed; median of 100"),
        (f"render, board of {size:,}, all tasks", _median_ms(everything, 100), "<= 50 listed; median of 100"),
    ]
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def _searches(directory: Path, embedding: EmbeddingParam | None) -> list[tuple[str, float, str]]:
    store = SQLiteStore(directory / f"search-{embedding is not None}.db")
    proxy = _start(store, 2_000, embedding)
    proxy.when_indexed().get().result(120)
    kind = "keyword" if embedding is None else "keyword + semantic (hashing)"
    rows = []
    for label, query in (("selective", _selective_query), ("broad", _broad_query)):
        hits = statistics.mean(len(proxy.search(query(i)).get()) for i in range(26))

        def search(i: int, query: Callable[[int], str] = query) -> object:
            return proxy.search(query(i)).get()

        name = f"search, board of 2,000, {kind}, {label}"
        rows.append((name, _median_ms(search, 100), f"~{hits:.0f} hits per query; median of 100"))
    if embedding is None:

        def filtered(i: int) -> object:
            return proxy.search(None, "pending", _AGENTS[i % len(_AGENTS)]).get()

        name = "search, board of 2,000, filters only"
        rows.append((name, _median_ms(filtered, 100), "status + owner; median of 100"))
    else:

        def redescribe(i: int) -> object:
            return proxy.update("@Agent1", update=[TaskUpdate(id=7, description=f"Rewrite {i}")]).get()

        name = "update 1 description, board of 2,000, embedding on"
        rows.append((name, _median_ms(redescribe, 200), "embedded after the commit, off the actor; median of 200"))
        proxy.when_indexed().get().result(120)
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def run() -> list[tuple[str, float, str]]:
    """Run every measurement on temporary databases; takes about ten seconds."""
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        try:
            for size in (500, 5_000):
                rows.extend(_writes(directory, size))
            for size in (200, 2_000):
                rows.extend(_renders(directory, size))
            for embedding in (None, EmbeddingParam(provider="hashing")):
                rows.extend(_searches(directory, embedding))
        finally:
            pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    for name, median_ms, note in run():
        print(f"{name:<64} {median_ms:8.3f} ms  {note}")
