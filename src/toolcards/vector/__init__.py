"""Embeddings and an exact vector index, shared by the planning board and the knowledge graph.

* :class:`EmbeddingParam` — the serialisable choice of provider (``local`` MiniLM ONNX,
  ``openai``-compatible endpoint, or ``hashing``), stored on cards.
* :class:`EmbeddingService` / :func:`get_embedding_service` — text to L2-normalised
  float32 rows; ``None`` (and one logged warning) when the provider is unavailable.
* :class:`VectorIndex` — keys to vectors, cosine top-k by brute force.
* :class:`TextVectors` — the vectors of one actor's keyed texts: index, background
  worker, stored rows, and the rule that a text one process embedded is never embedded
  again by another; its worker and timer talk to the actor with :class:`TextsEmbedded`
  and :class:`GraceElapsed` messages.
* :class:`EmbeddingKeeper` — keeps an actor's :class:`TextVectors` from its start to its stop
  or crash: handles those messages, persists through the actor, ends the threads.

Importing this package loads pydantic only; numpy, onnxruntime and openai are imported
on first use. The local model's files are pinned by sha256 (:mod:`toolcards.vector._assets`);
``toolcards fetch-models`` puts any that are missing in the cache, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards._lazy_names import lazy_names

if TYPE_CHECKING:
    from toolcards.vector._index import VectorIndex
    from toolcards.vector._keeper import EmbeddingKeeper
    from toolcards.vector._param import EmbeddingParam
    from toolcards.vector._providers.base import EmbeddingUnavailable
    from toolcards.vector._service import EmbeddingService, get_embedding_service
    from toolcards.vector._text_vectors import GraceElapsed, TextsEmbedded, TextVector, TextVectors

__all__ = [
    "EmbeddingKeeper",
    "EmbeddingParam",
    "EmbeddingService",
    "EmbeddingUnavailable",
    "GraceElapsed",
    "TextVector",
    "TextVectors",
    "TextsEmbedded",
    "VectorIndex",
    "get_embedding_service",
]


# A card's fields name EmbeddingParam (toolcards.vector._param); the rest loads when first used.
__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "EmbeddingKeeper": "toolcards.vector._keeper",
        "EmbeddingParam": "toolcards.vector._param",
        "EmbeddingService": "toolcards.vector._service",
        "EmbeddingUnavailable": "toolcards.vector._providers.base",
        "GraceElapsed": "toolcards.vector._text_vectors",
        "TextVector": "toolcards.vector._text_vectors",
        "TextVectors": "toolcards.vector._text_vectors",
        "TextsEmbedded": "toolcards.vector._text_vectors",
        "VectorIndex": "toolcards.vector._index",
        "get_embedding_service": "toolcards.vector._service",
    },
)
