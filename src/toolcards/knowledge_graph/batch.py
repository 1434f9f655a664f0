"""The update rules: one batch of changes staged over the committed graph.

:func:`stage_update` applies a batch's parts in a fixed order — create entities, create
relations, update entities, delete relations, delete entities — so an entity and relations
to it can be created together. It changes nothing committed: the result lists the staged
rows and an :class:`UpdateReport`, and the actor persists and applies them.

Rules: an entity name is unique; a relation needs both entities; a relation whose
``(from, to, type)`` triple exists is skipped (reported, not duplicated); deleting an
entity deletes its relations; an update removes observations (exact text) before adding
new ones, and duplicates are dropped. A broken part becomes an error message that says
what to do next, and a batch is all or nothing: one broken part and nothing of it is staged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcards.knowledge_graph.models import (
    Entity,
    EntityCreate,
    EntityUpdate,
    Relation,
    RelationCreate,
    RelationDelete,
    RelationKey,
    UpdateReport,
)
from toolcards.knowledge_graph.render import relation_text

__all__ = ["UpdateBatch", "stage_update"]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(slots=True)
class UpdateBatch:
    """One update's staged changes over the committed graph, which it only reads.

    Each method applies one rule and records the outcome in :attr:`report`: a change in
    :attr:`entities` / :attr:`relations` (``None`` deletes), or an error saying what to do.
    """

    committed_entities: Mapping[str, Entity]
    committed_relations: Mapping[RelationKey, Relation]
    links: Mapping[str, Mapping[RelationKey, None]]
    """Committed entity name → keys of the relations touching it."""
    entities: dict[str, Entity | None] = field(default_factory=dict)
    """Staged entities by name; ``None`` deletes."""
    relations: dict[RelationKey, Relation | None] = field(default_factory=dict)
    """Staged relations by key; ``None`` deletes."""
    report: UpdateReport = field(default_factory=UpdateReport)

    def entity(self, name: str) -> Entity | None:
        """The entity as this batch sees it: staged if staged, else committed; ``None`` if absent."""
        if name in self.entities:
            return self.entities[name]
        return self.committed_entities.get(name)

    def relation(self, key: RelationKey) -> Relation | None:
        """The relation as this batch sees it; ``None`` if absent."""
        if key in self.relations:
            return self.relations[key]
        return self.committed_relations.get(key)

    def relation_keys_of(self, name: str) -> list[RelationKey]:
        """Keys of the relations touching ``name`` (either end) as this batch sees them."""
        keys = dict.fromkeys(self.links.get(name, {}))
        keys.update(dict.fromkeys(key for key in self.relations if name in (key[0], key[1])))
        return [key for key in keys if self.relation(key) is not None]

    def suggestion(self, name: str) -> str:
        """`` (did you mean 'X'?)`` for a close existing name, else ``""``."""
        from rapidfuzz import fuzz, process

        names = [n for n in self.committed_entities if n not in self.entities]
        names.extend(n for n, e in self.entities.items() if e is not None)
        match = process.extractOne(name, names, scorer=fuzz.WRatio, score_cutoff=85)
        return f" (did you mean {match[0]!r}?)" if match else ""

    def create_entity(self, item: EntityCreate) -> None:
        """Stage a new entity; a taken name is an error."""
        if self.entity(item.name) is not None:
            self.report.errors.append(f"Entity {item.name!r} already exists. To change it, put it in update_entities.")
            return
        self.entities[item.name] = Entity(
            name=item.name,
            entity_type=item.entity_type,
            description=item.description,
            observations=_unique(item.observations),
            is_root=item.is_root,
        )
        self.report.created_entities.append(item.name)

    def create_relation(self, item: RelationCreate) -> None:
        """Stage a new relation; a missing end is an error, an existing triple is skipped."""
        from_entity, to_entity = item.from_entity, item.to_entity
        ends = (from_entity,) if from_entity == to_entity else (from_entity, to_entity)
        missing = [name for name in ends if self.entity(name) is None]
        if missing:
            names = " and ".join(f"{name!r}{self.suggestion(name)}" for name in missing)
            verb = "do" if len(missing) > 1 else "does"
            self.report.errors.append(
                f"Relation {relation_text(item)}: entity {names} {verb} not exist. "
                "Create it in create_entities (the same call works) or fix the name."
            )
            return
        relation = Relation(
            from_entity=from_entity,
            to_entity=to_entity,
            relation_type=item.relation_type,
            description=item.description,
        )
        key = relation.key
        if self.relation(key) is not None:
            self.report.skipped_relations.append(relation)
            return
        self.relations[key] = relation
        self.report.created_relations.append(relation)

    def update_entity(self, item: EntityUpdate) -> None:
        """Stage changed fields and observations; an unknown entity or observation is an error."""
        entity = self.entity(item.name)
        if entity is None:
            self.report.errors.append(
                f"Entity {item.name!r} does not exist{self.suggestion(item.name)}. Create it in create_entities."
            )
            return
        observations = list(entity.observations)
        removals = _unique(item.remove_observations)
        absent = [text for text in removals if text not in observations]
        removed = set(removals) - set(absent)
        observations = [text for text in observations if text not in removed]
        observations.extend(text for text in _unique(item.add_observations) if text not in observations)
        changes: dict[str, Any] = {"observations": observations}
        for name in ("entity_type", "description", "is_root"):
            value = getattr(item, name)
            if value is not None:
                changes[name] = value
        updated = entity.model_copy(update=changes)
        if absent:
            listed = "; ".join(repr(text) for text in absent)
            self.report.errors.append(
                f"Entity {item.name!r} has no observation {listed}. "
                "Remove observations by their exact text as search results show it."
            )
        if updated != entity:
            self.entities[item.name] = updated
            if item.name not in self.report.updated_entities:
                self.report.updated_entities.append(item.name)

    def delete_relation(self, item: RelationDelete) -> None:
        """Stage a relation's deletion; an unknown triple is an error naming the existing types."""
        relation = self.relation(item.key)
        if relation is None:
            types = [
                key[2]
                for key in self.relation_keys_of(item.from_entity)
                if key[0] == item.from_entity and key[1] == item.to_entity
            ]
            hint = f" Relations from {item.from_entity!r} to {item.to_entity!r}: {', '.join(types)}." if types else ""
            self.report.errors.append(
                f"Relation {item.from_entity} -[{item.relation_type}]-> {item.to_entity} does not exist.{hint}"
            )
            return
        self.relations[item.key] = None
        self.report.deleted_relations.append(relation)

    def delete_entity(self, name: str) -> None:
        """Stage an entity's deletion with all its relations; an unknown name is an error."""
        if self.entity(name) is None:
            self.report.errors.append(f"Entity {name!r} does not exist{self.suggestion(name)}; nothing was deleted.")
            return
        for key in self.relation_keys_of(name):
            relation = self.relation(key)
            if relation is not None:
                self.relations[key] = None
                self.report.deleted_relations.append(relation)
        self.entities[name] = None
        self.report.deleted_entities.append(name)


def stage_update(
    entities: Mapping[str, Entity],
    relations: Mapping[RelationKey, Relation],
    links: Mapping[str, Mapping[RelationKey, None]],
    *,
    create_entities: Sequence[EntityCreate] = (),
    update_entities: Sequence[EntityUpdate] = (),
    delete_entities: Sequence[str] = (),
    create_relations: Sequence[RelationCreate] = (),
    delete_relations: Sequence[RelationDelete] = (),
) -> UpdateBatch:
    """Stage one batch over the committed ``entities``, ``relations`` and ``links`` (read only).

    Returns:
        The staged rows and the report; ``report.changed`` says whether there is anything
        to commit. When a part is refused, nothing is staged and the report lists only
        the refusals.
    """
    batch = UpdateBatch(entities, relations, links)
    for create in create_entities:
        batch.create_entity(create)
    for relation_create in create_relations:
        batch.create_relation(relation_create)
    for entity_update in update_entities:
        batch.update_entity(entity_update)
    for relation_delete in delete_relations:
        batch.delete_relation(relation_delete)
    for name in delete_entities:
        batch.delete_entity(name.strip())
    if batch.report.errors:  # all or nothing
        batch.entities.clear()
        batch.relations.clear()
        batch.report = UpdateReport(errors=batch.report.errors)
    return batch
