"""Knowledge-graph benchmark: batch inserts, keyword/hybrid search and paths at 10,000 entities.

``run()`` returns :class:`~bench.timing.Case` rows. Every measurement goes through the actor's
proxy (an ask per call, as a tool would make it) on a SQLite store in a temporary directory.
Texts are synthetic: pseudo-words drawn from a 3,000-word vocabulary, so keyword postings
have realistic lengths. The embedder is ``hashing`` at 384 dimensions; entity vectors are
computed while the graph is built (not measured), so the search rows measure the search
ask: embedding the query, both legs, fusion and building the result (rendering it to text
happens in the caller). Nothing is asserted: the machine is noisy. Targets: a batch of
1,000 entities is acknowledged in <= 150 ms, embedding or not; hybrid search <= 10 ms at
10,000 entities; a search ``as_of`` a past moment <= 2x the same search now, at 20,000
entities and 100,000 observations. How these costs grow up to 20,000 entities is ``bench/scaling.py``.
"""

from __future__ import annotations

import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

from bench.timing import Case, Stats, measure
from toolcards.knowledge_graph import EntityCreate, EntityUpdate, KnowledgeGraphProxy, RelationCreate
from toolcards.knowledge_graph._actor import KnowledgeGraphActor
from toolcards.store import SQLiteStore, Store
from toolcards.vector import EmbeddingParam

__all__ = ["run"]

_HASHING = EmbeddingParam(provider="hashing", dimensions=384)
_TYPES = [f"type{i}" for i in range(20)]
_RELATION_TYPES = [f"rel{i}" for i in range(15)]


def _vocabulary(rng: random.Random, size: int = 3_000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "to", "vash", "qui", "dor", "el", "ban", "sun", "tri", "og", "pel"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _batch(
    rng: random.Random, words: list[str], start: int, count: int, known: list[str]
) -> tuple[list[EntityCreate], list[RelationCreate]]:
    """``count`` entities numbered from ``start``, each with two relations to random entities.

    Targets are drawn from ``known`` (the names created so far) and the batch itself; the
    batch's names are appended to ``known``.
    """

    def sentence(n: int) -> str:
        return " ".join(rng.choices(words, k=n))

    entities = [
        EntityCreate(
            name=f"{sentence(2)} {i}",
            entity_type=rng.choice(_TYPES),
            description=sentence(12),
            observations=[sentence(8) for _ in range(3)],
            is_root=i % 500 == 0,
        )
        for i in range(start, start + count)
    ]
    known.extend(e.name for e in entities)
    relations = [
        RelationCreate(from_entity=e.name, to_entity=target, relation_type=rng.choice(_RELATION_TYPES))
        for e in entities
        for target in rng.choices(known, k=2)
        if target != e.name
    ]
    return entities, relations


def _start(store: Store, team: str, embedding: EmbeddingParam | None) -> KnowledgeGraphProxy:
    return cast(KnowledgeGraphProxy, KnowledgeGraphActor.start(team, store, embedding).proxy())


def _wait_embedded(kg: KnowledgeGraphProxy) -> None:
    while kg.pending_embeddings().get():
        time.sleep(0.005)


def _insert_rows(directory: Path, words: list[str]) -> list[Case]:
    rows = []
    for label, embedding in (("keyword only", None), ("hashing-384", _HASHING)):
        store = SQLiteStore(directory / f"insert-{label.split()[0]}.db")
        acked, embedded = [], []
        for run_index in range(5):
            rng = random.Random(run_index)
            entities, relations = _batch(rng, words, 0, 1_000, [])
            kg = _start(store, f"insert-{run_index}", embedding)
            started = time.perf_counter()
            report = kg.update("bench", create_entities=entities, create_relations=relations).get()
            acked.append((time.perf_counter() - started) * 1000)
            _wait_embedded(kg)
            embedded.append((time.perf_counter() - started) * 1000)
            assert not report.errors, report.errors[:3]
            kg.stop()
        store.close()
        rows.append(
            Case.timed(
                f"kg update: 1,000 entities + ~2,000 relations ({label})",
                Stats.of(acked),
                "one batch, one SQLite transaction, until acknowledged; median of 5",
                target=150.0,
            )
        )
        if embedding is not None:
            rows.append(
                Case.timed(
                    f"kg update: 1,000 entities + ~2,000 relations ({label}), until embedded",
                    Stats.of(embedded),
                    "vectors of a batch over 64 entities are computed and stored in the background",
                )
            )
    return rows


def _search_rows(directory: Path, words: list[str]) -> list[Case]:
    rng = random.Random(42)
    known: list[str] = []
    store = SQLiteStore(directory / "search.db")
    kg = _start(store, "search", _HASHING)
    for start in range(0, 10_000, 1_000):
        entities, relations = _batch(rng, words, start, 1_000, known)
        kg.update("bench", create_entities=entities, create_relations=relations).get()
    _wait_embedded(kg)
    queries = [" ".join(rng.choices(words, k=rng.randint(1, 3))) for _ in range(300)]
    it = iter(queries * 10)
    relation_count = len(kg.graph().get().relations)
    size = f"10,000 entities, {relation_count:,} relations"

    rows = [
        Case.timed(
            "kg search keyword",
            measure(lambda: kg.search(next(it), mode="keyword").get(), repeat=300, warmup=20),
            f"{size}; top 10; median of 300 queries",
        ),
        Case.timed(
            "kg search hybrid",
            measure(lambda: kg.search(next(it), mode="hybrid").get(), repeat=300, warmup=20),
            f"{size}; hashing-384, query embedded per call; top 10; median of 300",
            target=10.0,
        ),
        Case.timed(
            "kg search vector",
            measure(lambda: kg.search(next(it), mode="vector").get(), repeat=300, warmup=20),
            f"{size}; hashing-384; top 10; median of 300",
        ),
        Case.timed(
            "kg search hybrid + neighbours + edges",
            measure(
                lambda: kg.search(next(it), mode="hybrid", include_neighbors=True, include_edges=True).get(),
                repeat=300,
                warmup=20,
            ),
            f"{size}; median of 300",
        ),
        Case.timed(
            "kg search hybrid + find_paths",
            measure(lambda: kg.search(next(it), mode="hybrid", find_paths=True).get(), repeat=300, warmup=20),
            f"{size}; paths between the top 5 hits, <= 4 hops; median of 300",
        ),
    ]
    kg.stop()
    started = time.perf_counter()
    restarted = _start(store, "search", _HASHING)
    restarted.seq().get()
    restart_ms = (time.perf_counter() - started) * 1000
    restarted.stop()
    rows.append(Case("kg restart (load + restore vectors)", restart_ms, f"{size}; one run, no re-embedding"))
    store.close()
    return rows


class _Clock:
    """Each change an hour after the last, so ``as_of`` has a history to cut through."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(hours=1)
        return self.now


def _history_rows(directory: Path, words: list[str]) -> list[Case]:
    """Search with and without ``as_of`` over 20,000 entities and 100,000 observations, a tenth
    of them superseded, and one update that supersedes an observation."""
    rng = random.Random(11)
    store = SQLiteStore(directory / "history.db")
    clock = _Clock()
    kg = cast(KnowledgeGraphProxy, KnowledgeGraphActor.start("history", store, clock=clock).proxy())
    names: list[str] = []
    for start in range(0, 20_000, 1_000):
        entities = [
            EntityCreate(
                name=f"{' '.join(rng.choices(words, k=2))} {i}",
                entity_type=rng.choice(_TYPES),
                observations=[" ".join(rng.choices(words, k=8)) for _ in range(5)],
            )
            for i in range(start, start + 1_000)
        ]
        names.extend(e.name for e in entities)
        kg.update("bench", create_entities=entities, task_id=1).get()
    middle = clock.now
    by_name = {e.name: e for e in kg.entities().get()}
    superseded = rng.sample(names, 2_000)
    for start in range(0, len(superseded), 500):
        updates = [
            EntityUpdate(name=name, supersede={by_name[name].observations[0].text: " ".join(rng.choices(words, k=8))})
            for name in superseded[start : start + 500]
        ]
        kg.update("bench-2", update_entities=updates).get()
    queries = [" ".join(rng.choices(words, k=rng.randint(1, 3))) for _ in range(300)]
    size = "20,000 entities, 100,000 observations (2,000 superseded); keyword; top 10; median of 300"
    it = iter(queries * 10)
    now = measure(lambda: kg.search(next(it), mode="keyword").get(), repeat=300, warmup=20)
    it = iter(queries * 10)
    then = measure(lambda: kg.search(next(it), mode="keyword", as_of=middle).get(), repeat=300, warmup=20)
    it = iter(queries * 10)
    every = measure(lambda: kg.search(next(it), mode="keyword", include_invalid=True).get(), repeat=300, warmup=20)
    targets = iter(rng.sample([n for n in names if n not in set(superseded)], 200))

    def supersede_one() -> None:
        name = next(targets)
        old = by_name[name].observations[1].text
        kg.update("bench-3", update_entities=[EntityUpdate(name=name, supersede={old: old + " revised"})]).get()

    update = measure(supersede_one, repeat=150, warmup=20)
    kg.stop()
    store.close()
    return [
        Case.timed("kg search keyword, now", now, size),
        Case.timed("kg search keyword, as_of", then, f"{size}; the graph as it stood before the supersessions"),
        Case.timed("kg search keyword, include_invalid", every, size),
        Case(
            "kg search as_of over now",
            then.median / now.median,
            "ratio of the medians above",
            unit="x",
            target=2.0,
        ),
        Case.timed("kg update: supersede 1 observation", update, "20,000 entities; one ask; median of 150"),
    ]


def run() -> list[Case]:
    """Run every measurement on temporary databases; takes about a minute."""
    words = _vocabulary(random.Random(7))
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        directory = Path(tmp)
        return _insert_rows(directory, words) + _search_rows(directory, words) + _history_rows(directory, words)


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("knowledge_graph", case) for case in run()), end="")
