"""``KnowledgeGraphActor``: one team's knowledge graph, its search indexes and its persistence.

One actor per team (the orchestrator names it ``#KnowledgeGraphTool``) owns the entities and
relations; agents reach it through asks on its proxy, which pykka runs one at a time, so
concurrent updates never interleave. The update rules are in
:mod:`toolcards.knowledge_graph.batch`, the ranking in :mod:`toolcards.knowledge_graph.search`.

Persistence
    State lives in the store namespace ``"{team_id}/#KnowledgeGraphTool"``: collection
    ``entities`` (key: name), ``relations`` (key: JSON ``[from, to, type]``), ``vectors``
    (key: entity name; value: embedding model id, digest of the embedded text, base64
    vector) and ``meta`` (``seq``). Every :meth:`~KnowledgeGraphActor.update` that changes
    something is one :meth:`Store.apply` transaction (entities, relations, the new ``seq``
    and, for local providers, the vectors), applied before the ask returns: an
    acknowledged batch is committed, and a failed one (``StoreError``) changes nothing.
    On restart the graph is reloaded exactly; stored vectors are reused when their model
    id and text digest match, so nothing is re-embedded.

Embeddings
    With ``embedding=None`` the graph is keyword-only and neither numpy nor an embedding
    client is imported. The ``hashing`` and ``local`` providers are fast (~3 ms a text
    locally), so an update that changes at most ``INLINE_EMBED_MAX`` (64) entities embeds
    them inside the ask and persists the vectors in the same transaction. A remote provider
    (``openai``) can take seconds or time out, and a large batch would hold the actor for
    seconds even locally, so then the update commits without vectors and hands the texts to
    a background thread; the vectors arrive later as a message to the actor, which indexes
    and persists them in a separate transaction. Until then those entities are found by
    keyword only (a search says so in its note), and ``pending_embeddings()`` counts them.
    Entities with a missing or outdated vector when the actor starts (a new model, a
    crash before a background write) are embedded in the background for every provider.
    Queries are embedded inside the search ask; pass ``query_vector`` to embed a query
    outside the actor with a remote provider.

Events
    Each committed change emits :class:`StateChanged` with a ``seq`` that is persisted
    with the batch, so it keeps increasing across restarts.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import json
import logging
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.core.events import StateChanged
from toolcards.errors import RetriableError
from toolcards.knowledge_graph.batch import UpdateBatch, stage_update
from toolcards.knowledge_graph.models import (
    Entity,
    EntityCreate,
    EntityUpdate,
    GraphPath,
    KnowledgeGraph,
    Neighbour,
    Relation,
    RelationCreate,
    RelationDelete,
    RelationKey,
    SearchHit,
    SearchMode,
    SearchResult,
    UpdateReport,
)
from toolcards.knowledge_graph.search import (
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    KeywordIndex,
    fuse,
    shortest_paths,
)
from toolcards.knowledge_graph.search import top_k as best_scores
from toolcards.store.base import CatchUp, Change, Delta, Snapshot, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector import EmbeddingParam, EmbeddingService, VectorIndex

__all__ = ["INLINE_EMBED_MAX", "SOURCE", "KnowledgeGraphActor", "KnowledgeGraphProxy"]

logger = logging.getLogger(__name__)

SOURCE = "#KnowledgeGraphTool"
"""The actor's name, the suffix of its store namespace and the ``source`` of its events."""

_ENTITIES = "entities"
_RELATIONS = "relations"
_VECTORS = "vectors"
_META = "meta"

_SYNC_PROVIDERS = frozenset({"hashing", "local"})
"""Providers fast enough to embed inside an update ask."""
INLINE_EMBED_MAX = 64
"""An update embeds at most this many entities inline (~0.2 s locally); a larger one goes to the background."""

MAX_TOP_K = 100
MAX_NEIGHBOURS = 20
"""Neighbours listed per hit; the rest are counted."""
MAX_EDGES = 50
"""Edges listed per search; the rest are counted."""
MAX_PATH_ENDPOINTS = 5
"""Paths are searched between each pair of this many top hits."""
SUMMARY_TOP = 10
"""Entity types, relation types and root entities listed in the summary."""
_EMBED_CHUNK = 256


def _relation_row_key(key: RelationKey) -> str:
    return json.dumps(list(key), ensure_ascii=False)


def _relation_key(row_key: str) -> RelationKey:
    from_entity, to_entity, relation_type = json.loads(row_key)
    return (from_entity, to_entity, relation_type)


def _embedding_text(entity: Entity) -> str:
    head = f"{entity.name} ({entity.entity_type})"
    if entity.description:
        head += f": {entity.description}"
    return "\n".join([head, *entity.observations])


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class _VectorsReady:
    """Background embeddings for the actor: ``(name, digest, vector)`` items, or a failure."""

    model_id: str
    items: list[tuple[str, str, Any]]
    names: list[str]
    """Every name of the job, embedded or not, so the actor can clear its in-flight set."""


class KnowledgeGraphActor(pykka.ThreadingActor):
    """One team's knowledge graph. Every public method runs in the actor's thread.

    Construction loads the namespace from ``store`` (in the caller's thread; raises
    ``StoreError`` if it cannot be read). ``on_start`` restores stored vectors and, when
    some are missing or outdated, starts embedding them in the background.

    Args:
        team_id: the team; the store namespace is ``f"{team_id}/#KnowledgeGraphTool"``.
        store: where the graph is persisted; shared, not closed by the actor.
        embedding: the embedding provider, or ``None`` for keyword search only.
        publish: called with a :class:`StateChanged` after each committed change, in the
            actor's thread; an exception it raises is logged, never returned.
        alpha: weight of the normalised cosine in hybrid search.
        threshold: minimum raw cosine for the vector leg of vector and hybrid search.
        max_path_length: the longest path ``find_paths`` looks for, in hops.
    """

    def __init__(
        self,
        team_id: str,
        store: Store,
        embedding: EmbeddingParam | None = None,
        publish: Callable[[StateChanged], None] | None = None,
        *,
        alpha: float = DEFAULT_ALPHA,
        threshold: float = DEFAULT_THRESHOLD,
        max_path_length: int = 4,
    ) -> None:
        super().__init__()
        self.team_id = team_id
        self.namespace = f"{team_id}/{SOURCE}"
        self._store = store
        self._embedding = embedding
        self._publish = publish
        self._alpha = alpha
        self._threshold = threshold
        self._max_path_length = max_path_length

        self._entities: dict[str, Entity] = {}
        self._relations: dict[RelationKey, Relation] = {}
        self._links: dict[str, dict[RelationKey, None]] = {}
        """Entity name → keys of the relations touching it, in both directions."""
        self._entity_types: Counter[str] = Counter()
        self._relation_types: Counter[str] = Counter()
        self._roots: dict[str, None] = {}
        self._keywords = KeywordIndex()
        self._seq = 0

        self._service: EmbeddingService | None = None
        self._vectors: VectorIndex | None = None
        self._vector_digests: dict[str, str] = {}
        """Entity name → digest of the text its indexed vector was computed from."""
        self._stale: dict[str, None] = {}
        """Entities whose vector is missing or outdated."""
        self._in_flight: set[str] = set()
        self._jobs: queue.SimpleQueue[list[tuple[str, str, str]] | None] | None = None
        self._worker: threading.Thread | None = None
        self._stopping = threading.Event()

        self._version = 0
        """The store version the graph in memory is the state of."""
        self._stored_vectors: dict[str, Any] = {}
        self._absorb(store.load(self.namespace))

    # -- lifecycle -------------------------------------------------------------------

    def on_start(self) -> None:
        """Restore stored vectors that match the current model; embed the rest in the background."""
        stored, self._stored_vectors = self._stored_vectors, {}
        if self._embedding is None:
            return
        from toolcards.vector import get_embedding_service

        self._service = get_embedding_service(self._embedding)
        self._restore_vectors(stored)
        for name in self._entities:
            if name not in self._vector_digests:
                self._stale[name] = None
        self._submit_stale()

    def on_stop(self) -> None:
        """Stop the background embedding thread; waits up to 5 s for a call in progress.

        Queued jobs are dropped: their entities have no stored vector, so the next start
        embeds them.
        """
        self._stopping.set()
        if self._jobs is not None and self._worker is not None:
            self._jobs.put(None)
            self._worker.join(timeout=5)

    def on_receive(self, message: Any) -> Any:
        """Handle background embedding results; other messages are ignored."""
        if isinstance(message, _VectorsReady):
            self._vectors_ready(message)
        return None

    # -- reads -----------------------------------------------------------------------

    def graph(self) -> KnowledgeGraph:
        """A copy of the whole graph: entities sorted by name, relations by key."""
        self._refresh()
        return KnowledgeGraph(
            entities=[self._entities[name].model_copy(deep=True) for name in sorted(self._entities)],
            relations=[self._relations[key].model_copy() for key in sorted(self._relations)],
        )

    def entities(self) -> list[Entity]:
        """Copies of every entity, sorted by name."""
        self._refresh()
        return [self._entities[name].model_copy(deep=True) for name in sorted(self._entities)]

    def seq(self) -> int:
        """The sequence number of the last committed change (0 for a new graph)."""
        self._refresh()
        return self._seq

    def pending_embeddings(self) -> int:
        """How many entities still wait for a vector (0 without embeddings)."""
        self._refresh()
        if self._service is None or not self._service.available:
            return 0
        return len(self._stale)

    def summary(self, search_tool: str | None = "search_graph") -> str:
        """A few lines for a system prompt whose size does not grow with the graph.

        Counts, the ``SUMMARY_TOP`` most common entity and relation types with their
        counts (ties by name), the first ``SUMMARY_TOP`` root entities by name, and a hint
        to call ``search_tool`` (omitted when ``None``). An empty graph gives one
        sentence. The text depends only on the graph, so it is the same after a restart.
        """
        self._refresh()
        if not self._entities:
            return "The knowledge graph is empty."
        lines = [f"Knowledge graph: {len(self._entities)} entities, {len(self._relations)} relations."]
        lines.append(f"Entity types: {self._top_counts(self._entity_types)}.")
        if self._relation_types:
            lines.append(f"Relation types: {self._top_counts(self._relation_types)}.")
        if self._roots:
            first = heapq.nsmallest(SUMMARY_TOP, self._roots)
            roots = [f"{name} [{self._entities[name].entity_type}]" for name in first]
            more = f" (+{len(self._roots) - SUMMARY_TOP} more)" if len(self._roots) > SUMMARY_TOP else ""
            lines.append(f"Root entities: {', '.join(roots)}{more}.")
        if search_tool:
            lines.append(f"Use {search_tool} to find entities, their observations and relations.")
        return "\n".join(lines)

    @staticmethod
    def _top_counts(counts: Counter[str]) -> str:
        top = heapq.nsmallest(SUMMARY_TOP, counts.items(), key=lambda item: (-item[1], item[0]))
        text = ", ".join(f"{name} {count}" for name, count in top)
        if len(counts) > SUMMARY_TOP:
            text += f" (+{len(counts) - SUMMARY_TOP} more types)"
        return text

    def search(
        self,
        query: str,
        mode: SearchMode = "hybrid",
        *,
        top_k: int = 10,
        include_neighbors: bool = False,
        include_edges: bool = False,
        find_paths: bool = False,
        query_vector: npt.ArrayLike | None = None,
    ) -> SearchResult:
        """Rank entities for ``query``; scores are defined in :mod:`toolcards.knowledge_graph.search`.

        Args:
            query: words to look for.
            mode: ``keyword``, ``vector`` (raw cosine >= threshold) or ``hybrid``. Vector
                and hybrid fall back to keyword, with a note, when no embedder is available.
            top_k: the number of hits, clamped to 1..100.
            include_neighbors: list each hit's neighbours (at most 20 per hit).
            include_edges: list the relations touching the hits (at most 50).
            find_paths: shortest undirected paths between the top 5 hits, up to
                ``max_path_length`` hops (one of them when several are equally short).
            query_vector: the query's embedding, computed by the caller with the same
                embedding param (so a remote call does not hold up the actor).

        Returns:
            The hits and, on request, edges and paths; ``render()`` gives the tool text.
            Blocks the actor while the query is embedded (unless ``query_vector`` is given).

        Raises:
            RetriableError: the query has no words.
        """
        self._refresh()
        text = query.strip()
        if not text:
            raise RetriableError("The search query is empty. Pass words to look for: a name, a type or a topic.")
        count = max(1, min(top_k, MAX_TOP_K))
        used: SearchMode = mode
        note: str | None = None
        scores: dict[str, float]
        cosines: dict[str, float] = {}
        keyword: dict[str, float] = {}
        vector = None
        if mode != "keyword":
            vector, note = self._query_vector(text, query_vector)
            if vector is None:
                used = "keyword"
        if used == "keyword":
            keyword = scores = self._keywords.scores(text)
        elif used == "vector":
            assert vector is not None and self._vectors is not None
            cosines = scores = dict(self._vectors.search(vector, count, self._threshold))
        else:
            assert vector is not None and self._vectors is not None
            cosines = self._vectors.scores(vector)
            keyword = self._keywords.scores(text)
            scores = fuse(cosines, keyword, alpha=self._alpha, threshold=self._threshold)
        if used != "keyword" and self._stale and note is None:
            note = f"{len(self._stale)} entities are not embedded yet; they match by keyword only."

        hits = [
            SearchHit(
                entity=self._entities[name].model_copy(deep=True),
                score=score,
                keyword_score=keyword.get(name) if used != "vector" else None,
                cosine=cosines.get(name) if used != "keyword" else None,
            )
            for name, score in best_scores(scores, count)
        ]
        result = SearchResult(query=text, mode=used, hits=hits, note=note)
        if include_neighbors:
            for hit in hits:
                hit.neighbours, hit.more_neighbours = self._neighbours_of(hit.entity.name)
        if include_edges:
            result.edges, result.more_edges = self._edges_of([hit.entity.name for hit in hits])
        if find_paths:
            result.paths = self._paths_between([hit.entity.name for hit in hits[:MAX_PATH_ENDPOINTS]])
            result.max_path_length = self._max_path_length
        return result

    # -- writes ----------------------------------------------------------------------

    def update(
        self,
        agent: str,
        *,
        create_entities: Sequence[EntityCreate] = (),
        update_entities: Sequence[EntityUpdate] = (),
        delete_entities: Sequence[str] = (),
        create_relations: Sequence[RelationCreate] = (),
        delete_relations: Sequence[RelationDelete] = (),
    ) -> UpdateReport:
        """Apply one batch: create entities, create relations, update entities, delete
        relations, delete entities, in that order.

        An entity and relations to it can be created in the same batch. Invalid parts
        (a duplicate name, a relation to a missing entity, an unknown entity or
        relation, an observation to remove that is not there) are reported in
        ``UpdateReport.errors``; the valid parts are applied. A relation whose triple
        already exists is skipped, not duplicated. Deleting an entity deletes its
        relations.

        Returns:
            The report; when it changed something, the batch is committed (one store
            transaction) and a ``StateChanged`` published before this returns. Blocks
            the actor while a local provider embeds the changed entities (at most
            ``INLINE_EMBED_MAX``; more are embedded in the background).

        Raises:
            StoreError: the transaction failed; nothing of the batch was applied.
        """
        self._refresh()
        stage = functools.partial(
            stage_update,
            create_entities=create_entities,
            update_entities=update_entities,
            delete_entities=delete_entities,
            create_relations=create_relations,
            delete_relations=delete_relations,
        )
        # Embedding takes milliseconds a text: do it before taking the store's write lock, on
        # the batch as staged over the graph as it is now, and use the vectors whose text is
        # still the one committed (nearly always; another process may have changed it).
        embedded = self._embed_ahead(stage(self._entities, self._relations, self._links))
        with self._store.write(self.namespace, since=self._version) as txn:
            self._absorb(txn.catch_up)
            batch = stage(self._entities, self._relations, self._links)
            report = batch.report
            if not report.changed:
                return report
            seq = self._seq + 1
            changes, to_embed, vectors = self._rows_of(batch, embedded)
            changes.append(Change(collection=_META, key="seq", value=seq))
            txn.stage(changes)
        assert txn.committed is not None

        # Committed: mirror it in memory. Upserts first, so relations find their ends.
        for entity in batch.entities.values():
            if entity is not None:
                self._put_entity(entity)
        for key, relation in batch.relations.items():
            self._put_relation(key, relation)
        for name, entity in batch.entities.items():
            if entity is None:
                self._drop_entity(name)
        self._seq, self._version = seq, txn.committed
        report.seq = seq
        for name in to_embed:
            self._stale[name] = None
        for name, (digest, vector) in vectors.items():
            self._index_vector(name, digest, vector)
        self._submit_stale()
        self._emit(f"{agent}: {report.summary_line()}", seq)
        return report

    # -- the store -----------------------------------------------------------------

    def _refresh(self) -> None:
        """Catch up with what other processes committed; cheap when nothing was."""
        catch_up = self._store.read(self.namespace, self._version)
        if not (isinstance(catch_up, Delta) and catch_up.empty):
            self._absorb(catch_up)

    def _absorb(self, catch_up: CatchUp | None) -> None:
        """Apply committed rows (a delta, or the whole graph) to memory."""
        if catch_up is None:
            return
        if isinstance(catch_up, Snapshot):
            self._reset()
            changes = [
                Change(collection=collection, key=key, value=value)
                for collection, rows in catch_up.rows.items()
                for key, value in rows.items()
            ]
        else:
            changes = list(catch_up.changes)
        entities: dict[str, Entity | None] = {}
        relations: dict[RelationKey, Relation | None] = {}
        vectors: dict[str, Any] = {}
        for change in changes:
            if change.collection == _ENTITIES:
                entities[change.key] = None if change.value is None else Entity.model_validate(change.value)
            elif change.collection == _RELATIONS:
                key = _relation_key(change.key)
                relations[key] = None if change.value is None else Relation.model_validate(change.value)
            elif change.collection == _META and change.key == "seq":
                self._seq = int(change.value or 0)
            elif change.collection == _VECTORS:
                vectors[change.key] = change.value
        for entity in entities.values():
            if entity is not None:
                previous = self._entities.get(entity.name)
                self._put_entity(entity)
                if previous is not None and _embedding_text(previous) != _embedding_text(entity):
                    # Its vector describes text that is gone; the writer embeds the new one.
                    self._forget_vector(entity.name)
        for key, relation in relations.items():
            if relation is not None and not (
                relation.from_entity in self._entities and relation.to_entity in self._entities
            ):
                logger.warning("%s: dropping stored relation %s to a missing entity", self.namespace, relation.render())
                continue
            self._put_relation(key, relation)
        for name, entity in entities.items():
            if entity is None:
                self._drop_entity(name)
        self._version = catch_up.version
        if self._service is None:
            # Before on_start (or without embeddings) stored vectors wait to be restored.
            self._stored_vectors.update(vectors)
        else:
            self._restore_vectors(vectors)

    def _reset(self) -> None:
        self._entities.clear()
        self._relations.clear()
        self._links.clear()
        self._entity_types.clear()
        self._relation_types.clear()
        self._roots.clear()
        self._keywords = KeywordIndex()
        self._seq = 0
        self._vectors = None
        self._vector_digests.clear()
        self._stale.clear()
        self._stored_vectors.clear()

    def _rows_of(
        self, batch: UpdateBatch, embedded: Mapping[str, tuple[str, npt.NDArray[np.float32]]]
    ) -> tuple[list[Change], list[str], dict[str, tuple[str, npt.NDArray[np.float32]]]]:
        """The batch's rows, the entities left to embed, and the vectors committed with it."""
        changes = [
            Change(collection=_ENTITIES, key=name, value=None if entity is None else entity.model_dump())
            for name, entity in batch.entities.items()
        ]
        changes.extend(
            Change(
                collection=_RELATIONS,
                key=_relation_row_key(key),
                value=None if relation is None else relation.model_dump(),
            )
            for key, relation in batch.relations.items()
        )
        to_embed: list[str] = []
        vectors: dict[str, tuple[str, npt.NDArray[np.float32]]] = {}
        for name, entity in batch.entities.items():
            if entity is None:
                changes.append(Change(collection=_VECTORS, key=name, value=None))
                continue
            if self._service is None:
                continue
            digest = _digest(_embedding_text(entity))
            if self._vector_digests.get(name) == digest:
                continue
            ready = embedded.get(name)
            if ready is not None and ready[0] == digest:
                vectors[name] = ready
                changes.append(self._vector_change(name, digest, ready[1]))
            else:
                to_embed.append(name)
        return changes, to_embed, vectors

    # -- state ----------------------------------------------------------------------

    def _put_entity(self, entity: Entity) -> None:
        previous = self._entities.get(entity.name)
        if previous is not None:
            self._entity_types[previous.entity_type] -= 1
            if not self._entity_types[previous.entity_type]:
                del self._entity_types[previous.entity_type]
        self._entities[entity.name] = entity
        self._entity_types[entity.entity_type] += 1
        self._links.setdefault(entity.name, {})
        if entity.is_root:
            self._roots.setdefault(entity.name, None)
        else:
            self._roots.pop(entity.name, None)
        self._keywords.upsert(entity.name, entity.name, [entity.entity_type, entity.description, *entity.observations])

    def _drop_entity(self, name: str) -> None:
        entity = self._entities.pop(name, None)
        if entity is None:
            return
        self._entity_types[entity.entity_type] -= 1
        if not self._entity_types[entity.entity_type]:
            del self._entity_types[entity.entity_type]
        self._roots.pop(name, None)
        self._links.pop(name, None)
        self._keywords.remove(name)
        self._stale.pop(name, None)
        self._vector_digests.pop(name, None)
        if self._vectors is not None:
            self._vectors.remove(name)

    def _put_relation(self, key: RelationKey, relation: Relation | None) -> None:
        previous = self._relations.pop(key, None)
        if previous is not None:
            self._relation_types[key[2]] -= 1
            if not self._relation_types[key[2]]:
                del self._relation_types[key[2]]
        if relation is None:
            for end in (key[0], key[1]):
                self._links.get(end, {}).pop(key, None)
            return
        self._relations[key] = relation
        self._relation_types[key[2]] += 1
        for end in (key[0], key[1]):
            self._links.setdefault(end, {})[key] = None

    def _emit(self, summary: str, seq: int) -> None:
        if self._publish is None:
            return
        try:
            self._publish(StateChanged(team_id=self.team_id, source=SOURCE, seq=seq, summary=summary))
        except Exception:
            logger.exception("%s: publishing StateChanged %d failed", self.namespace, seq)

    # -- search internals ------------------------------------------------------------

    def _query_vector(
        self, text: str, given: npt.ArrayLike | None
    ) -> tuple[npt.NDArray[np.float32] | None, str | None]:
        """The query's vector, or ``None`` and the one-line reason for a keyword fallback."""
        if self._service is None:
            return None, "vector search needs an embedding model, none is configured; keyword results."
        if given is None and not self._service.available:
            return None, f"embeddings are unavailable ({self._service.failure}); keyword results."
        if self._vectors is None:
            return None, ("no entity is embedded yet; keyword results." if self._entities else None)
        if given is not None:
            import numpy as np

            vector = np.asarray(given, dtype=np.float32).reshape(-1)
            if vector.shape != (self._vectors.dim,):
                raise ValueError(f"query_vector has {vector.size} dimensions; the index holds {self._vectors.dim}.")
            return vector, None
        embedded = self._service.embed_one(text)
        if embedded is None:
            return None, f"embeddings are unavailable ({self._service.failure}); keyword results."
        return embedded, None

    def _neighbours_of(self, name: str) -> tuple[list[Neighbour], int]:
        keys = sorted(self._links.get(name, {}))
        neighbours = []
        for key in keys[:MAX_NEIGHBOURS]:
            outgoing = key[0] == name
            other = key[1] if outgoing else key[0]
            neighbours.append(
                Neighbour(
                    name=other,
                    entity_type=self._entities[other].entity_type,
                    relation_type=key[2],
                    outgoing=outgoing,
                )
            )
        return neighbours, max(0, len(keys) - MAX_NEIGHBOURS)

    def _edges_of(self, names: Iterable[str]) -> tuple[list[Relation], int]:
        keys: dict[RelationKey, None] = {}
        for name in names:
            keys.update(dict.fromkeys(sorted(self._links.get(name, {}))))
        edges = [self._relations[key].model_copy() for key in list(keys)[:MAX_EDGES]]
        return edges, max(0, len(keys) - MAX_EDGES)

    def _graph_neighbours(self, node: str) -> Iterable[tuple[str, RelationKey]]:
        for key in self._links.get(node, {}):
            yield (key[1] if key[0] == node else key[0]), key

    def _paths_between(self, names: list[str]) -> list[GraphPath]:
        paths = []
        for i, source in enumerate(names[:-1]):
            targets = names[i + 1 :]
            found = shortest_paths(source, targets, self._graph_neighbours, self._max_path_length)
            for target in targets:
                steps = found.get(target)
                if steps is None:
                    continue
                paths.append(
                    GraphPath(
                        nodes=[source, *(node for _, node in steps)],
                        relations=[self._relations[key].model_copy() for key, _ in steps],
                    )
                )
        return paths

    # -- embeddings ------------------------------------------------------------------

    def _embed_ahead(self, draft: UpdateBatch) -> dict[str, tuple[str, npt.NDArray[np.float32]]]:
        """Vectors for the draft's new texts, computed now for a fast provider and a small batch."""
        service = self._service
        if (
            not draft.report.changed
            or service is None
            or not service.available
            or service.param.provider not in _SYNC_PROVIDERS
        ):
            return {}
        texts: dict[str, str] = {}
        for name, entity in draft.entities.items():
            if entity is not None:
                text = _embedding_text(entity)
                if self._vector_digests.get(name) != _digest(text):
                    texts[name] = text
        if not texts or len(texts) > INLINE_EMBED_MAX:
            return {}
        vectors = service.embed(list(texts.values()))
        if vectors is None:
            return {}
        return {name: (_digest(text), vectors[i]) for i, (name, text) in enumerate(texts.items())}

    def _restore_vectors(self, rows: Mapping[str, Any]) -> None:
        """Index stored vectors made by this model from an entity's current text."""
        from toolcards.vector import VectorIndex

        assert self._service is not None
        model_id = self._service.model_id
        for name, row in rows.items():
            entity = self._entities.get(name)
            if row is None or entity is None:
                self._forget_vector(name)
                continue
            digest = _digest(_embedding_text(entity))
            if not isinstance(row, dict) or row.get("model") != model_id or row.get("digest") != digest:
                continue
            try:
                self._index_vector(name, digest, VectorIndex.decode(row["vector"]))
            except (KeyError, TypeError, ValueError):
                logger.warning("%s: stored vector of %r is unreadable; re-embedding it", self.namespace, name)
                self._forget_vector(name)
                self._stale[name] = None

    def _forget_vector(self, name: str) -> None:
        if self._vector_digests.pop(name, None) is not None and self._vectors is not None:
            self._vectors.remove(name)

    def _vector_change(self, name: str, digest: str, vector: npt.NDArray[np.float32]) -> Change:
        from toolcards.vector import VectorIndex

        assert self._service is not None
        value = {"model": self._service.model_id, "digest": digest, "vector": VectorIndex.encode(vector)}
        return Change(collection=_VECTORS, key=name, value=value)

    def _index_vector(self, name: str, digest: str, vector: npt.NDArray[np.float32]) -> None:
        if self._vectors is None:
            from toolcards.vector import VectorIndex

            self._vectors = VectorIndex(int(vector.shape[0]))
        self._vectors.upsert(name, vector)
        self._vector_digests[name] = digest
        self._stale.pop(name, None)

    def _submit_stale(self) -> None:
        """Hand entities that still lack a vector to the background thread."""
        service = self._service
        if service is None or not service.available or not self._stale:
            return
        job = [
            (name, _digest(text), text)
            for name in self._stale
            if name not in self._in_flight
            for text in (_embedding_text(self._entities[name]),)
        ]
        if not job:
            return
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            self._worker = threading.Thread(
                target=_embed_in_background,
                args=(service, self._jobs, self.actor_ref, self._stopping),
                name=f"{self.namespace} embeddings",
                daemon=True,
            )
            self._worker.start()
        for start in range(0, len(job), _EMBED_CHUNK):
            chunk = job[start : start + _EMBED_CHUNK]
            self._in_flight.update(name for name, _, _ in chunk)
            self._jobs.put(chunk)

    def _vectors_ready(self, message: _VectorsReady) -> None:
        self._in_flight.difference_update(message.names)
        service = self._service
        if service is None or message.model_id != service.model_id:
            return
        accepted: list[tuple[str, str, Any]] = []
        if message.items:
            try:
                with self._store.write(self.namespace, since=self._version) as txn:
                    # The texts may have changed in another process meanwhile.
                    self._absorb(txn.catch_up)
                    accepted = self._still_current(message)
                    txn.stage(self._vector_change(name, digest, vector) for name, digest, vector in accepted)
            except Exception:
                # Vectors are derived data: without the rows they are recomputed on the next start.
                logger.exception("%s: persisting %d vectors failed", self.namespace, len(message.items))
                accepted = self._still_current(message)
            else:
                if txn.committed is not None:
                    self._version = txn.committed
        for name, digest, vector in accepted:
            self._index_vector(name, digest, vector)
        if message.items:
            self._submit_stale()

    def _still_current(self, message: _VectorsReady) -> list[tuple[str, str, Any]]:
        """The vectors of ``message`` whose entity still has the text that was embedded."""
        accepted = []
        for name, digest, vector in message.items:
            entity = self._entities.get(name)
            if entity is not None and _digest(_embedding_text(entity)) == digest:
                accepted.append((name, digest, vector))
        return accepted


def _embed_in_background(
    service: EmbeddingService,
    jobs: queue.SimpleQueue[list[tuple[str, str, str]] | None],
    actor: pykka.ActorRef[KnowledgeGraphActor],
    stopping: threading.Event,
) -> None:
    """Embed queued jobs one at a time and tell the actor; returns when the actor stops."""
    while (job := jobs.get()) is not None and not stopping.is_set():
        vectors = service.embed([text for _, _, text in job])
        items = [] if vectors is None else [(name, digest, vectors[i]) for i, (name, digest, _) in enumerate(job)]
        try:
            actor.tell(_VectorsReady(model_id=service.model_id, items=items, names=[name for name, _, _ in job]))
        except pykka.ActorDeadError:
            return


class KnowledgeGraphProxy(ActorMemberMixin, pykka.ActorProxy[KnowledgeGraphActor]):
    """The typed proxy of a :class:`KnowledgeGraphActor`: each method returns a pykka ``Future``.

    ``cast(KnowledgeGraphProxy, ref.proxy())`` lets a type checker follow asks such as
    ``proxy.update(agent, create_entities=[...]).get()``.
    """

    graph = proxy_method(KnowledgeGraphActor.graph)
    entities = proxy_method(KnowledgeGraphActor.entities)
    seq = proxy_method(KnowledgeGraphActor.seq)
    pending_embeddings = proxy_method(KnowledgeGraphActor.pending_embeddings)
    summary = proxy_method(KnowledgeGraphActor.summary)
    search = proxy_method(KnowledgeGraphActor.search)
    update = proxy_method(KnowledgeGraphActor.update)
