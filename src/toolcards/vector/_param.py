"""The serialisable configuration of an embedding provider.

:class:`EmbeddingParam` lives on cards as ``embedding: EmbeddingParam | None`` and
round-trips exactly through ``model_dump()`` / ``model_validate()`` and JSON. It is
frozen, so a value can be shared and used as a cache key (see
:func:`toolcards.vector._service.get_embedding_service`). Importing this module loads
pydantic only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EmbeddingParam"]


class EmbeddingParam(BaseModel):
    """Which embedding provider to use and how to call it.

    ``provider`` picks the backend:

    * ``"local"`` — all-MiniLM-L6-v2 (int8 ONNX) on this machine, 384 dimensions. Needs
      its pinned files (``toolcards fetch-models`` once).
    * ``"openai"`` — an OpenAI-compatible ``/embeddings`` endpoint; the key is read from
      the environment variable named by ``api_key_env`` when the first text is embedded.
    * ``"hashing"`` — deterministic feature hashing; lexical, for tests and as a last
      fallback.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Literal["openai", "local", "hashing"] = "local"
    """The backend that turns text into vectors."""
    model: str | None = None
    """The model name; ``None`` picks the provider's default (openai:
    ``text-embedding-3-small``; local: ``all-MiniLM-L6-v2``)."""
    dimensions: int | None = Field(default=None, gt=0)
    """Vector size. hashing: default 384; openai: passed to models that accept it; local:
    only 384 (or ``None``)."""
    base_url: str | None = None
    """openai only: the endpoint's base URL (``None`` is the official API)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai only: the environment variable that holds the API key."""
    timeout_s: float = Field(default=10.0, gt=0)
    """openai only: seconds allowed for one HTTP request."""
    batch_size: int = Field(default=64, gt=0)
    """Texts sent to the model in one call (one HTTP request, or one ONNX run)."""
    max_retries: int = Field(default=2, ge=0)
    """openai only: retries of a request that failed with a timeout, 429 or 5xx."""
