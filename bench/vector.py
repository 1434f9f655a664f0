"""Vector benchmark: index search and upsert, and what the embedding providers cost per call.

``run()`` returns :class:`~bench.timing.Case` rows. Index rows use random unit vectors of
384 dimensions (the local model's size). Embedding rows are measured after one warm-up
call, so they exclude the one-off model load, which is reported in the note. The local
rows are left out, with a row saying why, when the model or its tokenizer is missing.
Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from bench.timing import Case, Stats, measure
from toolcards.vector import EmbeddingParam, EmbeddingService, VectorIndex

__all__ = ["run"]

_DIM = 384
_ROWS = 10_000
_SENTENCE = "Update the quarterly report with the revenue figures from the finance team."
_BATCH = [
    f"Task {i}: {word} the {thing} before the review on day {i % 7}."
    for i, (word, thing) in enumerate(
        [("write", "summary"), ("check", "budget"), ("send", "invoice"), ("fix", "deployment")] * 8
    )
]


def run() -> list[Case]:
    """Run every measurement; takes about ten seconds on 2 cores."""
    rows = _index_rows()
    rows.extend(_embedding_rows("hashing", EmbeddingParam(provider="hashing"), repeats=200))
    rows.extend(_embedding_rows("local", EmbeddingParam(provider="local"), repeats=50))
    return rows


def _timed(action: Callable[[], object], repeats: int) -> Stats:
    return measure(action, repeat=repeats, warmup=0)


def _index_rows() -> list[Case]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((_ROWS, _DIM)).astype(np.float32)
    index = VectorIndex(_DIM)
    start = time.perf_counter()
    for i in range(_ROWS):
        index.upsert(f"key-{i}", vectors[i])
    fill_ms = (time.perf_counter() - start) * 1000

    queries = iter(rng.standard_normal((400, _DIM)).astype(np.float32))
    search_ms = _timed(lambda: index.search(next(queries), top_k=10), 300)
    scores_ms = _timed(lambda: index.scores(vectors[0]), 50)

    replacements = iter(range(1_000_000))
    upsert_ms = _timed(lambda: index.upsert(f"key-{next(replacements) % _ROWS}", vectors[1]), 2_000)
    fresh = iter(range(1_000_000))
    append_ms = _timed(lambda: index.upsert(f"new-{next(fresh)}", vectors[2]), 2_000)
    gone = iter(range(1_000_000))
    remove_ms = _timed(lambda: index.remove(f"new-{next(gone)}"), 2_000)
    return [
        Case.timed(f"VectorIndex.search top-10, {_ROWS:,} x {_DIM}", search_ms, "exact cosine; median of 300"),
        Case.timed(f"VectorIndex.scores all keys, {_ROWS:,} x {_DIM}", scores_ms, "dict of every cosine; median of 50"),
        Case.timed(
            f"VectorIndex.upsert new key into {_ROWS:,}",
            append_ms,
            f"median of 2,000; filling {_ROWS:,} rows took {fill_ms:.0f} ms",
        ),
        Case.timed(f"VectorIndex.upsert existing key, {_ROWS:,}", upsert_ms, "in-place replace; median of 2,000"),
        Case.timed("VectorIndex.remove", remove_ms, "swap last row into the hole; median of 2,000"),
    ]


def _embedding_rows(name: str, param: EmbeddingParam, *, repeats: int) -> list[Case]:
    service = EmbeddingService(param)
    start = time.perf_counter()
    warm = service.embed([_SENTENCE])
    load_ms = (time.perf_counter() - start) * 1000
    if warm is None:
        return [Case.skipped(f"{name} embed", str(service.failure))]
    one_ms = _timed(lambda: service.embed([_SENTENCE]), repeats)
    batch_ms = _timed(lambda: service.embed(_BATCH), max(5, repeats // 10))
    return [
        Case.timed(
            f"{name} embed 1 sentence",
            one_ms,
            f"{service.model_id}; median of {repeats}; first call incl. load {load_ms:.0f} ms",
        ),
        Case.timed(
            f"{name} embed batch of {len(_BATCH)}",
            batch_ms,
            f"{len(_BATCH) / batch_ms.median * 1000:.0f} sentences/s",
        ),
    ]


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("vector", case) for case in run()), end="")
