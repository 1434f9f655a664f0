"""Planning board benchmark: one write, one plan, one search, and that a write does not grow with the board.

``run()`` returns rows ``(name, median_ms, note)``. Every call goes through a ``PlanActor``
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

from toolcards.planning import PlanActor, PlanActorProxy, TaskCreate, TaskUpdate
from toolcards.store import SQLiteStore
from toolcards.vector import EmbeddingParam

__all__ = ["run"]

_AGENTS = [f"@Agent{n}" for n in range(10)]
_WORDS = (
    "implement review fix benchmark document refactor deploy test migrate design auth search cache "
    "planner store vector index login page database parser report dashboard api schema queue"
).split()


def _description(i: int) -> str:
    words = [_WORDS[(i * k + k) % len(_WORDS)] for k in (1, 3, 7, 11, 13)]
    return f"{' '.join(words).capitalize()} for component {i}"


def _start(store: SQLiteStore, size: int, embedding: EmbeddingParam | None = None) -> PlanActorProxy:
    proxy = cast(PlanActorProxy, PlanActor.start(f"bench-{size}", store, embedding).proxy())
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


def run() -> list[tuple[str, float, str]]:
    """Run every measurement on temporary databases; takes a few seconds."""
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        try:
            for size in (500, 5_000):
                store = SQLiteStore(directory / f"board-{size}.db")
                proxy = _start(store, size)
                target = size // 2

                def update(i: int, proxy: PlanActorProxy = proxy, target: int = target) -> object:
                    change = TaskUpdate(id=target, status="started" if i % 2 else "pending", output=f"run {i}")
                    return proxy.update("@Agent1", update=[change]).get()

                def create(i: int, proxy: PlanActorProxy = proxy) -> object:
                    return proxy.update("@Agent2", create=[TaskCreate(description=f"New task {i}")]).get()

                note = "through the actor proxy, SQLite commit included; median of 300"
                rows.append((f"planning update 1 task, board of {size:,}", _median_ms(update, 300), note))
                rows.append((f"planning create 1 task, board of {size:,}", _median_ms(create, 300), note))
                pykka.ActorRegistry.stop_all()
                store.close()

            for size in (200, 2_000):
                store = SQLiteStore(directory / f"render-{size}.db")
                proxy = _start(store, size)
                rows.append(
                    (
                        f"planning render, board of {size:,} (own tasks)",
                        _median_ms(lambda i, proxy=proxy: proxy.render(_AGENTS[i % 10]).get(), 100),
                        "filter_by_agent=True, <= 50 tasks listed; median of 100",
                    )
                )
                rows.append(
                    (
                        f"planning render, board of {size:,} (all tasks)",
                        _median_ms(lambda i, proxy=proxy: proxy.render("@Agent0", False).get(), 100),
                        "filter_by_agent=False, <= 50 tasks listed; median of 100",
                    )
                )
                pykka.ActorRegistry.stop_all()
                store.close()

            store = SQLiteStore(directory / "search.db")
            proxy = _start(store, 2_000)
            rows.append(
                (
                    "planning search, board of 2,000, keyword only",
                    _median_ms(lambda i: proxy.search(f"{_WORDS[i % len(_WORDS)]} component").get(), 100),
                    "no embedding configured; median of 100",
                )
            )
            rows.append(
                (
                    "planning search, board of 2,000, filter only",
                    _median_ms(lambda i: proxy.search(None, "pending", _AGENTS[i % 10]).get(), 100),
                    "status + owner, no query; median of 100",
                )
            )
            pykka.ActorRegistry.stop_all()
            store.close()

            store = SQLiteStore(directory / "semantic.db")
            proxy = _start(store, 2_000, EmbeddingParam(provider="hashing"))
            proxy.when_indexed().get().result(120)
            rows.append(
                (
                    "planning search, board of 2,000, keyword + semantic",
                    _median_ms(lambda i: proxy.search(f"{_WORDS[i % len(_WORDS)]} components").get(), 100),
                    "hashing embedder (query embedded per search); median of 100",
                )
            )
            rows.append(
                (
                    "planning update 1 description, board of 2,000, embedding on",
                    _median_ms(
                        lambda i: proxy.update("@Agent1", update=[TaskUpdate(id=7, description=f"Rewrite {i}")]).get(),
                        200,
                    ),
                    "the embedding runs after the commit, off the actor; median of 200",
                )
            )
            proxy.when_indexed().get().result(120)
            pykka.ActorRegistry.stop_all()
            store.close()
        finally:
            pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    for name, median_ms, note in run():
        print(f"{name:<62} {median_ms:8.3f} ms  {note}")
