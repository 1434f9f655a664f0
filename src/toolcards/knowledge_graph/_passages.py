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

import re

from toolcards.knowledge_graph._models import Entity

__all__ = ["head_key", "observation_key", "owner_of", "passage_texts", "windows"]

_SEPARATOR = "\x1f"
_CHANGE_ID = re.compile(r"\d+\.\d+")
"""An observation id of this version, ``<change>.<n>``: it never holds the separator."""


def head_key(name: str) -> str:
    """The key of entity ``name``'s head passage."""
    return f"h:{name}"


def observation_key(name: str, observation_id: str) -> str:
    """The key of entity ``name``'s observation ``observation_id``."""
    return f"w:{name}{_SEPARATOR}{observation_id}"


def owner_of(key: str) -> str:
    """The name of the entity a passage key belongs to.

    Read from the end of the key, which holds the observation id, not from the name: names
    can no longer hold the separator (a control character), but a graph stored before may
    have one that does, and its passages must not be filed under a shorter name. An id is
    either ``<change>.<n>``, after the last separator, or, for an observation stored by an
    earlier version, ``<name>#<n>``, which repeats the name: ``name SEP name#n``.
    """
    if not key.startswith("w:"):
        return key[2:]
    rest = key[2:]
    name, _, observation_id = rest.rpartition(_SEPARATOR)
    if _CHANGE_ID.fullmatch(observation_id):
        return name
    number = rest.rpartition("#")[2]
    name = rest[: (len(rest) - len(number) - 2) // 2]
    if number.isdigit() and rest == f"{name}{_SEPARATOR}{name}#{number}":
        return name
    return rest.partition(_SEPARATOR)[0]  # an id of neither form: the name holds no separator


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
