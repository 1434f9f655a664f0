"""``KnowledgeGraphTool``: the team's knowledge graph, as tools, a system prompt and commands.

One graph per team (``#KnowledgeGraphTool``, race-free ``get_or_spawn``), persisted with the
planning board's guarantees: an acknowledged update is committed, and a restart restores the
graph exactly. Its capabilities (``get_graph``, ``update_graph``, ``search_graph``,
``get_entities``, ``read_graph``, ``merge_entities``) are described in
``docs/cards/knowledge-graph.md``. Every fact carries the calling member, the task it holds
(the :data:`~toolcards.core._services.CLAIMED_TASK` service) and the time. Without an
``embedding`` the card needs neither numpy nor openai and search says it is keyword-only.
Views (:mod:`toolcards.core._views`): ``knowledge_graph.graph`` and
``knowledge_graph.search(query)``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PrivateAttr

from toolcards.core._bounds import unlisted_bound, unlisted_default
from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._idempotency import current_call
from toolcards.core._observer import ActorToolObserver
from toolcards.core._params import BaseToolParam
from toolcards.core._records import Records
from toolcards.core._services import CLAIMED_TASK
from toolcards.core._views import view
from toolcards.errors import OutcomeUnknown, RetriableError, WiringError
from toolcards.knowledge_graph._actor import KnowledgeGraphActor, KnowledgeGraphProxy
from toolcards.knowledge_graph._models import EntityCreate, EntityUpdate, RelationCreate, RelationDelete, SearchResult
from toolcards.knowledge_graph._render import (
    render_entities,
    render_graph_page,
    render_merge_report,
    render_search_result,
    render_update_report,
    shown_observations,
)
from toolcards.knowledge_graph._search import DEFAULT_ALPHA, DEFAULT_THRESHOLD
from toolcards.store._default import default_store
from toolcards.vector._param import EmbeddingParam

__all__ = [
    "GetEntitiesParam",
    "GetGraphParam",
    "KnowledgeGraphTool",
    "MergeEntitiesParam",
    "ReadGraphParam",
    "SearchGraphParam",
    "UpdateGraphParam",
]

ACTOR_NAME = "#KnowledgeGraphTool"

# Off unless asked for: saying so in every request's schema would cost tokens for nothing.
_Flag = Annotated[bool, Field(json_schema_extra=unlisted_default)]


def _unlisted_count(schema: dict[str, Any]) -> None:
    """A count's bounds and default go without saying (the answer says when more exist)."""
    unlisted_bound(schema)
    unlisted_default(schema)


class GetGraphParam(BaseToolParam):
    """The graph summary in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class UpdateGraphParam(BaseToolParam):
    """Create, update and delete entities and relations in one batch."""

    expose: set[Channels] = {TOOL_CALL}


class SearchGraphParam(BaseToolParam):
    """Search the graph."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}
    alpha: float = Field(default=DEFAULT_ALPHA, ge=0, le=1)
    """Hybrid weight of the (normalised) cosine; ``1 - alpha`` weighs the keyword match."""
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=-1, le=1)
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


class GetEntitiesParam(BaseToolParam):
    """Entities by exact name."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ReadGraphParam(BaseToolParam):
    """The whole graph, a page at a time."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class MergeEntitiesParam(BaseToolParam):
    """Merge duplicate entities into one."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


def parse_as_of(text: str, now: datetime | None = None) -> datetime:
    """``as_of`` as an aware UTC moment: an ISO 8601 date or date and time (no zone: UTC).

    Raises:
        RetriableError: unreadable, outside the years 1 to 9999 once in UTC, or later than now.
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise RetriableError(
            f"as_of {text!r} is not a date: give ISO 8601, e.g. 2026-03-01 or 2026-03-01T14:30:00Z."
        ) from None
    try:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00+05:00 is still year 0 in UTC, 9999-12-31T23:00-05:00 year 10000.
        raise RetriableError(
            f"as_of {text!r} falls outside the years 1 to 9999 in UTC: give a date in between and not in "
            "the future, e.g. 2026-03-01T14:30:00Z."
        ) from None
    now = now or datetime.now(UTC)
    if moment > now:
        raise RetriableError(
            f"as_of {text!r} is in the future (now is {now:%Y-%m-%dT%H:%M:%SZ}); omit it to search the graph as it is."
        )
    return moment


class KnowledgeGraphTool(ToolCard):
    """The team's knowledge graph. ``read_only`` removes ``update_graph`` and ``merge_entities``
    from every channel."""

    kind: ClassVar[str] = "knowledge_graph"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    get_graph: GetGraphParam | bool = True
    update_graph: UpdateGraphParam | bool = True
    search_graph: SearchGraphParam | bool = True
    get_entities: GetEntitiesParam | bool = True
    read_graph: ReadGraphParam | bool = True
    merge_entities: MergeEntitiesParam | bool = True
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
        self._check_settings(search)

    def _check_settings(self, search: SearchGraphParam) -> None:
        """Refuse to share a team's graph started with other search settings: the first card
        to start it fixed them, and this card's would be silently ignored."""
        started = self.ask(self.bound(self._graph).settings(), actor=ACTOR_NAME)
        mine = {
            "embedding": None if self.embedding is None else self.embedding.model_dump(mode="json"),
            "alpha": search.alpha,
            "threshold": search.threshold,
        }
        differ = [f"{key} {mine[key]!r} (the graph has {started[key]!r})" for key in mine if mine[key] != started[key]]
        if differ:
            raise WiringError(
                f"KnowledgeGraphTool: the team's graph was started by another card with other settings: "
                f"{'; '.join(differ)}. Give every knowledge_graph card of the team the same embedding "
                "and search_graph alpha and threshold."
            )

    @property
    def graph(self) -> KnowledgeGraphProxy:
        """The team's graph actor (after binding)."""
        return self.bound(self._graph)

    @property
    def _agent(self) -> str:
        observer: ActorToolObserver = self.get_observer()
        return observer.address.handle

    def _claimed_task(self) -> int | None:
        """The task the calling member holds, when a planning card in this process can say."""
        observer: ActorToolObserver = self.get_observer()
        service = observer.team.service(CLAIMED_TASK)
        if service is None:
            return None
        try:
            task_id: int | None = service(self._agent)
        except Exception:
            # Provenance must not cost the write: the board may be stopping or out of reach.
            return None
        return task_id

    def _callable(self, field: str) -> str | None:
        param = self.param(field)
        return field if param is not None and TOOL_CALL in param.expose else None

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
        """Record knowledge in one all-or-nothing batch."""
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
                    task_id=self._claimed_task(),
                    call=current_call(),
                ),
                actor=ACTOR_NAME,
            )
        except OutcomeUnknown as exc:
            exc.check = "search_graph"
            raise
        text = render_update_report(report, merge_tool=self._callable("merge_entities"))
        if report.errors:
            raise RetriableError(text)
        return text

    @capability("merge_entities", mutates=True, hints=ToolHints(title="Merge entities", destructive=True))
    def merge(self, into: str, sources: list[str], dry_run: _Flag = False) -> str:
        """Merge duplicates; names become aliases."""
        try:
            report = self.ask(
                self.graph.merge(
                    self._agent,
                    into,
                    sources,
                    dry_run=dry_run,
                    task_id=None if dry_run else self._claimed_task(),
                    call=None if dry_run else current_call(),
                ),
                actor=ACTOR_NAME,
            )
        except OutcomeUnknown as exc:
            exc.check = "search_graph"
            raise
        text = render_merge_report(report)
        if report.errors:
            raise RetriableError(text)
        return text

    @capability(
        "search_graph",
        hints=ToolHints(
            title="Search graph", output_schema=SEARCH_RECORDS, completions={"query": "complete_entity_name"}
        ),
    )
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=500, json_schema_extra=unlisted_bound)],
        mode: Annotated[Literal["hybrid", "keyword", "vector"], Field(json_schema_extra=unlisted_default)] = "hybrid",
        top_k: Annotated[int, Field(ge=1, le=50, json_schema_extra=_unlisted_count)] = 10,
        include_neighbors: _Flag = False,
        include_edges: _Flag = False,
        find_paths: _Flag = False,
        as_of: str | None = None,
        include_invalid: _Flag = False,
    ) -> str:
        """Find entities by words, or meaning if embedded."""
        moment = None if as_of is None else parse_as_of(as_of)
        result = self._search(
            query,
            mode,
            top_k=top_k,
            include_neighbors=include_neighbors,
            include_edges=include_edges,
            find_paths=find_paths,
            as_of=moment,
            include_invalid=include_invalid,
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

    @capability("get_entities", hints=ToolHints(title="Get entities"))
    def entities_named(
        self, names: Annotated[list[str], Field(min_length=1, max_length=50, json_schema_extra=unlisted_bound)]
    ) -> str:
        """Entities by exact name, in full."""
        page = self.ask(self.graph.get_entities([name.strip() for name in names]), actor=ACTOR_NAME)
        if not page.entities:
            raise RetriableError(render_entities(page))
        return render_entities(page)

    @capability("read_graph", hints=ToolHints(title="Read graph"))
    def graph_page(
        self,
        offset: Annotated[int, Field(ge=0, json_schema_extra=_unlisted_count)] = 0,
        limit: Annotated[int, Field(ge=1, le=100, json_schema_extra=_unlisted_count)] = 100,
    ) -> str:
        """All entities, paged."""
        return render_graph_page(self.ask(self.graph.read_graph(offset, limit), actor=ACTOR_NAME))

    def _search(self, query: str, mode: Literal["hybrid", "keyword", "vector"], **options: Any) -> SearchResult:
        if self.embedding is None:
            # Said once in the description; a note on every result would cost tokens each time.
            mode = "keyword"
        query_vector = None
        if mode != "keyword" and self.embedding is not None:
            # Embed here, in the caller's thread: a remote provider must not hold up the actor.
            from toolcards.vector._service import get_embedding_service

            query_vector = get_embedding_service(self.embedding).embed_one(query)
        return self.ask(self.graph.search(query, mode, query_vector=query_vector, **options), actor=ACTOR_NAME)

    # -- views (read-only, for people looking at the team) ----------------------------------

    def graph_version(self) -> int:
        """The graph's change number: one more per committed change, in any process."""
        return self.ask(self.graph.seq(), actor=ACTOR_NAME)

    @view("knowledge_graph.graph", version=graph_version)
    def graph_view(self) -> dict[str, Any]:
        """The knowledge graph as it holds now: every entity and relation, observations as their texts."""
        graph = self.ask(self.graph.graph(), actor=ACTOR_NAME)
        held = {entity.name for entity in graph.entities if entity.current}
        return {
            "entities": [
                {
                    "name": entity.name,
                    "entity_type": entity.entity_type,
                    "description": entity.description,
                    "observations": [o.text for o in shown_observations(entity, None, False)],
                    "is_root": entity.is_root,
                    "aliases": entity.aliases,
                }
                for entity in graph.entities
                if entity.name in held
            ],
            "relations": [
                relation.model_dump(mode="json", include={"from_entity", "to_entity", "relation_type", "description"})
                for relation in graph.relations
                if relation.current and relation.from_entity in held and relation.to_entity in held
            ],
        }

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
