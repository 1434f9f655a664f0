"""Planning board benchmark: one write, one plan, one search, that a write does not grow with the
board, and how often a search finds the task a query means.

``run()`` returns :class:`~bench.timing.Case` rows. Every call goes through a ``PlanningActor``
proxy (``proxy.method(...).get()``), the way a card calls it, on a SQLite store in a temporary
directory (WAL, ``synchronous="normal"``). Boards are filled with one batch, then measured; ten
agents own the tasks. Nothing is asserted: the machine is noisy. Target: an update costs at
most 0.3 ms (median) at both board sizes. How these costs grow up to 20,000 tasks is
``bench/scaling.py``. Search quality is recall at 1 and 5 over the labelled set of
``bench/planning_set.py`` (keyword queries and paraphrases), keyword-only and with each
embedding provider; no target.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pykka

from bench.timing import Case, Stats, measure
from toolcards.core._idempotency import CallKey
from toolcards.planning import PlanningProxy, TaskCreate, TaskUpdate
from toolcards.planning._actor import PlanningActor
from toolcards.store import MemoryStore, SQLiteStore
from toolcards.vector import EmbeddingParam, get_embedding_service

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
    statuses = ("pending", "in_progress", "completed", "aborted")
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


def _measure(call: Callable[[int], object], repeat: int) -> Stats:
    counter = iter(range(1_000_000))
    return measure(lambda: call(next(counter)), repeat=repeat, warmup=0)


def _writes(directory: Path, size: int) -> list[Case]:
    store = SQLiteStore(directory / f"board-{size}.db")
    proxy = _start(store, size)
    target = size // 2

    def update(i: int) -> object:
        change = TaskUpdate(id=target, status="in_progress" if i % 2 else "pending", output=f"run {i}")
        return proxy.update("@Agent1", update=[change]).get()

    def create(i: int) -> object:
        return proxy.update("@Agent2", create=[TaskCreate(description=f"New task {i}")]).get()

    def keyed(i: int) -> object:
        change = TaskUpdate(id=target, status="in_progress" if i % 2 else "pending", output=f"keyed {i}")
        return proxy.update("@Agent1", update=[change], call=CallKey(key=f"@Agent1|u|{size}-{i}", digest="d")).get()

    def replayed(i: int) -> object:
        return proxy.update("@Agent1", update=[], call=CallKey(key=f"@Agent1|u|{size}-{i % 300}", digest="d")).get()

    note = "through the actor proxy, SQLite commit included; median of 300"
    rows = [
        Case.timed(f"update 1 task, board of {size:,}", _measure(update, 300), note, target=0.3),
        Case.timed(f"create 1 task, board of {size:,}", _measure(create, 300), note),
        Case.timed(
            f"update 1 task with an idempotency key, board of {size:,}",
            _measure(keyed, 300),
            "the call's record commits with the change; median of 300",
        ),
        Case.timed(
            f"the same keyed update sent again, board of {size:,}",
            _measure(replayed, 300),
            "answered from the record, nothing written; median of 300",
        ),
    ]
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def _renders(directory: Path, size: int) -> list[Case]:
    store = SQLiteStore(directory / f"render-{size}.db")
    proxy = _start(store, size)

    def own(i: int) -> object:
        return proxy.render(_AGENTS[i % len(_AGENTS)]).get()

    def everything(i: int) -> object:
        return proxy.render("@Agent0", False).get()

    rows = [
        Case.timed(f"render, board of {size:,}, own tasks", _measure(own, 100), "<= 50 listed; median of 100"),
        Case.timed(f"render, board of {size:,}, all tasks", _measure(everything, 100), "<= 50 listed; median of 100"),
    ]
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def _searches(directory: Path, embedding: EmbeddingParam | None) -> list[Case]:
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
        rows.append(Case.timed(name, _measure(search, 100), f"~{hits:.0f} hits per query; median of 100"))
    if embedding is None:

        def filtered(i: int) -> object:
            return proxy.search(None, "pending", _AGENTS[i % len(_AGENTS)]).get()

        name = "search, board of 2,000, filters only"
        rows.append(Case.timed(name, _measure(filtered, 100), "status + owner; median of 100"))
    else:

        def redescribe(i: int) -> object:
            return proxy.update("@Agent1", update=[TaskUpdate(id=7, description=f"Rewrite {i}")]).get()

        name = "update 1 description, board of 2,000, embedding on"
        rows.append(
            Case.timed(name, _measure(redescribe, 200), "embedded after the commit, off the actor; median of 200")
        )
        proxy.when_indexed().get().result(120)
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def _quality(embedding: EmbeddingParam | None) -> list[Case]:
    """Recall at 1 and 5 of ``bench/planning_set.py``'s queries, by kind, with ``embedding``."""
    from bench.planning_set import KEYWORD_QUERIES, PARAPHRASES, TASKS, UNRELATED

    label = "keyword only" if embedding is None else f"{embedding.provider} embeddings"
    if embedding is not None and not get_embedding_service(embedding).available:
        return [Case.skipped(f"search recall, {label}", "the embedding model is not installed")]
    store = MemoryStore()
    proxy = cast(PlanningProxy, PlanningActor.start("bench-quality", store, embedding).proxy())
    proxy.update("@Setup", create=[TaskCreate(description=text) for text in TASKS]).get()
    proxy.when_indexed().get().result(120)
    rows = []
    for kind, queries in (("keyword queries", KEYWORD_QUERIES), ("paraphrases", PARAPHRASES)):
        found = [[hit.task.id for hit in proxy.search_page(query, limit=5).get().hits] for query, _ in queries]
        for depth in (1, 5):
            recall = (
                100 * sum(task in ids[:depth] for ids, (_, task) in zip(found, queries, strict=True)) / len(queries)
            )
            note = f"{len(queries)} queries over {len(TASKS)} tasks"
            rows.append(Case(f"search recall@{depth}, {kind}, {label}", recall, note, unit="%", better="higher"))
    false_hits = statistics.mean(proxy.search_page(query, limit=5).get().total for query in UNRELATED)
    note = f"{len(UNRELATED)} queries no task is about"
    rows.append(Case(f"search hits per unrelated query, {label}", false_hits, note, unit=""))
    pykka.ActorRegistry.stop_all()
    store.close()
    return rows


def run() -> list[Case]:
    """Run every measurement on temporary databases; takes about ten seconds."""
    rows: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        try:
            for size in (500, 5_000):
                rows.extend(_writes(directory, size))
            for size in (200, 2_000):
                rows.extend(_renders(directory, size))
            for embedding in (None, EmbeddingParam(provider="hashing")):
                rows.extend(_searches(directory, embedding))
            for quality in (None, EmbeddingParam(provider="hashing"), EmbeddingParam(provider="local")):
                rows.extend(_quality(quality))
        finally:
            pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("planning", case) for case in run()), end="")
