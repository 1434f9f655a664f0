"""What of an entity is embedded: its head and each of its observations, one by one.

An entity embedded as one text is seen only as far as the embedding model reads (a few
hundred tokens): the facts of a long entity past that point were never embedded, and a fact
among many is diluted by its neighbours. So an entity is embedded as several passages:

* its **head**, key ``h:<name>``: ``name (type): description``;
* each **observation** that holds, key ``w:<name>\x1f<observation id>``: its text.

An entity's vector score is its best passage's cosine (``bench memory`` measured one vector
per observation far ahead of windows of several observations; docs/benchmarks.md has the
figures). Observation ids never change, so adding,
superseding or invalidating one embeds only what changed; merging moves an observation to
another entity, whose key it then takes, and embeds it again.
"""

from __future__ import annotations

from toolcards.knowledge_graph._models import Entity

__all__ = ["head_key", "observation_key", "owner_of", "passage_texts", "windows"]

_SEPARATOR = "\x1f"


def head_key(name: str) -> str:
    """The key of entity ``name``'s head passage."""
    return f"h:{name}"


def observation_key(name: str, observation_id: str) -> str:
    """The key of entity ``name``'s observation ``observation_id``."""
    return f"w:{name}{_SEPARATOR}{observation_id}"


def owner_of(key: str) -> str:
    """The name of the entity a passage key belongs to."""
    if key.startswith("w:"):
        return key[2:].partition(_SEPARATOR)[0]
    return key[2:]


def windows(entity: Entity) -> list[tuple[str, list[str]]]:
    """``(key, [observation id])`` of each observation of ``entity`` that holds, in order."""
    return [
        (observation_key(entity.name, observation.id), [observation.id])
        for observation in entity.observations
        if observation.invalid_at is None
    ]


def passage_texts(entity: Entity) -> dict[str, str]:
    """Passage key → text, for every passage of ``entity`` (see the module docstring)."""
    head = f"{entity.name} ({entity.entity_type})"
    if entity.description:
        head += f": {entity.description}"
    texts = {head_key(entity.name): head}
    for observation in entity.observations:
        if observation.invalid_at is None:
            texts[observation_key(entity.name, observation.id)] = observation.text
    return texts
