"""EmbeddingService: unit rows out, one warning and None when the provider fails, shared instances."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from toolcards.vector import EmbeddingParam, EmbeddingService, get_embedding_service
from toolcards.vector._providers import EmbeddingUnavailable

SERVICE_LOGGER = "toolcards.vector._service"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == SERVICE_LOGGER and r.levelno == logging.WARNING]


def test_rows_are_float32_unit_vectors() -> None:
    service = EmbeddingService(EmbeddingParam(provider="hashing", dimensions=64))
    vectors = service.embed(["alpha beta", "gamma", "!!!"])
    assert vectors is not None
    assert vectors.shape == (3, 64)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, rtol=1e-5)
    assert not vectors[2].any()  # nothing to hash: a zero row, not NaN
    one = service.embed_one("alpha beta")
    assert one is not None
    np.testing.assert_allclose(one, vectors[0])


def test_model_id_and_dim_are_known_before_the_first_call() -> None:
    assert EmbeddingService(EmbeddingParam(provider="hashing")).model_id == "hashing:384"
    assert EmbeddingService(EmbeddingParam()).model_id == "local:all-MiniLM-L6-v2-int8"
    assert EmbeddingService(EmbeddingParam()).dim == 384
    openai = EmbeddingService(EmbeddingParam(provider="openai"))
    assert (openai.model_id, openai.dim) == ("openai:text-embedding-3-small", 1536)


def test_empty_input_gives_an_empty_matrix() -> None:
    vectors = EmbeddingService(EmbeddingParam(provider="hashing", dimensions=8)).embed([])
    assert vectors is not None
    assert vectors.shape == (0, 8)


def test_a_str_or_non_text_item_is_a_programming_error() -> None:
    service = EmbeddingService(EmbeddingParam(provider="hashing"))
    with pytest.raises(TypeError):
        service.embed("one text")
    with pytest.raises(TypeError):
        service.embed(["ok", 3])  # type: ignore[list-item]
    assert service.available


def test_unavailable_provider_returns_none_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    # The local model makes only 384 dimensions: this configuration cannot work.
    service = EmbeddingService(EmbeddingParam(provider="local", dimensions=256))
    assert service.available  # nothing is tried before the first embed
    with caplog.at_level(logging.WARNING, logger=SERVICE_LOGGER):
        assert service.embed(["a"]) is None
        assert service.embed_one("b") is None
        assert service.embed(["c", "d"]) is None
    assert not service.available
    [record] = _warnings(caplog)
    assert "256" in record.getMessage()
    assert service.failure is not None


def test_missing_openai_key_degrades_with_the_variable_named(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLCARDS_TEST_NO_SUCH_KEY", raising=False)
    service = EmbeddingService(EmbeddingParam(provider="openai", api_key_env="TOOLCARDS_TEST_NO_SUCH_KEY"))
    with caplog.at_level(logging.WARNING, logger=SERVICE_LOGGER):
        assert service.embed(["a"]) is None
    [record] = _warnings(caplog)
    assert "TOOLCARDS_TEST_NO_SUCH_KEY" in record.getMessage()


class _FlakyProvider:
    """Fails the first call with ``error``, then would succeed (the service must not retry)."""

    model_id = "fake:1"
    dim = 2

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            raise self.error
        return np.ones((len(texts), 2), dtype=np.float32)


@pytest.mark.parametrize("error", [EmbeddingUnavailable("gone"), RuntimeError("provider bug")])
def test_a_failure_degrades_for_good(error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    service = EmbeddingService(EmbeddingParam(provider="hashing"))
    provider = _FlakyProvider(error)
    service._provider = provider  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger=SERVICE_LOGGER):
        assert service.embed(["a"]) is None
        assert service.embed(["a"]) is None
    assert provider.calls == 1
    assert len(_warnings(caplog)) == 1
    assert not service.available


def test_a_malformed_provider_answer_degrades(caplog: pytest.LogCaptureFixture) -> None:
    service = EmbeddingService(EmbeddingParam(provider="hashing"))
    provider = _FlakyProvider(EmbeddingUnavailable("unused"))
    provider.calls = 1
    provider.embed = lambda texts: np.full((len(texts), 2), np.nan, dtype=np.float32)  # type: ignore[method-assign]
    service._provider = provider  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger=SERVICE_LOGGER):
        assert service.embed(["a"]) is None
    assert len(_warnings(caplog)) == 1


def test_get_embedding_service_shares_one_instance_per_configuration() -> None:
    first = get_embedding_service(EmbeddingParam(provider="hashing", dimensions=32))
    assert get_embedding_service(EmbeddingParam(provider="hashing", dimensions=32)) is first
    assert get_embedding_service(EmbeddingParam(provider="hashing", dimensions=64)) is not first
