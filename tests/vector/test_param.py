"""EmbeddingParam: defaults, validation and an exact round trip (it is stored on cards)."""

from __future__ import annotations

import pydantic
import pytest

from toolcards.vector import EmbeddingParam


def test_defaults_pick_the_local_provider() -> None:
    param = EmbeddingParam()
    assert (param.provider, param.model, param.dimensions) == ("local", None, None)
    assert (param.api_key_env, param.timeout_s, param.batch_size, param.max_retries) == (
        "OPENAI_API_KEY",
        10.0,
        64,
        2,
    )


def test_round_trips_through_json_and_dict() -> None:
    param = EmbeddingParam(provider="openai", model="m", dimensions=256, base_url="http://x/v1", batch_size=8)
    assert EmbeddingParam.model_validate_json(param.model_dump_json()) == param
    assert EmbeddingParam.model_validate(param.model_dump()) == param


@pytest.mark.parametrize(
    "bad",
    [
        {"provider": "cohere"},
        {"batch_size": 0},
        {"dimensions": 0},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"modle": "typo"},
    ],
)
def test_rejects_invalid_configuration(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        EmbeddingParam.model_validate(bad)


def test_is_frozen_and_hashable() -> None:
    param = EmbeddingParam(provider="hashing")
    with pytest.raises(pydantic.ValidationError):
        param.provider = "local"
    assert hash(param) == hash(EmbeddingParam(provider="hashing"))
