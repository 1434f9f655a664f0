"""Embedding providers, one module each, behind :class:`EmbeddingProvider`.

:func:`create_provider` picks the class named by :attr:`EmbeddingParam.provider`. Creating
a provider loads nothing; each provider imports its heavy dependencies on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards.vector._providers.base import EmbeddingProvider, EmbeddingUnavailable

if TYPE_CHECKING:
    from toolcards.vector._param import EmbeddingParam

__all__ = ["EmbeddingProvider", "EmbeddingUnavailable", "create_provider"]


def create_provider(param: EmbeddingParam) -> EmbeddingProvider:
    """The provider for ``param.provider``; cheap, never loads a model or opens a connection."""
    if param.provider == "openai":
        from toolcards.vector._providers.openai import OpenAIProvider

        return OpenAIProvider(param)
    if param.provider == "hashing":
        from toolcards.vector._providers.hashing import HashingProvider

        return HashingProvider(param)
    from toolcards.vector._providers.local import LocalProvider

    return LocalProvider(param)
