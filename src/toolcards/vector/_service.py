"""The embedding service: text in, L2-normalised float32 rows out, or ``None``.

:class:`EmbeddingService` wraps one provider (see :mod:`toolcards.vector._providers`) and
is what the planning board and the knowledge graph call. It never raises to its callers
for a provider failure: the first failure logs ONE warning on the
``toolcards.vector._service`` logger, and from then on the service is degraded —
:attr:`~EmbeddingService.available` is ``False`` and every :meth:`~EmbeddingService.embed`
returns ``None`` at once — so callers fall back to lexical search. Only programming
errors (passing a ``str`` where a sequence of texts is expected, a non-text item) raise.

:func:`get_embedding_service` keeps one service per distinct :class:`EmbeddingParam` for
the whole process, so a model is loaded once however many cards use it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolcards.vector._providers import EmbeddingUnavailable, create_provider

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector._param import EmbeddingParam

__all__ = ["EmbeddingService", "get_embedding_service"]

logger = logging.getLogger(__name__)


class EmbeddingService:
    """Embeds texts with the provider chosen by an :class:`EmbeddingParam`; thread-safe.

    Construction is cheap: the provider loads its model or client on the first
    :meth:`embed`. Prefer :func:`get_embedding_service`, which shares instances.
    """

    def __init__(self, param: EmbeddingParam) -> None:
        self._param = param
        self._provider = create_provider(param)
        self._lock = threading.Lock()
        self._failure: str | None = None

    def __repr__(self) -> str:
        state = "available" if self.available else "unavailable"
        return f"<EmbeddingService {self.model_id} {state}>"

    @property
    def param(self) -> EmbeddingParam:
        """The configuration this service was built from."""
        return self._param

    @property
    def model_id(self) -> str:
        """The provider and model, e.g. ``"local:all-MiniLM-L6-v2-int8"`` or ``"hashing:384"``.

        Store it next to vectors: vectors with different ids must not be compared.
        """
        return self._provider.model_id

    @property
    def dim(self) -> int | None:
        """The vector size, known before the first call except for an unlisted remote model."""
        return self._provider.dim

    @property
    def available(self) -> bool:
        """``False`` once the provider has failed; the service then stays degraded."""
        return self._failure is None

    @property
    def failure(self) -> str | None:
        """Why the provider failed (the text of the one warning), or ``None``."""
        return self._failure

    def _degrade(self, reason: str, *, unexpected: bool = False) -> None:
        with self._lock:
            if self._failure is not None:
                return
            self._failure = reason
        logger.warning(
            "Embeddings (%s) are unavailable; continuing without them. %s",
            self.model_id,
            reason,
            exc_info=unexpected,
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32] | None:
        """Embed ``texts``; returns an ``(len(texts), dim)`` float32 array, or ``None``.

        Rows are L2-normalised, so a dot product is the cosine; a text with no content
        for the provider (hashing: no word characters) gives a zero row. Returns
        ``None`` when the provider is unavailable, logging one warning the first time.
        Blocks while the provider computes (and, on the first call, loads its model).

        Raises ``TypeError`` when ``texts`` is a ``str`` or holds a non-``str`` item.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_one() for a single text.")
        batch = list(texts)
        for item in batch:
            if not isinstance(item, str):
                raise TypeError(f"embed() takes texts, got {type(item).__name__}: {item!r:.80}")
        if self._failure is not None:
            return None
        if not batch:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        try:
            raw = self._provider.embed(batch)
        except EmbeddingUnavailable as exc:
            self._degrade(str(exc))
            return None
        except Exception as exc:
            # A provider bug must not take a tool down with it; the traceback is logged once.
            self._degrade(f"{type(exc).__name__}: {exc}", unexpected=True)
            return None
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(batch) or not np.isfinite(vectors).all():
            self._degrade(f"the provider returned an array of shape {vectors.shape} for {len(batch)} texts")
            return None
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        return unit

    def embed_one(self, text: str) -> npt.NDArray[np.float32] | None:
        """Embed one text; returns a ``(dim,)`` float32 unit vector, or ``None`` (see :meth:`embed`)."""
        vectors = self.embed([text])
        return None if vectors is None else vectors[0]


_services: dict[str, EmbeddingService] = {}
_services_lock = threading.Lock()


def get_embedding_service(param: EmbeddingParam) -> EmbeddingService:
    """The process-wide service for ``param``, created on first request.

    Services are keyed by the param's JSON, so equal params share one instance (and one
    loaded model, and one degraded state). Cheap; never blocks on a model load.
    """
    key = param.model_dump_json()
    with _services_lock:
        service = _services.get(key)
        if service is None:
            service = _services[key] = EmbeddingService(param)
        return service
