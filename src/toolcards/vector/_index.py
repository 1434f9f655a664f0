"""An in-memory cosine index: exact brute-force search over a growable float32 matrix.

Rows are stored L2-normalised in one contiguous ``(capacity, dim)`` matrix, so a search
is one matrix-vector product plus ``argpartition``, bound by memory bandwidth
(``docs/benchmarks.md`` has the figures). :meth:`VectorIndex.upsert` appends (doubling the
capacity when full) or overwrites in place; :meth:`VectorIndex.remove` moves the last row
into the hole. Both are amortised O(1). The matrix shrinks by half when it is a quarter
full, so memory follows the number of rows. :meth:`VectorIndex.upsert_many` stores many
vectors in one pass (a restart restores tens of thousands): they are checked and normalised
as one matrix (:func:`unit_rows`), and :meth:`VectorIndex.upsert` is a batch of one.

The index is not thread-safe: it belongs to one actor, which serialises access. Persist
rows with :meth:`VectorIndex.encode` / :meth:`VectorIndex.decode` (base64 float32 text,
for ``toolcards.store``'s JSON values) and rebuild the index on start.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["UnitRows", "VectorIndex", "VectorRows", "unit_rows"]


class VectorRows(Protocol):
    """Where :class:`~toolcards.vector.TextVectors` keeps vectors: keys to rows of one size.

    :class:`VectorIndex` is one; an actor whose search needs its vectors laid out its own way
    (the knowledge graph keeps them beside its other columns) passes its own through
    ``TextVectors(index_factory=...)``.
    """

    @property
    def dim(self) -> int:
        """The size of every vector."""
        ...

    def __len__(self) -> int:
        """How many keys have a vector."""
        ...

    def upsert_many(self, keys: Sequence[str], vectors: Sequence[npt.ArrayLike]) -> dict[int, str]:
        """Store each of ``vectors`` (normalised) under the key at its position in ``keys``,
        replacing any previous one, in one pass: TextVectors hands over every vector it has at
        once, one or a whole store's.

        A vector of the wrong size or holding NaN or infinity refuses only itself: its key
        keeps what it had, the others are stored. Returns the refused, position → why. A
        key given twice ends with its last vector stored, as one upsert after another would.
        """
        ...

    def remove(self, key: str) -> None:
        """Forget ``key``'s vector; a no-op without one."""
        ...


_MIN_CAPACITY = 16


@dataclass(frozen=True, slots=True)
class UnitRows:
    """Vectors checked and normalised together by :func:`unit_rows`."""

    positions: list[int]
    """The positions (in the vectors given) of the rows of :attr:`matrix`, ascending."""
    matrix: npt.NDArray[np.float32]
    """One float32 unit row per position (a zero vector stays zero): a new array."""
    refused: dict[int, str]
    """Position → why that vector was refused: the wrong size, or NaN or infinity."""


def unit_rows(keys: Sequence[str], vectors: Sequence[npt.ArrayLike], dim: int) -> UnitRows:
    """``vectors`` (one per key of ``keys``, which only name them in the reasons) as float32 unit
    rows of ``dim`` values, each refused alone when it cannot be one.

    The check and the normalisation run on the whole matrix at once; only the sizes are
    read vector by vector (a ragged batch is refused row by row, not as a whole). A row's
    result does not depend on the other rows: one vector comes out as it does among
    thousands.
    """
    import numpy as np

    positions: list[int] = []
    arrays: list[npt.NDArray[np.float32]] = []
    refused: dict[int, str] = {}
    for position, vector in enumerate(vectors):
        try:
            array = np.asarray(vector, dtype=np.float32)
            if array.ndim != 1:  # a decoded vector is flat already: no view to make
                array = array.reshape(-1)
        except (TypeError, ValueError) as exc:  # ragged, or not numbers: refused like a wrong size
            refused[position] = f"The vector for {keys[position]!r} is not an array of numbers: {exc}"
            continue
        if array.shape == (dim,):
            positions.append(position)
            arrays.append(array)
        else:
            refused[position] = (
                f"The vector for {keys[position]!r} has {array.size} dimensions; this index holds {dim}."
            )
    # One concatenation: np.stack would make a 2-D view of every vector first.
    matrix = np.concatenate(arrays).reshape(len(arrays), dim) if arrays else np.empty((0, dim), dtype=np.float32)
    if not np.isfinite(matrix).all():  # rare: find the rows at fault
        finite = np.isfinite(matrix).all(axis=1)
        for row in np.flatnonzero(~finite).tolist():
            refused[positions[row]] = f"The vector for {keys[positions[row]]!r} contains NaN or infinity."
        positions = [positions[row] for row in np.flatnonzero(finite).tolist()]
        matrix = matrix[finite]
    # np.linalg.norm(axis=1), without its overhead a call: a batch of one is every upsert.
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1, keepdims=True))
    norms[norms == 0] = 1.0  # a zero vector stays zero
    matrix /= norms
    return UnitRows(positions=positions, matrix=matrix, refused=dict(sorted(refused.items())) if refused else refused)


def _as_unit_vector(vector: npt.ArrayLike, dim: int, what: str) -> npt.NDArray[np.float32]:
    """``vector`` as a float32 unit vector of length ``dim`` (zero stays zero).

    Raises ``ValueError`` for a wrong shape or a non-finite value.
    """
    import numpy as np

    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape != (dim,):
        raise ValueError(f"{what} has {array.size} dimensions; this index holds {dim}.")
    if not np.isfinite(array).all():
        raise ValueError(f"{what} contains NaN or infinity.")
    norm = float(np.linalg.norm(array))
    return array / np.float32(norm) if norm > 0.0 else array


class VectorIndex:
    """Keys mapped to unit vectors of one size; exact cosine search, best first."""

    def __init__(self, dim: int) -> None:
        """An empty index for vectors of ``dim`` dimensions; raises ``ValueError`` if ``dim < 1``."""
        import numpy as np

        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}.")
        self._dim = dim
        self._matrix: npt.NDArray[np.float32] = np.zeros((_MIN_CAPACITY, dim), dtype=np.float32)
        self._keys: list[str] = []
        self._rows: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<VectorIndex dim={self._dim} rows={len(self._keys)}>"

    @property
    def dim(self) -> int:
        """The size of every vector in the index."""
        return self._dim

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def keys(self) -> list[str]:
        """Every key, in storage order (which changes on removal)."""
        return list(self._keys)

    def get(self, key: str) -> npt.NDArray[np.float32] | None:
        """A copy of the stored (normalised) vector for ``key``, or ``None``."""
        row = self._rows.get(key)
        return None if row is None else self._matrix[row].copy()

    def _resize(self, capacity: int) -> None:
        import numpy as np

        grown = np.zeros((capacity, self._dim), dtype=np.float32)
        count = len(self._keys)
        grown[:count] = self._matrix[:count]
        self._matrix = grown

    def upsert(self, key: str, vector: npt.ArrayLike) -> None:
        """Store ``vector`` (normalised) under ``key``, replacing any previous one.

        Amortised O(1). Raises ``ValueError`` when the vector's size is not :attr:`dim`
        or it holds NaN or infinity; the index is then unchanged.
        """
        refused = self.upsert_many([key], [vector])
        if refused:
            raise ValueError(refused[0])

    def upsert_many(self, keys: Sequence[str], vectors: Sequence[npt.ArrayLike]) -> dict[int, str]:
        """:meth:`upsert` each of ``vectors`` under the key at its position in ``keys``, in one pass.

        A vector of the wrong size or holding NaN or infinity refuses only itself: its key
        keeps what it had, the others are stored. Returns the refused, position → why (empty
        when all were stored). A key given twice ends with its last vector stored. The
        matrix grows at most once; amortised O(1) a vector.
        """
        if len(keys) != len(vectors):
            raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors.")
        made = unit_rows(keys, vectors, self._dim)
        # A key given twice: its last vector, as upserting one after the other would leave.
        latest = {keys[position]: made_row for made_row, position in enumerate(made.positions)}
        added = [key for key in latest if key not in self._rows]
        needed = len(self._keys) + len(added)
        capacity = self._matrix.shape[0]
        if needed > capacity:
            while capacity < needed:
                capacity *= 2
            self._resize(capacity)
        for key in added:
            self._rows[key] = len(self._keys)
            self._keys.append(key)
        units = made.matrix if len(latest) == len(made.positions) else made.matrix[list(latest.values())]
        self._matrix[[self._rows[key] for key in latest]] = units
        return made.refused

    def remove(self, key: str) -> None:
        """Forget ``key``; a missing key is a no-op. Amortised O(1)."""
        row = self._rows.pop(key, None)
        if row is None:
            return
        last = len(self._keys) - 1
        if row != last:
            moved = self._keys[last]
            self._matrix[row] = self._matrix[last]
            self._keys[row] = moved
            self._rows[moved] = row
        self._keys.pop()
        capacity = self._matrix.shape[0]
        if capacity > _MIN_CAPACITY and len(self._keys) <= capacity // 4:
            self._resize(max(_MIN_CAPACITY, capacity // 2))

    def _all_scores(self, query: npt.ArrayLike) -> npt.NDArray[np.float32]:
        import numpy as np

        unit = _as_unit_vector(query, self._dim, "The query")
        # einsum, not `@`: a BLAS matrix-vector product spreads over every core, and with the
        # actor threads busy its worker threads contend (several times slower on two cores,
        # see docs/benchmarks.md). einsum stays on the calling thread and its cost is predictable.
        result: npt.NDArray[np.float32] = np.einsum("ij,j->i", self._matrix[: len(self._keys)], unit)
        return result

    def search(self, query: npt.ArrayLike, top_k: int = 10, min_score: float = -1.0) -> list[tuple[str, float]]:
        """The ``top_k`` keys most similar to ``query``, as ``(key, cosine)``, best first.

        The query is normalised first. Rows scoring below ``min_score`` are dropped, so
        fewer than ``top_k`` may come back. Exact; O(rows × dim) with no allocation
        beyond the score vector. Raises ``ValueError`` for a query of the wrong size.
        """
        import numpy as np

        scores = self._all_scores(query)
        count = scores.shape[0]
        if top_k <= 0 or count == 0:
            return []
        if top_k < count:
            best = np.argpartition(-scores, top_k - 1)[:top_k]
            best = best[np.argsort(-scores[best], kind="stable")]
        else:
            best = np.argsort(-scores, kind="stable")
        return [(self._keys[i], float(scores[i])) for i in best if scores[i] >= min_score]

    def hybrid_top(
        self,
        query: npt.ArrayLike,
        boosts: Mapping[str, float],
        *,
        alpha: float,
        threshold: float,
        limit: int,
    ) -> list[tuple[str, float, float | None]]:
        """The ``limit`` best keys by ``alpha * (cos + 1) / 2 + (1 - alpha) * boost``.

        Candidates are the rows whose cosine with ``query`` is at least ``threshold`` and
        every key of ``boosts`` (a key without a row counts as cosine 0). Returns
        ``(key, score, cosine or None)``, by score descending, then key. The scores are
        computed for every row at once and only the best are turned into Python objects,
        so the cost is the matrix-vector product plus one pass in numpy, not a dictionary
        of every row. Raises ``ValueError`` for a query of the wrong size.
        """
        import numpy as np

        cosines = self._all_scores(query).astype(np.float64)
        fused = alpha * np.clip((cosines + 1.0) / 2.0, 0.0, 1.0)
        eligible = cosines >= threshold
        unindexed: list[tuple[str, float, float | None]] = []
        for key, boost in boosts.items():
            row = self._rows.get(key)
            if row is None:
                unindexed.append((key, alpha * 0.5 + (1.0 - alpha) * boost, None))
            else:
                fused[row] += (1.0 - alpha) * boost
                eligible[row] = True
        candidates = np.flatnonzero(eligible)
        if limit <= 0:
            return []
        if len(candidates) > limit:
            # Every candidate scoring at least the limit-th best, ties included.
            kth = np.partition(fused[candidates], len(candidates) - limit)[len(candidates) - limit]
            candidates = candidates[fused[candidates] >= kth]
        found: list[tuple[str, float, float | None]] = [
            (self._keys[i], float(fused[i]), float(cosines[i])) for i in candidates.tolist()
        ]
        found += unindexed
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found[:limit]

    def cosine(self, key: str, query: npt.ArrayLike) -> float | None:
        """The cosine of ``key``'s vector with ``query``, or ``None`` when ``key`` has none."""
        row = self._rows.get(key)
        if row is None:
            return None
        unit = _as_unit_vector(query, self._dim, "The query")
        return float(self._matrix[row] @ unit)

    def scores(self, query: npt.ArrayLike) -> dict[str, float]:
        """Every key's cosine with ``query`` (for callers that fuse it with other scores).

        Raises ``ValueError`` for a query of the wrong size.
        """
        values = self._all_scores(query).tolist()
        return dict(zip(self._keys, values, strict=True))

    @staticmethod
    def encode(vector: npt.ArrayLike) -> str:
        """``vector`` as base64 of its little-endian float32 bytes (JSON-safe text)."""
        import numpy as np

        array = np.asarray(vector, dtype="<f4").reshape(-1)
        return base64.b64encode(array.tobytes()).decode("ascii")

    @staticmethod
    def decode(data: str, *, copy: bool = True) -> npt.NDArray[np.float32]:
        """The float32 vector that :meth:`encode` produced: a writable copy, or with
        ``copy=False`` a read-only array over the decoded bytes, for a caller that copies it
        anyway (a batch for :meth:`upsert_many`: the copy is most of the cost of decoding
        a vector besides the base64 itself).

        Raises ``ValueError`` when ``data`` is not base64 of a whole number of float32s.
        """
        import numpy as np

        try:
            # base64.b64decode(data, validate=True) is this call behind a copy of the text.
            raw = binascii.a2b_base64(data, strict_mode=True)
        except binascii.Error as exc:
            raise ValueError(f"Not a base64 vector: {data[:40]!r}.") from exc
        if len(raw) % 4:
            raise ValueError(f"A float32 vector needs a multiple of 4 bytes; got {len(raw)}.")
        array = np.frombuffer(raw, dtype="<f4")
        # On a little-endian host "<f4" is float32 and the read-only view can be kept.
        return array if not copy and array.dtype == np.float32 else array.astype(np.float32)
