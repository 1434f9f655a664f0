"""Counting tokens: the o200k count, or a stated estimate where the encoder is absent.

The ledger (:mod:`toolcards.core._ledger`) records what every call's arguments and result cost
in tokens, and the token benchmarks measure what the model reads on every request; both count
the same way, so their figures compare. The count is OpenAI's ``o200k_base`` encoding (GPT-4o
and later), built from the encoding file shipped in the ``bpe-openai`` wheel and checked
against tiktoken's published hash, so nothing is downloaded. Install the ``tokens`` extra
(``tiktoken`` and ``bpe-openai``) to get it; the encoder loads on the first count, not at
import.

A text longer than :data:`EXACT_CHARS` is counted from :data:`SAMPLES` windows spread over it,
scaled to its length: the encoder's time grows with the text (a refused 10 MB argument took
about ten seconds of CPU), while a ledger needs the size of such a text, not its last token.

Without the encoder, :func:`count_tokens` estimates: one token per four characters, rounded up
(:func:`estimate_tokens`). On English prose and JSON tool results o200k comes close to that
(from three to five characters a token); code and non-Latin scripts take more tokens. The
ledger says which of the two it uses (:func:`token_method`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CHARS_PER_TOKEN",
    "EXACT_CHARS",
    "O200K_SHA256",
    "count_tokens",
    "count_tokens_batch",
    "estimate_tokens",
    "text_of",
    "token_method",
]

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""tiktoken's published hash of ``o200k_base.tiktoken``."""

CHARS_PER_TOKEN = 4
"""The estimate without the encoder: one token per this many characters, rounded up."""

EXACT_CHARS = 65_536
"""Texts up to this many characters are counted exactly; longer ones from samples."""

SAMPLES = 4
"""Windows of ``EXACT_CHARS / SAMPLES`` characters, spread over a long text, that are counted."""


@functools.cache
def o200k() -> Any | None:
    """The ``o200k_base`` encoding (a ``tiktoken.Encoding``), or ``None`` when ``tiktoken`` or
    ``bpe-openai`` is not installed. Built once per process.

    Only the encoding file is taken from ``bpe-openai``, found without importing the package
    (its import builds every encoding it ships); the ranks are checked against tiktoken's
    published hash before use.
    """
    import gzip
    import hashlib

    found = importlib.util.find_spec("bpe_openai")
    if found is None or not found.submodule_search_locations:
        return None
    try:
        import tiktoken
        from tiktoken_ext import openai_public  # type: ignore[import-untyped]
    except ImportError:
        return None
    packed = Path(next(iter(found.submodule_search_locations))) / "data" / "o200k_base.tiktoken.gz"
    try:
        plain = gzip.decompress(packed.read_bytes())
    except OSError:
        return None
    if hashlib.sha256(plain).hexdigest() != O200K_SHA256:
        raise ValueError(f"{packed} does not hold tiktoken's o200k_base encoding (its hash differs)")
    ranks = _ranks(plain)
    real_load = openai_public.load_tiktoken_bpe

    def load_local(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return ranks

    # The encoding's definition (pattern, special tokens) is tiktoken's; only the file is local.
    openai_public.load_tiktoken_bpe = load_local
    try:
        spec = openai_public.o200k_base()
    finally:
        openai_public.load_tiktoken_bpe = real_load
    return tiktoken.Encoding(**spec)


def _ranks(plain: bytes) -> dict[bytes, int]:
    """The token → rank table of a ``.tiktoken`` file (one ``base64-token rank`` pair a line),
    parsed in C-level passes: the file has some 200,000 lines."""
    import binascii

    fields = plain.split()
    if len(fields) % 2:
        raise ValueError("a .tiktoken file holds pairs of a token and its rank")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def token_method() -> Literal["o200k", "estimate"]:
    """How :func:`count_tokens` counts in this process: ``"o200k"`` or ``"estimate"``. Tells
    from what is installed, without building the encoder."""
    if o200k.cache_info().currsize:
        return "o200k" if o200k() is not None else "estimate"
    found = all(importlib.util.find_spec(name) is not None for name in ("tiktoken", "bpe_openai"))
    return "o200k" if found else "estimate"


def estimate_tokens(text: str) -> int:
    """``text``'s length in tokens as estimated without an encoder: characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def count_tokens(text: str) -> int:
    """``text``'s length in o200k tokens (special-token text counted as plain text; a text over
    :data:`EXACT_CHARS` from samples), or :func:`estimate_tokens` without the encoder."""
    return count_tokens_batch([text])[0]


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """:func:`count_tokens` of each text, in one pass of the encoder (on the calling thread)."""
    encoding = o200k()
    if encoding is None:
        return [estimate_tokens(text) for text in texts]
    # The encoder's core, called directly: encode_batch hands every text to a thread pool,
    # which costs more than encoding a short text. Special-token text counts as plain text.
    encode = getattr(getattr(encoding, "_core_bpe", None), "encode_ordinary", None) or encoding.encode_ordinary

    def counted(text: str) -> int:
        try:
            return len(encode(text))
        except UnicodeEncodeError:  # lone surrogates: the public method replaces them
            return len(encoding.encode_ordinary(text))

    return [counted(text) if len(text) <= EXACT_CHARS else _sampled(text, counted) for text in texts]


def _sampled(text: str, counted: Callable[[str], int]) -> int:
    """The tokens of a long ``text``, scaled from :data:`SAMPLES` evenly spaced windows."""
    window = EXACT_CHARS // SAMPLES
    step = (len(text) - window) // (SAMPLES - 1)
    tokens = sum(counted(text[start : start + window]) for start in range(0, step * SAMPLES, step))
    return -(-tokens * len(text) // (window * SAMPLES))


def text_of(value: Any) -> str:
    """The text a model reads for ``value``: a string as it is, ``None`` as nothing, anything
    else as compact JSON (pydantic models by their fields), or its ``str`` when JSON cannot
    hold it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return ""  # images and other binary content are not text the ledger can count
    try:
        from pydantic_core import to_json

        return to_json(value, fallback=str).decode()
    except Exception:  # an object pydantic cannot walk: what it prints
        try:
            return json.dumps(value, default=str, ensure_ascii=False)
        except Exception:
            return str(value)
