"""``KnowledgeGraphTool``: the team's knowledge graph, as tools, a system prompt and commands.

One graph per team (``#KnowledgeGraphTool``, race-free ``get_or_spawn``), persisted with
the planning board's guarantees: an acknowledged update is committed, and a restart
restores the graph exactly.

| capability | default channels | what the model sees |
|---|---|---|
| ``get_graph`` | SYSTEM_PROMPT, COMMAND | a summary whose size does not grow with the graph |
| ``update_graph(...)`` | TOOL_CALL | one batch in a fixed order; failures listed together |
| ``search_graph(query, mode, ...)`` | TOOL_CALL, COMMAND | hits, plus neighbours, edges, paths on request |

With no ``embedding`` configured the card needs neither numpy nor openai: search is
keyword-only and says so.

Two views (:mod:`toolcards.core.views`): ``knowledge_graph.graph``, every entity and
relation, and ``knowledge_graph.search(query)``, the names ``search_graph`` ranks first.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PrivateAttr

from toolcards.core.card import ToolCard, capability
from toolcards.core.channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core.hints import ToolHints
from toolcards.core.idempotency import current_call
from toolcards.core.observer import ActorToolObserver
from toolcards.core.params import BaseToolParam
from toolcards.core.records import Records
from toolcards.core.views import view
from toolcards.errors import OutcomeUnknown, RetriableError
from toolcards.knowledge_graph.actor import KnowledgeGraphActor, KnowledgeGraphProxy
from toolcards.knowledge_graph.models import EntityCreate, EntityUpdate, RelationCreate, RelationDelete, SearchResult
from toolcards.knowledge_graph.render import render_search_result, render_update_report
from toolcards.store.default import default_store
from toolcards.vector.param import EmbeddingParam

__all__ = ["GetGraphParam", "KnowledgeGraphTool", "SearchGraphParam", "UpdateGraphParam"]

ACTOR_NAME = "#KnowledgeGraphTool"


class GetGraphParam(BaseToolParam):
    """The graph summary in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class UpdateGraphParam(BaseToolParam):
    """Create, update and delete entities and relations in one batch."""

    expose: set[Channels] = {TOOL_CALL}


class SearchGraphParam(BaseToolParam):
    """Search the graph."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}
    alpha: float = Field(default=0.7, ge=0, le=1)
    """Hybrid weight of the (normalised) cosine; ``1 - alpha`` weighs the keyword match."""
    threshold: float = Field(default=0.3, ge=-1, le=1)
    """Minimum raw cosine for a hit of the vector leg."""


SEARCH_RECORDS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "mode": {"type": "string"},
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "entity_type": {"type": "string"},
                    "score": {"type": "number"},
                },
            },
        },
    },
    "required": ["query", "mode", "hits"],
}
"""``search_graph``'s records (``structuredContent`` over MCP): the hits, best first, with the
mode that found them; neighbours, edges and paths stay in the text."""


class KnowledgeGraphTool(ToolCard):
    """The team's knowledge graph. ``read_only`` removes ``update_graph`` from every channel."""

    kind: ClassVar[str] = "knowledge_graph"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    get_graph: GetGraphParam | bool = True
    update_graph: UpdateGraphParam | bool = True
    search_graph: SearchGraphParam | bool = True
    embedding: EmbeddingParam | None = None
    """How texts are embedded for search by meaning; ``None``: keyword search only."""
    _graph: KnowledgeGraphProxy | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        search = self.param("search_graph", SearchGraphParam) or SearchGraphParam()
        team = agent.team
        self._graph = team.get_or_spawn(
            ACTOR_NAME,
            KnowledgeGraphActor,
            agent.team_id,
            default_store(),
            self.embedding,
            team.publish,
            alpha=search.alpha,
            threshold=search.threshold,
            proxy=KnowledgeGraphProxy,
        )

    @property
    def graph(self) -> KnowledgeGraphProxy:
        """The team's graph actor (after binding)."""
        return self.bound(self._graph)

    @property
    def _agent(self) -> str:
        observer: ActorToolObserver = self.get_observer()
        return observer.address.handle

    @capability("get_graph", hints=ToolHints(title="Knowledge graph"))
    def summary(self) -> str:
        """A summary of the team knowledge graph."""
        search = self.param("search_graph")
        hint = "search_graph" if search is not None and TOOL_CALL in search.expose else None
        return self.ask(self.graph.summary(search_tool=hint), actor=ACTOR_NAME)

    @capability("update_graph", mutates=True, hints=ToolHints(title="Change graph", destructive=True))
    def update(
        self,
        create_entities: list[EntityCreate] | None = None,
        update_entities: list[EntityUpdate] | None = None,
        delete_entities: list[str] | None = None,
        create_relations: list[RelationCreate] | None = None,
        delete_relations: list[RelationDelete] | None = None,
    ) -> str:
        """Record knowledge in one batch: entities are created before relations and deleted
        after them. All or nothing: if a part fails, nothing is applied.

        Args:
            delete_entities: Names; their relations go too.
        """
        if not (create_entities or update_entities or delete_entities or create_relations or delete_relations):
            raise RetriableError(
                "Nothing to do: give at least one of create_entities, update_entities, "
                "delete_entities, create_relations, delete_relations."
            )
        try:
            report = self.ask(
                self.graph.update(
                    self._agent,
                    create_entities=create_entities or (),
                    update_entities=update_entities or (),
                    delete_entities=delete_entities or (),
                    create_relations=create_relations or (),
                    delete_relations=delete_relations or (),
                    call=current_call(),
                ),
                actor=ACTOR_NAME,
            )
        except OutcomeUnknown as exc:
            exc.check = "search_graph"
            raise
        if report.errors:
            raise RetriableError(render_update_report(report))
        return render_update_report(report)

    @capability(
        "search_graph",
        hints=ToolHints(
            title="Search graph", output_schema=SEARCH_RECORDS, completions={"query": "complete_entity_name"}
        ),
    )
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=500)],
        mode: Literal["hybrid", "keyword", "vector"] = "hybrid",
        top_k: Annotated[int, Field(ge=1, le=50)] = 10,
        include_neighbors: bool = False,
        include_edges: bool = False,
        find_paths: bool = False,
    ) -> str:
        """Search entities by keyword, and by meaning when the team has an embedding model.

        Args:
            mode: hybrid and vector are keyword-only without an embedding model.
            include_neighbors: Also list entities linked to each hit.
            include_edges: Also list each hit's relations.
            find_paths: Shortest paths between the top hits.
        """
        result = self._search(
            query,
            mode,
            top_k=top_k,
            include_neighbors=include_neighbors,
            include_edges=include_edges,
            find_paths=find_paths,
        )
        records = {
            "query": result.query,
            "mode": result.mode,
            "hits": [
                {"name": hit.entity.name, "entity_type": hit.entity.entity_type, "score": round(hit.score, 4)}
                for hit in result.hits
            ],
        }
        return Records(render_search_result(result), records)

    def complete_entity_name(self, prefix: str) -> list[str]:
        """Entity names starting with ``prefix`` (a client completing a search for one)."""
        names: list[str] = self.ask(self.graph.entity_names(prefix), actor=ACTOR_NAME)
        return names

    def _search(self, query: str, mode: Literal["hybrid", "keyword", "vector"], **options: Any) -> SearchResult:
        if self.embedding is None:
            # Said once in the description; a note on every result would cost tokens each time.
            mode = "keyword"
        query_vector = None
        if mode != "keyword" and self.embedding is not None:
            # Embed here, in the caller's thread: a remote provider must not hold up the actor.
            from toolcards.vector.service import get_embedding_service

            query_vector = get_embedding_service(self.embedding).embed_one(query)
        return self.ask(self.graph.search(query, mode, query_vector=query_vector, **options), actor=ACTOR_NAME)

    # -- views (read-only, for people looking at the team) ----------------------------------

    def graph_version(self) -> int:
        """The graph's change number: one more per committed change, in any process."""
        return self.ask(self.graph.seq(), actor=ACTOR_NAME)

    @view("knowledge_graph.graph", version=graph_version)
    def graph_view(self) -> dict[str, Any]:
        """The knowledge graph: every entity and relation."""
        graph = self.ask(self.graph.graph(), actor=ACTOR_NAME)
        return graph.model_dump(mode="json")

    @view("knowledge_graph.search", version=graph_version)
    def search_view(self, query: str, top_k: int = 20) -> dict[str, Any]:
        """Entities matching a query, best first, as search_graph ranks them."""
        text = query.strip()[:500]
        if not text:
            return {"query": "", "mode": "keyword", "hits": []}
        result = self._search(text, "hybrid", top_k=max(1, min(int(top_k), 50)))
        return {
            "query": text,
            "mode": result.mode,
            "hits": [{"name": hit.entity.name, "score": round(float(hit.score), 4)} for hit in result.hits],
        }
