"""The team knowledge graph: entities, relations, observations, and search over them.

* :class:`KnowledgeGraphActor` — one per team; owns the graph, persists every batch through
  ``toolcards.store`` before acknowledging it, and searches by keyword, vector or both.
  :class:`KnowledgeGraphProxy` types its proxy.
* Stored data: :class:`Entity`, :class:`Observation`, :class:`Relation` (each with its
  :class:`Provenance`), :class:`KnowledgeGraph`.
* LLM-facing inputs: :class:`EntityCreate`, :class:`EntityUpdate`, :class:`RelationCreate`,
  :class:`RelationDelete`.
* Results: :class:`UpdateReport`, :class:`MergeReport`, :class:`EntityPage` (of
  :class:`EntityView`), :class:`SearchResult` (with
  :class:`SearchHit`, :class:`Neighbour`, :class:`GraphPath`);
  :mod:`toolcards.knowledge_graph._render` writes the text a model reads from them.

Importing this package loads pydantic and pykka; numpy loads when an actor starts (its
search index), embedding clients only when it is given an embedding param.
"""

from __future__ import annotations

from toolcards.knowledge_graph._actor import KnowledgeGraphProxy
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
    Observation,
    Provenance,
    Relation,
    RelationCreate,
    RelationDelete,
    SearchHit,
    SearchResult,
    UpdateReport,
)
from toolcards.knowledge_graph._tool import (
    GetEntitiesParam,
    GetGraphParam,
    KnowledgeGraphTool,
    MergeEntitiesParam,
    ReadGraphParam,
    SearchGraphParam,
    UpdateGraphParam,
)

__all__ = [
    "Entity",
    "EntityCreate",
    "EntityPage",
    "EntityUpdate",
    "EntityView",
    "GetEntitiesParam",
    "GetGraphParam",
    "GraphPath",
    "KnowledgeGraph",
    "KnowledgeGraphProxy",
    "KnowledgeGraphTool",
    "MergeEntitiesParam",
    "MergeReport",
    "Neighbour",
    "Observation",
    "Provenance",
    "ReadGraphParam",
    "Relation",
    "RelationCreate",
    "RelationDelete",
    "SearchGraphParam",
    "SearchHit",
    "SearchResult",
    "UpdateGraphParam",
    "UpdateReport",
]
