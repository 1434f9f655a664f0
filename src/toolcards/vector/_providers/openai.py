"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

The ``openai`` client is imported and created on the first :meth:`OpenAIProvider.embed`,
with the key read then from the environment variable named by
:attr:`EmbeddingParam.api_key_env`. Texts go out in requests of ``batch_size`` inputs, each
limited to ``timeout_s`` seconds and retried by the client up to ``max_retries`` times on
timeouts, 408/409/429 and 5xx answers (honouring ``Retry-After``). Any other failure — no
key, a rejected key, a bad answer — raises :class:`EmbeddingUnavailable`, whose message
names the endpoint, the status and the fix.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolcards.vector._providers.base import EmbeddingProvider, EmbeddingUnavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector._param import EmbeddingParam

__all__ = ["DEFAULT_MODEL", "OpenAIProvider"]

DEFAULT_MODEL = "text-embedding-3-small"
"""The model used when :attr:`EmbeddingParam.model` is ``None``."""

_KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIProvider(EmbeddingProvider):
    """Calls ``client.embeddings.create`` in batches; thread-safe, one client per provider."""

    def __init__(self, param: EmbeddingParam) -> None:
        self._param = param
        self._model = param.model or DEFAULT_MODEL
        self._lock = threading.Lock()
        self._client: Any = None
        self._seen_dim: int | None = None

    @property
    def model_id(self) -> str:
        """``"openai:<model>"``, plus ``":<dimensions>"`` when a size is requested."""
        suffix = f":{self._param.dimensions}" if self._param.dimensions else ""
        return f"openai:{self._model}{suffix}"

    @property
    def dim(self) -> int | None:
        """The requested size, the model's known size, or the size of the last answer."""
        return self._param.dimensions or _KNOWN_DIMENSIONS.get(self._model) or self._seen_dim

    @property
    def _endpoint(self) -> str:
        return self._param.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            key_env = self._param.api_key_env
            api_key = os.environ.get(key_env)
            if not api_key:
                raise EmbeddingUnavailable(
                    f"{key_env} is not set, so {self._endpoint} cannot be called. Export {key_env} with "
                    "an API key (any value for a server that checks none), or use provider='local'."
                )
            try:
                import openai
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    f"The openai package is not installed ({exc}). Install toolcards[vector]."
                ) from exc
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=self._param.base_url,
                timeout=self._param.timeout_s,
                max_retries=self._param.max_retries,
            )
            return self._client

    def _describe(self, exc: Exception) -> str:
        import openai

        where = f"{self._endpoint} ({self.model_id})"
        if isinstance(exc, openai.AuthenticationError):
            return (
                f"{where} rejected the key in {self._param.api_key_env} (HTTP 401). Set a valid key, "
                "or use provider='local'."
            )
        if isinstance(exc, openai.APIStatusError):
            return f"{where} answered HTTP {exc.status_code}: {exc.message}"
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"{where} did not answer within {self._param.timeout_s} s "
                f"after {self._param.max_retries} retries. Raise timeout_s or check the endpoint."
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"Cannot reach {where}: {exc}. Check base_url and the network."
        return f"{where} failed: {exc}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with one request per ``batch_size`` inputs, in order.

        Blocks for the HTTP round trips, including retries and their back-off. Raises
        :class:`EmbeddingUnavailable` on a missing key or package, any API error left
        after retries, or an answer of the wrong shape.
        """
        import numpy as np
        import openai

        client = self._get_client()
        extra: dict[str, Any] = {"dimensions": self._param.dimensions} if self._param.dimensions else {}
        blocks: list[npt.NDArray[np.float32]] = []
        batch_size = self._param.batch_size
        for start in range(0, len(texts), batch_size):
            # The API rejects empty strings; a space embeds as "no content".
            batch = [text or " " for text in texts[start : start + batch_size]]
            try:
                response = client.embeddings.create(model=self._model, input=batch, encoding_format="float", **extra)
            except openai.OpenAIError as exc:
                raise EmbeddingUnavailable(self._describe(exc)) from exc
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise EmbeddingUnavailable(f"{self._endpoint} returned {len(data)} embeddings for {len(batch)} inputs.")
            try:
                block = np.asarray([item.embedding for item in data], dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise EmbeddingUnavailable(f"{self._endpoint} returned malformed embeddings: {exc}") from exc
            expected = self.dim
            if block.ndim != 2 or (expected is not None and block.shape[1] != expected):
                raise EmbeddingUnavailable(
                    f"{self._endpoint} returned vectors of shape {block.shape}; expected {expected} dimensions."
                )
            self._seen_dim = int(block.shape[1])
            blocks.append(block)
        if not blocks:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.concatenate(blocks, axis=0)
