"""``GraphIndex``: what a search of one graph reads, kept in numpy arrays the actor updates.

The actor owns one, fed with every committed entity (:meth:`GraphIndex.put_entity`) and
every deletion (:meth:`GraphIndex.drop_entity`). It holds:

* **entities**, numbered (a number stays with its entity until the entity is deleted, and
  is reused only after a compaction): validity columns (first recorded, itself or one of its
  observations, :meth:`~toolcards.knowledge_graph._models.Entity.recorded_since`; no longer
  holding at; seconds since the epoch, ``-inf`` / ``inf`` when unknown or still holding),
  names and aliases in an inverted index and a sorted list for exact and prefix lookups;
* **passages**, the texts a keyword search reads: one per observation (its text, its own
  validity) and one per entity (its type and description), each in the postings of its
  terms with the term's count and the passage's length;
* the **vectors** of the entities' passages (:mod:`toolcards.knowledge_graph._passages`), one row per passage
  (:meth:`GraphIndex.vector_rows` is what :class:`~toolcards.vector.TextVectors` writes into).

Every search selects the facts visible at its moment (:func:`visible`): those holding now
by default; those recorded by ``as_of`` and not yet said to no longer hold then; with
``include_invalid``, those that no longer hold as well. The selection is a vectorised mask,
so a search of the past costs about what a search of the present does.

A deletion marks rows dead; when more than a quarter of the rows are dead the index is
compacted (rows renumbered, postings filtered, in numpy). Not thread-safe: the owning actor
is its only user.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import unicodedata
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from toolcards.core._words import fold_case, name_key, name_tokens, query_terms, tokenize
from toolcards.knowledge_graph._ivf import APPROXIMATE_FROM, PROBES, InvertedFile
from toolcards.knowledge_graph._passages import owner_of
from toolcards.knowledge_graph._search import BM25_B, BM25_K1, KEYWORD_FLOOR, NAME_WEIGHT
from toolcards.knowledge_graph._sorted_list import discard, insort_all
from toolcards.vector._index import unit_rows

if TYPE_CHECKING:
    import numpy.typing as npt

    from toolcards.knowledge_graph._models import Entity

__all__ = ["COMPACT_MIN", "GraphIndex", "Hit", "collapsed_name", "fuse", "timestamp", "visible"]

COMPACT_MIN = 4096
"""Dead rows tolerated before a compaction, whatever the index's size."""
SIMILAR_MIN = 90.0
"""Lowest rapidfuzz ratio (0-100) between two collapsed names for a near-duplicate suggestion."""
_SIMILAR_POSTING_MAX = 1000
"""Name terms shared by more entities than this do not make them candidates for a suggestion."""
_INF = math.inf
_HEAD = 0
_OBSERVATION = 1

Hit = tuple[str, float, float | None, float | None]
"""``(entity name, score, keyword score or None, cosine or None)``."""


def timestamp(moment: datetime | None, missing: float) -> float:
    """``moment`` as seconds since the epoch; ``missing`` when ``None``."""
    return missing if moment is None else moment.timestamp()


def visible(
    created: npt.NDArray[np.float64], invalid: npt.NDArray[np.float64], at: float | None, include_invalid: bool
) -> npt.NDArray[np.bool_]:
    """Which rows a search at ``at`` sees (``None``: now).

    Now: those holding (``invalid`` is ``inf``). At a moment: those recorded by then and
    still holding then. ``include_invalid`` adds those that no longer held.
    """
    shown: npt.NDArray[np.bool_]
    if at is None:
        shown = np.ones(created.shape, dtype=bool) if include_invalid else invalid == _INF
        return shown
    shown = created <= at
    if not include_invalid:
        shown &= invalid > at
    return shown


_NOT_ALNUM = re.compile(r"[\W_]+")


def fuse(keyword: Any, cosines: Any, by_meaning: Any, alpha: float, threshold: float) -> tuple[Any, Any]:
    """The hybrid score of every entity and which ones a hybrid search may return.

    ``keyword``: each entity's keyword score; ``cosines``: its best passage cosine;
    ``by_meaning``: which ones are visible and have a vector. See
    :mod:`toolcards.knowledge_graph._search` for the formula.
    """
    low = float(cosines[by_meaning].min()) if by_meaning.any() else 0.0
    spread = (float(cosines[by_meaning].max()) - low) if by_meaning.any() else 0.0
    calibrated = np.where(by_meaning, (cosines - low) / (spread if spread > 0 else 1.0), 0.0)
    scores = alpha * calibrated + (1.0 - alpha) * standout(keyword)
    eligible = (by_meaning & (cosines >= threshold)) | matches(keyword)
    return scores, eligible


def standout(keyword: Any) -> Any:
    """How far each keyword score stands out: ``sqrt((score - runner-up) / best)`` for the one
    best entity, 0 for the others (and for all when the best is shared)."""
    standing = np.zeros_like(keyword)
    if not len(keyword):
        return standing
    top = int(keyword.argmax())
    best = float(keyword[top])
    if best > 0:
        # Two maxima around the best, not a partition: most scores are 0, and partitioning
        # many equal values is the slow case of introselect.
        runner_up = max(float(keyword[:top].max(initial=0.0)), float(keyword[top + 1 :].max(initial=0.0)))
        standing[top] = math.sqrt((best - runner_up) / best)
    return standing


def _top(scores: Any, count: int) -> npt.NDArray[np.intp]:
    """The numbers of the (at most) ``count`` highest ``scores`` above 0, in no order."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) <= count:
        return positive
    return positive[np.argpartition(-scores[positive], count - 1)[:count]]


def matches(keyword: Any) -> Any:
    """Which entities the keywords find: a score of at least :data:`KEYWORD_FLOOR` of the best.

    Below it, an entity shares only words that nearly every entity has (``entity-042``
    reached ``entity-007`` through the word ``entity`` alone, at a thousandth of the score):
    listing it, or counting it among those that match, would be noise the model pays to read.
    """
    return (keyword > 0) & (keyword >= KEYWORD_FLOOR * float(keyword.max(initial=0.0)))


def _best(scores: Any) -> float:
    """The largest score, or 1.0 when none is above 0 (so dividing by it changes nothing)."""
    top = float(scores.max()) if len(scores) else 0.0
    return top if top > 0 else 1.0


_NAME_FORMS_KEPT = 8192
"""Names whose :func:`collapsed_name` and :func:`_terms_of_name` are kept: a created entity's name is
read when its batch is staged (:meth:`GraphIndex.similar_names`) and again when it is indexed."""


@functools.lru_cache(maxsize=_NAME_FORMS_KEPT)
def _terms_of_name(name: str) -> tuple[str, ...]:
    return tuple(name_tokens(name))


@functools.lru_cache(maxsize=_NAME_FORMS_KEPT)
def collapsed_name(name: str) -> str:
    """``name`` as near-duplicates compare: case-folded (:func:`~toolcards.core._words.fold_case`),
    accents and everything but letters and digits removed: ``Café Müller`` and ``cafe-muller``
    are both ``cafemuller``."""
    folded = fold_case(name)
    if not folded.isascii():
        # Decomposed, an accent is a mark apart from its letter, and marks are not alphanumeric.
        folded = unicodedata.normalize("NFD", folded)
    return _NOT_ALNUM.sub("", folded)


class _Column:
    """A numpy column that grows by doubling; ``view()`` is the used part (do not keep it
    across an append)."""

    __slots__ = ("_data", "_size", "fill")

    def __init__(self, dtype: Any, fill: Any) -> None:
        self.fill = fill
        self._data = np.full(64, fill, dtype=dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, value: Any) -> int:
        if self._size == len(self._data):
            self._grow(2 * self._size)
        self._data[self._size] = value
        self._size += 1
        return self._size - 1

    def extend(self, values: list[Any]) -> None:
        """Append every value of ``values`` at once."""
        needed = self._size + len(values)
        if needed > len(self._data):
            self._grow(max(needed, 2 * len(self._data)))
        self._data[self._size : needed] = values
        self._size = needed

    def _grow(self, capacity: int) -> None:
        grown = np.full(capacity, self.fill, dtype=self._data.dtype)
        grown[: self._size] = self._data[: self._size]
        self._data = grown

    def view(self) -> Any:
        return self._data[: self._size]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._data[index] = value

    def __getitem__(self, index: int) -> Any:
        return self._data[index]

    def keep(self, rows: npt.NDArray[np.intp]) -> None:
        """Keep only ``rows``, in that order (a compaction)."""
        kept = self._data[rows]
        self._data = np.full(max(64, 2 * len(kept)), self.fill, dtype=self._data.dtype)
        self._data[: len(kept)] = kept
        self._size = len(kept)


def _slots() -> array[int]:
    return array("i")


class _NewPassages:
    """Passages added by one :meth:`GraphIndex.put_entities`, written to the columns at its end."""

    __slots__ = ("base", "created", "entity", "invalid", "kind", "length", "live")

    def __init__(self, base: int) -> None:
        self.base = base
        self.entity: list[int] = []
        self.created: list[float] = []
        self.invalid: list[float] = []
        self.length: list[float] = []
        self.live: list[bool] = []
        self.kind: list[int] = []


class _PassageVectors:
    """The vector rows of :class:`~toolcards.vector.TextVectors` in a :class:`GraphIndex`: one
    per passage key (:mod:`toolcards.knowledge_graph._passages`), each owned by its entity."""

    def __init__(self, index: GraphIndex, dim: int) -> None:
        self._index = index
        self.dim = dim
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def upsert(self, key: str, vector: npt.ArrayLike) -> None:
        """Store ``vector`` (normalised) in passage ``key``'s row; a key of an unknown entity is ignored.

        Raises ``ValueError`` when its size is not :attr:`dim` or it holds NaN or infinity.
        """
        refused = self._index._set_vectors([key], [vector])
        if refused:
            raise ValueError(refused[0])

    def upsert_many(self, keys: Sequence[str], vectors: Sequence[npt.ArrayLike]) -> dict[int, str]:
        """:meth:`upsert` each of ``vectors`` in the row of the passage key at its position in
        ``keys``, in one pass; returns the refused, position → why.

        A key of an unknown entity is ignored, whatever its vector (it is not refused). A
        vector of the wrong size or holding NaN or infinity refuses only itself: its key
        keeps what it had. A key given twice ends with its last vector.
        """
        return self._index._set_vectors(keys, vectors)

    def remove(self, key: str) -> None:
        """Drop passage ``key``'s vector; a no-op without one."""
        self._index._clear_vector(key)


class GraphIndex:
    """Entities, passages, postings and vectors of one graph, for search (see the module docstring)."""

    def __init__(self, *, approximate_from: int = APPROXIMATE_FROM, probes: int = PROBES) -> None:
        """``approximate_from``: the vector rows from which a search probes an
        :class:`~toolcards.knowledge_graph._ivf.InvertedFile` of ``probes`` lists instead of
        scanning every row."""
        self._approximate_from = approximate_from
        self._probes = probes
        self._numbers: dict[str, int] = {}
        """Entity name → number."""
        self._names: list[str | None] = []
        """Number → entity name; ``None`` for a deleted entity."""
        self._ent_created = _Column(np.float64, -_INF)
        self._ent_recent = _Column(np.float64, -_INF)
        """When the entity or one of its observations was last recorded: ties go to the recent."""
        self._ent_name_length = _Column(np.float32, 1.0)
        """The number of terms in the entity's name and aliases."""
        self._ent_invalid = _Column(np.float64, _INF)
        self._ent_live = _Column(np.bool_, False)
        self._ent_passages: dict[int, dict[str, None]] = {}
        """Entity number → the keys of its passages."""
        self._heads: dict[int, str] = {}
        """Entity number → the text of its head passage (type and description)."""
        self._name_terms: dict[int, list[str]] = {}
        self._name_postings: dict[str, dict[int, None]] = {}
        """Term → numbers of the entities with it in their name or an alias."""
        self._sorted_names: list[tuple[str, str, str]] = []
        """``(name as compared, name or alias, entity name)``, sorted, for exact and prefix lookups."""
        self._listed: dict[int, list[tuple[str, str, str]]] = {}
        self._aliases: dict[str, str] = {}
        """Alias → the name of the entity it belongs to."""
        self._collapsed: dict[str, dict[str, None]] = {}
        """:func:`collapsed_name` → names and aliases that collapse to it."""

        self._slots: dict[str, int] = {}
        """Passage key (``o:<id>``, ``h:<number>``) → slot."""
        self._pass_entity = _Column(np.int32, -1)
        self._pass_created = _Column(np.float64, -_INF)
        self._pass_invalid = _Column(np.float64, _INF)
        self._pass_live = _Column(np.bool_, False)
        self._pass_length = _Column(np.float32, 0.0)
        self._pass_kind = _Column(np.int8, _HEAD)
        """:data:`_HEAD` (type and description) or :data:`_OBSERVATION`."""
        self._postings: defaultdict[str, array[int]] = defaultdict(_slots)
        """Term → the slots of the passages holding it, once per occurrence (a term twice in a
        passage: its slot twice, side by side), in the order added."""
        self._dead_passages = 0
        self._dead_entities = 0
        self._new: _NewPassages | None = None
        """The passages being added by :meth:`put_entities`, not yet in the columns."""
        self._new_names: list[tuple[str, str, str]] = []
        """The names being added by :meth:`put_entities`, not yet in :attr:`_sorted_names`."""
        self._pending: dict[int, Entity] = {}
        """Entity number → the entity as put, whose passages :meth:`flush` has yet to index."""

        self._last_passages: Any = None
        """Each passage's BM25 in the last keyword search (read by :meth:`observation_scores`)."""
        self._seen: tuple[float | None, bool, Any, int, float] | None = None
        """The last keyword search's moment, ``include_invalid``, the passages it saw, how many
        and their average length; forgotten whenever a passage changes."""
        self._vectors: _PassageVectors | None = None
        self._matrix: npt.NDArray[np.float32] | None = None
        """One row per passage vector; rows of forgotten passages are reused."""
        self._rows: dict[str, int] = {}
        """Passage key → its row of :attr:`_matrix`."""
        self._row_keys: list[str | None] = []
        self._row_owner = _Column(np.int64, -1)
        """Row → the number of the entity it belongs to; -1 for a free row."""
        self._free_rows: list[int] = []
        self._ent_rows: dict[int, dict[int, None]] = {}
        """Entity number → its rows of :attr:`_matrix`."""
        self._has_vector = _Column(np.int32, 0)
        """Entity number → how many passage vectors it has."""
        self._ivf = InvertedFile(probes)
        """The rows by nearest centroid, trained once :attr:`_approximate_from` rows hold vectors."""

    def __len__(self) -> int:
        """The number of entities indexed."""
        return len(self._numbers)

    @property
    def aliases(self) -> dict[str, str]:
        """Alias → the name of the entity it belongs to (do not modify)."""
        return self._aliases

    # -- entities --------------------------------------------------------------------------

    def put_entity(self, entity: Entity) -> None:
        """Index ``entity`` as committed (see :meth:`put_entities`)."""
        self.put_entities([entity])

    def put_entities(self, entities: Iterable[Entity]) -> None:
        """Index committed entities: validity, names and aliases now; their passages at the
        next :meth:`flush` (every search flushes first)."""
        pending = self._pending
        put: dict[int, Entity] = {}  # a name given twice is indexed as last given
        new: list[str] = []
        for entity in entities:
            number = self._numbers.get(entity.name)
            if number is None:
                number = self._numbers[entity.name] = len(self._names)
                self._names.append(entity.name)
                new.append(entity.name)
            put[number] = entity
        if new:
            self._grow_entities(len(new))
        # Each column written once for the whole batch: numpy's per-item writes dominated.
        numbers = list(put)
        # From the entity's earliest record: after a merge, the facts a source recorded
        # before its target existed keep the merged entity visible as of then.
        self._ent_created[numbers] = [timestamp(entity.recorded_since(), -_INF) for entity in put.values()]
        self._ent_recent[numbers] = [
            max(
                [timestamp(entity.created_at, -_INF)]
                + [timestamp(o.created_at, -_INF) for o in entity.observations[-1:]]
            )
            for entity in put.values()
        ]
        self._ent_invalid[numbers] = [timestamp(entity.invalid_at, _INF) for entity in put.values()]
        for number, entity in put.items():
            names = [entity.name, *entity.aliases]
            listed = self._listed.get(number)
            if listed is None or [row[1] for row in listed] != names:
                self._index_names(number, entity.name, names)
            pending[number] = entity
        added, self._new_names = self._new_names, []
        insort_all(self._sorted_names, added)

    @property
    def pending(self) -> int:
        """How many entities wait for their passages to be indexed (:meth:`flush`)."""
        return len(self._pending)

    def flush(self) -> None:
        """Index the passages of the entities put since the last flush, in one write per column."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        self._seen = None
        new = _NewPassages(len(self._pass_live))
        self._new = new
        try:
            for number, entity in pending.items():
                self._put_passages(number, entity)
        finally:
            self._new = None
            for column, values in (
                (self._pass_entity, new.entity),
                (self._pass_created, new.created),
                (self._pass_invalid, new.invalid),
                (self._pass_length, new.length),
                (self._pass_kind, new.kind),
                (self._pass_live, new.live),
            ):
                column.extend(values)
        self._maybe_compact()

    def _put_passages(self, number: int, entity: Entity) -> None:
        keys = self._ent_passages.get(number, {})
        wanted: dict[str, None] = {}
        head = f"{entity.entity_type}\n{entity.description}"
        head_key = f"h:{number}"
        wanted[head_key] = None
        if self._heads.get(number) != head:
            self._drop_passage(head_key)
            self._heads[number] = head
            self._add_passage(head_key, number, head, -_INF, _INF, _HEAD)
        slots = self._slots
        for observation in entity.observations:
            key = f"o:{observation.id}"
            wanted[key] = None
            created = -_INF if observation.created_at is None else observation.created_at.timestamp()
            invalid = _INF if observation.invalid_at is None else observation.invalid_at.timestamp()
            slot = slots.get(key)
            if slot is None:
                self._add_passage(key, number, observation.text, created, invalid, _OBSERVATION)
            elif slot < len(self._pass_live):
                self._pass_entity[slot] = number
                self._pass_created[slot] = created
                self._pass_invalid[slot] = invalid
        for key in keys:
            if key not in wanted:
                self._drop_passage(key)
        self._ent_passages[number] = wanted

    def drop_entity(self, name: str) -> None:
        """Forget entity ``name`` and its passages; a no-op if it is not indexed."""
        number = self._numbers.pop(name, None)
        if number is None:
            return
        self._pending.pop(number, None)
        for key in self._ent_passages.pop(number, {}):
            self._drop_passage(key)
        self._heads.pop(number, None)
        self._unindex_names(number)
        self._clear_vector_rows(number)
        self._names[number] = None
        self._ent_live[number] = False
        self._dead_entities += 1
        self._maybe_compact()

    def _grow_entities(self, count: int) -> None:
        """Add the columns' rows of ``count`` entities just numbered, each live and unranked."""
        self._ent_live.extend([True] * count)
        for column in (self._ent_created, self._ent_recent, self._ent_name_length, self._ent_invalid, self._has_vector):
            column.extend([column.fill] * count)

    def _index_names(self, number: int, name: str, names: list[str]) -> None:
        self._unindex_names(number)
        terms = list(dict.fromkeys(token for each in names for token in _terms_of_name(each)))
        self._name_terms[number] = terms
        self._ent_name_length[number] = max(1, len(terms))
        for term in terms:
            self._name_postings.setdefault(term, {})[number] = None
        listed = [(name_key(each), each, name) for each in names]
        self._listed[number] = listed
        self._new_names.extend(listed)
        for alias in names[1:]:
            self._aliases[alias] = name
        for each in names:
            self._collapsed.setdefault(collapsed_name(each), {})[each] = None

    def _unindex_names(self, number: int) -> None:
        for term in self._name_terms.pop(number, []):
            posting = self._name_postings[term]
            posting.pop(number, None)
            if not posting:
                del self._name_postings[term]
        for row in self._listed.pop(number, []):
            discard(self._sorted_names, row)
            if row[1] != row[2] and self._aliases.get(row[1]) == row[2]:
                del self._aliases[row[1]]
            if row[1] in self._aliases or row[1] in self._numbers:
                # Another entity holds the name now: a merge indexes its target (with the
                # source's name and aliases) before it drops the source.
                continue
            same = self._collapsed.get(collapsed_name(row[1]))
            if same is not None:
                same.pop(row[1], None)
                if not same:
                    del self._collapsed[collapsed_name(row[1])]

    # -- passages --------------------------------------------------------------------------

    def _add_passage(self, key: str, number: int, text: str, created: float, invalid: float, kind: int) -> None:
        new = self._new
        assert new is not None
        slot = new.base + len(new.live)
        tokens = tokenize(text)
        new.entity.append(number)
        new.created.append(created)
        new.invalid.append(invalid)
        new.length.append(len(tokens))
        new.live.append(True)
        new.kind.append(kind)
        self._slots[key] = slot
        postings = self._postings
        for token in tokens:
            postings[token].append(slot)

    def _drop_passage(self, key: str) -> None:
        slot = self._slots.pop(key, None)
        if slot is None:
            return
        self._seen = None
        new = self._new
        if new is not None and slot >= new.base:
            new.live[slot - new.base] = False
        else:
            self._pass_live[slot] = False
        self._dead_passages += 1

    # -- vectors ---------------------------------------------------------------------------

    def vector_rows(self, dim: int) -> _PassageVectors:
        """The rows :class:`~toolcards.vector.TextVectors` writes the passages' vectors into
        (its ``index_factory``), of ``dim`` values each."""
        if self._vectors is None or self._vectors.dim != dim:
            self._vectors = _PassageVectors(self, dim)
            self._matrix = np.zeros((max(64, 2 * len(self._names)), dim), dtype=np.float32)
            self._rows.clear()
            self._row_keys.clear()
            self._free_rows.clear()
            self._ent_rows.clear()
            self._row_owner = _Column(np.int64, -1)
            self._has_vector.view()[:] = 0
            self._ivf = InvertedFile(self._probes)
        return self._vectors

    def _set_vectors(self, keys: Sequence[str], vectors: Sequence[npt.ArrayLike]) -> dict[int, str]:
        """Write ``vectors`` (normalised) in the rows of passage ``keys``: see
        :meth:`_PassageVectors.upsert_many`. Rows are taken in one pass (free ones first, then
        new ones at the end, the matrix grown at most once), written in one assignment, and
        the inverted file is told once."""
        assert self._vectors is not None and self._matrix is not None
        if len(keys) != len(vectors):
            raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors.")
        made = unit_rows(keys, vectors, self._vectors.dim)
        numbers = self._numbers
        # Passage key → (its entity's number, its row of made.matrix); the last of a key given twice.
        latest: dict[str, tuple[int, int]] = {}
        for made_row, position in enumerate(made.positions):
            key = keys[position]
            number = numbers.get(owner_of(key))
            if number is not None:
                latest[key] = (number, made_row)
        # A passage of an unknown entity is ignored, however bad its vector.
        refused = {position: why for position, why in made.refused.items() if owner_of(keys[position]) in numbers}
        if not latest:
            return refused
        rows = self._rows
        free = self._free_rows
        next_row = len(self._row_owner)
        added_keys: list[str | None] = []
        added_owners: list[int] = []
        new_owners: list[int] = []
        written: list[int] = []
        for key, (number, _) in latest.items():
            row = rows.get(key)
            if row is None:
                if free:
                    row = free.pop()
                    self._row_keys[row] = key
                    self._row_owner[row] = number
                else:
                    row = next_row
                    next_row += 1
                    added_keys.append(key)
                    added_owners.append(number)
                rows[key] = row
                self._ent_rows.setdefault(number, {})[row] = None
                new_owners.append(number)
            written.append(row)
        if added_keys:
            self._row_keys.extend(added_keys)
            self._row_owner.extend(added_owners)
            capacity = len(self._matrix)
            if next_row > capacity:
                while capacity < next_row:
                    capacity *= 2
                grown = np.zeros((capacity, self._matrix.shape[1]), dtype=np.float32)
                grown[: len(self._matrix)] = self._matrix
                self._matrix = grown
        if new_owners:
            np.add.at(self._has_vector.view(), new_owners, 1)
            self._vectors.count += len(new_owners)
        if len(latest) == len(made.positions):  # every row made is written, in order
            self._matrix[written] = made.matrix
        else:
            self._matrix[written] = made.matrix[[made_row for _, made_row in latest.values()]]
        self._ivf.touch(written)
        return refused

    def _clear_vector(self, key: str) -> None:
        row = self._rows.pop(key, None)
        if row is None:
            return
        number = int(self._row_owner[row])
        if number >= 0:
            self._has_vector[number] -= 1
            owned = self._ent_rows.get(number)
            if owned is not None:
                owned.pop(row, None)
                if not owned:
                    del self._ent_rows[number]
        self._free_row(row)

    def _free_row(self, row: int) -> None:
        assert self._vectors is not None and self._matrix is not None
        self._row_owner[row] = -1
        self._row_keys[row] = None
        self._matrix[row] = 0.0
        self._free_rows.append(row)
        self._ivf.touch((row,))
        self._vectors.count -= 1

    def _clear_vector_rows(self, number: int) -> None:
        """Free the rows of entity ``number`` (deleted)."""
        if self._vectors is None or not self._has_vector[number]:
            return
        for row in self._ent_rows.pop(number, {}):
            key = self._row_keys[row]
            if key is not None:
                self._rows.pop(key, None)
            self._free_row(row)
        self._has_vector[number] = 0

    # -- search ----------------------------------------------------------------------------

    def visible_entities(self, at: float | None, include_invalid: bool) -> npt.NDArray[np.bool_]:
        """Which entity numbers a search at ``at`` sees (live ones only); flushes first, so
        the search that follows reads every passage put."""
        self.flush()
        shown = visible(self._ent_created.view(), self._ent_invalid.view(), at, include_invalid)
        shown &= self._ent_live.view()
        return shown

    def keyword_scores(self, query: str, shown: npt.NDArray[np.bool_], at: float | None, include_invalid: bool) -> Any:
        """Each visible entity's keyword score for ``query`` (0 where nothing matches), by number:
        BM25 with field weights (see :mod:`toolcards.knowledge_graph._search`)."""
        count = len(self._names)
        scores = np.zeros(count, dtype=np.float64)
        terms = query_terms(query)
        if not terms:
            return scores
        passages = self.passage_scores(terms, at, include_invalid)
        self._last_passages = passages
        if passages is not None:
            matched = np.flatnonzero(passages)
            entity_of = self._pass_entity.view()[matched]
            heads = self._pass_kind.view()[matched] == _HEAD
            # One head per entity: plain assignment adds; observations: the best one.
            scores[entity_of[heads]] += passages[matched[heads]]
            best = np.zeros(count, dtype=np.float64)
            np.maximum.at(best, entity_of[~heads], passages[matched[~heads]])
            scores += best
        self._add_name_scores(terms, scores, shown)
        scores[~shown] = 0.0
        return scores

    def observation_scores(self, observation_ids: Iterable[str]) -> dict[str, float]:
        """The BM25 of each of ``observation_ids`` in the last keyword search (above 0 only)."""
        passages = self._last_passages
        if passages is None:
            return {}
        found: dict[str, float] = {}
        for observation_id in observation_ids:
            slot = self._slots.get(f"o:{observation_id}")
            if slot is not None and slot < len(passages) and passages[slot] > 0:
                found[observation_id] = float(passages[slot])
        return found

    def passage_scores(self, terms: list[str], at: float | None, include_invalid: bool) -> Any:
        """Each passage's BM25 for ``terms`` over the passages a search at ``at`` sees, by slot;
        ``None`` when no visible passage holds any of them."""
        live = self._pass_live.view()
        lengths = self._pass_length.view()
        if self._seen is not None and self._seen[:2] == (at, include_invalid):
            seen, total, average = self._seen[2:]
        else:
            seen = live & visible(self._pass_created.view(), self._pass_invalid.view(), at, include_invalid)
            total = int(np.count_nonzero(seen))
            average = float(lengths[seen].mean()) or 1.0 if total else 1.0
            self._seen = (at, include_invalid, seen, total, average)
        if not total:
            return None
        scores: Any = None
        for term in terms:
            posting = self._postings.get(term)
            if posting is None:
                continue
            slots = np.frombuffer(posting, dtype=np.int32)
            slots = slots[seen[slots]]
            if not len(slots):
                continue
            # A term twice in a passage is its slot twice, side by side: runs give the counts.
            starts = np.flatnonzero(np.concatenate(([True], slots[1:] != slots[:-1])))
            unique = slots[starts]
            frequency = np.diff(np.append(starts, len(slots))).astype(np.float64)
            rarity = math.log(1.0 + (total - len(unique) + 0.5) / (len(unique) + 0.5))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[unique] / average)
            if scores is None:
                scores = np.zeros(len(live), dtype=np.float64)
            scores[unique] += rarity * frequency * (BM25_K1 + 1.0) / (frequency + norm)
        return scores

    def _add_name_scores(self, terms: list[str], scores: Any, shown: npt.NDArray[np.bool_]) -> None:
        """Add each entity's BM25 of ``terms`` over names and aliases, times :data:`NAME_WEIGHT`."""
        total = int(np.count_nonzero(shown))
        if not total:
            return
        lengths = self._ent_name_length.view()
        average = float(lengths[shown].mean()) or 1.0
        for term in terms:
            names = self._name_postings.get(term)
            if not names:
                continue
            numbers = np.fromiter(names, dtype=np.intp, count=len(names))
            numbers = numbers[shown[numbers]]
            if not len(numbers):
                continue
            rarity = math.log(1.0 + (total - len(numbers) + 0.5) / (len(numbers) + 0.5))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[numbers] / average)
            scores[numbers] += NAME_WEIGHT * rarity * (BM25_K1 + 1.0) / (1.0 + norm)

    def number(self, name: str) -> int:
        """Entity ``name``'s row number (``KeyError`` if it is not indexed)."""
        return self._numbers[name]

    def named(self, name: str) -> list[str]:
        """The entities named or aliased ``name``, case and spacing aside, in name order."""
        wanted = name_key(name)
        if not wanted:
            return []
        start = bisect.bisect_left(self._sorted_names, (wanted, "", ""))
        found: dict[str, None] = {}
        for compared, _, entity in self._sorted_names[start:]:
            if compared != wanted:
                break
            found[entity] = None
        return sorted(found)

    def name_matches(self, query: str, limit: int, shown: npt.NDArray[np.bool_] | None = None) -> list[str]:
        """Entities named (or aliased) ``query``, then those whose name or an alias starts with it.

        Exact first, then prefixes by length and name; at most ``limit``; only those
        ``shown`` (by number) when given.
        """
        wanted = name_key(query)
        if not wanted or limit <= 0:
            return []
        start = bisect.bisect_left(self._sorted_names, (wanted, "", ""))
        found: dict[str, tuple[int, str]] = {}
        for compared, _, entity in self._sorted_names[start:]:
            if not compared.startswith(wanted) or len(found) >= 4 * limit:
                break
            if shown is not None and not shown[self._numbers[entity]]:
                continue
            rank = (len(compared), compared)
            if entity not in found or rank < found[entity]:
                found[entity] = rank
        return [entity for entity, _ in sorted(found.items(), key=lambda item: item[1])[:limit]]

    def name_matched(self, query: str, shown: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Which entities (by number, among ``shown``) are named or aliased ``query``, or have a
        name or alias that starts with it: every one :meth:`name_matches` could pin, whatever
        its limit. Reads the names that start with the query, not the whole index."""
        found = np.zeros(len(self._names), dtype=bool)
        wanted = name_key(query)
        if not wanted:
            return found
        numbers, rows = self._numbers, self._sorted_names
        for row in range(bisect.bisect_left(rows, (wanted, "", "")), len(rows)):
            compared, _, entity = rows[row]
            if not compared.startswith(wanted):
                break
            found[numbers[entity]] = True
        found &= shown
        return found

    def rank(
        self,
        query: str,
        query_vector: npt.NDArray[np.float32] | Callable[[], npt.NDArray[np.float32] | None] | None,
        *,
        mode: str,
        at: float | None,
        include_invalid: bool,
        alpha: float,
        threshold: float,
        limit: int,
        also: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[list[Hit], int]:
        """The ``limit`` best visible entities for ``query``, by score, then the most recently
        recorded, and how many entities match in all: those the ranking finds, and those
        marked in ``also`` (by number: entities the caller shows whatever their score, as
        :meth:`name_matched` gives them).

        ``keyword``: entities with a keyword score above 0, scored over the best one.
        ``vector``: the cosine of the entity's vector with ``query_vector``, at least
        ``threshold``. ``hybrid``: every entity from either leg,
        ``alpha * (cos - lowest) / (best - lowest) + (1 - alpha) * standout`` (see :func:`fuse`
        and :mod:`toolcards.knowledge_graph._search`; no vector counts as cosine 0).

        ``query_vector`` may be a callable that gives it (or ``None``) once the keywords are
        scored; without a vector, ``vector`` and ``hybrid`` rank as ``keyword``.

        From :attr:`_approximate_from` vector rows on, cosines are computed only for the rows
        of the probed lists (:mod:`toolcards.knowledge_graph._ivf`) and, in hybrid mode, of the
        best keyword entities; any other entity has no cosine, as if it had no vector.
        """
        shown = self.visible_entities(at, include_invalid)
        self._last_passages = None
        keyword = self.keyword_scores(query, shown, at, include_invalid) if mode != "vector" else None
        # A callable gives the vector once the keywords are scored (it may still be embedding).
        vector = query_vector() if callable(query_vector) else query_vector
        if mode != "keyword" and vector is None:
            mode = "keyword"
            if keyword is None:
                keyword = self.keyword_scores(query, shown, at, include_invalid)
        cosines, has_vector = self._cosines(vector, keyword, 5 * max(limit, 1)) if mode != "keyword" else (None, None)
        if mode == "keyword" or cosines is None or has_vector is None:
            assert keyword is not None
            eligible = matches(keyword)
            scores = keyword / _best(keyword)
        elif mode == "vector":
            scores = cosines
            eligible = shown & has_vector & (cosines >= threshold)
        else:
            assert keyword is not None
            scores, eligible = fuse(keyword, cosines, shown & has_vector, alpha, threshold)
        candidates = np.flatnonzero(eligible)
        matching = len(candidates) if also is None else int(np.count_nonzero(eligible | also))
        if limit <= 0 or not len(candidates):
            return [], matching
        if len(candidates) > limit:
            kth = np.partition(scores[candidates], len(candidates) - limit)[len(candidates) - limit]
            candidates = candidates[scores[candidates] >= kth]
        recent = self._ent_recent.view()
        names = self._names
        ranked: list[tuple[float, float, str, Hit]] = []
        for number in candidates.tolist():
            name = names[number]
            assert name is not None
            hit = (
                name,
                float(scores[number]),
                None if keyword is None else float(keyword[number]),
                float(cosines[number])
                if cosines is not None and has_vector is not None and has_vector[number]
                else None,
            )
            ranked.append((-hit[1], -float(recent[number]), name, hit))
        ranked.sort()
        return [hit for *_, hit in ranked[:limit]], matching

    def _cosines(
        self, query: npt.NDArray[np.float32] | None, keyword: Any, keyword_best: int
    ) -> tuple[Any, npt.NDArray[np.bool_] | None]:
        """Each entity's best passage cosine with ``query`` (0 without one), by number, and
        which entities have one.

        Below :attr:`_approximate_from` rows: every row's cosine. From there: the rows of the
        lists the query probes and, when ``keyword`` scores are given, of the
        ``keyword_best`` entities scored highest by them.
        """
        if query is None or self._matrix is None or self._vectors is None or query.shape != (self._vectors.dim,):
            return None, None
        count = len(self._row_owner)
        owner = self._row_owner.view()
        best = np.full(len(self._names), -np.inf, dtype=np.float32)
        if self._vectors.count < max(1, self._approximate_from):
            # einsum, not `@`: BLAS threads would contend with the actors' threads on small hosts.
            cosines = np.einsum("ij,j->i", self._matrix[:count], query)
            used = owner >= 0
            np.maximum.at(best, owner[used], cosines[used])
            best[~np.isfinite(best)] = 0.0
            return best, self._has_vector.view() > 0
        if self._ivf.needs_training(self._vectors.count):
            self._reorder_rows(self._ivf.train(self._matrix[:count], owner))
            owner = self._row_owner.view()
        matrix = self._matrix[:count]
        rows, cosines = self._ivf.probe(matrix, owner, query)
        np.maximum.at(best, owner[rows], cosines)
        if keyword is not None:
            rows = self._rows_of(_top(keyword, keyword_best))
            np.maximum.at(best, owner[rows], np.einsum("ij,j->i", matrix[rows], query))
        measured = np.isfinite(best)
        best[~measured] = 0.0
        return best, measured

    def _reorder_rows(self, order: npt.NDArray[np.int64]) -> None:
        """Move row ``order[i]`` to row ``i``, in the matrix and everything numbered by row."""
        assert self._matrix is not None
        count = len(order)
        self._matrix[:count] = self._matrix[order]
        owner = self._row_owner.view()
        owner[:] = owner[order]
        keys = self._row_keys
        self._row_keys = [keys[row] for row in order.tolist()]
        self._rows = {key: row for row, key in enumerate(self._row_keys) if key is not None}
        self._free_rows = [row for row, key in enumerate(self._row_keys) if key is None]
        owned: dict[int, dict[int, None]] = {}
        for row, number in enumerate(owner.tolist()):
            if number >= 0:
                owned.setdefault(number, {})[row] = None
        self._ent_rows = owned

    def _rows_of(self, numbers: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """The vector rows of the passages of entities ``numbers``."""
        owned = self._ent_rows
        return np.array([row for number in numbers.tolist() for row in owned.get(number, ())], dtype=np.int64)

    def cosine(self, name: str, query: npt.NDArray[np.float32]) -> float | None:
        """Entity ``name``'s best passage cosine with ``query``, or ``None`` without a vector."""
        number = self._numbers.get(name)
        if number is None or self._matrix is None or not self._has_vector[number]:
            return None
        rows = list(self._ent_rows.get(number, ()))
        return float((self._matrix[rows] @ query).max())

    def passage_cosines(self, keys: Iterable[str], query: npt.NDArray[np.float32]) -> dict[str, float]:
        """The cosine with ``query`` of each of ``keys`` that has a vector."""
        if self._matrix is None:
            return {}
        found = {key: row for key in keys if (row := self._rows.get(key)) is not None}
        if not found:
            return {}
        cosines = self._matrix[list(found.values())] @ query
        return dict(zip(found, cosines.tolist(), strict=True))

    def similar_names(self, name: str, limit: int = 3) -> list[str]:
        """Entities whose name or an alias is close to ``name`` (suggested as duplicates, never merged).

        Close: the same letters and digits once case, spaces and punctuation are ignored
        (``auth-service``, ``Auth Service``), or a rapidfuzz ratio of at least
        :data:`SIMILAR_MIN` between those forms with the same digits (``Alice Smith``,
        ``Alice Smyth``; never ``task 1`` and ``task 2``). Candidates share a name term.
        """
        collapsed = collapsed_name(name)
        if not collapsed:
            return []
        found: dict[str, None] = {}
        for other in self._collapsed.get(collapsed, {}):
            found[self._aliases.get(other, other)] = None
        candidates: dict[int, None] = {}
        for term in _terms_of_name(name):
            posting = self._name_postings.get(term)
            if posting is not None and len(posting) <= _SIMILAR_POSTING_MAX:
                candidates.update(posting)
        if candidates:
            from rapidfuzz import fuzz

            digits = [c for c in collapsed if c.isdigit()]
            for number in candidates:
                for _, other, entity in self._listed.get(number, []):
                    other_collapsed = collapsed_name(other)
                    if (
                        entity not in found
                        and [c for c in other_collapsed if c.isdigit()] == digits
                        and fuzz.ratio(collapsed, other_collapsed) >= SIMILAR_MIN
                    ):
                        found[entity] = None
        found.pop(name, None)
        return list(found)[:limit]

    # -- compaction ------------------------------------------------------------------------

    def _maybe_compact(self) -> None:
        if self._dead_passages > max(COMPACT_MIN, len(self._pass_live) // 4) or self._dead_entities > max(
            COMPACT_MIN, len(self._ent_live) // 4
        ):
            self.compact()

    def compact(self) -> None:
        """Renumber live entities and passages and drop dead rows from every column and posting."""
        if self._pending:
            self.flush()
        self._seen = None
        live_entities = np.flatnonzero(self._ent_live.view())
        entity_map = np.full(len(self._ent_live), -1, dtype=np.int64)
        entity_map[live_entities] = np.arange(len(live_entities))
        for column in (
            self._ent_created,
            self._ent_recent,
            self._ent_name_length,
            self._ent_invalid,
            self._ent_live,
            self._has_vector,
        ):
            column.keep(live_entities)
        owner = self._row_owner.view()
        used = owner >= 0
        owner[used] = entity_map[owner[used]]
        self._ent_rows = {int(entity_map[n]): rows for n, rows in self._ent_rows.items()}
        old_names = self._names
        self._names = [old_names[number] for number in live_entities.tolist()]
        self._numbers = {name: number for number, name in enumerate(self._names) if name is not None}
        renumber = entity_map.tolist()
        self._ent_passages = {renumber[n]: keys for n, keys in self._ent_passages.items()}
        self._heads = {renumber[n]: text for n, text in self._heads.items()}
        self._name_terms = {renumber[n]: terms for n, terms in self._name_terms.items()}
        self._listed = {renumber[n]: rows for n, rows in self._listed.items()}
        self._name_postings = {
            term: {renumber[n]: None for n in numbers} for term, numbers in self._name_postings.items()
        }
        for number, keys in self._ent_passages.items():
            self._ent_passages[number] = {(f"h:{number}" if key.startswith("h:") else key): None for key in keys}

        live_passages = np.flatnonzero(self._pass_live.view())
        passage_map = np.full(len(self._pass_live), -1, dtype=np.int64)
        passage_map[live_passages] = np.arange(len(live_passages))
        for column in (self._pass_created, self._pass_invalid, self._pass_live, self._pass_length, self._pass_kind):
            column.keep(live_passages)
        self._pass_entity.keep(live_passages)
        entities = self._pass_entity.view()
        entities[:] = entity_map[entities]
        slots: dict[str, int] = {}
        for key, slot in self._slots.items():
            renamed = f"h:{renumber[int(key[2:])]}" if key.startswith("h:") else key
            slots[renamed] = int(passage_map[slot])
        self._slots = slots
        postings: defaultdict[str, array[int]] = defaultdict(_slots)
        for term, posting in self._postings.items():
            old = np.frombuffer(posting, dtype=np.int32)
            moved = passage_map[old]
            remaining = moved[moved >= 0]
            if len(remaining):
                postings[term] = array("i", remaining.astype(np.int32).tobytes())
            del old
        self._postings = postings
        self._dead_passages = 0
        self._dead_entities = 0

    def entity_names(self) -> Iterator[str]:
        """The names of the indexed entities."""
        return iter(self._numbers)

    def passages_of(self, name: str) -> Iterable[str]:
        """The passage keys of entity ``name`` (for tests)."""
        number = self._numbers.get(name)
        return () if number is None else list(self._ent_passages.get(number, {}))
