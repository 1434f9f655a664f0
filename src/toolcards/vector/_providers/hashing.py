"""Deterministic feature hashing: text to vector in pure numpy, no model, no network.

Features are case-folded words, word bigrams and character 3–5-grams of each word
(with ``<`` and ``>`` marking its ends). Each feature is hashed with blake2b — never
Python's ``hash()``, which is salted per process — to a column and a sign. The three
families are normalised separately and mixed with fixed weights, so a long word does not
drown the whole-word signal in its character grams. The same text gives the same vector
in every process and on every machine.

It is lexical: texts that share words or word pieces score high, paraphrases with
different words do not. Use it for tests and as a last fallback.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolcards.vector._providers.base import EmbeddingProvider

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector._param import EmbeddingParam

__all__ = ["DEFAULT_DIMENSIONS", "HashingProvider"]

DEFAULT_DIMENSIONS = 384
"""The vector size when :attr:`EmbeddingParam.dimensions` is ``None``."""

_WORD = re.compile(r"\w+")
_CHAR_NGRAMS = (3, 4, 5)
# Whole words carry most of the meaning; bigrams add word order, character grams add
# tolerance to inflection and typos.
_FAMILY_WEIGHTS = {"w": 1.0, "b": 0.5, "c": 0.6}


@functools.lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    """A stable unsigned 64-bit hash of ``feature``."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _features(text: str) -> dict[str, list[str]]:
    """The features of ``text``, by family: ``w`` words, ``b`` bigrams, ``c`` char grams."""
    words = _WORD.findall(text.casefold())
    chars: list[str] = []
    for word in words:
        marked = f"<{word}>"
        for n in _CHAR_NGRAMS:
            chars.extend(marked[i : i + n] for i in range(len(marked) - n + 1))
    bigrams = [f"{a} {b}" for a, b in itertools.pairwise(words)]
    return {"w": words, "b": bigrams, "c": chars}


class HashingProvider(EmbeddingProvider):
    """Feature hashing into ``dimensions`` columns (default 384); never unavailable."""

    def __init__(self, param: EmbeddingParam) -> None:
        self._dim = param.dimensions or DEFAULT_DIMENSIONS

    @property
    def model_id(self) -> str:
        """``"hashing:<dimensions>"``."""
        return f"hashing:{self._dim}"

    @property
    def dim(self) -> int:
        """The configured vector size."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Hash each text; a text with no word characters gives a zero row. Never raises."""
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for family, features in _features(text).items():
                if not features:
                    continue
                hashes = np.fromiter(
                    (_feature_hash(f"{family}:{f}") for f in features), dtype=np.uint64, count=len(features)
                )
                columns = (hashes % np.uint64(self._dim)).astype(np.intp)
                signs = np.where(hashes >> np.uint64(63), -1.0, 1.0).astype(np.float32)
                block = np.zeros(self._dim, dtype=np.float32)
                np.add.at(block, columns, signs)
                norm = float(np.linalg.norm(block))
                if norm > 0.0:
                    out[row] += block * np.float32(_FAMILY_WEIGHTS[family] / norm)
        return out
