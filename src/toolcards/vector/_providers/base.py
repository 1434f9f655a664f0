"""The contract every embedding provider implements, and the error they share.

A provider turns texts into raw vectors. It may load models or open clients lazily,
on its first :meth:`EmbeddingProvider.embed`, and reports every failure as
:class:`EmbeddingUnavailable`, whose message says what is missing and how to fix it.
:class:`toolcards.vector._service.EmbeddingService` is the only caller: it normalises
rows, checks shapes and turns a failure into a single warning, so the error never
reaches a tool.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolcards.errors import ToolcardsError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["EmbeddingProvider", "EmbeddingUnavailable"]


class EmbeddingUnavailable(ToolcardsError):
    """A provider cannot embed: a missing asset, package or key, or a failed API call.

    The message says what failed and the next step. It is caught by the embedding
    service, which degrades (returns ``None``) instead of raising to callers.
    """


class EmbeddingProvider(ABC):
    """Turns texts into vectors; one instance per :class:`EmbeddingParam`.

    Constructing a provider is cheap: models, sessions and clients are created on the
    first :meth:`embed`. Implementations are thread-safe.
    """

    @property
    @abstractmethod
    def model_id(self) -> str:
        """``"<provider>:<model>"``; vectors with different ids are not comparable."""

    @property
    @abstractmethod
    def dim(self) -> int | None:
        """The vector size, or ``None`` while it is unknown (an unlisted remote model)."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns an ``(len(texts), dim)`` float32 array, rows not normalised.

        Blocks while the model loads (first call) and while it computes or the
        endpoint answers. Raises :class:`EmbeddingUnavailable` when it cannot embed.
        """
