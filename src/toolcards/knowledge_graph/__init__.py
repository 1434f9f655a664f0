"""The team knowledge graph: entities, relations, observations, and search over them.

* :class:`KnowledgeGraphActor` — one per team; owns the graph, persists every batch through
  ``toolcards.store`` before acknowledging it, and searches by keyword, vector or both.
  :class:`KnowledgeGraphProxy` types its proxy.
* Stored data: :class:`Entity`, :class:`Relation`, :class:`KnowledgeGraph`.
* LLM-facing inputs: :class:`EntityCreate`, :class:`EntityUpdate`, :class:`RelationCreate`,
  :class:`RelationDelete`.
* Results: :class:`UpdateReport`, :class:`SearchResult` (with :class:`SearchHit`,
  :class:`Neighbour`, :class:`GraphPath`); :mod:`toolcards.knowledge_graph.render` writes
  the text a model reads from them.

Importing this package loads pydantic and pykka; numpy and embedding clients load only
when an actor is given an embedding param.
"""

from __future__ import annotations

from toolcards.knowledge_graph.actor import KnowledgeGraphActor, KnowledgeGraphProxy
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
    SearchHit,
    SearchResult,
    UpdateReport,
)
from toolcards.knowledge_graph.tool import GetGraphParam, KnowledgeGraphTool, SearchGraphParam, UpdateGraphParam

__all__ = [
    "Entity",
    "EntityCreate",
    "EntityUpdate",
    "GetGraphParam",
    "GraphPath",
    "KnowledgeGraph",
    "KnowledgeGraphActor",
    "KnowledgeGraphProxy",
    "KnowledgeGraphTool",
    "Neighbour",
    "Relation",
    "RelationCreate",
    "RelationDelete",
    "SearchGraphParam",
    "SearchHit",
    "SearchResult",
    "UpdateGraphParam",
    "UpdateReport",
]
