"""Token counts: o200k when the encoder is installed, a stated estimate when it is not."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from toolcards.core import _tokens as tokens


def test_o200k_counts_match_the_encoder() -> None:
    if tokens.o200k() is None:
        pytest.skip("tiktoken and bpe-openai (the tokens extra) are not installed")
    assert tokens.token_method() == "o200k"
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens_batch(["hello world", "", "<|endoftext|>"]) == [2, 0, 7]


def test_a_long_text_is_counted_from_samples_close_to_its_exact_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Encoding a 10 MB argument whole took the ledger ten seconds of CPU: past EXACT_CHARS the
    # encoder only ever sees windows of the text, and the count stays close to the exact one.
    encoding = tokens.o200k()
    if encoding is None:
        pytest.skip("tiktoken and bpe-openai (the tokens extra) are not installed")
    prose = " ".join(f"Agent {n} wrote section {n % 97} of the plan, then checked it twice." for n in range(40_000))
    exact = len(encoding.encode_ordinary(prose))
    seen: list[int] = []
    core = encoding._core_bpe

    class Watched:
        def encode_ordinary(self, text: str) -> list[int]:
            seen.append(len(text))
            return list(core.encode_ordinary(text))

    monkeypatch.setattr(encoding, "_core_bpe", Watched())
    assert abs(tokens.count_tokens(prose) - exact) / exact < 0.02
    assert tokens.count_tokens_batch(["a" * 10_000_000, "hello world"]) == [1_250_000, 2]
    assert max(seen) <= tokens.EXACT_CHARS and len(prose) > 20 * tokens.EXACT_CHARS


def test_without_the_encoder_four_characters_make_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "o200k", lambda: None)
    assert tokens.count_tokens("abcde") == 2
    assert tokens.count_tokens_batch(["abcd", "abcdefghi", ""]) == [1, 3, 0]
    assert tokens.estimate_tokens("x" * 401) == 101


def test_text_of_is_what_the_model_reads() -> None:
    class Point(BaseModel):
        x: int

    assert tokens.text_of(None) == ""
    assert tokens.text_of("as is") == "as is"
    assert tokens.text_of({"p": Point(x=1), "n": [1, 2]}) == '{"p":{"x":1},"n":[1,2]}'
    assert tokens.text_of(b"\x89PNG") == ""
    assert tokens.text_of({1, 2}) in ("[1,2]", "[2,1]")
