"""The vectors of one actor's texts: :class:`TextVectors`, shared by the planning board and the graph.

An actor whose rows carry text keys each text by its row's key and hands the keys to one
:class:`TextVectors`, which owns the rest: the :class:`~toolcards.vector.EmbeddingService` and
:class:`~toolcards.vector.VectorIndex`; which vector was made from which text
(:func:`text_digest`), so a vector is used only while its key still has that text; and ONE
background worker, so at most one embedding call is in flight and keys written meanwhile batch
into the next (at most :data:`EMBED_CHUNK` texts), rather than queueing calls behind a slow
provider. The worker hands results to the actor as :class:`TextsEmbedded` through ``deliver``
(``actor_ref.tell``); the actor persists those still current and passes them back
(:meth:`TextVectors.received`). Every method runs on the actor's thread; the worker, the query
thread and the grace timer only call the service and ``deliver``.

**Stored rows** (:meth:`TextVectors.row`), one per key in the actor's ``vectors`` collection:
``{"model", "digest", "vector": base64 float32}``. :meth:`TextVectors.restore` indexes a row
only when its model is the service's and its digest the key's current text's; anything else is
embedded again.

**A text embedded by one process is not embedded again by another.** Texts this process
committed are embedded here (:meth:`TextVectors.embed`, or :meth:`TextVectors.embed_now`
ahead of the commit) and their vectors stored. Texts another process committed are *expected*
(:meth:`TextVectors.expect`): their writer stores the vectors, which arrive in a catch-up. As
the writer may exit first (``toolcards call``), an expected key waits
:data:`REMOTE_EMBED_GRACE_S`, then :class:`GraceElapsed` makes the actor catch up and embed
what is still missing (:meth:`TextVectors.embed_overdue`); at start (:meth:`TextVectors.load`)
a text without a row of its current text is expected likewise on a shared store. Two processes
may still both embed a text in a race, never as a rule; either row then serves both.

numpy is imported on first use, as by the rest of :mod:`toolcards.vector`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolcards.vector._index import VectorIndex, VectorRows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector._service import EmbeddingService

__all__ = [
    "CLOSE_WAIT_S",
    "EMBED_CHUNK",
    "FAST_PROVIDERS",
    "REMOTE_EMBED_GRACE_S",
    "WRITER_FIRST_MAX_S",
    "GraceElapsed",
    "TextVector",
    "TextVectors",
    "TextsEmbedded",
    "text_digest",
]

logger = logging.getLogger(__name__)

REMOTE_EMBED_GRACE_S = 10.0
"""How long a text another process wrote waits for that process's vector before this
process embeds it itself. Read when a :class:`TextVectors` is made."""
EMBED_CHUNK = 64
"""Most texts in one background embedding call: small, so a write arriving meanwhile waits
for at most one short call (see :meth:`TextVectors.writing`)."""
WRITER_FIRST_MAX_S = 2.0
"""Longest the background worker holds back a call while the owner is writing."""
FAST_PROVIDERS = frozenset({"hashing", "local"})
"""Providers fast enough (milliseconds a text) for :meth:`TextVectors.embed_now`."""
CLOSE_WAIT_S = 5.0
"""Longest :meth:`TextVectors.close` waits for an embedding call in progress."""
_TIMER_SLACK_S = 0.05
"""A timer may wake a little early; keys this close to their deadline are overdue."""


def text_digest(text: str) -> str:
    """The digest stored with a vector: blake2b-16 of the UTF-8 text, as hex."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class TextVector:
    """The vector of one key's text."""

    key: str
    digest: str
    """:func:`text_digest` of the text the vector was made from."""
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class TextsEmbedded:
    """Message from the worker: the vectors of one background call, for :meth:`TextVectors.received`."""

    model_id: str
    keys: tuple[str, ...]
    """Every key of the call, embedded or not."""
    vectors: tuple[TextVector, ...]
    """One per key; empty when the provider failed."""


@dataclass(frozen=True, slots=True)
class GraceElapsed:
    """Message from the grace timer: catch up with the store, then call :meth:`TextVectors.embed_overdue`."""


@dataclass(frozen=True, slots=True)
class _Job:
    items: tuple[tuple[str, str, str], ...]
    """``(key, digest, text)`` to embed in one call."""


class TextVectors:
    """Embeddings of an actor's texts: the index, the pending keys, the worker and the grace timer.

    Args:
        service: the embedding service (usually shared by the process; :meth:`close` leaves
            it running).
        text_of: the current text of a key, or ``None`` when the key is gone. Called on the
            actor's thread only.
        deliver: sends a :class:`TextsEmbedded` or :class:`GraceElapsed` to the actor
            (``actor_ref.tell``); called from the worker and the timer threads. When it
            raises, the owner is taken to be gone and the message dropped.
        name: names the threads and log lines (the actor's store namespace).
        grace_s: the grace period of texts another process wrote; ``None`` reads
            :data:`REMOTE_EMBED_GRACE_S`.
        index_factory: makes the rows vectors are kept in, given their size, when the first
            one arrives; ``None``: a :class:`VectorIndex`, which :meth:`search`,
            :meth:`hybrid_top`, :meth:`cosine` and :meth:`scores` need (they raise
            ``TypeError`` over other rows: their owner searches them itself).

    Not thread-safe: every method runs on the owning actor's thread.
    """

    def __init__(
        self,
        service: EmbeddingService,
        *,
        text_of: Callable[[str], str | None],
        deliver: Callable[[object], None],
        name: str,
        grace_s: float | None = None,
        index_factory: Callable[[int], VectorRows] | None = None,
    ) -> None:
        self._service = service
        self._index_factory = index_factory
        self._text_of = text_of
        self._deliver = deliver
        self._name = name
        self._grace_s = REMOTE_EMBED_GRACE_S if grace_s is None else grace_s
        self._index: VectorRows | None = None
        self._digests: dict[str, str] = {}
        """Key → digest of the text its indexed vector was made from."""
        self._stale: dict[str, None] = {}
        """Keys to embed here, not yet handed to the worker (an ordered set)."""
        self._in_flight: set[str] = set()
        """The keys of the worker's current call."""
        self._expected: dict[str, tuple[str, float]] = {}
        """Key → (digest, monotonic deadline): texts another process wrote, waiting for its vectors."""
        self._timer: threading.Timer | None = None
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._worker: threading.Thread | None = None
        self._query_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._stopping = threading.Event()
        self._not_writing = threading.Event()
        self._not_writing.set()
        self._waiters: list[concurrent.futures.Future[None]] = []

    def __repr__(self) -> str:
        return f"<TextVectors {self._name} {self.model_id} indexed={len(self)} pending={self.pending}>"

    # -- state -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The service's model id, stored in every row."""
        return self._service.model_id

    @property
    def available(self) -> bool:
        """``False`` once the provider failed: nothing more is embedded, searches are keyword-only."""
        return self._service.available

    @property
    def failure(self) -> str | None:
        """Why the provider failed, or ``None``."""
        return self._service.failure

    @property
    def dim(self) -> int | None:
        """The size of the indexed vectors; ``None`` until the first vector is indexed."""
        return None if self._index is None else self._index.dim

    def __len__(self) -> int:
        """How many keys have a vector of their current text."""
        return len(self._digests)

    @property
    def pending(self) -> int:
        """How many keys wait for a vector: to embed here, being embedded, or expected from
        another process. 0 once the provider has failed."""
        if not self.available or self._stopping.is_set():
            return 0
        return len(self._stale.keys() | self._in_flight | self._expected.keys())

    def when_idle(self) -> concurrent.futures.Future[None]:
        """A future resolved once no key waits for a vector (see :attr:`pending`).

        Resolved at once when nothing waits; also when the provider fails or on
        :meth:`close`. Wait on it outside the actor: the actor must handle the messages
        that resolve it.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self.pending:
            self._waiters.append(future)
        else:
            future.set_result(None)
        return future

    # -- texts -------------------------------------------------------------------------

    def embed(self, keys: Iterable[str], *, ready: Mapping[str, TextVector] | None = None) -> None:
        """This process committed the current texts of ``keys``: give each one a vector.

        A key whose indexed vector is of its current text is left as it is; one with a
        vector in ``ready`` made from that text is indexed with it; one whose text another
        process wrote (and this one did not change, e.g. a status change) keeps waiting for
        that process's vector; the others lose their old vector and are embedded in the
        background. A gone key is forgotten. Returns at once.
        """
        ready = ready or {}
        made: list[TextVector] = []
        for key in keys:
            text = self._text_of(key)
            if text is None:
                self.forget(key)
                continue
            digest = text_digest(text)
            if self._digests.get(key) == digest:
                continue
            vector = ready.get(key)
            if vector is not None and vector.digest == digest:
                self._unindex(key)
                made.append(vector)
            elif not self._awaits(key, digest):
                self._unindex(key)
                self._expected.pop(key, None)
                self._stale[key] = None
        self._index_made(made)
        self._submit()

    def expect(self, keys: Iterable[str]) -> None:
        """Another process committed the current texts of ``keys``; it stores their vectors.

        Their old vectors are dropped; each key waits :data:`REMOTE_EMBED_GRACE_S` for a
        stored row of its text (:meth:`restore`), after which :meth:`embed_overdue` embeds
        it here. Keys whose indexed vector is already of their current text are left alone.
        """
        deadline = time.monotonic() + self._grace_s
        for key in keys:
            text = self._text_of(key)
            if text is None:
                self.forget(key)
                continue
            digest = text_digest(text)
            if self._digests.get(key) == digest:
                continue
            self._unindex(key)
            self._stale.pop(key, None)
            self._expected[key] = (digest, deadline)
        self._arm_timer()
        self._submit()

    def embed_overdue(self) -> None:
        """Embed the expected keys whose grace period is over and whose vector never came.

        Call it on :class:`GraceElapsed`, after catching up with the store so that the
        rows that did land were :meth:`restore`\\ d. Re-arms the timer for the others.
        """
        self._timer = None
        now = time.monotonic() + _TIMER_SLACK_S
        overdue = [key for key, (_, deadline) in self._expected.items() if deadline <= now]
        for key in overdue:
            del self._expected[key]
            text = self._text_of(key)
            if text is not None and self._digests.get(key) != text_digest(text):
                self._stale[key] = None
        if overdue:
            logger.info("%s: embedding %d texts whose writer stored no vector in time.", self._name, len(overdue))
        self._arm_timer()
        self._submit()

    def forget(self, key: str) -> None:
        """The key is gone: drop its vector and any pending work for it."""
        self._unindex(key)
        self._stale.pop(key, None)
        self._expected.pop(key, None)
        self._settle_waiters()

    def clear(self) -> None:
        """Drop every vector and pending key (the actor reloads a whole snapshot)."""
        self._index = None
        self._digests.clear()
        self._stale.clear()
        self._expected.clear()
        self._settle_waiters()

    def load(self, keys: Iterable[str], rows: Mapping[str, Any], *, shared: bool) -> None:
        """The actor loaded its state: index the stored ``rows``, then give every key a vector.

        A key whose row is of another model, in an older format or unreadable is embedded
        at once. One whose row is missing or of an older text may be being embedded right
        now by the process that wrote it: on a ``shared`` store (``Store.shared``) it is
        expected as after a catch-up (:meth:`expect`), elsewhere embedded at once.
        """
        restored = self._restore(rows)
        model_id = self.model_id
        later: list[str] = []
        now: list[str] = []
        for key in keys:
            # A key restored just now has a vector of its current text: no need to read and
            # digest that text a second time (a restart restores tens of thousands).
            if key in restored or key in self._stale:
                continue
            text = self._text_of(key)
            if text is None or self._digests.get(key) == text_digest(text):
                continue
            row = rows.get(key)
            in_the_making = row is None or (isinstance(row, dict) and row.get("model") == model_id and "digest" in row)
            (later if shared and in_the_making else now).append(key)
        self.expect(later)
        self.embed(now)

    def restore(self, rows: Mapping[str, Any]) -> None:
        """Index stored vector rows (key → row; ``None``: the row was deleted).

        A row is used when its model is the service's and its digest is the key's current
        text's; an unreadable one (not base64 of float32s, or a vector the index refuses:
        the wrong size, NaN or infinity) is logged and its key embedded again. The rows
        used go to the index in one batch, whether there is one or the whole store.
        """
        self._restore(rows)

    def _restore(self, rows: Mapping[str, Any]) -> set[str]:
        """:meth:`restore`; returns the keys indexed with a vector of their current text."""
        model_id = self.model_id
        keys: list[str] = []
        digests: list[str] = []
        vectors: list[npt.NDArray[np.float32]] = []
        gone: list[str] = []
        for key, row in rows.items():
            text = self._text_of(key)
            if row is None or text is None:
                if text is None:
                    gone.append(key)
                continue
            digest = text_digest(text)
            if not isinstance(row, dict) or row.get("model") != model_id or row.get("digest") != digest:
                continue
            try:
                vector = VectorIndex.decode(row["vector"], copy=False)  # the index copies the batch
            except (KeyError, TypeError, ValueError):
                self._embed_again(key)
                continue
            keys.append(key)
            digests.append(digest)
            vectors.append(vector)
        refused = self._index_vectors(keys, digests, vectors)
        for key in refused:
            self._embed_again(key)
        # Forgotten last: forgetting settles the waiters when nothing is pending, and the
        # refused keys above are pending again.
        for key in gone:
            self.forget(key)
        self._submit()
        return {key for key in keys if key not in refused}

    def _embed_again(self, key: str) -> None:
        """The stored vector of ``key`` cannot be used: embed its text here."""
        logger.warning("%s: the stored vector of %r is unreadable; embedding it again.", self._name, key)
        self._expected.pop(key, None)
        self._stale[key] = None

    def row(self, vector: TextVector) -> dict[str, str]:
        """The stored row of ``vector``: ``{"model", "digest", "vector"}``, JSON-safe."""
        return {"model": self.model_id, "digest": vector.digest, "vector": VectorIndex.encode(vector.vector)}

    # -- embedding -----------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the background worker back while the owner writes, so an acknowledgement
        never waits behind embedding for the CPU: the worker starts no new call until the
        block ends (or :data:`WRITER_FIRST_MAX_S` passed). A call already running finishes."""
        self._not_writing.clear()
        try:
            yield
        finally:
            self._not_writing.set()

    def embed_now(self, texts: Mapping[str, str], *, max_texts: int) -> dict[str, TextVector]:
        """Embed ``texts`` (key → text) on the calling thread, when that is quick.

        Only for a fast provider (:data:`FAST_PROVIDERS`) and at most ``max_texts`` texts
        that are neither indexed already nor expected from another process; otherwise, or
        when the provider fails, returns ``{}`` and the caller leaves the keys to
        :meth:`embed`. Indexes nothing: pass the result as :meth:`embed`'s ``ready`` once
        the texts are committed.
        """
        service = self._service
        if not service.available or service.param.provider not in FAST_PROVIDERS:
            return {}
        todo = {key: text for key, text in texts.items() if not self._has_or_awaits(key, text_digest(text))}
        if not todo or len(todo) > max_texts:
            return {}
        vectors = service.embed(list(todo.values()))
        if vectors is None:
            return {}
        return {key: TextVector(key, text_digest(text), vectors[i]) for i, (key, text) in enumerate(todo.items())}

    def embed_query(self, text: str, timeout_s: float) -> npt.NDArray[np.float32] | None:
        """The unit vector of a search query, or ``None`` when the provider is unavailable or
        took longer than ``timeout_s`` (:meth:`start_query`, waited for at once)."""
        return self.start_query(text, timeout_s)()

    def start_query(self, text: str, timeout_s: float) -> Callable[[], npt.NDArray[np.float32] | None]:
        """Start embedding a search query; the callable returned waits for its unit vector, or
        ``None`` when the provider is unavailable or took longer than ``timeout_s`` (logged; the
        call goes on and is dropped). The caller does other work meanwhile (a search scores
        keywords).

        Runs on a query thread of its own, so the background worker's backlog does not
        delay it; the callable holds up its caller for at most ``timeout_s``.
        """
        if not self.available or self._stopping.is_set():
            return _nothing
        if self._query_pool is None:
            self._query_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"{self._name} query")
        try:
            future = self._query_pool.submit(self._service.embed, [text])
        except RuntimeError:  # shut down: the actor is stopping
            return _nothing

        def result() -> npt.NDArray[np.float32] | None:
            try:
                vectors = future.result(timeout=timeout_s)
            except TimeoutError:
                logger.warning("%s: embedding a search query took over %ss; keyword results.", self._name, timeout_s)
                return None
            return None if vectors is None else vectors[0]

        return result

    def still_current(self, vectors: Iterable[TextVector]) -> list[TextVector]:
        """The ``vectors`` made from their key's current text and not indexed already.

        Call it inside the store write that persists them, after catching up: the text
        may have changed, or another process's row for it may have landed, meanwhile.
        """
        current = []
        for vector in vectors:
            text = self._text_of(vector.key)
            if (
                text is not None
                and text_digest(text) == vector.digest
                and self._digests.get(vector.key) != vector.digest
            ):
                current.append(vector)
        return current

    def received(self, message: TextsEmbedded, accepted: Iterable[TextVector]) -> None:
        """The worker's call is over: index ``accepted`` (its vectors :meth:`still_current`,
        persisted or not) and start the next call."""
        self._in_flight.difference_update(message.keys)
        if message.model_id == self.model_id:
            self._index_made(list(accepted))
        self._submit()

    # -- search --------------------------------------------------------------------------

    def search(
        self,
        query: npt.NDArray[np.float32],
        *,
        top_k: int,
        min_score: float = -1.0,
        allowed: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``top_k`` keys closest to ``query`` with a cosine of at least ``min_score``,
        as ``(key, cosine)``, best first; only keys in ``allowed`` when it is given.

        Empty when nothing is indexed or ``query`` has another size than the index.
        """
        index = self._vector_index()
        if index is None or not len(index) or query.shape[-1] != index.dim:
            return []
        if allowed is None:
            return index.search(query, top_k=top_k, min_score=min_score)
        # Rank the whole index, so the best top_k are taken among the allowed keys.
        hits: list[tuple[str, float]] = []
        for key, score in index.search(query, top_k=len(index), min_score=min_score):
            if key in allowed:
                hits.append((key, score))
                if len(hits) == top_k:
                    break
        return hits

    def hybrid_top(
        self,
        query: npt.NDArray[np.float32],
        boosts: Mapping[str, float],
        *,
        alpha: float,
        threshold: float,
        limit: int,
    ) -> list[tuple[str, float, float | None]]:
        """:meth:`VectorIndex.hybrid_top` over the indexed vectors; with none indexed (or a
        query of another size), every key of ``boosts`` counts as cosine 0."""
        index = self._vector_index()
        if index is None or not len(index) or query.shape[-1] != index.dim:
            found: list[tuple[str, float, float | None]] = [
                (key, alpha * 0.5 + (1.0 - alpha) * boost, None) for key, boost in boosts.items()
            ]
            return sorted(found, key=lambda hit: (-hit[1], hit[0]))[:limit]
        return index.hybrid_top(query, boosts, alpha=alpha, threshold=threshold, limit=limit)

    def cosine(self, key: str, query: npt.NDArray[np.float32]) -> float | None:
        """``key``'s cosine with ``query``, or ``None`` when it has no vector indexed."""
        index = self._vector_index()
        if index is None or query.shape[-1] != index.dim:
            return None
        return index.cosine(key, query)

    def scores(self, query: npt.NDArray[np.float32]) -> dict[str, float]:
        """Every indexed key's cosine with ``query`` (empty when nothing is indexed)."""
        index = self._vector_index()
        return {} if index is None else index.scores(query)

    # -- shutdown ------------------------------------------------------------------------

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Stop the worker, the query thread and the timer; drop every pending key.

        Waits up to ``wait_s`` for an embedding call in progress (its result is dropped).
        Resolves every :meth:`when_idle` future. Calling it again does nothing.
        """
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._query_pool is not None:
            self._query_pool.shutdown(wait=False, cancel_futures=True)
        self._stale.clear()
        self._in_flight.clear()
        self._expected.clear()
        self._settle_waiters()
        if self._jobs is not None and self._worker is not None:
            self._jobs.put(None)
            if self._worker is not threading.current_thread():
                self._worker.join(wait_s)

    # -- internals -----------------------------------------------------------------------

    def _awaits(self, key: str, digest: str) -> bool:
        """Whether another process wrote the text of ``digest`` under ``key`` and embeds it."""
        expected = self._expected.get(key)
        return expected is not None and expected[0] == digest

    def _has_or_awaits(self, key: str, digest: str) -> bool:
        return self._digests.get(key) == digest or self._awaits(key, digest)

    def _vector_index(self) -> VectorIndex | None:
        """The index searched by :meth:`search` and its siblings; ``None`` before the first vector."""
        index = self._index
        if index is None or isinstance(index, VectorIndex):
            return index
        raise TypeError(f"{self._name}: these vectors are kept in {type(index).__name__}; search it directly.")

    def _unindex(self, key: str) -> None:
        if self._digests.pop(key, None) is not None and self._index is not None:
            self._index.remove(key)

    def _index_made(self, vectors: Sequence[TextVector]) -> None:
        """Index ``vectors`` the service just made, in one batch.

        Raises ``ValueError`` when the index refuses one (not its size, NaN or infinity: the
        provider's fault or a programming error, not a stored row to embed again), once the
        others are indexed.
        """
        refused = self._index_vectors(
            [vector.key for vector in vectors], [vector.digest for vector in vectors], [v.vector for v in vectors]
        )
        if refused:
            raise ValueError(" ".join(refused.values()))

    def _index_vectors(
        self, keys: Sequence[str], digests: Sequence[str], vectors: Sequence[npt.NDArray[np.float32]]
    ) -> dict[str, str]:
        """Index each of ``vectors``, made from the text of the digest at its position in
        ``digests``, under the key at that position in ``keys`` (distinct): one batch for the index
        (:meth:`VectorRows.upsert_many`), however many.

        Returns the refused, key → why: a vector not of the index's size, or holding NaN or
        infinity, refuses only itself; its key keeps what it had. Without an index yet, one
        is made for the size of the first vector (a size no index can have refuses that
        vector, and the next one's is tried), as indexing them one by one would.
        """
        refused: dict[str, str] = {}
        first = 0
        while self._index is None and first < len(vectors):
            try:
                self._index = self._new_index(int(vectors[first].shape[-1]))
            except ValueError as exc:
                refused[keys[first]] = str(exc)
                first += 1
        if self._index is None or first == len(vectors):
            return refused
        if first:
            keys, digests, vectors = keys[first:], digests[first:], vectors[first:]
        failed = self._index.upsert_many(keys, vectors)
        for position, why in failed.items():
            refused[keys[position]] = why
        # Key → digest of what was indexed (the last of a key given twice, as in the index).
        indexed = dict(
            zip(keys, digests, strict=True)
            if not failed
            else ((keys[position], digests[position]) for position in range(len(keys)) if position not in failed)
        )
        self._digests.update(indexed)
        if self._stale or self._expected:  # nothing waits at a start: skip two lookups a key
            for key in indexed:
                self._stale.pop(key, None)
                self._expected.pop(key, None)
        return refused

    def _new_index(self, dim: int) -> VectorRows:
        """The rows vectors of ``dim`` values are kept in; raises ``ValueError`` for a size no
        index can have."""
        return VectorIndex(dim) if self._index_factory is None else self._index_factory(dim)

    def _submit(self) -> None:
        """Hand the next chunk of stale keys to the worker unless a call is in flight."""
        if not self.available or self._stopping.is_set():
            # A failed service stays degraded: nothing will be embedded, search by keyword.
            self._stale.clear()
            self._expected.clear()
        elif self._stale and not self._in_flight:
            items = []
            for key in list(self._stale)[:EMBED_CHUNK]:
                del self._stale[key]
                text = self._text_of(key)
                if text is not None:
                    items.append((key, text_digest(text), text))
            if items:
                self._in_flight = {key for key, _, _ in items}
                self._worker_jobs().put(_Job(items=tuple(items)))
        self._settle_waiters()

    def _worker_jobs(self) -> queue.SimpleQueue[_Job | None]:
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            self._worker = threading.Thread(target=self._work, args=(self._jobs,), name=f"{self._name} embeddings")
            self._worker.daemon = True
            self._worker.start()
        return self._jobs

    def _work(self, jobs: queue.SimpleQueue[_Job | None]) -> None:
        """The worker thread: one call at a time, each result sent to the actor."""
        service = self._service
        while (job := jobs.get()) is not None and not self._stopping.is_set():
            self._not_writing.wait(WRITER_FIRST_MAX_S)
            keys = tuple(key for key, _, _ in job.items)
            try:
                vectors = service.embed([text for _, _, text in job.items])
            except Exception:
                # Only a programming error gets here (the service reports provider failures
                # as None); the actor must still hear back, or the next texts would wait forever.
                logger.exception("%s: embedding %d texts failed.", self._name, len(keys))
                vectors = None
            found = (
                ()
                if vectors is None
                else tuple(TextVector(key, digest, vectors[i]) for i, (key, digest, _) in enumerate(job.items))
            )
            if self._stopping.is_set():
                return
            try:
                self._deliver(TextsEmbedded(model_id=service.model_id, keys=keys, vectors=found))
            except Exception:
                return  # the owner is gone

    def _arm_timer(self) -> None:
        if self._timer is not None or not self._expected or not self.available or self._stopping.is_set():
            return
        delay = max(0.0, min(deadline for _, deadline in self._expected.values()) - time.monotonic())
        self._timer = threading.Timer(delay, self._grace_elapsed)
        self._timer.daemon = True
        self._timer.start()

    def _grace_elapsed(self) -> None:
        if self._stopping.is_set():
            return
        try:
            self._deliver(GraceElapsed())
        except Exception:
            return  # the owner is gone

    def _settle_waiters(self) -> None:
        if self.pending or not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.set_result(None)


def _nothing() -> None:
    """The query vector when none can be made."""
    return
