"""``NamespaceActor``: an actor whose state is one store namespace, kept in memory.

The planning board, the knowledge graph and the mailboxes hold their state the same way, so
they share this base rather than each writing it:

* the constructor's :meth:`~NamespaceActor._load` reads the namespace (in the caller's
  thread, so a store that cannot be read fails the card's bind instead of leaving a dead
  actor);
* a read first catches up with what other processes committed (:meth:`~NamespaceActor._refresh`,
  cheap when nothing was); a write (:meth:`~NamespaceActor._writing`) takes the namespace's
  lock, catches up, and the subclass validates and stages against the state every process
  left;
* rows arriving from the store (a snapshot or a delta) reach the subclass's
  :meth:`~NamespaceActor._absorb_changes`; the keyed calls' answers (exactly-once retries,
  :class:`~toolcards.store._calls.CallLog`) and the stored vectors are handled here;
* with an embedding, an :class:`~toolcards.vector.EmbeddingKeeper` keeps the texts' vectors
  from ``on_start`` to ``on_stop`` or ``on_failure`` and persists them through
  :meth:`~NamespaceActor._persist_vectors`;
* a subclass may mirror a commit in memory after the caller has its answer
  (:meth:`~NamespaceActor._mirror_later`): whatever reads memory next (a call, a message, a
  write) mirrors it first, so nothing ever sees the state without it;
* events go to ``publish`` after each commit, and a failing ``publish`` is logged, never
  returned: the change is committed.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from toolcards.actors._caller_runs import CallerRunsActor
from toolcards.store._base import CatchUp, Change, Delta, Snapshot, Store, Transaction
from toolcards.store._calls import CALLS, CallLog

if TYPE_CHECKING:
    from toolcards.core._events import ToolcardsEvent
    from toolcards.vector import EmbeddingKeeper, EmbeddingParam, TextVector, TextVectors
    from toolcards.vector._index import VectorRows

__all__ = ["VECTORS", "NamespaceActor"]

logger = logging.getLogger(__name__)

VECTORS = "vectors"
"""The collection of the texts' vector rows (derived data: recomputed when missing)."""


class _Mirror:
    """The actor's message to itself: mirror the commits left for after the answer."""


class NamespaceActor(CallerRunsActor):
    """The namespace ``f"{team_id}/{name}"`` of ``store`` in memory, at :attr:`_version`.

    Subclasses set up their own state, then call :meth:`_load`; they implement
    :meth:`_clear` and :meth:`_absorb_changes`.
    """

    def __init__(self, team_id: str, name: str, store: Store, publish: Callable[[ToolcardsEvent], None] | None) -> None:
        super().__init__()
        self._team_id = team_id
        self._namespace = f"{team_id}/{name}"
        self._store = store
        self._publish = publish
        self._version = 0
        """The store version the state in memory is the state of."""
        self._calls = CallLog()
        """The keyed calls the writes answered, for exactly-once retries."""
        self._keeper: EmbeddingKeeper | None = None
        """Keeps the texts' vectors; ``None`` without an embedding."""
        self._stored_vectors: dict[str, Any] = {}
        """The vector rows loaded with the namespace, until ``on_start`` restores them."""
        self._unmirrored: deque[Callable[[], None]] = deque()
        """Committed changes not yet mirrored in memory, in commit order (:meth:`_mirror_later`)."""

    # -- what a subclass implements ----------------------------------------------------

    def _clear(self) -> None:
        """Forget the state in memory: a snapshot follows."""
        raise NotImplementedError

    def _absorb_changes(self, changes: Sequence[Change]) -> Iterable[str]:
        """Apply committed rows to memory; return the keys whose text changed (their vectors,
        if any, are the writer's to make)."""
        raise NotImplementedError

    def _cancel_timers(self) -> None:
        """Cancel the timers the actor set for itself (stopped or crashed); none by default."""

    # -- loading and catching up -------------------------------------------------------

    def _load(self) -> None:
        """Read the whole namespace (raises ``StoreError`` if it cannot be read)."""
        snapshot = self._store.load(self._namespace)
        self._absorb(snapshot)
        self._stored_vectors = snapshot.rows.get(VECTORS, {})

    def _refresh(self) -> bool:
        """Catch up with what other processes committed; whether anything was."""
        self._mirror_committed()
        catch_up = self._store.read(self._namespace, self._version)
        if isinstance(catch_up, Delta) and catch_up.empty:
            return False
        self._absorb(catch_up)
        return True

    def _absorb(self, catch_up: CatchUp | None) -> None:
        """Apply committed rows (a delta, or the whole namespace) to memory."""
        if catch_up is None or (isinstance(catch_up, Delta) and catch_up.empty):
            return
        vectors = self._vectors
        if isinstance(catch_up, Snapshot):
            self._calls.clear()
            if vectors is not None:
                vectors.clear()
            self._clear()
        changes = catch_up.changes
        retexted = self._absorb_changes(changes)
        stored: dict[str, Any] = {}
        for change in changes:
            if change.collection == CALLS:
                self._calls.absorb(change)
            elif change.collection == VECTORS:
                stored[change.key] = change.value
        self._version = catch_up.version
        if vectors is not None:
            # Another process wrote these texts and embeds them itself: drop vectors made
            # from an older text, and take the new ones it stored.
            vectors.expect(retexted)
            vectors.restore(stored)

    @contextmanager
    def _writing(self) -> Iterator[Transaction]:
        """``with self._writing() as txn:`` — the namespace's lock is held and the state is
        every process's; what ``txn.stage`` collects commits when the block ends."""
        self._mirror_committed()
        with self._store.write(self._namespace, since=self._version) as txn:
            self._absorb(txn.catch_up)
            yield txn
        if txn.committed is not None:
            self._version = txn.committed

    def _mirror_later(self, mirror: Callable[[], None]) -> None:
        """Run ``mirror``, which puts a change just committed into memory, once the caller has
        its answer: a large batch is acknowledged as soon as it is durable.

        The actor sends itself a message to run it; whatever reads memory sooner (a call, a
        message, a write, each catching up first) runs it before anything else, so no reader
        ever sees the state without it.
        """
        self._unmirrored.append(mirror)
        self.actor_ref.tell(_Mirror())

    def _mirror_committed(self) -> None:
        """Mirror every commit :meth:`_mirror_later` left, in commit order.

        A mirror that fails leaves memory unknown: it is read again from the store, whole
        (logged; the change itself is committed).
        """
        while self._unmirrored:
            mirror = self._unmirrored.popleft()
            try:
                mirror()
            except Exception:
                logger.exception("Mirroring a commit of %s failed; reading it from the store.", self._namespace)
                self._unmirrored.clear()
                self._absorb(self._store.load(self._namespace))

    def _publish_event(self, event: ToolcardsEvent) -> None:
        if self._publish is None:
            return
        try:
            self._publish(event)
        except Exception:
            logger.exception("Publishing %s of %s failed; the change is committed.", event.kind, self._namespace)

    # -- vectors -----------------------------------------------------------------------

    def _keep_vectors(
        self,
        embedding: EmbeddingParam | None,
        text_of: Callable[[str], str | None],
        index_factory: Callable[[int], VectorRows] | None = None,
    ) -> None:
        """Keep the vectors of the texts ``text_of`` gives by key (with an embedding)."""
        if embedding is None:
            return
        from toolcards.vector import EmbeddingKeeper

        store = self._store
        self._keeper = EmbeddingKeeper(
            embedding,
            name=self._namespace,
            text_of=text_of,
            persist=self._persist_vectors,
            catch_up=self._refresh,
            store_closed=lambda: store.closed,
            index_factory=index_factory,
        )

    @property
    def _vectors(self) -> TextVectors | None:
        """The texts' vectors; ``None`` without an embedding (and outside ``on_start``..``on_stop``)."""
        return None if self._keeper is None else self._keeper.vectors

    def _start_vectors(self, keys: Iterable[str]) -> None:
        """Restore the loaded vectors that match the model; embed ``keys`` lacking one in the background."""
        stored, self._stored_vectors = self._stored_vectors, {}
        if self._keeper is not None:
            self._keeper.start(self.actor_ref.tell, list(keys), stored, shared=self._store.shared)

    def _persist_vectors(self, found: Sequence[TextVector]) -> list[TextVector]:
        """Store the rows of the ``found`` vectors still of their text, after catching up (the
        keeper's ``persist``); vectors are derived data, not a change to the state."""
        vectors = self._vectors
        assert vectors is not None
        with self._writing() as txn:
            accepted = vectors.still_current(found)  # the texts may have changed meanwhile
            txn.stage(Change(collection=VECTORS, key=v.key, value=vectors.row(v)) for v in accepted)
        return accepted

    # -- lifecycle ---------------------------------------------------------------------

    def on_stop(self) -> None:
        """Cancel the timers and stop the embedding threads, waiting up to 5 s for a call in
        progress; vectors not yet stored are recomputed on the next start."""
        self._cancel_timers()
        if self._keeper is not None:
            self._keeper.stop()

    def on_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Cancel the timers and stop the embedding threads when the actor dies of an
        unexpected exception."""
        self._cancel_timers()
        if self._keeper is not None:
            self._keeper.stop(wait_s=0)

    def on_receive(self, message: Any) -> Any:
        """Mirror the commits left for later (before any message), handle the embedding
        keeper's messages; others go to pykka's default, which logs them."""
        self._mirror_committed()
        if isinstance(message, _Mirror):
            return None
        if self._keeper is not None and self._keeper.receive(message):
            return None
        return super().on_receive(message)
