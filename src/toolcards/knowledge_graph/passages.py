"""What of an entity is embedded: its head and windows of its observations, each on its own.

An entity embedded as one text is seen only as far as the embedding model reads (a few
hundred tokens): the facts of a long entity past that point were never embedded. So an
entity is embedded as several passages, each within the model's reach:

* its **head**, key ``h:<name>``: ``name (type): description``;
* **windows** of its observations that hold, key ``w:<name>:<n>``: consecutive
  observations joined by newlines, each window filled up to :data:`WINDOW_CHARS`
  characters (an observation longer than that is a window of its own).

An entity's vector score is its best passage's cosine. Windows rather than one vector per
observation: a window of short observations is still within the model's reach, and an
entity of fifty short facts costs a few vectors instead of fifty, which keeps the whole
graph's vectors small enough to search every one of them on each query. Appending an
observation changes only the last window, so only it is embedded again.
"""

from __future__ import annotations

from toolcards.knowledge_graph.models import Entity

__all__ = ["WINDOW_CHARS", "head_key", "owner_of", "passage_texts", "windows"]

WINDOW_CHARS = 1000
"""A window's length in characters (about 250 tokens, the reach of small embedding models)."""


def head_key(name: str) -> str:
    """The key of entity ``name``'s head passage."""
    return f"h:{name}"


def owner_of(key: str) -> str:
    """The name of the entity a passage key belongs to."""
    if key.startswith("w:"):
        return key[2:].rpartition(":")[0]
    return key[2:]


def windows(entity: Entity) -> list[tuple[str, list[str]]]:
    """``(key, observation ids)`` of each window of ``entity``'s observations that hold, in order."""
    found: list[tuple[str, list[str]]] = []
    ids: list[str] = []
    size = 0
    for observation in entity.observations:
        if observation.invalid_at is not None:
            continue
        if ids and size + len(observation.text) + 1 > WINDOW_CHARS:
            found.append((f"w:{entity.name}:{len(found)}", ids))
            ids, size = [], 0
        ids.append(observation.id)
        size += len(observation.text) + 1
    if ids:
        found.append((f"w:{entity.name}:{len(found)}", ids))
    return found


def passage_texts(entity: Entity) -> dict[str, str]:
    """Passage key → text, for every passage of ``entity`` (see the module docstring)."""
    head = f"{entity.name} ({entity.entity_type})"
    if entity.description:
        head += f": {entity.description}"
    texts = {head_key(entity.name): head}
    if entity.observations:
        text_of = {observation.id: observation.text for observation in entity.observations}
        for key, ids in windows(entity):
            texts[key] = "\n".join(text_of[i] for i in ids)
    return texts
