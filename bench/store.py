"""Store benchmark: what one write and one load cost, and that a write does not grow with the state.

``run()`` returns :class:`~bench.timing.Case` rows. Each apply writes one small row (a task-like
dict of ~60 bytes) into a namespace already holding N rows of ~200 bytes, updating one of ten
keys so the namespace keeps its size. Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

from bench.timing import Case, Stats
from toolcards.store import Change, MemoryStore, SQLiteStore, Store

__all__ = ["run"]

_NAMESPACE = "bench/#PlanningTool"


def run() -> list[Case]:
    """Run every measurement on a temporary database; takes a few seconds."""
    rows: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        for size in (500, 5_000):
            store = SQLiteStore(directory / f"apply-{size}.db")
            _fill(store, size)
            rows.append(
                Case.timed(
                    f"store.apply 1 row, namespace of {size:,}",
                    _apply_ms(store, 300),
                    "SQLite WAL, synchronous=normal; median of 300",
                )
            )
            store.close()

        store = SQLiteStore(directory / "load.db")
        _fill(store, 5_000)
        rows.append(Case.timed("store.load 5,000 rows", _load_ms(store, 30), "SQLite, ~200 B/row; median of 30"))
        store.close()

        store = SQLiteStore(directory / "full.db", synchronous="full")
        _fill(store, 500)
        rows.append(
            Case.timed(
                "store.apply 1 row, synchronous=full",
                _apply_ms(store, 100),
                "fsync per commit (survives power loss); median of 100",
            )
        )
        store.close()

        store = SQLiteStore(directory / "threads.db")
        rows.append(
            Case.timed(
                "store.apply 1 row, 8 threads at once",
                _concurrent_apply_ms(store, threads=8, applies=200),
                "one shared SQLiteStore; median per apply of 1,600",
            )
        )
        store.close()

    memory = MemoryStore()
    _fill(memory, 5_000)
    rows.append(Case.timed("MemoryStore.apply 1 row, namespace of 5,000", _apply_ms(memory, 300), "median of 300"))
    return rows


def _row(i: int) -> dict[str, object]:
    return {
        "id": i,
        "title": f"Task number {i}: write the quarterly report section",
        "status": "open",
        "owner": "@analyst",
        "deps": [i - 1, i - 2] if i > 1 else [],
        "output": "",
    }


def _fill(store: Store, size: int) -> None:
    store.apply(_NAMESPACE, (Change(collection="tasks", key=str(i), value=_row(i)) for i in range(size)))


def _apply_ms(store: Store, count: int) -> Stats:
    samples: list[float] = []
    for i in range(count):
        change = [Change(collection="tasks", key=str(i % 10), value={"id": i % 10, "status": "done", "n": i})]
        start = time.perf_counter()
        store.apply(_NAMESPACE, change)
        samples.append((time.perf_counter() - start) * 1000)
    return Stats.of(samples)


def _load_ms(store: Store, count: int) -> Stats:
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        store.load(_NAMESPACE)
        samples.append((time.perf_counter() - start) * 1000)
    return Stats.of(samples)


def _concurrent_apply_ms(store: Store, *, threads: int, applies: int) -> Stats:
    samples: list[float] = []
    lock = threading.Lock()
    start_together = threading.Barrier(threads)

    def actor(n: int) -> None:
        own: list[float] = []
        start_together.wait()
        for i in range(applies):
            change = [Change(collection="tasks", key=str(i % 10), value={"n": i, "status": "done"})]
            start = time.perf_counter()
            store.apply(f"{_NAMESPACE}/{n}", change)
            own.append((time.perf_counter() - start) * 1000)
        with lock:
            samples.extend(own)

    workers = [threading.Thread(target=actor, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return Stats.of(samples)


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("store", case) for case in run()), end="")
