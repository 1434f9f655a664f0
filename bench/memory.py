"""Team memory benchmark: does ``search_graph`` find what was said, and how fast?

``run()`` returns :class:`~bench.timing.Case` rows:

* **Recall** on the shipped labelled set (:mod:`bench._memory_set`: 120 conversations of 40
  turns, ~500 questions, half of them paraphrased) with the local embedding model: the share
  of questions whose conversation is among the top 1 / 5 / 10 for plain BM25 over each
  entity's whole text, plain embeddings (one vector per entity's whole text, as far as the
  model reads), and ``search_graph`` in each mode, plus the hybrid at other fusion weights
  (how the default was chosen). Target: the default hybrid at least as good as every other
  row at every depth.
* **Ingest** of the set with the local model, until every passage is embedded:
  observations per second (target >= 200) and the share of that time spent embedding.
* **Latency** of a hybrid search at 20,000 entities and 200,000 observations (``hashing``
  vectors: the search's cost, not the model's; target <= 10 ms), and of keyword search.

Recall rows need the local model (``toolcards[vector]``); without it they are skipped.
"""

from __future__ import annotations

import math
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from bench._memory_set import load
from bench.timing import Case, measure
from toolcards.core._words import tokenize
from toolcards.knowledge_graph import EntityCreate, KnowledgeGraphProxy
from toolcards.knowledge_graph._actor import KnowledgeGraphActor
from toolcards.store import SQLiteStore, Store
from toolcards.vector import EmbeddingParam

__all__ = ["run"]

_LOCAL = EmbeddingParam(provider="local")
_HASHING = EmbeddingParam(provider="hashing", dimensions=384)
_DEPTHS = (1, 5, 10)
_TEAM = "memory"


def _start(store: Store, embedding: EmbeddingParam | None, team: str = _TEAM, **options: Any) -> KnowledgeGraphProxy:
    return cast(KnowledgeGraphProxy, KnowledgeGraphActor.start(team, store, embedding, **options).proxy())


def _wait_embedded(kg: KnowledgeGraphProxy, timeout_s: float = 1800.0) -> None:
    deadline = time.monotonic() + timeout_s
    while kg.pending_embeddings().get() and time.monotonic() < deadline:
        time.sleep(0.05)


def _recall(ranked: Sequence[Sequence[str]], expected: Sequence[str]) -> dict[int, float]:
    return {
        depth: 100.0
        * sum(answer in names[:depth] for names, answer in zip(ranked, expected, strict=True))
        / len(expected)
        for depth in _DEPTHS
    }


def _bm25_alone(entities: list[dict[str, Any]], questions: list[str]) -> list[list[str]]:
    """Plain BM25 (k1 1.2, b 0.75) over each entity's whole text, the package's tokenizer."""
    documents = [Counter(tokenize(" ".join([e["name"], e["description"], *e["observations"]]))) for e in entities]
    lengths = [sum(d.values()) for d in documents]
    average = sum(lengths) / len(lengths)
    frequency: Counter[str] = Counter(term for d in documents for term in d)
    total = len(documents)
    ranked = []
    for question in questions:
        terms = set(tokenize(question))
        scores = []
        for document, length in zip(documents, lengths, strict=True):
            score = 0.0
            for term in terms & document.keys():
                rarity = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                tf = document[term]
                score += rarity * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
            scores.append(score)
        order = sorted(range(total), key=lambda i: -scores[i])[:10]
        ranked.append([entities[i]["name"] for i in order])
    return ranked


def _embeddings_alone(entities: list[dict[str, Any]], questions: list[str]) -> list[list[str]]:
    """One vector per entity's whole text (the model reads what it can), ranked by cosine."""
    import numpy as np

    from toolcards.vector import get_embedding_service

    service = get_embedding_service(_LOCAL)
    texts = [f"{e['name']} (conversation): {e['description']}\n" + "\n".join(e["observations"]) for e in entities]
    documents = service.embed(texts)
    queries = service.embed(questions)
    assert documents is not None and queries is not None
    ranked = []
    for query in queries:
        order = np.argsort(-(documents @ query))[:10]
        ranked.append([entities[i]["name"] for i in order.tolist()])
    return ranked


def _searched(kg: KnowledgeGraphProxy, questions: list[str], mode: str) -> list[list[str]]:
    return [[hit.entity.name for hit in kg.search(q, mode, top_k=10).get().hits] for q in questions]  # type: ignore[arg-type]


def _timed_embedding() -> tuple[Callable[[], float], Callable[[], None]]:
    """Count the time the local model's service spends embedding; returns (spent, restore)."""
    from toolcards.vector import get_embedding_service

    service = get_embedding_service(_LOCAL)
    original = service.embed
    spent = [0.0]

    def embed(texts: list[str]) -> Any:
        started = time.perf_counter()
        try:
            return original(texts)
        finally:
            spent[0] += time.perf_counter() - started

    service.embed = embed  # type: ignore[method-assign]

    def restore() -> None:
        service.embed = original  # type: ignore[method-assign]

    return (lambda: spent[0]), restore


def _recall_rows(directory: Path) -> list[Case]:
    try:
        from toolcards.vector import get_embedding_service

        if get_embedding_service(_LOCAL).embed(["probe"]) is None:
            raise RuntimeError("the local model is unavailable")
    except Exception as exc:  # the local model is an extra
        return [Case.skipped("memory recall", f"local embedding model: {exc}")]
    data = load()
    entities, labelled = data["entities"], data["questions"]
    questions = [q["question"] for q in labelled]
    expected = [q["entity"] for q in labelled]
    observations = sum(len(e["observations"]) for e in entities)

    store = SQLiteStore(directory / "memory.db")
    spent, restore = _timed_embedding()
    try:
        kg = _start(store, _LOCAL)
        started = time.perf_counter()
        for start in range(0, len(entities), 10):
            batch = [
                EntityCreate(
                    name=e["name"],
                    entity_type="conversation",
                    description=e["description"],
                    observations=e["observations"],
                )
                for e in entities[start : start + 10]
            ]
            kg.update("@bench", create_entities=batch).get()
        _wait_embedded(kg)
        ingest_s = time.perf_counter() - started
        embedding_s = spent()
    finally:
        restore()
    rows = [
        Case(
            "ingest, local model",
            observations / ingest_s,
            f"{observations:,} observations in batches of 400 until every passage is embedded; "
            f"{100 * embedding_s / ingest_s:.0f} % of the time embedding",
            unit="obs/s",
            target=200,
            better="higher",
        )
    ]

    results: dict[str, dict[int, float]] = {
        "BM25 alone (whole entity)": _recall(_bm25_alone(entities, questions), expected),
        "embeddings alone (whole entity)": _recall(_embeddings_alone(entities, questions), expected),
    }
    for mode in ("keyword", "vector", "hybrid"):
        results[f"search_graph {mode}"] = _recall(_searched(kg, questions, mode), expected)
    kg.stop()
    for alpha in (0.5, 0.9):
        other = _start(store, _LOCAL, alpha=alpha)
        _wait_embedded(other)
        results[f"search_graph hybrid, alpha {alpha}"] = _recall(_searched(other, questions, "hybrid"), expected)
        other.stop()
    store.close()

    note = f"{len(questions)} questions ({len(entities)} conversations, {observations:,} turns), local model"
    for label, recall in results.items():
        for depth in _DEPTHS:
            best_other = max(r[depth] for other, r in results.items() if other != "search_graph hybrid")
            rows.append(
                Case(
                    f"recall@{depth}: {label}",
                    recall[depth],
                    note if label != "search_graph hybrid" else f"{note}; the default, target: the best row",
                    unit="%",
                    target=best_other if label == "search_graph hybrid" else None,
                    better="higher",
                )
            )
    return rows


def _latency_rows(directory: Path) -> list[Case]:
    """Hybrid and keyword search at 20,000 entities and 200,000 observations (hashing vectors)."""
    rng = random.Random(5)
    words = sorted({"".join(rng.choice("aeioulmnrstkdp") for _ in range(rng.randint(4, 8))) for _ in range(5000)})
    store = SQLiteStore(directory / "latency.db")
    kg = _start(store, _HASHING, team="latency")
    for start in range(0, 20_000, 1_000):
        batch = [
            EntityCreate(
                name=f"entity {n}",
                entity_type="note",
                observations=[" ".join(rng.choices(words, k=8)) for _ in range(10)],
            )
            for n in range(start, start + 1_000)
        ]
        kg.update("@bench", create_entities=batch).get()
    _wait_embedded(kg)
    queries = [" ".join(rng.choices(words, k=rng.randint(2, 5))) for _ in range(200)]
    it = iter(queries * 20)
    hybrid = measure(lambda: kg.search(next(it), "hybrid").get(), repeat=200, warmup=20)
    keyword = measure(lambda: kg.search(next(it), "keyword").get(), repeat=200, warmup=20)
    kg.stop()
    store.close()
    size = "20,000 entities, 200,000 observations; hashing-384, query embedded per call; top 10; median of 200"
    return [
        Case.timed("search_graph hybrid", hybrid, size, target=10.0),
        Case.timed("search_graph keyword", keyword, size),
    ]


def run() -> list[Case]:
    """The recall, ingest and latency rows; takes a few minutes (the local model embeds the set)."""
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        return _recall_rows(directory) + _latency_rows(directory)


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("memory", case) for case in run()), end="")
