"""``KnowledgeGraphActor``: one team's knowledge graph, its search indexes and its persistence.

One actor per team (the orchestrator names it ``#KnowledgeGraphTool``) owns the entities and
relations; agents reach it through asks on its proxy, which pykka runs one at a time, so
concurrent updates never interleave. The update rules are in
:mod:`toolcards.knowledge_graph._batch`, the ranking in :mod:`toolcards.knowledge_graph._search`.

Persistence
    State lives in the store namespace ``"{team_id}/#KnowledgeGraphTool"``: collection
    ``entities`` (key: name), ``relations`` (key: JSON ``[from, to, type]``), ``vectors``
    (key: passage key; value: the :class:`~toolcards.vector.TextVectors` row
    ``{"model": model_id, "digest": digest of the embedded text, "vector": base64}``) and
    ``meta`` (``seq``). Every :meth:`~KnowledgeGraphActor.update` that changes
    something is one store write (entities, relations, the new ``seq`` and, for local
    providers, the vectors), committed before the ask returns: an acknowledged batch is
    committed, and a failed one (``StoreError``) changes nothing.
    On restart the graph is reloaded exactly; stored vectors are reused when their model
    id and text digest match, so nothing is re-embedded.

Embeddings
    With ``embedding=None`` the graph is keyword-only and numpy is not imported. Otherwise
    the vectors are kept as :class:`~toolcards.store._namespace_actor.NamespaceActor` keeps
    them (keys: passage keys; texts: an entity's head and windows of its observations, see
    :mod:`toolcards.knowledge_graph._passages`). The ``hashing`` and ``local`` providers are
    fast (milliseconds a text), so an update that changes at most ``INLINE_EMBED_MAX`` (64)
    entities embeds them before taking the store's lock and persists the vectors whose text
    is still the one committed in the same transaction. A remote provider (``openai``) can
    take seconds, and a large batch would hold the actor for seconds even locally, so then
    the update commits without vectors and the background worker embeds the texts; until
    then those entities are found by keyword only (a search says so in its note), and
    ``pending_embeddings()`` counts them. Queries are embedded on a thread of their own,
    waiting at most ``QUERY_EMBEDDING_TIMEOUT_S`` (then keyword results, with a note); pass
    ``query_vector`` to embed a query outside the actor.

Provenance and time
    Every fact a change records carries the member who sent it, the task that member had
    claimed (the card looks it up) and the change's time, taken under the store's lock.
    Superseding or invalidating a fact marks it as no longer holding and keeps it, so
    :meth:`~KnowledgeGraphActor.search` can answer as the graph stood at a moment
    (``as_of``), and the summary and searches show what holds now. Time is each host's
    clock: hosts sharing a store should keep their clocks in step.

Events
    Each committed change emits :class:`StateChanged` with a ``seq`` that is persisted
    with the batch, so it keeps increasing across restarts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring as _json_string
from typing import TYPE_CHECKING, Any

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.core._events import StateChanged, ToolcardsEvent
from toolcards.core._idempotency import CallKey
from toolcards.core._words import fold_case, name_key
from toolcards.errors import RetriableError
from toolcards.knowledge_graph._batch import MergeBatch, Stamp, stage_merge, stage_update
from toolcards.knowledge_graph._models import (
    Entity,
    EntityCreate,
    EntityPage,
    EntityUpdate,
    EntityView,
    GraphPath,
    KnowledgeGraph,
    MergeReport,
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
from toolcards.knowledge_graph._passages import owner_of, passage_texts, windows
from toolcards.knowledge_graph._render import SUMMARY_TOP, relation_text, render_graph_summary, shown_observations
from toolcards.knowledge_graph._search import DEFAULT_ALPHA, DEFAULT_THRESHOLD, shortest_paths
from toolcards.knowledge_graph._sorted_list import discard, insort_all
from toolcards.store._base import Change, Store
from toolcards.store._codec import JSONText
from toolcards.store._namespace_actor import VECTORS, NamespaceActor

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.knowledge_graph._index import GraphIndex
    from toolcards.vector import EmbeddingParam, TextVector

__all__ = ["INLINE_EMBED_MAX", "QUERY_EMBEDDING_TIMEOUT_S", "SOURCE", "KnowledgeGraphActor", "KnowledgeGraphProxy"]

logger = logging.getLogger(__name__)

SOURCE = "#KnowledgeGraphTool"
"""The actor's name, the suffix of its store namespace and the ``source`` of its events."""

_ENTITIES = "entities"
_RELATIONS = "relations"
_META = "meta"

INLINE_EMBED_MAX = 64
"""An update embeds at most this many entities inline with a fast provider
(``hashing``, ``local``); a larger one goes to the background."""
QUERY_EMBEDDING_TIMEOUT_S = 2.0
"""Longest a search waits for its query's embedding before answering with keyword results."""

MAX_TOP_K = 100
SHOWN_OBSERVATIONS = 3
"""Observations an answer shows per hit (when it holds more than one more); the others are
counted, with the tool that reads them all."""
MAX_NEIGHBOURS = 20
"""Neighbours listed per hit; the rest are counted."""
MAX_EDGES = 50
"""Edges listed per search; the rest are counted."""
MAX_PATH_ENDPOINTS = 5
"""Paths are searched between each pair of this many top hits."""


def _relation_row_key(key: RelationKey) -> str:
    """``json.dumps(list(key), ensure_ascii=False)``, the stored key, written without building
    an encoder per call (that cost shows in a large batch of relations)."""
    return f"[{_json_string(key[0])}, {_json_string(key[1])}, {_json_string(key[2])}]"


def _relation_key(row_key: str) -> RelationKey:
    from_entity, to_entity, relation_type = json.loads(row_key)
    return (from_entity, to_entity, relation_type)


def _passage_keys(entity: Entity | None) -> list[str]:
    return [] if entity is None else list(passage_texts(entity))


class _IndexPending:
    """The actor's message to itself: index the passages of what was just committed, after the
    caller has its answer (a search indexes them first if it comes sooner)."""


_QueryVector = tuple["npt.NDArray[np.float32] | None", str | None]
"""A query's vector, or ``None`` and why the search falls back to keywords."""


def _known(answer: _QueryVector) -> Callable[[], _QueryVector]:
    return lambda: answer


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _new_index() -> GraphIndex:
    from toolcards.knowledge_graph._index import GraphIndex

    return GraphIndex()


class KnowledgeGraphActor(NamespaceActor):
    """One team's knowledge graph. Its public methods run one at a time, under the actor's lock
    (on its thread or on a waiting caller's: :class:`~toolcards.actors._caller_runs.CallerRunsActor`).

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
        clock: the time a change is recorded at (UTC); tests pass their own.
    """

    def __init__(
        self,
        team_id: str,
        store: Store,
        embedding: EmbeddingParam | None = None,
        publish: Callable[[ToolcardsEvent], None] | None = None,
        *,
        alpha: float = DEFAULT_ALPHA,
        threshold: float = DEFAULT_THRESHOLD,
        max_path_length: int = 4,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        super().__init__(team_id, SOURCE, store, publish)
        self._embedding = embedding
        self._alpha = alpha
        self._threshold = threshold
        self._max_path_length = max_path_length
        self._clock = clock

        self._entities: dict[str, Entity] = {}
        self._relations: dict[RelationKey, Relation] = {}
        self._links: dict[str, dict[RelationKey, None]] = {}
        """Entity name → keys of the relations touching it, in both directions."""
        self._entity_types: Counter[str] = Counter()
        self._relation_types: Counter[str] = Counter()
        self._roots: list[str] = []
        """Names of the root entities, sorted: the summary lists the first few."""
        self._summaries: dict[str | None, str] = {}
        """The summary text by search tool, for the graph at ``_summaries_version``."""
        self._summaries_version = -1
        self._built_index: GraphIndex | None = None
        """The search index, built from :attr:`_entities` by the first call that needs it
        (:attr:`_index`): a team that never searches its graph never loads numpy."""
        self._seq = 0
        self._passage_cache: dict[str, tuple[Entity, dict[str, str]]] = {}
        """Entity name → (the entity, its passage texts): the worker asks for texts one key at a time."""
        self._keep_vectors(embedding, self._embedding_text_of, self._vector_rows)
        self._started = False
        self._load()

    @property
    def _index(self) -> GraphIndex:
        """The search index of the graph in memory, built on first use."""
        index = self._built_index
        if index is None:
            index = self._built_index = _new_index()
            index.put_entities(self._entities.values())
        return index

    # -- lifecycle -------------------------------------------------------------------

    def on_start(self) -> None:
        """Restore stored vectors that match the current model; embed the rest in the background
        (see "Embeddings" above for those whose writer may still be embedding them)."""
        self._started = True
        if self._built_index is not None and self._built_index.pending:
            self.actor_ref.tell(_IndexPending())
        self._start_vectors(key for entity in self._entities.values() for key in passage_texts(entity))

    def on_receive(self, message: Any) -> Any:
        """Index what was committed (:class:`_IndexPending`) and handle the embedding keeper's
        messages; others go to pykka's default, which logs them."""
        if isinstance(message, _IndexPending):
            if self._built_index is not None:
                self._built_index.flush()
            return None
        return super().on_receive(message)

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

    def get_entities(self, names: Sequence[str]) -> EntityPage:
        """The entities named ``names`` (or aliased so), case and spacing aside, each with its
        neighbours that hold now (at most 20); names no entity has are in ``missing``.

        An entity that no longer holds is returned too (a search marks it as such); one name
        matching several entities (``API`` and ``api``) returns each.
        """
        self._refresh()
        self._index.flush()
        found: dict[str, None] = {}
        missing: list[str] = []
        for asked in names:
            named = self._index.named(asked)
            if not named:
                missing.append(asked)
            found.update(dict.fromkeys(named))
        return EntityPage(entities=[self._view(name) for name in found], missing=missing, total=len(found))

    def read_graph(self, offset: int = 0, limit: int = 100) -> EntityPage:
        """One page of the entities that hold now, by name, each with its neighbours.

        Args:
            offset: how many entities to skip (0 or more).
            limit: the page's size, clamped to 1..100.
        """
        self._refresh()
        held = sorted(name for name, entity in self._entities.items() if entity.invalid_at is None)
        start = max(0, offset)
        page = held[start : start + max(1, min(limit, MAX_TOP_K))]
        return EntityPage(entities=[self._view(name) for name in page], offset=start, total=len(held))

    def _view(self, name: str) -> EntityView:
        holds = functools.partial(self._relation_shown, as_of=None, include_invalid=False)
        neighbours, more = self._neighbours_of(name, holds)
        return EntityView(entity=self._entities[name].detached(), neighbours=neighbours, more_neighbours=more)

    def seq(self) -> int:
        """The sequence number of the last committed change (0 for a new graph)."""
        self._refresh()
        return self._seq

    def pending_embeddings(self) -> int:
        """How many passages (:mod:`toolcards.knowledge_graph._passages`) still wait for a vector
        (0 without embeddings)."""
        self._refresh()
        return 0 if self._vectors is None else self._vectors.pending

    def entity_names(self, prefix: str = "", limit: int = 100) -> list[str]:
        """Entity names starting with ``prefix`` (case aside, as names compare:
        :func:`~toolcards.core._words.fold_case`), sorted, at most ``limit`` (for a client
        completing a name). Reads memory only. Added in 0.3."""
        self._refresh()
        wanted = fold_case(prefix)
        return [name for name in sorted(self._entities) if fold_case(name).startswith(wanted)][:limit]

    def summary(self, search_tool: str | None = "search_graph") -> str:
        """A few lines for a system prompt whose size does not grow with the graph.

        See :func:`~toolcards.knowledge_graph._render.render_graph_summary`. The text depends
        only on the graph, so it is the same after a restart.
        """
        self._refresh()
        # Asked before every model request, and the graph changes far less often: render it
        # once per committed version.
        if self._summaries_version != self._version:
            self._summaries.clear()
            self._summaries_version = self._version
        text = self._summaries.get(search_tool)
        if text is None:
            text = self._summaries[search_tool] = render_graph_summary(
                entity_count=self._entity_types.total(),
                relation_count=self._relation_types.total(),
                entity_types=self._entity_types,
                relation_types=self._relation_types,
                first_roots=[(name, self._entities[name].entity_type) for name in self._roots[:SUMMARY_TOP]],
                root_count=len(self._roots),
                search_tool=search_tool,
            )
        return text

    def settings(self) -> dict[str, Any]:
        """The settings this graph was started with that cards bound to it must share:
        ``embedding`` (its JSON, or ``None``), ``alpha``, ``threshold``."""
        return {
            "embedding": None if self._embedding is None else self._embedding.model_dump(mode="json"),
            "alpha": self._alpha,
            "threshold": self._threshold,
        }

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
        as_of: datetime | None = None,
        include_invalid: bool = False,
    ) -> SearchResult:
        """Rank entities for ``query``; scores are defined in :mod:`toolcards.knowledge_graph._index`.

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
            as_of: read the graph as it stood at this moment (aware; not in the future):
                the entities, observations and relations recorded by then and still holding
                then. ``None``: now. Vectors are those of the entities' texts now.
            include_invalid: also facts that no longer held (then, or now), each marked.

        Returns:
            The hits and, on request, edges and paths; ``render()`` gives the tool text.
            Holds up the actor for at most ``QUERY_EMBEDDING_TIMEOUT_S`` while the query is
            embedded (not at all when ``query_vector`` is given).

        Raises:
            RetriableError: the query has no words.
            ValueError: ``as_of`` is naive.
        """
        self._refresh()
        text = query.strip()
        if not text:
            raise RetriableError("The search query is empty. Pass words to look for: a name, a type or a topic.")
        if as_of is not None and as_of.tzinfo is None:
            raise ValueError("as_of must be an aware datetime (UTC).")
        count = max(1, min(top_k, MAX_TOP_K))
        at = None if as_of is None else as_of.timestamp()
        # The query is embedded while the keywords are scored.
        later = self._query_vector(text, query_vector) if mode != "keyword" else None
        index = self._index
        shown = index.visible_entities(at, include_invalid)
        pinned = index.name_matches(text, count, shown)
        wanted = name_key(text)
        exact = {name for name in index.named(text) if shown[index.number(name)]}
        # The best twice over: enough for the names pinned first. Every entity whose name is
        # or starts with the query would be pinned by a larger top_k, whatever its score, so
        # each is a match, counted with those the ranking finds.
        best, matching = index.rank(
            text,
            None if later is None else (lambda: later()[0]),
            mode=mode,
            at=at,
            include_invalid=include_invalid,
            alpha=self._alpha,
            threshold=self._threshold,
            limit=2 * count,
            also=index.name_matched(text, shown),
        )
        vector, note = (None, None) if later is None else later()
        used: SearchMode = mode if vector is not None else "keyword"
        top = best[0][1] if best else 1.0
        found = {hit[0]: hit for hit in best}
        ranked: list[tuple[str, float, float | None, float | None]] = []
        for name in pinned:
            best_hit = found.get(name)
            if name in exact:
                # The entity named exactly the query: first, at the top score.
                own = best_hit[1] if best_hit is not None else top
                keyword, cosine = (best_hit[2], best_hit[3]) if best_hit is not None else (None, None)
                if best_hit is None and vector is not None:
                    cosine = index.cosine(name, vector)
                ranked.append((name, max(top, own), keyword, cosine))
            elif best_hit is not None:
                ranked.append(best_hit)
            else:
                # A name that starts with the query but matches no whole word of it: scored
                # by the share of the name the query covers.
                cosine = index.cosine(name, vector) if vector is not None else None
                share = len(wanted) / max(len(name_key(name)), 1)
                ranked.append((name, top * share, None, cosine))
        ranked += [hit for hit in best if hit[0] not in pinned]
        pending = 0 if self._vectors is None else self._vectors.pending
        if used != "keyword" and pending and note is None:
            note = f"{pending} texts are not embedded yet; their entities match by keyword only."

        hits = [
            SearchHit(
                entity=self._entities[name].detached(),
                score=score,
                keyword_score=keyword if used != "vector" else None,
                cosine=cosine if used != "keyword" else None,
            )
            for name, score, keyword, cosine in ranked[:count]
        ]
        # The hits' passages' cosines in one product: they order the observations shown.
        cosines = (
            {}
            if vector is None
            else self._index.passage_cosines([key for hit in hits for key, _ in windows(hit.entity)], vector)
        )
        for hit in hits:
            hit.shown = self._best_observations(hit.entity, cosines, as_of, include_invalid)
        result = SearchResult(
            query=text,
            mode=used,
            hits=hits,
            note=note,
            as_of=as_of,
            include_invalid=include_invalid,
            more=max(0, matching - len(hits)),
            exact=bool(hits) and hits[0].entity.name in exact,
        )
        holds = functools.partial(self._relation_shown, as_of=as_of, include_invalid=include_invalid)
        if include_neighbors:
            for hit in hits:
                hit.neighbours, hit.more_neighbours = self._neighbours_of(hit.entity.name, holds)
        if include_edges:
            result.edges, result.more_edges = self._edges_of([hit.entity.name for hit in hits], holds)
        if find_paths:
            result.paths = self._paths_between([hit.entity.name for hit in hits[:MAX_PATH_ENDPOINTS]], holds)
            result.max_path_length = self._max_path_length
        return result

    def _best_observations(
        self, entity: Entity, cosines: dict[str, float], as_of: datetime | None, include_invalid: bool
    ) -> list[str] | None:
        """The ids of ``entity``'s observations an answer shows: those matching the query's
        words (best first), then those closest in meaning (by their passages' ``cosines``),
        then the latest; at most :data:`SHOWN_OBSERVATIONS`. ``None`` when every one it holds fits."""
        visible = [o.id for o in shown_observations(entity, as_of, include_invalid)]
        if len(visible) <= SHOWN_OBSERVATIONS + 1:
            return None
        scores = self._index.observation_scores(visible)
        chosen = dict.fromkeys(sorted(scores, key=lambda i: -scores[i]))
        if cosines and len(chosen) < SHOWN_OBSERVATIONS:
            spans = windows(entity)
            shown = set(visible)
            for key, ids in sorted(spans, key=lambda span: -cosines.get(span[0], -2.0)):
                if key not in cosines or len(chosen) >= SHOWN_OBSERVATIONS:
                    break
                chosen.update(dict.fromkeys(i for i in ids if i in shown))
        chosen.update(dict.fromkeys(reversed(visible)))
        return list(chosen)[:SHOWN_OBSERVATIONS]

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
        task_id: int | None = None,
        call: CallKey | None = None,
    ) -> UpdateReport:
        """Apply one batch: create entities, create relations, update entities, delete
        relations, delete entities, in that order (see :mod:`toolcards.knowledge_graph._batch`).

        An entity and relations to it can be created in the same batch. A batch is all or
        nothing: invalid parts (a duplicate name, a relation to a missing entity, an
        unknown entity or relation, an observation to supersede, invalidate or remove that
        does not hold) are reported in ``UpdateReport.errors`` and nothing is written. A
        relation that holds already is skipped, not duplicated. Deleting an entity deletes
        its relations. Every fact recorded carries ``agent``, ``task_id`` and the time of
        the commit. A created entity whose name is close to an existing one is reported in
        ``similar_names``, never merged.

        ``call`` is the call's idempotency key
        (:func:`toolcards.core._idempotency.current_call`): its answer is recorded with the
        change, and the batch sent again with the same key returns that answer
        (``replayed``) without writing again, in any process.

        Returns:
            The report; when it changed something, the batch is committed (one store
            transaction) and a ``StateChanged`` published before this returns. Blocks
            the actor while a local provider embeds the changed entities (at most
            ``INLINE_EMBED_MAX``, before the store's lock is taken; more are embedded in
            the background).

        Raises:
            StoreError: the transaction failed; nothing of the batch was applied.
            OutcomeUnknown: the store lost its connection while committing and could not
                learn the outcome; send the batch again with the same ``call``.
            ToolFailed: ``call``'s key was used before with other arguments.
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
        embedded = {}
        if self._vectors is not None and len(create_entities) + len(update_entities) <= INLINE_EMBED_MAX:
            draft = stage(
                self._entities,
                self._relations,
                self._links,
                stamp=self._stamp(agent, task_id, self._seq + 1),
                aliases=self._index.aliases,
            )
            embedded = self._embed_ahead(draft.entities, draft.report.changed)
        with (
            self._vectors.writing() if self._vectors is not None else contextlib.nullcontext(),
            self._writing() as txn,
        ):
            replayed = self._calls.replay(call, "update_graph")
            if replayed is not None:
                return UpdateReport.model_validate(replayed).model_copy(update={"replayed": True})
            seq = self._seq + 1
            batch = stage(
                self._entities,
                self._relations,
                self._links,
                stamp=self._stamp(agent, task_id, seq),
                aliases=self._index.aliases,
                similar=self._index.similar_names if create_entities else None,
            )
            report = batch.report
            if not report.changed:
                return report
            report.seq = seq
            calls = self._calls.record(
                call, lambda: report.model_dump(mode="json", exclude_defaults=True), txn.version + 1
            )
            changes = self._rows_of(batch.entities, batch.relations, embedded)
            changes.append(Change(collection=_META, key="seq", value=seq))
            txn.stage(changes + calls)
        self._calls.committed(calls)
        self._mirror_later(functools.partial(self._apply, batch.entities, batch.relations, seq, embedded))
        self._emit(f"{agent}: {report.summary_line()}", seq)
        return report

    def merge(
        self,
        agent: str,
        into: str,
        sources: Sequence[str],
        *,
        dry_run: bool = False,
        task_id: int | None = None,
        call: CallKey | None = None,
    ) -> MergeReport:
        """Merge the entities ``sources`` into ``into`` (see :func:`~toolcards.knowledge_graph._batch.stage_merge`).

        Nothing is lost: observations keep their ids and provenance, relations are
        re-pointed, the sources' names become aliases of ``into`` (found by search, and
        meaning ``into`` wherever an update names them). A ``dry_run`` reports what would
        move and writes nothing. Refused (``errors``, nothing written) when ``into`` is
        among the sources, or an entity is missing or no longer holds (as the store has it
        once the write lock is taken, whichever process said so).

        Returns:
            The report; an applied merge is committed (one store transaction, with ``call``'s
            answer as :meth:`update` records it) and a ``StateChanged`` published first.

        Raises:
            StoreError, OutcomeUnknown, ToolFailed: as :meth:`update`.
        """
        self._refresh()
        stage = functools.partial(stage_merge, into=into, sources=sources)
        if dry_run:
            batch = stage(
                self._entities,
                self._relations,
                self._links,
                stamp=self._stamp(agent, task_id, self._seq + 1),
                aliases=self._index.aliases,
            )
            return batch.report.model_copy(update={"dry_run": True})
        with (
            self._vectors.writing() if self._vectors is not None else contextlib.nullcontext(),
            self._writing() as txn,
        ):
            replayed = self._calls.replay(call, "merge_entities")
            if replayed is not None:
                return MergeReport.model_validate(replayed).model_copy(update={"replayed": True})
            seq = self._seq + 1
            merge: MergeBatch = stage(
                self._entities,
                self._relations,
                self._links,
                stamp=self._stamp(agent, task_id, seq),
                aliases=self._index.aliases,
            )
            report = merge.report
            if report.errors:
                return report
            report.seq = seq
            calls = self._calls.record(
                call, lambda: report.model_dump(mode="json", exclude_defaults=True), txn.version + 1
            )
            changes = self._rows_of(merge.entities, merge.relations, {})
            changes.append(Change(collection=_META, key="seq", value=seq))
            txn.stage(changes + calls)
        self._calls.committed(calls)
        self._mirror_later(functools.partial(self._apply, merge.entities, merge.relations, seq, {}))
        self._emit(f"{agent}: merged {', '.join(report.sources)} into {report.into}", seq)
        return report

    def _stamp(self, agent: str, task_id: int | None, seq: int) -> Stamp:
        return Stamp(agent=agent, task_id=task_id, now=self._clock(), seq=seq)

    def _apply(
        self,
        entities: dict[str, Entity | None],
        relations: dict[RelationKey, Relation | None],
        seq: int,
        embedded: dict[str, TextVector],
    ) -> None:
        """Mirror a committed change in memory. Upserts first, so relations find their ends."""
        before = [key for name in entities for key in _passage_keys(self._entities.get(name))]
        self._put_entities([entity for entity in entities.values() if entity is not None])
        for key, relation in relations.items():
            self._put_relation(key, relation)
        for name, entity in entities.items():
            if entity is None:
                self._drop_entity(name)
        self._seq = seq
        if self._vectors is not None:
            after = [key for entity in entities.values() for key in _passage_keys(entity)]
            # Keys gone (a window fewer, an entity merged away) are forgotten: their text is None.
            self._vectors.embed(dict.fromkeys([*after, *before]), ready=embedded)

    # -- the store -----------------------------------------------------------------

    def _absorb_changes(self, changes: Sequence[Change]) -> list[str]:
        """Apply committed rows to memory; the passages whose text changed."""
        entities: dict[str, Entity | None] = {}
        relations: dict[RelationKey, Relation | None] = {}
        for change in changes:
            if change.collection == _ENTITIES:
                entities[change.key] = None if change.value is None else Entity.model_validate(change.value)
            elif change.collection == _RELATIONS:
                key = _relation_key(change.key)
                relations[key] = None if change.value is None else Relation.model_validate(change.value)
            elif change.collection == _META and change.key == "seq":
                self._seq = int(change.value or 0)
        present = [entity for entity in entities.values() if entity is not None]
        retexted: dict[str, None] = {}
        for arrived in present:
            previous = self._entities.get(arrived.name)
            old = {} if previous is None else passage_texts(previous)
            new = passage_texts(arrived)
            retexted.update(dict.fromkeys(key for key in {*old, *new} if old.get(key) != new.get(key)))
        # One batch, as a write mirrors its own: a restart or another process's large batch
        # enters the keyword index in one pass.
        self._put_entities(present)
        for key, relation in relations.items():
            if relation is not None and not (
                relation.from_entity in self._entities and relation.to_entity in self._entities
            ):
                logger.warning(
                    "%s: dropping stored relation %s to a missing entity", self._namespace, relation_text(relation)
                )
                continue
            self._put_relation(key, relation)
        for name, entity in entities.items():
            if entity is None:
                self._drop_entity(name)
        return list(retexted)

    def _clear(self) -> None:
        self._entities.clear()
        self._relations.clear()
        self._links.clear()
        self._entity_types.clear()
        self._relation_types.clear()
        self._roots.clear()
        self._built_index = None
        self._passage_cache.clear()
        self._seq = 0

    def _rows_of(
        self,
        entities: dict[str, Entity | None],
        relations: dict[RelationKey, Relation | None],
        embedded: dict[str, TextVector],
    ) -> list[Change]:
        """A change's rows, with the vectors of ``embedded`` made from the texts it commits."""
        changes = [
            Change(
                collection=_ENTITIES,
                key=name,
                value=None if entity is None else JSONText(entity.model_dump_json(exclude_defaults=True)),
            )
            for name, entity in entities.items()
        ]
        changes.extend(
            Change(
                collection=_RELATIONS,
                key=_relation_row_key(key),
                value=None if relation is None else JSONText(relation.model_dump_json(exclude_defaults=True)),
            )
            for key, relation in relations.items()
        )
        # The vector rows of passages gone: an entity deleted (its observations may live on in
        # another, when merged), a window fewer.
        held = [key for name in entities for key in _passage_keys(self._entities.get(name))]
        if held:  # a batch of new entities has none, and need not list the passages it keeps
            kept = {key for entity in entities.values() for key in _passage_keys(entity)}
            changes.extend(Change(collection=VECTORS, key=key, value=None) for key in held if key not in kept)
        if embedded and self._vectors is not None:
            from toolcards.vector._text_vectors import text_digest

            # A vector made ahead is committed with its entity only if the text is still the one
            # committed (a catch-up may have changed it); the others are embedded after the commit.
            texts = {
                key: text
                for entity in entities.values()
                if entity is not None
                for key, text in passage_texts(entity).items()
            }
            for key, vector in embedded.items():
                text = texts.get(key)
                if text is not None and vector.digest == text_digest(text):
                    changes.append(Change(collection=VECTORS, key=key, value=self._vectors.row(vector)))
        return changes

    # -- state ----------------------------------------------------------------------

    def _put_entities(self, entities: Sequence[Entity]) -> None:
        """Index committed entities; only those that hold count in the summary."""
        new_roots: list[str] = []
        for entity in entities:
            previous = self._entities.get(entity.name)
            if previous is not None and previous.current:
                self._entity_types[previous.entity_type] -= 1
                if not self._entity_types[previous.entity_type]:
                    del self._entity_types[previous.entity_type]
            was_root = previous is not None and previous.is_root and previous.current
            is_root = entity.is_root and entity.current
            self._entities[entity.name] = entity
            if entity.current:
                self._entity_types[entity.entity_type] += 1
            self._links.setdefault(entity.name, {})
            if is_root and not was_root:
                new_roots.append(entity.name)
            elif was_root and not is_root:
                discard(self._roots, entity.name)
        insort_all(self._roots, new_roots)
        index = self._built_index
        if index is None:
            return  # the first call that needs the index builds it from the entities
        index.put_entities(entities)
        if index.pending and self._started:
            self.actor_ref.tell(_IndexPending())

    def _drop_entity(self, name: str) -> None:
        entity = self._entities.pop(name, None)
        if entity is None:
            return
        if entity.current:
            self._entity_types[entity.entity_type] -= 1
            if not self._entity_types[entity.entity_type]:
                del self._entity_types[entity.entity_type]
            if entity.is_root:
                discard(self._roots, name)
        self._links.pop(name, None)
        self._passage_cache.pop(name, None)
        if self._built_index is not None:
            self._built_index.drop_entity(name)
        if self._vectors is not None:
            for key in passage_texts(entity):
                self._vectors.forget(key)

    def _put_relation(self, key: RelationKey, relation: Relation | None) -> None:
        previous = self._relations.pop(key, None)
        if previous is not None and previous.current:
            self._relation_types[key[2]] -= 1
            if not self._relation_types[key[2]]:
                del self._relation_types[key[2]]
        if relation is None:
            for end in (key[0], key[1]):
                self._links.get(end, {}).pop(key, None)
            return
        self._relations[key] = relation
        if relation.current:
            self._relation_types[key[2]] += 1
        for end in (key[0], key[1]):
            self._links.setdefault(end, {})[key] = None

    def _emit(self, summary: str, seq: int) -> None:
        self._publish_event(StateChanged(team_id=self._team_id, source=SOURCE, seq=seq, summary=summary))

    # -- search internals ------------------------------------------------------------

    def _query_vector(self, text: str, given: npt.ArrayLike | None) -> Callable[[], _QueryVector]:
        """What waits for the query's vector, or for ``None`` and the one-line reason for a keyword
        fallback; the embedding starts now (a ``given`` vector is checked now)."""
        vectors = self._vectors
        if vectors is None:
            return _known((None, "vector search needs an embedding model, none is configured; keyword results."))
        if given is None and not vectors.available:
            return _known((None, f"embeddings are unavailable ({vectors.failure}); keyword results."))
        if vectors.dim is None:
            return _known((None, "no entity is embedded yet; keyword results." if self._entities else None))
        if given is not None:
            import numpy as np

            vector = np.asarray(given, dtype=np.float32).reshape(-1)
            if vector.shape != (vectors.dim,):
                raise ValueError(f"query_vector has {vector.size} dimensions; the index holds {vectors.dim}.")
            return _known((vector, None))
        waiting = vectors.start_query(text, QUERY_EMBEDDING_TIMEOUT_S)

        @functools.cache
        def embedded() -> _QueryVector:
            vector = waiting()
            if vector is not None:
                return vector, None
            if not vectors.available:
                return None, f"embeddings are unavailable ({vectors.failure}); keyword results."
            return None, f"embedding the query took over {QUERY_EMBEDDING_TIMEOUT_S:g} s; keyword results."

        return embedded

    def _relation_shown(self, relation: Relation, *, as_of: datetime | None, include_invalid: bool) -> bool:
        """Whether a search at ``as_of`` shows ``relation`` (and both its ends)."""
        for fact in (relation, self._entities[relation.from_entity], self._entities[relation.to_entity]):
            if include_invalid:
                if as_of is not None and not fact.recorded_by(as_of):
                    return False
            elif not (fact.current if as_of is None else fact.held_at(as_of)):
                return False
        return True

    def _neighbours_of(self, name: str, shown: Callable[[Relation], bool]) -> tuple[list[Neighbour], int]:
        keys = [key for key in sorted(self._links.get(name, {})) if shown(self._relations[key])]
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

    def _edges_of(self, names: Iterable[str], shown: Callable[[Relation], bool]) -> tuple[list[Relation], int]:
        keys: dict[RelationKey, None] = {}
        for name in names:
            keys.update(dict.fromkeys(key for key in sorted(self._links.get(name, {})) if shown(self._relations[key])))
        edges = [self._relations[key].model_copy() for key in list(keys)[:MAX_EDGES]]
        return edges, max(0, len(keys) - MAX_EDGES)

    def _paths_between(self, names: list[str], shown: Callable[[Relation], bool]) -> list[GraphPath]:
        def neighbours(node: str) -> Iterable[tuple[str, RelationKey]]:
            for key in self._links.get(node, {}):
                if shown(self._relations[key]):
                    yield (key[1] if key[0] == node else key[0]), key

        paths = []
        for i, source in enumerate(names[:-1]):
            targets = names[i + 1 :]
            found = shortest_paths(source, targets, neighbours, self._max_path_length)
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

    def _vector_rows(self, dim: int) -> Any:
        """Where the vectors are kept: the rows of the current index (replaced by a reload)."""
        return self._index.vector_rows(dim)

    def _embedding_text_of(self, key: str) -> str | None:
        """The text of passage ``key`` (see :mod:`toolcards.knowledge_graph._passages`), ``None`` if gone."""
        entity = self._entities.get(owner_of(key))
        if entity is None:
            return None
        cached = self._passage_cache.get(entity.name)
        if cached is None or cached[0] is not entity:
            cached = self._passage_cache[entity.name] = (entity, passage_texts(entity))
        return cached[1].get(key)

    def _embed_ahead(self, entities: dict[str, Entity | None], changed: bool) -> dict[str, TextVector]:
        """Vectors for a draft's new texts, computed now for a fast provider and a small batch."""
        if self._vectors is None or not changed:
            return {}
        texts = {
            key: text
            for entity in entities.values()
            if entity is not None
            for key, text in passage_texts(entity).items()
        }
        return self._vectors.embed_now(texts, max_texts=INLINE_EMBED_MAX)


class KnowledgeGraphProxy(ActorMemberMixin, pykka.ActorProxy[KnowledgeGraphActor]):
    """The typed proxy of a :class:`KnowledgeGraphActor`: each method returns a pykka ``Future``.

    ``cast(KnowledgeGraphProxy, ref.proxy())`` lets a type checker follow asks such as
    ``proxy.update(agent, create_entities=[...]).get()``.
    """

    graph = proxy_method(KnowledgeGraphActor.graph)
    entities = proxy_method(KnowledgeGraphActor.entities)
    get_entities = proxy_method(KnowledgeGraphActor.get_entities)
    read_graph = proxy_method(KnowledgeGraphActor.read_graph)
    seq = proxy_method(KnowledgeGraphActor.seq)
    pending_embeddings = proxy_method(KnowledgeGraphActor.pending_embeddings)
    summary = proxy_method(KnowledgeGraphActor.summary)
    entity_names = proxy_method(KnowledgeGraphActor.entity_names)
    settings = proxy_method(KnowledgeGraphActor.settings)
    search = proxy_method(KnowledgeGraphActor.search)
    update = proxy_method(KnowledgeGraphActor.update)
    merge = proxy_method(KnowledgeGraphActor.merge)
