"""The hashing provider: the same vector in every process, and lexical similarity that makes sense."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from toolcards.vector import EmbeddingParam
from toolcards.vector._providers.hashing import HashingProvider

_PRINT_VECTOR = (
    "from toolcards.vector import EmbeddingParam; "
    "from toolcards.vector._providers.hashing import HashingProvider; "
    "v = HashingProvider(EmbeddingParam(provider='hashing', dimensions=64)).embed(['Reset the password'])[0]; "
    "print(','.join(repr(float(x)) for x in v))"
)


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v, axis=-1, keepdims=True))


def test_vectors_do_not_depend_on_the_process_hash_seed() -> None:
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", _PRINT_VECTOR], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(result.stdout.strip())
    assert len(outputs) == 1
    here = HashingProvider(EmbeddingParam(provider="hashing", dimensions=64)).embed(["Reset the password"])[0]
    np.testing.assert_allclose(np.array([float(x) for x in outputs.pop().split(",")]), here)


def test_dimensions_default_to_384_and_are_configurable() -> None:
    assert HashingProvider(EmbeddingParam(provider="hashing")).embed(["x"]).shape == (1, 384)
    provider = HashingProvider(EmbeddingParam(provider="hashing", dimensions=100))
    assert (provider.dim, provider.model_id) == (100, "hashing:100")
    assert provider.embed(["x", "y"]).shape == (2, 100)


def test_shared_words_score_higher_than_unrelated_text() -> None:
    provider = HashingProvider(EmbeddingParam(provider="hashing"))
    query, near, inflected, far = _unit(
        provider.embed(
            [
                "deploy the billing service to production",
                "production deploy of the billing service failed",
                "deploying billing services",
                "grandmother's apple pie recipe",
            ]
        )
    )
    assert query @ near > query @ far
    assert query @ inflected > query @ far
    assert abs(float(query @ far)) < 0.3


def test_case_does_not_matter_and_empty_text_is_a_zero_row() -> None:
    provider = HashingProvider(EmbeddingParam(provider="hashing", dimensions=32))
    upper, lower, empty = provider.embed(["Hello World", "hello world", "  ...  "])
    np.testing.assert_array_equal(upper, lower)
    assert not empty.any()
