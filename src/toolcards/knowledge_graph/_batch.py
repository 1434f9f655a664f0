"""The update rules: one batch of changes, or one merge, staged over the committed graph.

:func:`stage_update` applies a batch in a fixed order (create entities, create relations,
update entities, delete relations, delete entities), so an entity and relations to it can be
created together; :func:`stage_merge` folds entities into one. Neither changes anything
committed: the actor persists the staged rows and applies them.

Rules: names and aliases (names merged into another entity) are unique; a reference to an alias
means its entity, and creating under an alias is refused. Names are stored composed (NFC), and
a reference in either form finds the entity. A relation needs both entities; one whose
``(from, to, type)`` holds is skipped and reported, one that no longer holds is recorded again.
Deleting an entity deletes its relations. An update supersedes and invalidates, then removes
observations (exact text), then adds new ones, dropping duplicates; a fact that no longer holds
is kept with who said so, when and why. A merge names only entities that hold. A batch is all
or nothing: one broken part (an error saying what to do next) and nothing is staged. Every
staged fact carries the batch's :class:`Stamp`, and every new observation an id from the
batch's change number and its place.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from toolcards.core._words import name_key
from toolcards.knowledge_graph._models import (
    Entity,
    EntityCreate,
    EntityUpdate,
    MergeReport,
    Observation,
    Provenance,
    Relation,
    RelationCreate,
    RelationDelete,
    RelationKey,
    UpdateReport,
)
from toolcards.knowledge_graph._render import relation_text

__all__ = ["MergeBatch", "Stamp", "UpdateBatch", "stage_merge", "stage_update"]

SUPERSEDED = "superseded"
"""The reason recorded on an observation replaced by ``supersede``."""


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _forms(name: str) -> tuple[str, ...]:
    """``name`` as given, then composed (NFC) if that differs: new names are stored composed,
    and a model may send the decomposed form of one (or the graph hold a name stored before)."""
    composed = unicodedata.normalize("NFC", name)
    return (name,) if composed == name else (name, composed)


@dataclass(frozen=True, kw_only=True, slots=True)
class Stamp:
    """Who records a batch and when: the provenance every fact it stages carries."""

    agent: str
    """The member's handle, ``@Name``."""
    task_id: int | None
    """The task the member had claimed, if any."""
    now: datetime
    """The batch's time (UTC), taken once under the store's lock."""
    seq: int
    """The graph's change number this batch becomes; new observation ids start with it."""

    def provenance(self) -> dict[str, Any]:
        """The provenance fields of a fact recorded by this batch."""
        return {"created_by": self.agent, "task_id": self.task_id, "created_at": self.now}

    def invalidation(self, reason: str) -> dict[str, Any]:
        """The fields that mark a fact as no longer holding, said by this batch's member."""
        return {"invalid_at": self.now, "invalidated_by": self.agent, "reason": reason}


def _invalidates_only(item: EntityUpdate, name: str) -> bool:
    """Whether ``item`` only marks facts of ``name`` as no longer holding: what an update of
    an entity that no longer holds may still do (the entity again is refused as twice)."""
    changes = item.model_dump(exclude_defaults=True, exclude={"name", "invalidate"})
    return bool(item.invalidate) and not changes


def _since(fact: Provenance) -> str:
    """`` (by @B on 2026-03-01: reason)``: who said a fact no longer holds, and why."""
    when = f" on {fact.invalid_at:%Y-%m-%d %H:%M} UTC" if fact.invalid_at is not None else ""
    why = f": {fact.reason}" if fact.reason else ""
    return f" (by {fact.invalidated_by or 'someone'}{when}{why})"


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
    stamp: Stamp
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Alias → the name of the entity it was merged into."""
    similar: Callable[[str], list[str]] | None = None
    """Name → existing names (or aliases) close to it, for the report's suggestions."""
    entities: dict[str, Entity | None] = field(default_factory=dict)
    """Staged entities by name; ``None`` deletes."""
    relations: dict[RelationKey, Relation | None] = field(default_factory=dict)
    """Staged relations by key; ``None`` deletes."""
    report: UpdateReport = field(default_factory=UpdateReport)
    _next_id: int = 0

    def entity(self, name: str) -> Entity | None:
        """The entity as this batch sees it: staged if staged, else committed; ``None`` if absent."""
        if name in self.entities:
            return self.entities[name]
        return self.committed_entities.get(name)

    def resolve(self, name: str) -> str:
        """``name`` (as stored, :func:`_forms`), or the entity it is an alias of."""
        if self.entity(name) is not None:  # the common case, without normalizing the name
            return name
        for form in _forms(name):
            if self.entity(form) is not None:
                return form
            if form in self.aliases:
                return self.aliases[form]
        return name

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
        """`` (did you mean 'X'?)`` for a close existing name, else ``""``. A name that differs
        only in case and spacing comes first, as reads compare names (``DB`` finds ``db``, and
        creating ``DB`` would make a second entity)."""
        from rapidfuzz import fuzz, process

        names = [n for n in self.committed_entities if n not in self.entities]
        names.extend(n for n, e in self.entities.items() if e is not None)
        wanted = name_key(name)
        same = next((n for n in names if name_key(n) == wanted), None) if wanted else None
        if same is not None:
            return f" (did you mean {same!r}?)"
        match = process.extractOne(name, names, scorer=fuzz.WRatio, score_cutoff=85)
        return f" (did you mean {match[0]!r}?)" if match else ""

    def new_observation(self, text: str) -> Observation:
        """An observation recorded by this batch, with the next id."""
        return Observation.model_validate(self._observation_fields(text))

    def _observation_fields(self, text: str) -> dict[str, Any]:
        self._next_id += 1
        stamp = self.stamp
        return {
            "id": f"{stamp.seq}.{self._next_id}",
            "text": text,
            "created_by": stamp.agent,
            "task_id": stamp.task_id,
            "created_at": stamp.now,
        }

    def _stage_entity(self, entity: Entity) -> None:
        self.entities[entity.name] = entity
        if entity.name not in self.report.created_entities and entity.name not in self.report.updated_entities:
            self.report.updated_entities.append(entity.name)

    def create_entity(self, item: EntityCreate) -> None:
        """Stage a new entity; a taken name or alias is an error, a close one a suggestion."""
        existing = self.entity(item.name)
        if existing is not None and existing.invalid_at is not None:
            self.report.errors.append(
                f"Entity {item.name!r} exists but no longer holds{_since(existing)}, and its name stays "
                "taken by its history. Choose another name."
            )
            return
        if existing is not None:
            self.report.errors.append(f"Entity {item.name!r} already exists. To change it, put it in update_entities.")
            return
        if item.name in self.aliases:
            self.report.errors.append(
                f"{item.name!r} was merged into {self.aliases[item.name]!r} and is its alias; "
                f"update {self.aliases[item.name]!r} instead."
            )
            return
        # One validation in pydantic's core per entity, observations included: the fastest way
        # to build a thousand of them.
        self.entities[item.name] = Entity.model_validate(
            {
                "name": item.name,
                "entity_type": item.entity_type,
                "description": item.description,
                "observations": [self._observation_fields(text) for text in _unique(item.observations)],
                "is_root": item.is_root,
                **self.stamp.provenance(),
            }
        )
        self.report.created_entities.append(item.name)
        if self.similar is not None:
            self.report.similar_names.extend((item.name, other) for other in self.similar(item.name))

    def create_relation(self, item: RelationCreate) -> None:
        """Stage a new relation; a missing end is an error, one that holds is skipped."""
        from_entity, to_entity = self.resolve(item.from_entity), self.resolve(item.to_entity)
        ends = {name: self.entity(name) for name in (from_entity, to_entity)}
        gone = [entity for entity in ends.values() if entity is not None and entity.invalid_at is not None]
        if gone:
            self.report.errors.append(
                f"Relation {relation_text(item)}: entity {gone[0].name!r} no longer holds{_since(gone[0])}, "
                "so a relation to it would not show. Relate what holds now."
            )
            return
        missing = [name for name, entity in ends.items() if entity is None]
        if missing:
            names = " and ".join(f"{name!r}{self.suggestion(name)}" for name in missing)
            verb = "do" if len(missing) > 1 else "does"
            self.report.errors.append(
                f"Relation {relation_text(item)}: entity {names} {verb} not exist. "
                "Create it in create_entities (the same call works) or fix the name."
            )
            return
        relation = Relation.model_validate(
            {
                "from_entity": from_entity,
                "to_entity": to_entity,
                "relation_type": item.relation_type,
                "description": item.description,
                **self.stamp.provenance(),
            }
        )
        key = relation.key
        existing = self.relation(key)
        if existing is not None and existing.current:
            self.report.skipped_relations.append(existing)
            return
        self.relations[key] = relation
        self.report.created_relations.append(relation)

    def update_entity(self, item: EntityUpdate) -> None:
        """Stage superseded, invalidated, removed and added observations and changed fields;
        an unknown entity, observation or relation is an error."""
        name = self.resolve(item.name)
        entity = self.entity(name)
        if entity is None:
            self.report.errors.append(
                f"Entity {item.name!r} does not exist{self.suggestion(item.name)}. Create it in create_entities."
            )
            return
        if entity.invalid_at is not None and not _invalidates_only(item, name):
            self.report.errors.append(
                f"Entity {name!r} no longer holds{_since(entity)}: a change to it would not show in reads "
                "or searches (include_invalid=true shows it as it was). Record what holds now under another "
                "name."
            )
            return
        errors = self.report.errors
        before = len(errors)
        edits = _ObservationEdits(self, name, entity.observations)
        for old, new_text in item.supersede.items():
            edits.supersede(old, new_text)
        entity_reason: str | None = None
        for target, reason in item.invalidate.items():
            if target in (name, item.name) or name in _forms(target):
                entity_reason = reason
            elif target.startswith(("-[", f"{name} -[")):
                self._invalidate_relation(name, target, reason)
            else:
                edits.invalidate(target, reason)
        changes: dict[str, Any] = {"observations": edits.removed_and_added(item)}
        for field_name in ("entity_type", "description", "is_root"):
            value = getattr(item, field_name)
            if value is not None:
                changes[field_name] = value
        if entity_reason is not None:
            self._invalidate_entity(entity, entity_reason, changes)
        if len(errors) > before:
            return
        updated = entity.model_copy(update=changes)
        if updated != entity:
            self._stage_entity(updated)

    def _invalidate_entity(self, entity: Entity, reason: str, changes: dict[str, Any]) -> None:
        """Add to ``changes`` that ``entity`` no longer holds, and stage the same for each of
        its relations that still held; an entity that already no longer holds is an error."""
        name = entity.name
        if entity.invalid_at is not None:
            self.report.errors.append(f"Entity {name!r} already no longer holds{_since(entity)}.")
            return
        changes.update(self.stamp.invalidation(reason))
        self.report.invalidated.append(name)
        for key in self.relation_keys_of(name):
            relation = self.relation(key)
            if relation is not None and relation.current:
                self.relations[key] = relation.model_copy(update=self.stamp.invalidation(f"{name} no longer holds"))
                self.report.invalidated.append(relation_text(relation))

    def _invalidate_relation(self, name: str, target: str, reason: str) -> None:
        text = target.removeprefix(name).strip()
        relation_type, _, to_entity = text.removeprefix("-[").partition("]->")
        key = (name, self.resolve(to_entity.strip()), relation_type.strip())
        relation = self.relation(key)
        if relation is None or not relation_type or not to_entity.strip():
            types = [k[2] for k in self.relation_keys_of(name) if k[0] == name]
            hint = f" Its outgoing relation types: {', '.join(sorted(set(types)))}." if types else ""
            self.report.errors.append(
                f"Cannot invalidate {target!r}: {name!r} has no such relation (write '-[type]-> target').{hint}"
            )
            return
        if not relation.current:
            self.report.errors.append(
                f"Cannot invalidate {relation_text(relation)}: it already no longer holds{_since(relation)}."
            )
            return
        self.relations[key] = relation.model_copy(update=self.stamp.invalidation(reason))
        self.report.invalidated.append(relation_text(relation))

    def delete_relation(self, item: RelationDelete) -> None:
        """Stage a relation's deletion; an unknown triple is an error naming the existing types."""
        key = (self.resolve(item.from_entity), self.resolve(item.to_entity), item.relation_type)
        relation = self.relation(key)
        if relation is None:
            types = [k[2] for k in self.relation_keys_of(key[0]) if k[0] == key[0] and k[1] == key[1]]
            hint = f" Relations from {item.from_entity!r} to {item.to_entity!r}: {', '.join(types)}." if types else ""
            self.report.errors.append(
                f"Relation {item.from_entity} -[{item.relation_type}]-> {item.to_entity} does not exist.{hint}"
            )
            return
        self.relations[key] = None
        self.report.deleted_relations.append(relation)

    def delete_entity(self, name: str) -> None:
        """Stage an entity's deletion with all its relations; an unknown name is an error."""
        name = next((form for form in _forms(name) if self.entity(form) is not None), name)
        if self.entity(name) is None:
            if name in self.aliases:
                self.report.errors.append(
                    f"{name!r} is an alias of {self.aliases[name]!r} (merged); name {self.aliases[name]!r} "
                    "to delete it."
                )
                return
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
    stamp: Stamp,
    aliases: Mapping[str, str] | None = None,
    similar: Callable[[str], list[str]] | None = None,
    create_entities: Sequence[EntityCreate] = (),
    update_entities: Sequence[EntityUpdate] = (),
    delete_entities: Sequence[str] = (),
    create_relations: Sequence[RelationCreate] = (),
    delete_relations: Sequence[RelationDelete] = (),
) -> UpdateBatch:
    """Stage one batch over the committed ``entities``, ``relations`` and ``links`` (read only).

    Args:
        stamp: who records the batch, when, and its change number.
        aliases: alias → the entity it was merged into.
        similar: name → existing names close to it (suggested, never merged).

    Returns:
        The staged rows and the report; ``report.changed`` says whether there is anything
        to commit. When a part is refused, nothing is staged and the report lists only
        the refusals.
    """
    batch = UpdateBatch(entities, relations, links, stamp, aliases or {}, similar)
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


@dataclass(slots=True)
class MergeBatch:
    """One merge's staged changes: the merged entity, the deleted sources, the re-pointed relations."""

    entities: dict[str, Entity | None] = field(default_factory=dict)
    relations: dict[RelationKey, Relation | None] = field(default_factory=dict)
    report: MergeReport = field(default_factory=lambda: MergeReport(into=""))


def stage_merge(
    entities: Mapping[str, Entity],
    relations: Mapping[RelationKey, Relation],
    links: Mapping[str, Mapping[RelationKey, None]],
    *,
    stamp: Stamp,
    into: str,
    sources: Sequence[str],
    aliases: Mapping[str, str] | None = None,
) -> MergeBatch:
    """Stage merging ``sources`` into ``into`` over the committed graph (read only).

    ``into`` keeps its name, type, validity and provenance; it gains the sources'
    observations (with their ids and provenance; one whose text ``into`` already holds is
    folded into it), their aliases and names as aliases, their relations re-pointed to it,
    and as observations the sources' descriptions that differ from the kept one (an empty
    description takes the first source's). Relations between merged entities are dropped.
    A re-pointed relation whose triple ``into`` already has is dropped too, unless it holds
    and the one ``into`` has no longer does: then it is recorded in its place, as
    ``create_relations`` records again a relation that no longer holds. The sources are
    deleted.

    A merge moves facts that hold, so every entity it names must hold: merging a source that
    no longer holds would make its facts hold again, and merging into a target that no
    longer holds would hide the sources' facts from every read and take their names.

    Returns:
        The staged rows and a :class:`MergeReport`; refused (``errors``, nothing staged)
        when ``into`` is missing, no longer holds or is among the sources, a source is
        missing or no longer holds, or no source is given.
    """
    aliases = aliases or {}

    def stored(name: str) -> str:
        return next((form for form in _forms(name) if form in entities or form in aliases), name)

    into = stored(into.strip())
    names = _unique(stored(name.strip()) for name in sources if name.strip())
    batch = MergeBatch(report=MergeReport(into=into, sources=names))
    target = entities.get(into)
    batch.report.errors.extend(_merge_refusals(entities, aliases, into, names))
    if batch.report.errors or target is None:
        return batch
    report = batch.report
    observations = list(target.observations)
    holding = {o.text for o in observations if o.current}
    merged_aliases = list(target.aliases)
    description = target.description
    is_root = target.is_root
    next_id = 0
    for name in names:
        source = entities[name]
        for observation in source.observations:
            if observation.current and observation.text in holding:
                report.folded_observations += 1
                continue
            if observation.current:
                holding.add(observation.text)
            observations.append(observation)
            report.moved_observations += 1
        if source.description and not description:
            description = source.description
        elif source.description and source.description != description and source.description not in holding:
            next_id += 1
            holding.add(source.description)
            observations.append(
                Observation(
                    id=f"{stamp.seq}.{next_id}",
                    text=source.description,
                    created_by=source.created_by or stamp.agent,
                    task_id=source.task_id,
                    created_at=source.created_at or stamp.now,
                )
            )
            report.descriptions.append(source.description)
        if source.entity_type != target.entity_type and source.entity_type not in report.dropped_types:
            report.dropped_types.append(source.entity_type)
        for alias in [name, *source.aliases]:
            if alias != into and alias not in merged_aliases:
                merged_aliases.append(alias)
                report.aliases.append(alias)
        is_root = is_root or source.is_root
    batch.entities[into] = target.model_copy(
        update={"observations": observations, "aliases": merged_aliases, "description": description, "is_root": is_root}
    )
    for name in names:
        batch.entities[name] = None
    _repoint_relations(batch, relations, links, into, names)
    return batch


def _repoint_relations(
    batch: MergeBatch,
    relations: Mapping[RelationKey, Relation],
    links: Mapping[str, Mapping[RelationKey, None]],
    into: str,
    names: Sequence[str],
) -> None:
    """Stage the relations of the merged ``names`` re-pointed to ``into`` (see :func:`stage_merge`)."""
    report = batch.report
    merged = {into, *names}
    seen: dict[RelationKey, None] = {}
    for name in names:
        for key in links.get(name, {}):
            if key in seen:
                continue
            seen[key] = None
            relation = relations[key]
            batch.relations[key] = None
            new_from = into if key[0] in merged else key[0]
            new_to = into if key[1] in merged else key[1]
            new_key = (new_from, new_to, key[2])
            existing = batch.relations[new_key] if new_key in batch.relations else relations.get(new_key)
            # One relation per triple: keep the one that holds; when neither does (or both
            # do), the one already there.
            if (key[0] in merged and key[1] in merged) or (
                existing is not None and (existing.current or not relation.current)
            ):
                report.dropped_relations.append(relation)
                continue
            moved = relation.model_copy(update={"from_entity": new_from, "to_entity": new_to})
            batch.relations[new_key] = moved
            report.moved_relations.append(moved)


def _merge_refusals(
    entities: Mapping[str, Entity], aliases: Mapping[str, str], into: str, names: list[str]
) -> list[str]:
    """Why merging ``names`` into ``into`` cannot be done (nothing: it can)."""
    errors = []
    target = entities.get(into)
    if target is None:
        owner = aliases.get(into)
        hint = f" It is an alias of {owner!r}; merge into {owner!r}." if owner else " Name an existing entity."
        errors.append(f"Cannot merge into {into!r}: no such entity.{hint}")
    elif not target.current:
        errors.append(
            f"Cannot merge into {into!r}: it no longer holds{_since(target)}, so what moved into it would "
            "not show and its names could not be used again. Merge into an entity that holds."
        )
    if not names:
        errors.append("Name at least one entity in sources to merge into the target.")
    for name in names:
        source = entities.get(name)
        if name == into:
            errors.append(f"Cannot merge {name!r} into itself; list only the other entities in sources.")
        elif source is None:
            owner = aliases.get(name)
            errors.append(
                f"{name!r} was already merged into {owner!r}."
                if owner
                else f"Cannot merge {name!r}: no such entity. Search the graph for its exact name."
            )
        elif not source.current:
            errors.append(
                f"Cannot merge {name!r}: it no longer holds{_since(source)}, and merging it would make its "
                f"facts hold again. Leave it out: it stays as history (include_invalid=true shows it); "
                f"record on {into!r} with update_graph what of it still holds."
            )
    return errors


class _ObservationEdits:
    """One entity's observations while an update is staged on them: superseded, invalidated,
    removed and added in the order ``update_graph`` applies them, errors to the report."""

    def __init__(self, batch: UpdateBatch, name: str, observations: Sequence[Observation]) -> None:
        self.batch = batch
        self.name = name
        self.observations = list(observations)
        self.position = {observation.id: i for i, observation in enumerate(self.observations)}
        self.errors = batch.report.errors

    def holding(self, text: str, verb: str) -> Observation | None:
        """The observation ``text`` that still holds, or ``None`` with the error said."""
        for observation in self.observations:
            if observation.text == text and observation.invalid_at is None:
                return observation
        past = [o for o in self.observations if o.text == text]
        if past:
            self.errors.append(
                f"Cannot {verb} {text!r} of {self.name!r}: it already no longer holds{_since(past[-1])}. "
                "Only observations that hold can be superseded or invalidated."
            )
        else:
            self.errors.append(
                f"Cannot {verb} {text!r}: entity {self.name!r} has no such observation. "
                "Give the exact text as search results show it."
            )
        return None

    def replace(self, observation: Observation, **changes: Any) -> None:
        self.observations[self.position[observation.id]] = observation.model_copy(update=changes)

    def supersede(self, old: str, new_text: str) -> None:
        """``old`` no longer holds, superseded by ``new_text`` (added unless it already holds)."""
        if old == new_text:
            self.errors.append(f"Superseding {old!r} of {self.name!r} with the same text changes nothing; drop it.")
            return
        observation = self.holding(old, "supersede")
        if observation is None:
            return
        replacement = next((o for o in self.observations if o.text == new_text and o.invalid_at is None), None)
        if replacement is None:
            replacement = self.batch.new_observation(new_text)
            self.position[replacement.id] = len(self.observations)
            self.observations.append(replacement)
        self.replace(observation, superseded_by=replacement.id, **self.batch.stamp.invalidation(SUPERSEDED))
        self.batch.report.invalidated.append(f"{self.name}: {old}")

    def invalidate(self, text: str, reason: str) -> None:
        """The observation ``text`` no longer holds, for ``reason``."""
        observation = self.holding(text, "invalidate")
        if observation is not None:
            self.replace(observation, **self.batch.stamp.invalidation(reason))
            self.batch.report.invalidated.append(f"{self.name}: {text}")

    def removed_and_added(self, item: EntityUpdate) -> list[Observation]:
        """The observations without ``item``'s removals (each must hold now) and with its
        additions (those not already holding)."""
        removals = _unique(item.remove_observations)
        absent = [text for text in removals if not any(o.text == text and o.current for o in self.observations)]
        if absent:
            listed = "; ".join(repr(text) for text in absent)
            self.errors.append(
                f"Entity {item.name!r} has no observation {listed}. "
                "Remove observations by their exact text as search results show it."
            )
        removed = set(removals) - set(absent)
        observations = [o for o in self.observations if not (o.current and o.text in removed)]
        holding_texts = {o.text for o in observations if o.invalid_at is None}
        for text in _unique(item.add_observations):
            if text not in holding_texts:
                holding_texts.add(text)
                observations.append(self.batch.new_observation(text))
        return observations
