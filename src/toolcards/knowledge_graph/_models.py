"""The knowledge graph's data: stored entities and relations, LLM-facing inputs, results.

Stored rows (:class:`Entity`, :class:`Relation`, an entity's :class:`Observation` rows) carry
their :class:`Provenance`: who recorded them, under which claimed task, when, and, once they
no longer hold, when, by whom and why. A fact stops holding only because a member said so
(``supersede``, ``invalidate``) and is kept, so the graph can be read as it stood at any time.

Inputs (:class:`EntityCreate`, :class:`EntityUpdate`, :class:`RelationCreate`,
:class:`RelationDelete`) reach the model's schema on every request, so they carry terse field
descriptions and their limits, and no titles or class docstrings. Results
(:class:`UpdateReport`, :class:`MergeReport`, :class:`SearchResult`) are data;
:mod:`toolcards.knowledge_graph._render` writes the text. An observation stored by an earlier
version as a plain string reads as one without provenance (:meth:`Entity.migrate`). Importing
this module loads pydantic only.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from toolcards.core._bounds import unlisted_bound

__all__ = [
    "Entity",
    "EntityCreate",
    "EntityPage",
    "EntityUpdate",
    "EntityView",
    "GraphPath",
    "KnowledgeGraph",
    "MergeReport",
    "Neighbour",
    "Observation",
    "Provenance",
    "Relation",
    "RelationCreate",
    "RelationDelete",
    "RelationKey",
    "SearchHit",
    "SearchMode",
    "SearchResult",
    "UpdateReport",
]

NAME_MAX = 120
TYPE_MAX = 60
DESCRIPTION_MAX = 500
OBSERVATION_MAX = 4000
OBSERVATIONS_MAX = 50

RelationKey = tuple[str, str, str]
"""A relation's identity: ``(from_entity, to_entity, relation_type)``."""

SearchMode = Literal["keyword", "vector", "hybrid"]

_NOT_IN_A_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (Unicode category Cc) and the two line breaks that are not one: every
place where ``str.splitlines`` splits a text is among them."""


def _one_line_name(value: str) -> str:
    """A new name or type as stored: composed (NFC), so the two forms of ``Café`` are one name;
    refused when it holds a line break or another control character (those at either end
    are stripped as spacing before).

    Names and types are printed on the first line of an entity in every answer, one entity a
    line: a line break in one would let an entity write lines that read as other entities
    (or as part of the answer), and other control characters mean nothing in a name.

    Raises:
        PydanticCustomError: a control character or line break, named with its position (not a
            ``ValueError``, which pydantic would prefix with "Value error, " in the text a model
            reads).
    """
    found = _NOT_IN_A_NAME.search(value)
    if found is not None:
        char = found.group()
        kind = "a line break" if len(f"a{char}b".splitlines()) > 1 else "a control character"
        raise PydanticCustomError(
            "not_one_line",
            f"{kind} (U+{ord(char):04X}) at character {found.start() + 1}: names and types are one line of "
            "printable text. Remove it; put longer text in description or observations.",
        )
    return unicodedata.normalize("NFC", value)


# The bounds are enforced, not listed in the schema: a model pays for every word it reads.
_Unlisted = Field(json_schema_extra=unlisted_bound)
_Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX),
    AfterValidator(_one_line_name),
    _Unlisted,
]
_Type = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=TYPE_MAX),
    AfterValidator(_one_line_name),
    _Unlisted,
]
_Description = Annotated[str, StringConstraints(strip_whitespace=True, max_length=DESCRIPTION_MAX), _Unlisted]
_Observation = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=OBSERVATION_MAX), _Unlisted
]
# A reference to an entity or relation type that already exists: its bounds were checked when it
# was created, and stating them again would cost tokens on every request for nothing.
_Ref = Annotated[str, StringConstraints(strip_whitespace=True)]


def _type_given(value: object) -> object:
    """Refuse a blank new type in the words of an update: there, leaving it out keeps the type,
    which is what an empty one most likely meant."""
    if isinstance(value, str) and not value.strip():
        # Not a ValueError: pydantic would prefix "Value error, " to the text a model reads.
        raise PydanticCustomError("empty_type", "must not be empty; omit entity_type to keep the type")
    return value


# The optional changes of an update: omitted (None) keeps what the entity has. Written `X | None`,
# which pydantic validates as X or null and so refuses with X's own error; a union with a
# `SkipJsonSchema[None]` branch answered with both branches' errors, under pydantic's internal
# names (`entity_type.function-after[...]`, `entity_type.none`). `_schema_for_models` drops the
# null from the schema.
_TypeChange = Annotated[_Type | None, BeforeValidator(_type_given)]


def _unlisted_map(schema: dict[str, Any]) -> None:
    """A text → text map: its bounds and the type of its values go without saying."""
    unlisted_bound(schema)
    schema.pop("additionalProperties", None)


_NULL = {"type": "null"}


def _schema_for_models(schema: dict[str, Any]) -> None:
    """Drop what a model does not need: titles, the class docstring, defaults, null.

    Optional fields are those missing from ``required``; their defaults (empty, false,
    unchanged) go without saying, and a model omits one rather than sending null, so an
    ``X | None`` field is listed as ``X`` (null is still accepted).
    """
    schema.pop("title", None)
    schema.pop("description", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        prop.pop("default", None)
        options = prop.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and _NULL in options:
            rest = {key: value for key, value in prop.items() if key != "anyOf"}
            schema["properties"][name] = {**next(option for option in options if option != _NULL), **rest}


class _GraphData(BaseModel):
    """Base of every model here: each is built at its first use rather than at import.

    A server with a graph card answers its first call without reading or writing the graph
    (the tools' argument schemas are shipped, :mod:`toolcards.core._shipped_schemas`), so
    building these eighteen models while it starts would only delay that answer.
    """

    model_config = ConfigDict(defer_build=True)


class _ToolInput(_GraphData):
    """Base of the LLM-facing inputs: unknown fields are refused, so a typo fails loudly."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_schema_for_models)


class Provenance(_GraphData):
    """Who recorded a fact, when, under which task, and whether and why it stopped holding.

    A fact (entity, observation, relation) holds from :attr:`created_at` until
    :attr:`invalid_at`; ``invalid_at is None`` means it holds now. Rows stored before
    provenance was kept have empty fields and count as always there.
    """

    created_by: str = ""
    """The member who recorded it (``@Name``); empty for facts stored by earlier versions."""
    task_id: int | None = None
    """The planning task that member had claimed then, if any."""
    created_at: datetime | None = None
    """When it was recorded (UTC); ``None`` for facts stored by earlier versions."""
    invalid_at: datetime | None = None
    """When a member said it no longer holds; ``None`` while it holds."""
    invalidated_by: str | None = None
    """The member who said it no longer holds."""
    reason: str | None = None
    """Why it no longer holds, as that member said (or ``superseded``)."""

    @property
    def current(self) -> bool:
        """Whether it holds now (nobody said otherwise)."""
        return self.invalid_at is None

    def recorded_by(self, moment: datetime) -> bool:
        """Whether it was recorded by ``moment`` (whether or not it still held then)."""
        return self.created_at is None or self.created_at <= moment

    def held_at(self, moment: datetime) -> bool:
        """Whether it held at ``moment``: recorded by then, and not yet said to no longer hold."""
        return self.recorded_by(moment) and (self.invalid_at is None or self.invalid_at > moment)


class Observation(Provenance):
    """One atomic fact about an entity. Immutable: a change records a new copy, so the graph
    and every answer it gave can share one."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Unique in the graph and never reused: ``"<change>.<n>"``, the graph change that recorded it
    and its place in that change (observations stored by earlier versions: ``"<entity>#<n>"``)."""
    text: str
    superseded_by: str | None = None
    """The :attr:`id` of the observation that replaced this one (``supersede``)."""


class Entity(Provenance):
    """A node of the graph. ``name`` is its unique key (case-sensitive)."""

    name: str
    entity_type: str
    description: str = ""
    observations: list[Observation] = Field(default_factory=list)
    """Every fact recorded about the entity, in the order added: those that hold (no two with
    the same text) and those that no longer do, kept as history."""
    is_root: bool = False
    """An entry point: listed in the graph summary."""
    aliases: list[str] = Field(default_factory=list)
    """Names of the entities merged into this one; searching for them finds it."""

    @model_validator(mode="before")
    @classmethod
    def migrate(cls, data: Any) -> Any:
        """Read an entity stored by an earlier version: observations were plain strings.

        Each becomes an :class:`Observation` with the id ``"<name>#<n>"`` (stable, so every
        process reads the same ids) and no provenance. The row is stored in the new form the
        next time the entity changes.
        """
        if isinstance(data, dict):
            observations = data.get("observations")
            if observations and isinstance(observations[0], str):
                name = data.get("name", "")
                data = {
                    **data,
                    "observations": [
                        {"id": f"{name}#{n}", "text": text} if isinstance(text, str) else text
                        for n, text in enumerate(observations)
                    ],
                }
        return data

    def recorded_since(self) -> datetime | None:
        """When the graph first knew the entity: the earliest of its own ``created_at`` and its
        observations'; ``None`` when one of them was stored without a time (always there).

        A merge keeps the target's ``created_at`` and moves the sources' observations with
        theirs, so what a source recorded before its target existed dates the merged entity
        back to then: a search ``as_of`` that moment still finds it (by the source's name too,
        an alias), as the graph stood.
        """
        earliest = self.created_at
        for observation in self.observations:
            created = observation.created_at
            if created is None:
                return None
            if earliest is not None and created < earliest:
                earliest = created
        return earliest

    def recorded_by(self, moment: datetime) -> bool:
        """Whether the graph knew the entity by ``moment`` (see :meth:`recorded_since`)."""
        since = self.recorded_since()
        return since is None or since <= moment

    def detached(self) -> Entity:
        """A copy that shares nothing mutable with this entity: what ``model_copy(deep=True)``
        gives, copying only the lists (observations and the other fields are immutable)."""
        return self.model_copy(update={"observations": list(self.observations), "aliases": list(self.aliases)})

    def current_observations(self) -> list[Observation]:
        """The observations that hold now, in the order added."""
        return [observation for observation in self.observations if observation.invalid_at is None]

    def observation(self, text: str) -> Observation | None:
        """The observation that holds now with exactly this text, or ``None``."""
        for observation in self.observations:
            if observation.invalid_at is None and observation.text == text:
                return observation
        return None


class Relation(Provenance):
    """A directed, typed edge. ``(from_entity, to_entity, relation_type)`` is its key."""

    from_entity: str
    to_entity: str
    relation_type: str
    description: str = ""

    @property
    def key(self) -> RelationKey:
        """The relation's identity triple."""
        return (self.from_entity, self.to_entity, self.relation_type)


class KnowledgeGraph(_GraphData):
    """A whole graph, for export and tests: entities sorted by name, relations by key."""

    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)


class EntityCreate(_ToolInput):
    """An entity to create; fails if the name is taken."""

    name: _Name
    entity_type: _Type
    description: _Description = ""
    observations: list[_Observation] = Field(
        default_factory=list, max_length=OBSERVATIONS_MAX, description="Atomic facts", json_schema_extra=unlisted_bound
    )
    is_root: bool = False


class EntityUpdate(_ToolInput):
    """Changes to an existing entity; ``None`` fields are left as they are.

    Observations are superseded and invalidated first, then removed (exact text, deleted
    without history), then new ones added. An observation or relation that no longer holds is
    kept with who said so, when and why; searches and the summary show what holds.
    """

    name: _Ref
    entity_type: _TypeChange = None
    description: _Description | None = None
    is_root: bool | None = None
    add_observations: list[_Observation] = Field(
        default_factory=list, max_length=OBSERVATIONS_MAX, json_schema_extra=unlisted_bound
    )
    remove_observations: list[_Observation] = Field(
        default_factory=list, max_length=OBSERVATIONS_MAX, description="Exact text", json_schema_extra=unlisted_bound
    )
    supersede: dict[_Ref, _Observation] = Field(
        default_factory=dict,
        max_length=OBSERVATIONS_MAX,
        description="old → new",
        json_schema_extra=_unlisted_map,
    )
    """Replacements: each old observation (exact text, one that holds) is marked no longer
    holding, linked to its replacement, which is added."""
    invalidate: dict[_Ref, _Description] = Field(
        default_factory=dict,
        max_length=OBSERVATIONS_MAX,
        description="text, own name or -[type]-> to: reason",
        json_schema_extra=_unlisted_map,
    )
    """Facts that no longer hold, each with the reason: an observation (exact text), one of the
    entity's outgoing relations written ``-[type]-> target``, or the entity's own name (the
    entity no longer holds: it and its relations are kept as history)."""


class RelationCreate(_ToolInput):
    """A relation to create between two entities that exist (or are created in the same call)."""

    from_entity: _Ref
    to_entity: _Ref
    relation_type: _Type = Field(description="e.g. depends_on")
    description: _Description = ""

    @property
    def key(self) -> RelationKey:
        """The relation's identity triple."""
        return (self.from_entity, self.to_entity, self.relation_type)


class RelationDelete(_ToolInput):
    """A relation to delete, named by its triple."""

    from_entity: _Ref
    to_entity: _Ref
    relation_type: _Ref

    @property
    def key(self) -> RelationKey:
        """The relation's identity triple."""
        return (self.from_entity, self.to_entity, self.relation_type)


_LISTED = 10
"""At most this many names are spelled out per kind of change; the rest are counted."""


def listed_names(names: list[str]) -> str:
    """``names`` joined, the first ten spelled out and the rest counted."""
    shown = ", ".join(names[:_LISTED])
    return shown if len(names) <= _LISTED else f"{shown} (+{len(names) - _LISTED} more)"


def plural(count: int, word: str) -> str:
    """``1 hit``, ``2 hits``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class UpdateReport(_GraphData):
    """What one ``update`` batch did.

    A batch is all or nothing. Everything listed outside ``errors`` is committed; when
    ``errors`` lists a refused part (each with what to do about it), nothing of the batch
    was written and the other lists are empty.
    """

    created_entities: list[str] = Field(default_factory=list)
    updated_entities: list[str] = Field(default_factory=list)
    deleted_entities: list[str] = Field(default_factory=list)
    created_relations: list[Relation] = Field(default_factory=list)
    deleted_relations: list[Relation] = Field(default_factory=list)
    """Deleted on request or because one of their entities was deleted."""
    skipped_relations: list[Relation] = Field(default_factory=list)
    """Relations to create that already existed (same triple): left as they were."""
    invalidated: list[str] = Field(default_factory=list)
    """Facts marked as no longer holding (superseded or invalidated), as ``entity: text``,
    ``entity`` or a relation's ``from -[type]-> to``."""
    similar_names: list[tuple[str, str]] = Field(default_factory=list)
    """``(created, existing)``: a created entity whose name is close to an existing entity's
    (or alias's); nothing was merged."""
    errors: list[str] = Field(default_factory=list)
    seq: int | None = None
    """The state's sequence number after this batch; ``None`` if nothing changed."""
    replayed: bool = False
    """This is the answer of an earlier attempt of the same call (same idempotency key),
    which applied it; nothing was written again."""

    @property
    def changed(self) -> bool:
        """Whether the batch changed the graph."""
        return bool(
            self.created_entities
            or self.updated_entities
            or self.deleted_entities
            or self.created_relations
            or self.deleted_relations
            or self.invalidated
        )

    def summary_line(self) -> str:
        """One line naming the changes, e.g. ``created entities A, B; deleted 1 relation``.

        Returns ``"no changes"`` for an empty batch.
        """
        parts: list[str] = []
        if self.created_entities:
            parts.append(f"created entities {listed_names(self.created_entities)}")
        if self.created_relations:
            parts.append(f"created {plural(len(self.created_relations), 'relation')}")
        if self.updated_entities:
            parts.append(f"updated {listed_names(self.updated_entities)}")
        if self.invalidated:
            parts.append(f"marked {plural(len(self.invalidated), 'fact')} no longer holding")
        if self.deleted_relations:
            parts.append(f"deleted {plural(len(self.deleted_relations), 'relation')}")
        if self.deleted_entities:
            parts.append(f"deleted entities {listed_names(self.deleted_entities)}")
        return "; ".join(parts) or "no changes"


class MergeReport(_GraphData):
    """What merging entities into one did (or, for a dry run, would do).

    Nothing is lost: observations keep their ids and provenance, relations are re-pointed,
    the sources' names become aliases of :attr:`into`, and a source's description that
    differs from the kept one becomes an observation.
    """

    into: str
    sources: list[str] = Field(default_factory=list)
    dry_run: bool = False
    """Nothing was written; the lists say what a merge would do."""
    moved_observations: int = 0
    """Observations moved to :attr:`into` (those of the same text as one of its own are folded into it)."""
    folded_observations: int = 0
    """Observations whose text :attr:`into` already held: the one already there is kept."""
    moved_relations: list[Relation] = Field(default_factory=list)
    """Relations re-pointed to :attr:`into`, as they are after the merge."""
    dropped_relations: list[Relation] = Field(default_factory=list)
    """Relations between the merged entities (they would join :attr:`into` to itself), or
    whose triple :attr:`into` already has after re-pointing (one that holds, or, when the
    dropped one no longer holds either, one kept as history)."""
    aliases: list[str] = Field(default_factory=list)
    """The aliases :attr:`into` gains."""
    descriptions: list[str] = Field(default_factory=list)
    """Sources' descriptions kept as observations of :attr:`into`."""
    dropped_types: list[str] = Field(default_factory=list)
    """Sources' entity types other than :attr:`into`'s."""
    errors: list[str] = Field(default_factory=list)
    """Why nothing was merged; empty when the merge was applied (or would be)."""
    seq: int | None = None
    """The graph's change number after the merge; ``None`` for a dry run or a refusal."""
    replayed: bool = False
    """The answer of an earlier attempt of the same call (same idempotency key); nothing was written again."""


class Neighbour(_GraphData):
    """An entity one relation away from a search hit."""

    name: str
    entity_type: str
    relation_type: str
    outgoing: bool
    """``True`` for hit -[type]-> neighbour, ``False`` for neighbour -[type]-> hit."""


class EntityView(_GraphData):
    """An entity as a read shows it: the entity and the entities one relation away."""

    entity: Entity
    neighbours: list[Neighbour] = Field(default_factory=list)
    more_neighbours: int = 0
    """Neighbours left out of ``neighbours`` to keep the answer short."""


class EntityPage(_GraphData):
    """The answer to ``get_entities`` (:attr:`missing` lists names not found) or one page of
    ``read_graph`` (:attr:`offset` and :attr:`total` place it in the whole graph)."""

    entities: list[EntityView] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    """Names asked for that no entity has (nor as an alias)."""
    offset: int = 0
    total: int = 0
    """Entities that hold in the whole graph (``read_graph``); the number found (``get_entities``)."""


class SearchHit(EntityView):
    """One matching entity with its scores."""

    score: float
    """The ranking score: keyword score, raw cosine, or the hybrid fusion (see ``search.py``)."""
    keyword_score: float | None = None
    cosine: float | None = None
    shown: list[str] | None = None
    """The ids of the observations the answer shows, best-matching first; ``None``: all of them."""


class GraphPath(_GraphData):
    """A shortest undirected path: ``nodes[i]`` and ``nodes[i + 1]`` joined by ``relations[i]``."""

    nodes: list[str]
    relations: list[Relation]


class SearchResult(_GraphData):
    """The answer to one search: ranked hits, and on request edges and paths between them."""

    query: str
    mode: SearchMode
    """The mode that produced the hits (``keyword`` when vector search was unavailable)."""
    hits: list[SearchHit] = Field(default_factory=list)
    edges: list[Relation] | None = None
    """Relations touching a hit, when requested."""
    more_edges: int = 0
    paths: list[GraphPath] | None = None
    """Shortest paths between the top hits, when requested."""
    max_path_length: int = 0
    as_of: datetime | None = None
    """The moment the graph was read as it stood at; ``None``: now."""
    include_invalid: bool = False
    """Facts that no longer held (then, or now) are included, marked."""
    note: str | None = None
    """One line about how the search ran, e.g. a fallback to keyword search."""
    more: int = 0
    """Entities that match too but are not among the hits (``top_k`` cut them)."""
    exact: bool = False
    """The first hit is the entity named (or aliased) exactly the query."""
