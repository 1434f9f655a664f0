"""The labelled set ``python -m bench memory`` reads is the one its generator makes."""

from __future__ import annotations

from bench._memory_set import generate, load


def test_the_shipped_set_is_the_generated_one() -> None:
    shipped = load()
    assert shipped == generate()
    names = {entity["name"] for entity in shipped["entities"]}
    assert len(names) == 120 and all(question["entity"] in names for question in shipped["questions"])
    assert {question["kind"] for question in shipped["questions"]} == {"own words", "paraphrase"}
